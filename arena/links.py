"""The addresses of the Arena's pages that others link to, in one place: a link the Arena
writes (a table's row, a verdict's discussion, a model card) and the page that answers it
agree, and a link pasted into a paper keeps working after a restart on a wiped disk (an
address names only what the history dataset holds: a tab, a revision, a match, a tick).

The forms, as a visitor's address bar holds them (other parameters are ignored):

- `/?tab=TAB&q=TEXT`: a tab (`TABS`), its table searched for TEXT (PvP, PvE, Submissions,
  Matches);
- `/?policy=OWNER/NAME[@SHA]`: a policy's page, its latest revision unless a commit (or
  its first characters) is given; `builtin:NAME` for a built-in;
- `/?match=MATCH_ID&tick=N`: a match's replay at tick N (0 without `tick`).

On a Space the app runs in an iframe of huggingface.co: the parent page's query reaches
it on the first load, and the replay's viewer sends each tick back to the parent page
(`leaderboard/static/viewer.js`), so the address a visitor copies is the moment they see.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

from arena.errors import InvalidArgumentError
from arena.revision import Revision

#: The tabs an address may open, by their id (`gr.Tab(id=...)` in `leaderboard.tabs`).
TABS = ("pvp", "head_to_head", "pve", "submissions", "policy", "analytics", "matches", "replay", "about")


def _address(space_url: str, **query: str | int) -> str:
    return f"{space_url.rstrip('/')}/?{urlencode(query, safe='/:@')}"


def match_link(space_url: str, match_id: str, tick: int | None = None) -> str:
    """The address that opens `match_id` in the Replay tab of the Space at `space_url`, at
    `tick` if given.

    Example:
        >>> match_link("https://nmmo-arena.hf.space/", "0b6d5e")
        'https://nmmo-arena.hf.space/?match=0b6d5e'
        >>> match_link("https://nmmo-arena.hf.space", "0b6d5e", tick=412)
        'https://nmmo-arena.hf.space/?match=0b6d5e&tick=412'
    """
    return _address(space_url, match=match_id) if tick is None else _address(space_url, match=match_id, tick=int(tick))


def policy_link(space_url: str, policy_id: str, sha: str = "") -> str:
    """The address of a policy's page: its latest revision, or the one at `sha`.

    Example:
        >>> policy_link("", "alice/forager", "0123456789abcdef")
        '/?policy=alice/forager@0123456789abcdef'
    """
    return _address(space_url, policy=f"{policy_id}@{sha}" if sha else policy_id)


def table_link(space_url: str, tab: str, q: str = "") -> str:
    """The address of a tab, its table searched for `q`.

    Example:
        >>> table_link("", "pvp", "alice")
        '/?tab=pvp&q=alice'
    """
    return _address(space_url, tab=tab, q=q) if q else _address(space_url, tab=tab)


@dataclass(frozen=True)
class Opened:
    """What an address asks the page to show (`from_query`): each field empty when not asked."""

    tab: str = ""
    q: str = ""
    policy: str = ""
    match: str = ""
    tick: int = 0
    owner: str = ""
    status: str = ""
    settled: str = ""
    cols: tuple[str, ...] = ()
    """The columns to show (`cols=Rank,Policy,MLE`): none asked, all of them."""

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> Opened:
        """Read an address's query. A policy or a match opens its own tab; an unknown tab or
        a tick that is not a whole number is left out, never an error (a mistyped link
        still opens the Arena).

        Example:
            >>> opened = Opened.from_query({"match": "0b6d5e", "tick": "412"})
            >>> opened.tab, opened.match, opened.tick
            ('replay', '0b6d5e', 412)
            >>> Opened.from_query({"tab": "PvP", "q": " alice "}).tab
            'pvp'
            >>> Opened.from_query({"tab": "pvp", "owner": "alice", "settled": "provisional", "cols": "Rank,Policy"}).cols
            ('Rank', 'Policy')
        """
        match = (query.get("match") or "").strip()
        policy = (query.get("policy") or "").strip()
        tab = (query.get("tab") or "").strip().lower()
        tick_text = (query.get("tick") or "").strip()
        tick = int(tick_text) if tick_text.isdigit() else 0
        if match:
            tab = "replay"
        elif policy:
            tab = "policy"
        cols = tuple(c.strip() for c in (query.get("cols") or "").split(",") if c.strip())
        return cls(tab if tab in TABS else "", (query.get("q") or "").strip(), policy, match, tick,
                   (query.get("owner") or "").strip(), (query.get("status") or "").strip().lower(),
                   (query.get("settled") or "").strip().lower(), cols)


def resolve_policy(wanted: str, players: Iterable[str], latest: Iterable[str] = ()) -> str:
    """The rated player an address's `policy=` names, or "" if none: `builtin:NAME` as is;
    `owner/name@SHA` the player whose commit starts with SHA; `owner/name` its latest
    revision (`latest`: the players that are their repo's latest), else the first in `players`' order.

    Example:
        >>> players = ["alice/a@1111aaaa", "alice/a@2222bbbb", "builtin:forage"]
        >>> resolve_policy("alice/a@2222", players), resolve_policy("alice/a", players, ["alice/a@1111aaaa"])
        ('alice/a@2222bbbb', 'alice/a@1111aaaa')
    """
    players = list(players)
    if wanted in players:
        return wanted
    try:  # owner/name@SHA: SHA may be a commit's first characters
        asked = Revision.parse(wanted)
        policy_id, sha = asked.policy_id, asked.sha
    except InvalidArgumentError:  # owner/name: its latest revision
        policy_id, sha = wanted, ""
    mine = []
    for player in players:
        try:
            revision = Revision.parse(player)
        except InvalidArgumentError:
            continue
        if revision.policy_id == policy_id and revision.sha.startswith(sha):
            mine.append(player)
    if not mine:
        return ""
    newest = [p for p in latest if p in mine]
    return newest[0] if newest else mine[0]
