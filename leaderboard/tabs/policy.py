"""The "Policy" tab (id `policy`): one policy's rating over time, task profile, recent
matches, rivals, settling meter and exposure ledger; the `/policy` and `/exposure` endpoints."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from arena.errors import InvalidArgumentError
from arena.links import Opened, resolve_policy
from arena.revision import Revision
from history.index import TeamRows
from leaderboard import exposure, meter, tables
from leaderboard.tabs.context import TabContext

#: The tab's note before any policy has played.
EMPTY = "No policy has played yet: its rating, task profile and rivals appear here after its first match."
#: Its note while the chosen policy has played no PvP match.
NO_RATING = "No PvP match for this policy yet: its TrueSkill over time appears after its first PvP match."

#: The exposure tables, by their key in `leaderboard.exposure.exposure_frames`.
EXPOSURE_TABLES = ("tracks", "seats", "opponents")


#: The queue the policy page's events share (`policy_tab`, `leaderboard.pages.build`).
POLICY_PAGE = "policy_page"

#: In the browser, before a policy chosen in the list is drawn: its address becomes the page's
#: (`/?policy=...`, `arena.links`), so the address a visitor copies is the policy they see,
#: and Back returns to the one before.
CHOSEN_JS = """(chosen) => {
  if (chosen && window.arenaAddress) window.arenaAddress("?policy=" + encodeURIComponent(chosen)
    .replace(/%2F/g, "/").replace(/%40/g, "@").replace(/%3A/g, ":"));
  return chosen;
}"""


@dataclass(frozen=True)
class PolicyTab:
    """What `leaderboard.pages.build` needs of the tab: the `chooser` (the address sets it)
    and `players()`, the list it offers (the PvP leaderboard's order, then the rest)."""

    chooser: gr.Dropdown
    players: Callable[[], list[str]]


def exposure_view(teams: TeamRows, player: str) -> tuple[Any, ...]:
    """The exposure ledger of `player` (none: the empty line): what its figures rest on
    (`leaderboard.exposure`), as the line and the tables of `exposure_section`."""
    ledger = exposure.revision_exposure(teams, player) if player else None
    shown = exposure.exposure_frames(ledger) if ledger else {}
    line = exposure.exposure_markdown(ledger) if ledger else exposure.EMPTY
    return (line, *(gr.Dataframe(value=shown[k] if k in shown else pd.DataFrame(), visible=k in shown and not shown[k].empty)
                    for k in EXPOSURE_TABLES))


def exposure_section(page: TabContext) -> list[Any]:
    """The exposure ledger's line and tables (hidden until a policy is chosen) and the
    `/exposure` endpoint."""
    gr.Markdown("### Exposure: what these figures rest on", elem_id="policy-exposure-title")
    shown = [gr.Markdown(elem_id="policy-exposure-note"),
             gr.Dataframe(label="Matches, opponents and maps per track", elem_id="policy-exposure",
                          interactive=False, visible=False),
             gr.Dataframe(label="Seats dealt: spawn edge and slot", elem_id="policy-exposure-seats",
                          interactive=False, visible=False),
             gr.Dataframe(label="Opponents: matches together, seats faced, share of the opponent seats",
                          elem_id="policy-exposure-opponents", interactive=False, visible=False)]
    counted: dict[str, Any] = {}  # every revision's exposure totals, kept until the rows change

    def api_exposure(revision: str = "") -> dict:
        """The exposure ledger: what a revision's figures rest on (matches, opponents, maps and
        seats per track, and whether it ever met a revision of its own owner).

        Args:
            revision: `owner/name@sha` (one revision), `owner/name` (each of its revisions),
                `builtin:NAME`, or "" for every revision's totals.
        """
        teams = page.data.standings().teams
        if counted.get("teams") is not teams:
            counted.update(teams=teams, totals=exposure.exposure_totals(teams))
        return exposure.exposure_json(teams, revision or "", totals=counted["totals"])

    page.api(api_exposure, "exposure")
    return shown


def policy_tab(page: TabContext) -> PolicyTab:
    """The tab's components and endpoints; the chosen policy's page drawn when it is chosen
    (and at the load, when the address names it), and kept up to date."""
    data = page.data

    def players() -> list[str]:
        def ordered() -> list[str]:
            standings = data.standings()  # the PvP leaderboard's order first, then the rest by name
            order = {p: i for i, p in enumerate(tables.ranked_players(standings))}
            return sorted(standings.teams.players(), key=lambda p: (order.get(p, len(order)), p))

        return list(page.kept("players", ordered))

    def choose(chosen: str = "", *, keep: bool = False) -> Any:
        choices = players()
        if keep or not chosen:  # the list only: a tick's value could be older than the visitor's choice
            return gr.Dropdown(choices=choices)
        return gr.Dropdown(choices=choices, value=chosen)

    def opened(chosen: str, shown: str, request: gr.Request) -> tuple[Any, ...]:
        """The tab opened: the page of `chosen`, or else of the PvP leader (chosen here), drawn
        unless this page shows it already, or the page's address names a policy: its load,
        or the link followed in the page to that address, draws that (a page served at a
        policy's address opens on this tab before its load answers). Not before: a policy's
        page at 200,000 matches is most of a page load's work, and most visitors never open it."""
        skip = tuple(gr.skip() for _ in range(len(outputs) + 2))
        if Opened.from_query(dict(request.query_params) if request is not None else {}).policy:
            return skip
        if not chosen:
            choices = players()
            if not choices:
                return skip
            chosen = choices[0]
            return (gr.Dropdown(value=chosen), *page_of(chosen), chosen)
        player = known(chosen)
        if player is None or player == shown:
            return skip
        return (gr.skip(), *page_of(player), player)

    def policy_page(player: str) -> tuple[Any, ...]:
        """`policy`'s page for the page's view, and the policy it shows; while none is chosen,
        what will fill it if no policy has played yet, and otherwise nothing (opening the tab
        chooses the leader)."""
        chosen = known(player) if player else ("" if not players() else None)
        if chosen is None:
            return tuple(gr.skip() for _ in range(len(outputs) + 1))
        return (*page_of(chosen), chosen)

    def policy(player: str) -> tuple[Any, ...]:
        """A policy's page: its TrueSkill over time, points per task, recent matches, head to
        head, exposure ledger, settling meter and links.

        Args:
            player: `owner/name` (its latest revision), `owner/name@SHA` (a commit's first
                characters will do), or `builtin:NAME`, as the page's address names it.
        """
        player = named(player)
        return (*page_of(player), player)

    def named(player: str) -> str:
        """The rated player `player` names (`arena.links.resolve_policy`, as the page's address
        does); a revision that has not played yet as it is (its page says so).

        Raises:
            gr.Error: `player` names neither (the visitor, or the API's caller, is told what to write).
        """
        if not player:
            return ""
        found = resolve_policy(player, players(), page.latest_players())
        if found:
            return found
        try:
            return Revision.parse(player).player
        except InvalidArgumentError:
            raise gr.Error(f"{player!r} names no policy of this Arena: write owner/name (its latest revision), "
                           "owner/name@SHA (a commit's first characters will do) or builtin:NAME, as the PvP "
                           "table and /submissions list them.") from None

    def known(player: str) -> str | None:
        """`named(player)`, or None where it names nothing (the chooser holds what a visitor
        typed, and was told so when they typed it)."""
        try:
            return named(player)
        except gr.Error:
            return None

    def page_of(player: str) -> tuple[Any, ...]:
        standings = data.standings()
        frames = tables.policy_frames(standings, player or "")
        note = EMPTY if not player else NO_RATING if frames["trajectory"].empty else ""
        recent, recent_kinds = tables.linked(frames["recent"], "Match", tables.match_cell)
        rivals, rivals_kinds = tables.linked(frames["head_to_head"], "Opponent",
                                             lambda p: tables.revision_cell(Revision.parse(p), data.hub_url))
        return (tables.thinned(frames["trajectory"]), frames["tasks"], gr.Dataframe(recent, datatype=recent_kinds),
                gr.Dataframe(rivals, datatype=rivals_kinds),
                gr.Markdown(note, visible=bool(note)), *exposure_view(standings.teams, player),
                meter.meter_markdown(page.settling().get(player or "")),
                tables.policy_heading(player, data.hub_url) if player else "")

    with gr.Tab("Policy", id="policy") as tab:
        chooser = gr.Dropdown(choices=[], value=None, label="Policy",
                              elem_id="policy-choice", allow_custom_value=True)
        heading = gr.Markdown(elem_id="policy-heading")
        policy_settling = gr.Markdown(elem_id="policy-settling")
        policy_note = gr.Markdown(visible=False, elem_id="policy-empty")
        rating_plot = gr.LinePlot(x="time", y="mu", title="TrueSkill mu over PvP matches", elem_id="policy-rating")
        task_plot = gr.BarPlot(x="task", y="points", color="track", title="Mean points per task", elem_id="policy-tasks")
        recent = gr.Dataframe(label="Recent matches", elem_id="policy-recent", interactive=False)
        h2h = gr.Dataframe(label="Head-to-head (share of matches ranked above the opponent)", elem_id="policy-h2h", interactive=False)
        exposure_shown = exposure_section(page)
        shown = gr.State("")  # the policy whose page this page shows (not a parameter of the API)
    outputs = [rating_plot, task_plot, recent, h2h, policy_note, *exposure_shown, policy_settling, heading]
    # One at a time, in the order sent, with the timer's refresh of the page: a refresh sent
    # before a visitor chose another policy answers before that choice does, never after it.
    # A visitor's choice draws (`input`, not `change`: the chooser set by the load or by the
    # tab's opening is drawn by those, and the API's answer does not depend on a session).
    # The policy chosen becomes the page's address (`window.arenaAddress`: `leaderboard.pages.GO_JS`).
    chooser.input(policy, inputs=[chooser], outputs=[*outputs, shown], api_name="policy", concurrency_id=POLICY_PAGE,
                  js=CHOSEN_JS)
    # The tab's opening shows its progress nowhere (on the State): a page served at a policy's
    # address opens on this tab with that policy's page drawn, and its opening, which draws
    # nothing then, greyed it for 0.5-0.9 s at 200,000 matches (while the page mounted the
    # rest). `show_progress="hidden"` still showed its timer.
    tab.select(opened, inputs=[chooser, shown], outputs=[chooser, *outputs, shown], api_visibility="private",
               concurrency_id=POLICY_PAGE, show_progress_on=[shown])
    page.follow(lambda chosen: (choose(chosen, keep=True),), inputs=[chooser], outputs=[chooser],
                first=lambda chosen: (choose(chosen),), triggers=[tab.select], lazy=True, quiet=True)
    page.follow(policy_page, inputs=[chooser], outputs=[*outputs, shown], concurrency_id=POLICY_PAGE)
    return PolicyTab(chooser, players)
