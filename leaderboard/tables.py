"""The leaderboard's tables: `Standings` (and statuses) in, display frames out. No Gradio.

Each table is declared once as a list of `Column`s; the functions fill them. They only
select, aggregate and format what `leaderboard.standings` computed, so they build fast.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from arena.activity import LiveMatch, QueueEntry
from arena.head_to_head import MIN_MEETINGS, HeadToHead
from arena.lifecycle import ACTIVE, RevisionState, Status
from arena.links import match_link, policy_link
from arena.ratings import interval_ranks
from arena.revision import Revision, is_builtin, owner_of
from arena.rules import ANCHORS
from arena.schema import TASK_NAMES
from history.index import POINT_COLUMNS, TeamRows
from history.index.rows import codes, same_matches
from leaderboard.standings import Standings

Kind = Literal["str", "number", "bool", "date", "markdown", "html"]
"""A column's Gradio datatype."""


@dataclass(frozen=True)
class Column:
    name: str
    kind: Kind
    description: str
    width: str = "110px"
    """Its width on the page: numbers narrow, the policy link wider, reasons widest."""


def kinds(columns: Sequence[Column]) -> list[Kind]:
    return [c.kind for c in columns]


def widths(columns: Sequence[Column]) -> list[str | int]:
    return [c.width for c in columns]


PVP_COLUMNS = [
    Column("Rank", "number", "1 + number of policies whose 95% rating interval lies entirely above this one's"),
    Column("Policy", "markdown", "Hub repo (a link to it) and revision (a link to its page here); built-ins are the fixed rating anchors", "240px"),
    Column("Author", "str", "Owner of the repo"),
    Column("TrueSkill", "number", "mu - 3 sigma, the paper's conservative score"),
    Column("mu", "number", "TrueSkill mean"),
    Column("sigma", "number", "TrueSkill uncertainty"),
    Column("MLE", "number", "order-free maximum-likelihood rating (Plackett-Luce, anchored)"),
    Column("95% interval", "str", "bootstrap interval of the MLE rating", "120px"),
    Column("Position range", "str", "bootstrap 95% interval of the leaderboard position"),
    Column("Settling", "str", "settled (95% interval at most 1 unit wide), or about how many more PvP matches its rank "
           "needs and how long that takes at the current rate (docs/rules.md, Settled)", "190px"),
    Column("Held-out", "number", "MLE rating from PvP matches on held-out maps only (maps no participant saw in advance)"),
    Column("PvE vs PvP", "str", "PvP rank on held-out maps minus PvE stage-1 rank, among policies with both: "
           "positive when it stands better in PvE (published maps); 'far' from the diagonal past the threshold", "130px"),
    Column("Elo", "number", "Elo, a 16-team match read as pairwise duels"),
    Column("Nash avg", "number", "expected log-odds against the field's maximum-entropy Nash mix (0: in the mix; Head to head tab)"),
    Column("Matches", "number", "PvP matches played"),
    Column("Achievement", "number", "mean Achievement in PvP"),
    *[Column(task.capitalize(), "number", f"mean {task} points in PvP") for task in TASK_NAMES],
    Column("ms / tick", "number", "median time the team's act() took per tick in its validation (built-ins: blank)"),
]


def revision_cell(revision: Revision, hub_url: str) -> str:
    """A revision named in a table: its repo links to the Hub, its commit to its page here
    (`arena.links.policy_link`: the address survives a restart), as
    `[owner/name](HUB/owner/name)@[sha7](/?policy=owner/name@sha)`; a built-in as
    `[builtin:NAME](/?policy=builtin:NAME) (anchor)`."""
    if revision.is_builtin:
        return f"[{revision.policy_id}]({policy_link('', revision.policy_id)}) (anchor)"
    return (f"[{revision.policy_id}]({hub_url.rstrip('/')}/{revision.policy_id})"
            f"@[{revision.sha[:7]}]({policy_link('', revision.policy_id, revision.sha)})")


@functools.lru_cache(maxsize=8192)
def player_cell(player: str, hub_url: str) -> str:
    """`revision_cell` of a player as the tables name it (`owner/name@sha`, `builtin:NAME`),
    kept: a policy's page names up to every other player, the same cells at every visit."""
    return revision_cell(Revision.parse(player), hub_url)


def match_cell(match_id: str) -> str:
    """A match named in a table: its id, linking to its replay here (`arena.links.match_link`)."""
    return f"[{match_id}]({match_link('', match_id)})"


def policies_cell(names: Any) -> str:
    """Policies named in one cell, ", " between them (a match's winners, ties joined), each
    linking to its page here (`arena.links.policy_link`); "" for none."""
    return ", ".join(f"[{n}]({policy_link('', n)})" for n in names.split(", ") if n) if isinstance(names, str) else ""


def cell_text(cell: Any) -> str:
    """A cell's text as a reader sees it: a Markdown link's text, not its address.

    Example:
        >>> cell_text("[sim-0000119](/?match=sim-0000119)")
        'sim-0000119'
    """
    return re.sub(_BRACKETS, "", re.sub(_LINK_TARGET, "]", str(cell)))


def cells_text(column: pd.Series) -> pd.Series:
    """`cell_text` of every cell of `column`, at once (a search reads every row of a table)."""
    return column.astype(str).str.replace(_LINK_TARGET, "]", regex=True).str.replace(_BRACKETS, "", regex=True)


def linked(frame: pd.DataFrame, column: str, cell: Callable[[Any], str]) -> pd.DataFrame:
    """`frame` with each value of `column` written as `cell` links it (`revision_cell`,
    `match_cell`): a Markdown column (`HEAD_TO_HEAD_KINDS`, `markdown_table`)."""
    return frame.assign(**{column: [cell(v) for v in frame[column]]}) if column in frame.columns else frame


def policy_heading(player: str, hub_url: str) -> str:
    """The line over a policy's page: what it is, its repo on the Hub, and its address here."""
    revision = Revision.parse(player)
    here = policy_link("", revision.policy_id, "" if revision.is_builtin else revision.sha)
    if revision.is_builtin:
        return f"**{revision.policy_id}**, a built-in team (an anchor of the ratings) · [its address here]({here})"
    return (f"**{revision.label}** · [its repo on the Hub]({hub_url.rstrip('/')}/{revision.policy_id}) · "
            f"[its address here]({here})")


def ranked_players(standings: Standings) -> list[str]:
    """Rated PvP players, best first by TrueSkill's conservative score."""
    ratings = standings.trueskill.ratings
    return sorted((p for p in standings.pvp_players.index if p in ratings), key=lambda p: -ratings[p].conservative) \
        if len(standings.pvp_players) else []


def step_costs(statuses: Iterable[RevisionState]) -> dict[str, float]:
    """Median ms per tick measured at validation, by player id (revisions validated)."""
    return {s.id.player: s.measurements.median_step_ms
            for s in statuses if s.measurements is not None and s.measurements.median_step_ms}


def gap_text(gap: int, far: bool) -> str:
    """A PvE-vs-PvP gap as the PvP table shows it.

    Example:
        >>> gap_text(5, True), gap_text(-1, False), gap_text(0, False)
        ('+5 (PvE better, far)', '-1 (PvP better)', '0')
    """
    if gap == 0:
        return "0"
    side = "PvE better" if gap > 0 else "PvP better"
    return f"{gap:+d} ({side}{', far' if far else ''})"


def overfitting_points(standings: Standings, *, latest: set[str] | None = None) -> pd.DataFrame:
    """The overfitting plot's points: per policy with both standings, its PvE rank, its
    held-out PvP rank, its label and whether it is far from the diagonal. `latest` keeps
    only those players (each repo's latest revision); None keeps all."""
    frame = standings.overfitting
    if latest is not None:
        frame = frame[frame["player"].isin(latest)]
    frame = frame.assign(label=[Revision.parse(p).label for p in frame["player"]])
    return frame.reset_index(drop=True)


def pvp_table(standings: Standings, *, hub_url: str, latest: set[str] | None = None, search: str = "",
              costs: Mapping[str, float] | None = None, settling: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The PvP leaderboard, best first.

    Args:
        standings (`Standings`): computed from the history.
        hub_url (`str`): where repo links point.
        latest (`set[str]`, *optional*): player ids to show (each repo's latest revision);
            None shows every rated player.
        search (`str`): keep rows whose policy or author contains it (case-insensitive).
        costs (`Mapping[str, float]`, *optional*): ms per tick by player (`step_costs`).
        settling (`Mapping[str, str]`, *optional*): the meter's text by player
            (`leaderboard.meter.meter_texts`; blank for the anchors and revisions no longer
            qualified).
    """
    costs = costs or {}
    settling = settling or {}
    agg = standings.pvp_players
    if agg.empty:
        return pd.DataFrame(columns=[c.name for c in PVP_COLUMNS])
    players = [p for p in agg.index if (latest is None or p in latest or p in ANCHORS)]
    agg = agg.loc[players]
    ts = standings.trueskill.ratings
    mle = standings.mle
    gaps = {row.player: gap_text(row.gap, row.far) for row in standings.overfitting.itertuples()}
    table = pd.DataFrame(
        {
            "Policy": [revision_cell(Revision.parse(p), hub_url) for p in players],
            "Author": ["arena" if p in ANCHORS else agg.at[p, "policy_id"].split("/")[0] for p in players],
            "TrueSkill": [ts[p].conservative if p in ts else np.nan for p in players],
            "mu": [ts[p].mu if p in ts else np.nan for p in players],
            "sigma": [ts[p].sigma if p in ts else np.nan for p in players],
            "MLE": [mle[p].rating if p in mle else np.nan for p in players],
            "95% interval": [f"{mle[p].low:.2f} to {mle[p].high:.2f}" if p in mle else "" for p in players],
            "Position range": [f"{mle[p].rank_low}-{mle[p].rank_high}" if p in mle else "" for p in players],
            "Settling": [settling.get(p, "") for p in players],
            "Held-out": [standings.held_out_mle[p].rating if p in standings.held_out_mle else np.nan for p in players],
            "PvE vs PvP": [gaps.get(p, "") for p in players],
            "Elo": [standings.elo.ratings.get(p, np.nan) for p in players],
            "Nash avg": [standings.head_to_head.nash.get(p, np.nan) for p in players],
            "Matches": agg["matches"].to_numpy(),
            "Achievement": agg["achievement"].to_numpy(),
            **{task.capitalize(): agg[task].to_numpy() for task in TASK_NAMES},
            "ms / tick": [costs.get(p, np.nan) for p in players],
        },
        index=players,
    )
    if mle:
        ranks = interval_ranks(mle, players)
        # a player newer than the last Plackett-Luce fit (`Standings.mle_source`) has no rank yet
        table.insert(0, "Rank", [ranks.get(p, np.nan) for p in players])
        table = table.sort_values(["Rank", "MLE"], ascending=[True, False])
    else:
        table = table.sort_values("TrueSkill", ascending=False)
        table.insert(0, "Rank", range(1, len(table) + 1))
    return search_rows(table, search, ("Policy", "Author")).round(2).reset_index(drop=True)


def search_rows(table: pd.DataFrame, text: str, columns: Iterable[str]) -> pd.DataFrame:
    """The rows of `table` whose `columns` contain `text`, case-insensitive, as a reader sees
    them (a link's address is not its text); all of them for "". """
    if not text or table.empty:
        return table
    needle = text.strip().lower()
    seen = pd.Series(False, index=table.index)
    for column in columns:
        shown = cells_text(table[column]).str.lower()
        seen |= shown.str.contains(needle, regex=False)
    return table[seen]


#: A Markdown link's address, `](...)`, and its text's brackets: left out of what a reader sees
#: of a cell (`cell_text`).
_LINK_TARGET = r"\]\([^)]*\)"
_BRACKETS = r"[\[\]]"

#: What the PvP table's settled filter offers ("" for every row).
SETTLED_CHOICES = ("", "settled", "provisional")

#: A revision cell's owner: the text before the first "/" of its first link (`revision_cell`).
_CELL_OWNER = r"^\[([^/\]]+)/"


@dataclass(frozen=True)
class TableView:
    """What a reader chose to see of a table (all of it by default), as the page's filters
    and its address (`arena.links.Opened`) give it.

    Attributes:
        search: rows whose text columns contain it (`search_rows`).
        owner: rows of this owner's revisions (the Hub account before the repo's "/";
            `arena` for the built-ins).
        status: rows whose Status starts with it (`queued`, `qualified`, ...).
        settled: `settled` or `provisional`: PvP rows whose rank is (not yet) settled.
        columns: the columns shown, in the table's order (empty: all).
    """

    search: str = ""
    owner: str = ""
    status: str = ""
    settled: str = ""
    columns: tuple[str, ...] = ()


def owners(table: pd.DataFrame) -> list[str]:
    """The owners of a table's rows, sorted (what its owner filter offers)."""
    return sorted(set(row_owners(table))) if len(table) else []


def row_owners(table: pd.DataFrame) -> pd.Series:
    """Each row's owner: its Author column, or the owner in its Policy cell (`arena` for a built-in)."""
    if "Author" in table:
        return table["Author"].astype(str)
    found = table["Policy"].astype(str).str.extract(_CELL_OWNER, expand=False)
    return found.fillna("arena").where(~table["Policy"].astype(str).str.startswith("[builtin:"), "arena")


def viewed(table: pd.DataFrame, view: TableView, searched: Iterable[str]) -> pd.DataFrame:
    """`table` as `view` asks: its rows searched in `searched` and filtered, then its columns
    chosen (an unknown column name is left out, never an error). Pure: frame in, frame out."""
    out = search_rows(table, view.search, searched)
    if len(out) and view.owner:
        out = out[(row_owners(out) == view.owner.strip()).to_numpy()]
    if len(out) and view.status and "Status" in out:
        out = out[out["Status"].astype(str).str.startswith(view.status.strip().lower()).to_numpy()]
    if len(out) and view.settled in ("settled", "provisional") and "Settling" in out:
        state = out["Settling"].astype(str)
        out = out[(state == "settled") if view.settled == "settled" else state.str.startswith("provisional")]
    if view.columns:
        out = out[[c for c in out.columns if c in view.columns]]
    return out.reset_index(drop=True)


#: Rows a paged table shows at a time (`paged`). Gradio's page copies every cell of every
#: table it has drawn on each loading state of every event (issue 39): 500 rows of the PvP
#: table made a search or a sort 300-500 ms in Chromium; a page of 50 keeps the copying small.
PAGE_ROWS = 50


def sorted_by(table: pd.DataFrame, sort: str) -> pd.DataFrame:
    """`table`'s rows ordered by `sort`: a column's name, ascending, or `-NAME`, descending
    (numbers as numbers, text as a reader sees it, a link by its text; empty cells last,
    ties in the table's order). "" or an unknown column: as it is. Pure: frame in, frame out."""
    name = sort.lstrip("-").strip()
    if not name or name not in table.columns or table.empty:
        return table
    column = table[name]
    key = pd.to_numeric(column, errors="coerce")
    if key.notna().sum() < column.replace("", None).notna().sum():  # not a number column: its text
        key = cells_text(column).str.lower()
        key = key.where(key != "")
    order = key.sort_values(ascending=not sort.startswith("-"), na_position="last", kind="stable").index
    return table.loc[order].reset_index(drop=True)


def paged(table: pd.DataFrame, page: float | None, rows: int = PAGE_ROWS) -> tuple[pd.DataFrame, int, int]:
    """Page `page` of `table` (1 first; past the last: the last), that page's number and
    how many there are (at least 1). Pure."""
    pages = max(1, -(-len(table) // rows))
    page = min(max(1, int(page or 1)), pages)
    return table.iloc[(page - 1) * rows: page * rows].reset_index(drop=True), page, pages


def page_line(page: int, pages: int, total: int, rows: int = PAGE_ROWS) -> str:
    """What a paged table shows, in words: `Rows 51-100 of 512 (page 2 of 11).`"""
    if total == 0:
        return "No rows."
    first, last = (page - 1) * rows + 1, min(page * rows, total)
    return f"Rows {first:,}-{last:,} of {total:,} (page {page} of {pages})." if pages > 1 else f"All {total:,} rows."


#: What the pages say while the whole-history columns of a long history are computed
#: (`Standings.fitting`): the PvP table's line, the Head to head tab, the overfitting plot.
FITTING = ("The order-free rating (MLE) with its bootstrap intervals, the ranks by them, the head to head and the "
           "held-out fit are being computed from all of these matches (seconds to a minute after the Space read its "
           "history).")


def source_line(standings: Standings) -> str:
    """What the PvP table was computed from, in one line: the matches (every one recorded
    here, as soon as it is), and how much of them the Hub dataset holds, from which anyone
    recomputes the table (`examples/recompute_ratings.py --through SHARD`)."""
    source = standings.source
    if not standings.matches:
        return "Computed from 0 matches: none recorded yet (each match counts here as soon as it ends)."
    line = f"Computed from {standings.matches:,} matches ({standings.pvp_matches:,} PvP), each counted as it ended."
    if source.on_hub:
        line += f" All are in the Hub dataset, shards through `{source.through}`."
    elif source.published is None:
        line += " Not yet confirmed in the Hub dataset."
    else:
        waiting = len(source.shards) - len(source.published)
        pushed = f"the shards through `{source.published[-1]}`" if source.published else "no shard yet"
        line += (f" In the Hub dataset: {pushed}; {waiting:,} shard{'s' if waiting != 1 else ''} and {source.unsharded:,} "
                 f"match{'es' if source.unsharded != 1 else ''} recorded here wait for the next push.")
    if standings.fitting:
        line += (f" {FITTING} Until then the table is in TrueSkill's order, and Rank is the position in it.")
    if standings.mle_writer:
        line += (f" Ratings and ranks: the fit writer `{standings.mle_writer}` published of the shards through "
                 f"`{standings.mle_source.through}`, until this Space's own.")
    return line


PVE_COLUMNS = [
    Column("Policy", "markdown", "Hub repo (a link to it) and revision (a link to its page here)", "210px"),
    Column("Status", "str", "where the revision stands (Submissions tab: why)", "100px"),
    *[
        column
        for stage in (1, 2, 3)
        for column in (
            Column(f"Stage {stage} Top1Ratio", "number", f"share of stage-{stage} matches won", "100px"),
            Column(f"Stage {stage} Achievement", "number", f"mean Achievement in stage {stage}", "125px"),
        )
    ],
    Column("Matches per stage", "str", "matches played in stages 1, 2, 3 (fewer than 10 when a stage was decided early)", "110px"),
    Column("ms / tick", "number", "median time act() took per tick in validation", "80px"),
]


def pve_table(standings: Standings, statuses: Sequence[RevisionState], *, hub_url: str) -> pd.DataFrame:
    """Per latest revision: its status, and per PvE stage Top1Ratio, mean Achievement and
    matches played. Per-task figures are on the Policy tab."""
    per = standings.pve_stages
    out = []
    for state in statuses:
        if not state.latest:
            continue
        player = state.id.player
        record: dict[str, object] = {
            "Policy": revision_cell(state.id, hub_url),
            "Status": state.status.value,
            "ms / tick": state.measurements.median_step_ms if state.measurements and state.measurements.median_step_ms else np.nan,
        }
        for stage in (1, 2, 3):
            key = (player, stage)
            if key in per.index:
                record[f"Stage {stage} Top1Ratio"] = round(per.at[key, "top1"], 2)
                record[f"Stage {stage} Achievement"] = round(per.at[key, "mean"], 1)
            else:
                record[f"Stage {stage} Top1Ratio"] = record[f"Stage {stage} Achievement"] = np.nan
        record["Matches per stage"] = " / ".join(str(int(per.at[(player, st), "matches"])) if (player, st) in per.index else "0"
                                                  for st in (1, 2, 3))
        out.append(record)
    return pd.DataFrame(out, columns=[c.name for c in PVE_COLUMNS])


SUBMISSION_COLUMNS = [
    Column("Policy", "markdown", "Hub repo (a link to it) and revision (a link to its page here)", "210px"),
    Column("Status", "str", "queued, validating, rejected, evaluating, qualified, evaluated or error", "105px"),
    Column("Reason", "str", "where it is now (in PvE: its stage, matches played and the time to its verdict), or why, "
           "in words: what was measured, or what to fix", "350px"),
    Column("Queue", "str", "its verdict's place among those in PvE (earliest stage first, the Arena's seeded demos "
           "last, owners in turn, then the earliest push)", "85px"),
    Column("Verdict in", "str", "estimated time to the end of its current PvE stage (stage 1: its PvP verdict)", "140px"),
    Column("Team", "str", "the model card's team name", "100px"),
    Column("Seen", "str", "when discovery first saw the revision (UTC)", "105px"),
    Column("Updated", "str", "its last change of status (UTC)", "105px"),
]


def _minutes(seconds: float) -> str:
    return "under a minute" if seconds < 60 else f"~{round(seconds / 60):d} min"


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def where_now(entry: QueueEntry) -> str:
    """A revision's line while in PvE: "PvE stage 1: 4 of 10 matches, about 3 min to a verdict"."""
    of = entry.played + entry.matches_left
    goal = "a verdict" if entry.stage == 1 else f"the end of stage {entry.stage}"
    if entry.eta_s is None:
        when = f"the time to {goal} is known once a match is timed"
    elif entry.eta_s < 60:
        when = f"under a minute to {goal}"
    else:
        when = f"about {round(entry.eta_s / 60):d} min to {goal}"
    return f"PvE stage {entry.stage}: {entry.played} of {of} matches, {when}"


def queue_cells(entry: QueueEntry, total: int) -> tuple[str, str]:
    """A queued revision's Queue and Verdict in cells (of `total` queued)."""
    if entry.eta_s is None:
        return f"{_ordinal(entry.place)} of {total}", f"stage {entry.stage}: after the first match is timed"
    return (f"{_ordinal(entry.place)} of {total}",
            f"stage {entry.stage}: {_minutes(entry.eta_s)} ({entry.matches_left} matches at most)")


def queue_key(queue: Mapping[Revision, QueueEntry]) -> tuple[Any, ...]:
    """What the Submissions table shows of `queue` (equal keys: the same cells), for an open
    page to tell whether it changed (`leaderboard.tabs.following`)."""
    return tuple(sorted((str(r), where_now(e), *queue_cells(e, len(queue))) for r, e in queue.items()))


def submissions_table(statuses: Iterable[RevisionState], *, hub_url: str, queue: Mapping[Revision, QueueEntry] | None = None
                      ) -> pd.DataFrame:
    """Every revision seen, newest first, with its status, the reason in words (for those in
    PvE, where they are now: `where_now`), their place in the queue and the forecast of
    their verdict."""
    queue = queue or {}
    total = len(queue)
    rows = []
    for s in statuses:
        entry = queue.get(s.id)
        place, eta = queue_cells(entry, total) if entry is not None else ("", "")
        rows.append({
            "Policy": revision_cell(s.id, hub_url),
            "Status": s.status.value + ("" if s.latest else " (superseded)"),
            "Reason": s.reason if entry is None else where_now(entry) + (f" ({s.reason})" if s.status is not Status.EVALUATING else ""),
            "Queue": place,
            "Verdict in": eta,
            "Team": s.submission.team_name,
            "Seen": pd.Timestamp(s.first_seen, unit="s").strftime("%m-%d %H:%M:%S"),
            "Updated": pd.Timestamp(s.updated, unit="s").strftime("%m-%d %H:%M:%S"),
        })
    return pd.DataFrame(rows, columns=[c.name for c in SUBMISSION_COLUMNS])


def owner_slots(statuses: Iterable[RevisionState], *, active: int, daily: int, exempt: Iterable[str], now: float
                ) -> pd.DataFrame:
    """Each owner's slots (docs/rules.md, "Fair play"): revisions taking part against the
    active limit, and new revisions validated in the last 24 hours against the daily one."""
    free = set(exempt)
    mine: dict[str, list[RevisionState]] = {}
    for s in statuses:
        who = owner_of(s.id.policy_id)
        if who is not None:
            mine.setdefault(who, []).append(s)
    rows = []
    for who, states in sorted(mine.items()):
        part = sum(s.status in ACTIVE and s.latest for s in states)
        today = sum(s.status is not Status.QUEUED and s.first_seen >= now - 86_400 for s in states)
        rows.append({"Owner": who,
                     "Taking part": f"{part}" if who in free or not active else f"{part} of {active}",
                     "New in 24 h": f"{today}" if who in free or not daily else f"{today} of {daily}",
                     "Limits": "exempt" if who in free else ""})
    return pd.DataFrame(rows, columns=["Owner", "Taking part", "New in 24 h", "Limits"])


def now_playing(live: Sequence[LiveMatch], *, hub_url: str, now: float) -> str:
    """The matches in flight, in markdown: track, the submissions in the line-up (linked),
    how many built-ins, the tick, and the Ray node playing it if any."""
    if not live:
        return ("**Now playing:** nothing at the moment. Matches start as soon as a submission is validated "
                "(PvE) or qualified (PvP).")
    lines = [f"**Now playing:** {len(live)} match{'es' if len(live) > 1 else ''}"]
    for m in live:
        subs = [p for p in m.lineup if not is_builtin(p)]
        named = ", ".join(revision_cell(Revision.parse(p), hub_url) for p in subs[:4]) + (f" and {len(subs) - 4} more" if len(subs) > 4 else "")
        builtins = len(m.lineup) - len(subs)
        what = f"PvE stage {m.stage}" if m.track == "pve" else m.track.upper()
        crowd = f"{builtins} built-in team{'s' if builtins != 1 else ''}"
        who = f"{named} against {crowd}" if named else crowd
        where = f" on node `{m.node[:8]}`" if m.node else ""
        lines.append(f"- {what}: {who}; tick {m.tick} of {m.horizon} ({100 * m.tick // max(1, m.horizon)}%), "
                     f"{_minutes(max(0.0, now - m.started))} in{where} · `{m.match_id}`")
    return "\n".join(lines)


def matches_table(
    standings: Standings,
    *,
    policy: str = "",
    track: str = "",
    stage: int | None = None,
    since: str = "",
    until: str = "",
    limit: int = 500,
) -> pd.DataFrame:
    """Recorded matches, newest first, filtered; the winner(s) and top score of each."""
    table = standings.match_summary
    if table.empty:
        return table
    keep = np.ones(len(table), dtype=bool)
    if track:
        keep &= (table["Track"] == track).to_numpy()
    if stage:
        keep &= (table["Stage"] == stage).to_numpy()
    if since:
        keep &= (table["Started"] >= since).to_numpy()
    if until:
        keep &= (table["Started"] <= until + "\uffff").to_numpy()
    if policy:
        needle = policy.lower()
        ids = [standings.policy_matches[p] for p in standings.policy_matches if needle in p.lower()]
        keep &= table["Match"].isin(np.concatenate(ids) if ids else []).to_numpy()
    return table[keep].head(limit).reset_index(drop=True)


#: Points of a policy's rating plot at most (`thinned`): Vega draws it in the browser, and its
#: work grows with them (at 200,000 matches, 500 -> 100 points took ~0.1 s off opening a
#: policy's page here); a plot 1,280 pixels wide shows no more.
PLOT_POINTS = 125


def thinned(frame: pd.DataFrame, at_most: int = PLOT_POINTS) -> pd.DataFrame:
    """At most `at_most` of `frame`'s rows, evenly spaced, its last one kept.

    Example:
        >>> thinned(pd.DataFrame({"x": range(10)}), 4)["x"].tolist()
        [0, 3, 6, 9]
        >>> len(thinned(pd.DataFrame({"x": range(3)}), 4))
        3
    """
    step = -(-len(frame) // at_most) if at_most > 0 else 1
    return frame.iloc[len(frame) - 1::-step].iloc[::-1] if step > 1 else frame


#: The column kinds of a policy's head-to-head (`policy_frames`, its opponent `linked`), fixed:
#: the page sets them once and a redraw sends only the rows (an update of a table's properties
#: made Gradio build it again on the Space, ~6 ms a table, and the browser set each of them).
HEAD_TO_HEAD_KINDS: list[Kind] = ["markdown", "number", "number", "number", "number"]

#: The Matches tab's column kinds (`matches_table`'s columns, its matches and winners linked: `matches_linked`).
MATCHES_KINDS: list[Kind] = ["markdown", "str", "str", "number", "number", "number", "markdown", "number", "number"]


def matches_linked(frame: pd.DataFrame) -> pd.DataFrame:
    """`matches_table`'s rows as the Matches tab shows them: each match linking to its replay,
    each winner to its page (`MATCHES_KINDS`)."""
    return linked(linked(frame, "Match", match_cell), "Winner", policies_cell)


def markdown_table(frame: pd.DataFrame, title: str = "") -> str:
    """`frame` as a Markdown table under `title` (bold), as `gr.Markdown` renders it: numbers
    right-aligned, a cell's "|" escaped, links kept; "" with no row. For a page's small
    tables: a Gradio `Dataframe` costs the browser ~0.07 s to mount (a policy's page had five;
    its recent matches and its exposure's two short tables are now text). By hand: pandas'
    `to_markdown` needs `tabulate`, which leaves a cell's "|" to end the cell.

    Example:
        >>> print(markdown_table(pd.DataFrame({"Policy": ["[a|b](/?policy=a/b)"], "Matches": [3], "Note": [None]})))
        | Policy | Matches | Note |
        |---|---:|---|
        | [a\\|b](/?policy=a/b) | 3 |  |
    """
    if frame.empty:
        return ""

    def cell(value: Any) -> str:
        return ("" if pd.api.types.is_scalar(value) and pd.isna(value) else str(value)).replace("|", "\\|").replace("\n", " ")

    numeric = [pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c]) for c in frame.columns]
    lines = ["| " + " | ".join(cell(c) for c in frame.columns) + " |",
             "|" + "|".join("---:" if n else "---" for n in numeric) + "|",
             *("| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False, name=None))]
    return (f"**{title}**\n\n" if title else "") + "\n".join(lines)


def policy_frames(standings: Standings, player: str, rows: TeamRows | None = None) -> dict[str, pd.DataFrame]:
    """A policy's page: rating over time, per-task means, recent matches, head-to-head; from
    `rows` if given (the team rows of its matches: `TeamRows.around`), else every row."""
    rows = standings.teams if rows is None else rows
    mine = rows.of_player(player)
    trajectory = pd.DataFrame(list(standings.trajectory.get(player, [])), columns=["time", "mu", "sigma"])
    if not trajectory.empty:
        trajectory["time"] = pd.to_datetime(trajectory["time"])
        trajectory["score"] = trajectory["mu"] - 3 * trajectory["sigma"]
    tasks = pd.DataFrame(
        [
            {"track": track, "task": task, "points": float(group[f"{task}_points"].mean())}
            for track, group in mine.groupby("track")
            for task in TASK_NAMES
        ],
        columns=["track", "task", "points"],
    )
    recent = (
        mine.sort_values("started_at", ascending=False)
        .head(20)[["match_id", "started_at", "track", "stage", "rank", "achievement", *POINT_COLUMNS]]
        .rename(columns={"match_id": "Match", "started_at": "Started", "track": "Track", "stage": "Stage", "rank": "Rank", "achievement": "Achievement",
                         **{f"{task}_points": task.capitalize() for task in TASK_NAMES}})
    )
    return {"trajectory": trajectory, "tasks": tasks, "recent": recent.reset_index(drop=True),
            "head_to_head": opponents_met(rows, player)}


def opponents_met(rows: TeamRows, player: str) -> pd.DataFrame:
    """A policy's head to head: per opponent, the matches together, the share of its seats
    `player` finished above (`Won`) and level with (`Tied`), and the mean score difference,
    the most met first. Counted chunk by chunk on the columns' integer codes (a match's rows
    are in one chunk): at 200,000 matches a policy met 96,000 opponent seats, and grouping
    them by their names' strings was a third of its page's time."""
    parts = []
    for chunk in rows:
        own = (chunk["player"] == player).to_numpy() if len(chunk) and "player" in chunk else None
        if own is None or not own.any():
            continue
        played = same_matches(chunk, own)  # its matches' rows first: plain strings are factorized below
        chunk, own = chunk.loc[played, ["match_id", "player", "achievement"]], own[played]
        match, matches = codes(chunk["match_id"])
        who, names = codes(chunk["player"])
        score = chunk["achievement"].to_numpy(dtype=np.int64)
        mine = np.zeros(len(matches) + 1, dtype=np.int64)  # per match, its first seat's score (the last slot: no match)
        mine[match[own][::-1]] = score[own][::-1]
        theirs = ~own & (who >= 0) & (match >= 0)
        seat, diff = who[theirs], mine[match[theirs]] - score[theirs]
        met = np.unique(match[theirs].astype(np.int64) * len(names) + seat) % len(names)  # once per match and opponent
        parts.append(pd.DataFrame({
            "Matches": np.bincount(met, minlength=len(names)), "seats": np.bincount(seat, minlength=len(names)),
            "Won": np.bincount(seat, weights=diff > 0, minlength=len(names)),
            "Tied": np.bincount(seat, weights=diff == 0, minlength=len(names)),
            "Score difference": np.bincount(seat, weights=diff, minlength=len(names)),
        }, index=pd.Index(names, dtype=object, name="Opponent")))
    columns = ["Opponent", "Matches", "Won", "Tied", "Score difference"]
    if not parts:
        return pd.DataFrame(columns=columns)
    total = pd.concat(parts).groupby(level=0).sum()
    total = total[total["seats"] > 0]
    for share in ("Won", "Tied", "Score difference"):
        total[share] = total[share] / total["seats"]
    return (total.astype({"Matches": np.int64}).sort_values("Matches", ascending=False).round(2)
            .reset_index()[columns])


# -- head to head ---------------------------------------------------------------------------

#: Players shown in the heatmap at most (the best by MLE); the API has them all.
HEATMAP_TOP = 30


def _short(player: str) -> str:
    """`owner/name@abcdef1` for a revision, the name for a built-in."""
    return Revision.parse(player).label


def heatmap_players(standings: Standings, *, top: int = HEATMAP_TOP) -> list[str]:
    """The heatmap's players: the best `top` by MLE rating (by TrueSkill's conservative
    score where there is no fit yet), best first."""
    h2h = standings.head_to_head
    mle, ts = standings.mle, standings.trueskill.ratings
    if mle:
        key = {p: -mle[p].rating if p in mle else np.inf for p in h2h.players}
    else:
        key = {p: -ts[p].conservative if p in ts else np.inf for p in h2h.players}
    return sorted(h2h.players, key=lambda p: (key[p], p))[:top]


def _colour(share: float) -> tuple[str, str]:
    """Background and text colour for a share: red below 0.5, white at 0.5, blue above."""
    red, white, blue = np.array([178, 24, 43]), np.array([247, 247, 247]), np.array([33, 102, 172])
    t = abs(share - 0.5) * 2
    rgb = white + t * ((blue if share > 0.5 else red) - white)
    return "#" + "".join(f"{int(round(c)):02x}" for c in rgb), "#ffffff" if t > 0.6 else "#111111"


def heatmap_html(standings: Standings, *, top: int = HEATMAP_TOP) -> str:
    """The head-to-head heatmap as an HTML table (row over column; each cell the share and
    the number of matches together, its 95% interval on hover); "" with no PvP pair yet."""
    h2h = standings.head_to_head
    players = heatmap_players(standings, top=top)
    if len(players) < 2:
        return ""
    index = [h2h.index(p) for p in players]
    cell = "width:36px;min-width:36px;height:34px;text-align:center;font-size:10.5px;line-height:1.15;border:1px solid #fff;padding:0"
    head = "".join(
        f'<th title="{html.escape(p)}" style="writing-mode:vertical-rl;transform:rotate(180deg);font-size:11px;'
        f'font-weight:normal;padding:4px 2px;max-height:180px;white-space:nowrap">{html.escape(_short(p))}</th>'
        for p in players
    )
    rows = []
    for p, i in zip(players, index):
        cells = []
        for q, j in zip(players, index):
            if i == j:
                cells.append(f'<td class="h2h-self" style="{cell};background:#d9d9d9"></td>')
            elif h2h.met[i, j] == 0:
                cells.append(f'<td class="h2h-cell h2h-never" data-a="{html.escape(p)}" data-b="{html.escape(q)}" '
                             f'title="{html.escape(_short(p))} and {html.escape(_short(q))} never met" '
                             f'style="{cell};background:#eeeeee;color:#999">·</td>')
            else:
                share, met = float(h2h.share[i, j]), int(h2h.met[i, j])
                background, ink = _colour(share)
                title = (f"{_short(p)} above {_short(q)} in {share:.0%} of {met} matches "
                         f"(95% interval {h2h.low[i, j]:.2f} to {h2h.high[i, j]:.2f}; "
                         f"{int(h2h.wins[i, j])} won, {int(h2h.ties[i, j])} tied, {int(h2h.wins[j, i])} lost)")
                cells.append(f'<td class="h2h-cell" data-a="{html.escape(p)}" data-b="{html.escape(q)}" data-share="{share:.4f}" '
                             f'title="{html.escape(title)}" style="{cell};background:{background};color:{ink}">'
                             f'{share:.2f}<br><span style="opacity:0.85">{met}</span></td>')
        rows.append(f'<tr><th style="text-align:right;font-size:12px;font-weight:normal;padding:0 6px;white-space:nowrap" '
                    f'title="{html.escape(p)}">{html.escape(_short(p))}</th>{"".join(cells)}</tr>')
    return (f'<div style="overflow-x:auto"><table class="h2h-heatmap" style="border-collapse:collapse">'
            f'<thead><tr><th></th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def heatmap_caption(standings: Standings, *, top: int = HEATMAP_TOP) -> str:
    """What the heatmap shows, and what it leaves out."""
    total = len(standings.head_to_head.players)
    shown = min(total, top)
    cut = f" It shows the best {shown} of {total} players by MLE rating; the `/head_to_head` API has every pair." if total > top else ""
    return ("Each cell: the share of their matches together in which the **row** player finished above the **column** "
            "player (ties count half; a match counts once however many seats the two held), and under it the number of "
            "matches. Blue: the row player is ahead, red: behind. Hover a cell for its 95% (Wilson) interval and its "
            f"wins, ties and losses.{cut}")


def cycles_markdown(h2h: HeadToHead) -> str:
    """The clear cycles as a list, or what would make one."""
    rule = (f"every pair in it met at least {MIN_MEETINGS} times and the whole 95% interval of each "
            "\"beats\" lies above 0.5")
    if not h2h.cycles:
        return (f"**Clear cycles:** none yet. A cycle (a beats b beats c beats a) is listed when {rule}; "
                "they appear as pairs meet more often, if the field has any.")
    lines = [f"**Clear cycles** ({rule}): {h2h.cycle_count} in all"
             + (f", the {len(h2h.cycles)} with the strongest weakest edge listed" if h2h.cycle_count > len(h2h.cycles) else "")
             + ". No single rating can order the players of a cycle (each edge is tested at 95%: among many pairs, a "
             "cycle can also arise by chance, and one whose weakest edge is near its bound is the likeliest)."]
    for cycle in h2h.cycles:
        steps = [f"{_short(p)} beats {_short(q)} ({s:.2f})" for p, q, s in
                 zip(cycle.players, cycle.players[1:] + cycle.players[:1], cycle.shares)]
        lines.append("- " + ", ".join(steps))
    return "\n".join(lines)


def nash_table(standings: Standings) -> pd.DataFrame:
    """Players by Nash average, best first, with their weight in the mix and the other ratings."""
    h2h = standings.head_to_head
    mle = standings.mle
    table = pd.DataFrame({
        "Player": [_short(p) for p in h2h.players],
        "Nash avg": [h2h.nash[p] for p in h2h.players],
        "Weight in the mix": [h2h.nash_weight[p] for p in h2h.players],
        "MLE": [mle[p].rating if p in mle else np.nan for p in h2h.players],
        "Opponents met": [int(np.count_nonzero(h2h.met[i])) for i in range(len(h2h.players))],
    }, columns=["Player", "Nash avg", "Weight in the mix", "MLE", "Opponents met"])
    return table.sort_values(["Nash avg", "MLE"], ascending=False).round(3).reset_index(drop=True)


#: Pairs in one answer of `/head_to_head` at most (about 1.6 MB of JSON): a field of 500
#: revisions has 250,000 ordered pairs (67 MB in one answer before it was paged).
PAIRS_PAGE = 10_000


def head_to_head_json(h2h: HeadToHead, *, player: str = "", offset: int = 0, limit: int = PAIRS_PAGE) -> dict:
    """The `/head_to_head` API's answer: players, the ordered pairs that met (only those
    with `player` in a or b, if given) a page at a time (`limit` from `offset`; `pairs_total`
    in all, `next_offset` the next page's or None), the clear cycles as lists of players,
    and the Nash average with each player's weight in the mix."""
    offset, limit = max(0, int(offset or 0)), max(1, min(int(limit or PAIRS_PAGE), PAIRS_PAGE))
    total = h2h.count_pairs(naming=player)
    return {
        "players": list(h2h.players),
        "pairs": h2h.pairs(naming=player, offset=offset, limit=limit),
        "pairs_total": total,
        "offset": offset,
        "next_offset": offset + limit if offset + limit < total else None,
        "cycles": [list(c.players) for c in h2h.cycles],
        "nash": [{"player": p, "rating": h2h.nash[p], "weight": h2h.nash_weight[p]} for p in h2h.players],
    }
