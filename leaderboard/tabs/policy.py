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
from leaderboard import charts, exposure, meter, tables
from leaderboard.tabs.context import Pager, TabContext, pager

#: The tab's note before any policy has played.
EMPTY = "No policy has played yet: its rating, task profile and rivals appear here after its first match."
#: Its note while the chosen policy has played no PvP match.
NO_RATING = "No PvP match for this policy yet: its TrueSkill over time appears after its first PvP match."

#: How many policies' pages the Space keeps computed (for the standings in view): a page's
#: head, its head to head and its opponents are three views of one computation, and each paged
#: table is drawn again alone when its page or order changes.
PAGES_KEPT = 8


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


@dataclass(frozen=True)
class ExposureSection:
    """The exposure ledger's components (`exposure_section`): its line, the box of its tables
    (shown once a revision has played), the tracks' and seats' tables, and the opponents'
    table with its pager (every opponent of a revision that met all 499 others is 10 pages)."""

    line: gr.Markdown
    box: gr.Column
    tracks: gr.Markdown
    seats: gr.Markdown
    opponents: gr.Dataframe
    paging: Pager


def exposure_section(page: TabContext) -> ExposureSection:
    """The exposure ledger's line and tables (hidden until a policy that has played is
    chosen) and the `/exposure` endpoint."""
    gr.Markdown("### Exposure: what these figures rest on", elem_id="policy-exposure-title")
    line = gr.Markdown(elem_id="policy-exposure-note")
    with gr.Column(visible=False, elem_id="policy-exposure-tables") as box:
        tracks = gr.Markdown(elem_id="policy-exposure")  # a row per track: text (`tables.markdown_table`)
        seats = gr.Markdown(elem_id="policy-exposure-seats")
        opponents = gr.Dataframe(label="Opponents: matches together, seats faced, share of the opponent seats",
                                 elem_id="policy-opponents-table", elem_classes=["arena-paged"], interactive=False)
        paging = pager("policy-opponents")
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
    return ExposureSection(line, box, tracks, seats, opponents, paging)


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

    def viewed(player: str) -> str | None:
        """The policy the page's views draw for the chooser's `player`: while none is chosen,
        "" (the empty page) if no policy has played yet, and otherwise None, nothing (opening
        the tab chooses the leader)."""
        return known(player) if player else ("" if not players() else None)

    def policy_page(player: str) -> tuple[Any, ...]:
        """The page over the paged tables for the page's view, and the policy it shows."""
        chosen = viewed(player)
        if chosen is None:
            return tuple(gr.skip() for _ in range(len(head_outputs) + 1))
        return (*head_of(chosen), chosen)

    def paged_view(drawn: Callable[..., tuple[Any, ...]], outputs: int) -> Callable[..., tuple[Any, ...]]:
        def view(player: str, sort: str, at: float | None) -> tuple[Any, ...]:
            chosen = viewed(player)
            return (gr.skip(),) * outputs if chosen is None else drawn(chosen, sort, at)

        return view

    def policy(player: str) -> tuple[Any, ...]:
        """A policy's page: its TrueSkill over time, points per task, recent matches, head to
        head, exposure ledger, settling meter and links. The head to head and the exposure's
        opponents come 50 rows a page, the first here (the line after each says how many);
        `/head_to_head` and `/exposure` answer every one.

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

    def measured(player: str) -> dict[str, Any]:
        """What `player`'s page shows, computed once for the standings in view and kept for the
        last `PAGES_KEPT` policies: its frames (`tables.policy_frames`), its recent matches and
        head to head linked, its exposure ledger and tables. Read from the rows of its matches
        alone (`TeamRows.around`)."""
        def build() -> dict[str, Any]:
            standings = data.standings()
            rows = standings.teams.around(player)
            frames = tables.policy_frames(standings, player, rows)
            ledger = exposure.revision_exposure(rows, player) if player else None
            return {"frames": frames, "recent": tables.linked(frames["recent"], "Match", tables.match_cell),
                    "rivals": tables.linked(frames["head_to_head"], "Opponent", lambda p: tables.player_cell(p, data.hub_url)),
                    "ledger": ledger, "exposure": exposure.exposure_frames(ledger) if ledger else {}}

        return page.kept("policy", build, player, slots=PAGES_KEPT)

    def head_of(player: str) -> tuple[Any, ...]:
        """The page over its paged tables: charts, recent matches, notes, the exposure line and
        small tables, the settling meter, the heading (`head_outputs`)."""
        found = measured(player)
        frames, ledger, shown = found["frames"], found["ledger"], found["exposure"]
        note = EMPTY if not player else NO_RATING if frames["trajectory"].empty else ""
        return (charts.rating_chart(tables.thinned(frames["trajectory"])), charts.task_chart(frames["tasks"]),
                tables.markdown_table(found["recent"], "Recent matches"), gr.Markdown(note, visible=bool(note)),
                gr.Column(visible=not found["rivals"].empty),
                exposure.exposure_markdown(ledger) if ledger else exposure.EMPTY,
                gr.Column(visible=any(not f.empty for f in shown.values())),
                tables.markdown_table(shown.get("tracks", pd.DataFrame()), "Matches, opponents and maps per track"),
                tables.markdown_table(shown.get("seats", pd.DataFrame()), "Seats dealt: spawn edge and slot"),
                meter.meter_markdown(page.settling().get(player)), tables.policy_heading(player, data.hub_url) if player else "")

    def rivals_of(player: str, sort: str = "", at: float | None = 1) -> tuple[Any, ...]:
        """A page of its head to head in `sort`'s order, the line saying which, the page moved to."""
        return Pager.view(measured(player)["rivals"], sort, at)

    def opponents_of(player: str, sort: str = "", at: float | None = 1) -> tuple[Any, ...]:
        """A page of its exposure's opponents in `sort`'s order, the line, the page moved to."""
        return Pager.view(measured(player)["exposure"].get("opponents", pd.DataFrame()), sort, at)

    def page_of(player: str) -> tuple[Any, ...]:
        """The whole page of `player` (`outputs`): its paged tables on their first page, in
        their own order."""
        player = player or ""
        *head, heading = head_of(player)
        (rivals, rivals_line, _, rivals_bar), (opponents, opponents_line, _, opponents_bar) = rivals_of(player), opponents_of(player)
        return (*head, rivals, rivals_line, 1, rivals_bar, opponents, opponents_line, 1, opponents_bar, "", "", heading)

    with gr.Tab("Policy", id="policy") as tab:
        chooser = gr.Dropdown(choices=[], value=None, label="Policy",
                              elem_id="policy-choice", allow_custom_value=True)
        heading = gr.Markdown(elem_id="policy-heading")
        policy_settling = gr.Markdown(elem_id="policy-settling")
        policy_note = gr.Markdown(visible=False, elem_id="policy-empty")
        # SVG drawn on the Space (`leaderboard.charts`: Vega's plots took ~0.1 s each to show)
        with gr.Row():
            rating_plot = gr.HTML(elem_id="policy-rating", js_on_load=None, min_width=420)
            task_plot = gr.HTML(elem_id="policy-tasks", js_on_load=None, min_width=420)
        recent = gr.Markdown(elem_id="policy-recent")  # 20 rows: text (`tables.markdown_table`)
        with gr.Column(visible=False, elem_id="policy-h2h-box") as h2h_box:  # shown once it has a row
            h2h = gr.Dataframe(label="Head-to-head (share of matches ranked above the opponent)", elem_id="policy-h2h-table",
                               elem_classes=["arena-paged"], interactive=False, datatype=tables.HEAD_TO_HEAD_KINDS)
            h2h_paging = pager("policy-h2h")
        ledger = exposure_section(page)
        shown = gr.State("")  # the policy whose page this page shows (not a parameter of the API)
    head_outputs = [rating_plot, task_plot, recent, policy_note, h2h_box, ledger.line, ledger.box, ledger.tracks, ledger.seats,
                    policy_settling, heading]
    rivals_outputs = [h2h, *h2h_paging.outputs]
    opponents_outputs = [ledger.opponents, *ledger.paging.outputs]
    # the whole page, as a choice, the API and the tab's opening draw it (the tables' orders
    # reset), the rating chart first and the heading last, as `/policy` always answered
    outputs = [*head_outputs[:-1], *rivals_outputs, *opponents_outputs, h2h_paging.sort, ledger.paging.sort, heading]
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
    page.follow(policy_page, inputs=[chooser], outputs=[*head_outputs, shown], concurrency_id=POLICY_PAGE)
    # each paged table alone: a page or an order asked for draws only that table
    for drawn, paging, table_outputs in ((rivals_of, h2h_paging, rivals_outputs),
                                         (opponents_of, ledger.paging, opponents_outputs)):
        page.follow(paged_view(drawn, len(table_outputs)), inputs=[chooser, *paging.inputs], outputs=table_outputs,
                    triggers=[c.change for c in paging.inputs], quiet=True)
    return PolicyTab(chooser, players)
