"""The Space's pages: the banner and status over every tab, the tabs in order, and what
refreshes them (each tab is a module of `leaderboard.tabs`).

Each callback only reads the latest `Standings` (kept fresh in the background by
`leaderboard.refresher.StandingsRefresher`) and formats it with `leaderboard.tables`, so every
page answers quickly. Named API endpoints (`/pvp_table`, `/pve_table`, `/submissions`,
`/matches`, `/policy`, `/exposure`, `/settling`, `/now_playing`, `/head_to_head`, `/analytics`,
`/isolation`) make the same data available through `gradio_client`; each tab's are in its module.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import gradio as gr
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware

from arena.activity import LiveMatch, QueueEntry
from arena.errors import UnsupportedGradioError
from arena.links import Opened, resolve_policy
from arena.revision import Revision
from arena.rules import MATCH
from arena.settings import ArenaSettings
from history.audits import AuditSummary
from leaderboard import tables
from leaderboard.analytics import analytics_tab
from leaderboard.refresher import StandingsRefresher
from leaderboard.tabs.about import about_tab
from leaderboard.tabs.context import TabContext
from leaderboard.tabs.head_to_head import head_to_head_tab
from leaderboard.tabs.matches import matches_tab
from leaderboard.tabs.policy import POLICY_PAGE, policy_tab
from leaderboard.tabs.pve import pve_tab
from leaderboard.tabs.pvp import pvp_tab
from leaderboard.tabs.replay import replay_tab
from leaderboard.tabs.submissions import submissions_tab

#: Seconds between a page's looks at the standings (it redraws only what changed, so a
#: match recorded reaches an open page within this and the refresher's second).
REFRESH_S = 5.0


def isolation_banner(report: Mapping[str, Any] | None) -> str:
    """The banner over every page while isolation is missing (`matchmaking.isolation`):
    red where submitted code runs anyway (`warn`), amber where it waits (`strict`);
    nothing while the self-test runs or where everything holds."""
    if not report or report.get("holds"):
        return ""
    missing = ", ".join(report.get("missing", []))
    if report.get("refuses_submitted_code"):
        color, text = ("#8a5a00", f"Isolation missing on this Space ({missing}): submitted code does not run here "
                       "(NMMO_ARENA_ISOLATION=strict). Submissions wait in the queue; the built-in teams play on.")
    else:
        color, text = ("#b00020", f"WARNING: isolation missing on this Space ({missing}), and submitted code runs anyway "
                       "(NMMO_ARENA_ISOLATION=warn). A submission could reach what this Space's user can.")
    return (f'<div role="alert" style="background:{color};color:#fff;padding:10px 14px;border-radius:6px;font-weight:600">'
            f"{html.escape(text)} Details: the <code>/isolation</code> endpoint, or <code>python -m matchmaking.isolation</code> "
            "on the host.</div>")


def paused(report: Mapping[str, Any] | None, restoring: str | None) -> str | None:
    """Why play is paused now, in words (None: it runs): a restore in progress, or a Space
    whose isolation is missing and refuses submitted code (`NMMO_ARENA_ISOLATION=strict`)."""
    if restoring is not None:
        return f"the Space is restoring its history ({restoring}); nothing is played meanwhile"
    if report and report.get("refuses_submitted_code"):
        return (f"isolation is missing here ({', '.join(report.get('missing', []))}), so submitted code does not run "
                "(NMMO_ARENA_ISOLATION=strict); the built-in teams play on")
    return None


def operator_markdown(lines: list[str]) -> str:
    """The operator's line: the Hub's state and any damaged state set aside."""
    return "\n".join(f"- {line}" for line in lines)


#: Seconds between refreshes of what changes by the second: statuses, queue, matches in flight.
LIVE_REFRESH_S = 2.0


@dataclass(frozen=True)
class StatusLines:
    """The lines over every tab, refreshed by the second: `view()` answers `outputs` (the
    matches in flight, the operator's status, the isolation banner)."""

    outputs: list[Any]
    view: Callable[[], tuple[str, str, str]]


def status_lines(page: TabContext, *, operator: Callable[[], list[str]], live: Callable[[], list[LiveMatch]],
                 isolation: Callable[[], Mapping[str, Any] | None]) -> StatusLines:
    """The isolation banner, the operator's status and the matches in flight (`build`'s
    `operator`, `live` and `isolation`), and the `/now_playing` and `/isolation` endpoints."""

    def now_playing() -> str:
        return tables.now_playing(live(), hub_url=page.data.hub_url, now=time.time())

    banner = gr.HTML(lambda: isolation_banner(isolation()), elem_id="isolation-banner")
    status = gr.Markdown(lambda: operator_markdown(operator()), elem_id="operator-status")
    playing = gr.Markdown(now_playing, elem_id="now-playing")

    def api_now_playing() -> list[dict]:
        """The matches being played now: their track, teams, tick and expected end."""
        return [m.to_dict() for m in live()]

    def api_isolation() -> dict:
        """The isolation self-test's report on this machine ({"state": "running"} until it ends)."""
        return dict(isolation() or {"state": "running"})

    page.api(api_now_playing, "now_playing")
    page.api(api_isolation, "isolation")
    return StatusLines([playing, status, banner],
                       lambda: (now_playing(), operator_markdown(operator()), isolation_banner(isolation())))


def build(data: StandingsRefresher, settings: ArenaSettings | None = None, *,
          operator: Callable[[], list[str]] = list,
          live: Callable[[], list[LiveMatch]] = list,
          queue: Callable[[], Mapping[Revision, QueueEntry]] = dict,
          audits: Callable[[], AuditSummary | None] = lambda: None,
          restoring: Callable[[], str | None] = lambda: None,
          isolation: Callable[[], Mapping[str, Any] | None] = lambda: None) -> gr.Blocks:
    """The Blocks app over `data`, describing the rules as `settings` run them.

    Args:
        data: the standings, kept fresh in the background.
        settings: the rules the Space runs with (their values appear in the prose).
        operator: the operator's status lines (the Hub, damaged files).
        live: the matches in flight (`matchmaking.service.live`).
        queue: each revision's place in the PvE queue and its forecast (`Matchmaker.queue`).
        audits: what the audits of recorded matches found (`Matchmaker.audit_summary`).
        restoring: while the Space restores its state from the history dataset, how far it
            has got (`Arena.restoring`); None once done. Meanwhile the tables say they are
            restoring rather than empty.
        isolation: the isolation self-test's report (`IsolationReport.to_dict`; None while it
            runs): served at `/isolation`, and a banner while a mechanism is missing.
    """
    page = TabContext(data, settings or ArenaSettings(), restoring)
    with gr.Blocks(title="NMMO Arena") as demo:
        gr.Markdown(
            f"# NMMO Arena\nNeural MMO policies ranked in free-for-all matches of {MATCH.num_teams} teams of {MATCH.team_size}, "
            "as in the IJCAI 2022 challenge. Tables refresh every few seconds from the match history."
        )
        lines = status_lines(page, operator=operator, live=live, isolation=isolation)
        timer = gr.Timer(REFRESH_S)
        fast = gr.Timer(LIVE_REFRESH_S)
        with gr.Tabs() as tabs:  # the page's order
            pvp = pvp_tab(page, demo=demo, timer=timer)
            head_to_head_tab(page, demo=demo, timer=timer)
            pve = pve_tab(page)
            subs = submissions_tab(page, queue)
            policy = policy_tab(page)
            analytics_tab(demo, data.analytics, lambda: data.standings().teams, refresh_s=REFRESH_S)
            matches = matches_tab(page)
            replay = replay_tab(page)
            about_tab(page, audits, paused=lambda: paused(isolation(), restoring()))
        for name, endpoint in page.endpoints.items():
            gr.api(endpoint, api_name=name)
        # The tab the address asks for, opened in the browser: an event that updates the Tabs
        # themselves makes Gradio's page copy every component's value inside them (on each of
        # its loading states), which at 500 revisions cost a page load 4 s of its main thread.
        opened_tab = gr.Textbox(visible=False, elem_id="opened-tab")
        opened_tab.change(None, inputs=opened_tab, js=OPEN_TAB_JS)

        def refresh(*values: Any):
            pvp_values, rest = values[:len(pvp.inputs)], values[len(pvp.inputs):]
            chosen, pve_values, match_values = rest[0], rest[1:1 + len(pve.inputs)], rest[1 + len(pve.inputs):]
            return (*pvp.view(*pvp_values), *pve.view(*pve_values), *matches.view(*match_values), policy.choose(chosen, keep=True))

        refreshed = [*pvp.inputs, policy.chooser, *pve.inputs, *matches.inputs]
        seen = page.tick(timer, refresh, inputs=refreshed, outputs=[*pvp.outputs, *pve.outputs, *matches.outputs, policy.chooser])

        def on_load(request: gr.Request) -> tuple[Any, ...]:
            """What each visitor's page starts with (values are computed per page load, never
            frozen at build time): which empty notes show, the policy to open on, and what
            the page's address asks for (`arena.links`: a tab, a search, a policy, a match at
            a tick)."""
            seen_now = page.seen(*(_default(c) for c in refreshed))  # first: a change meanwhile is sent at the tick
            opened = Opened.from_query(dict(request.query_params) if request is not None else {})
            chosen = resolve_policy(opened.policy, policy.players(), page.latest_players()) if opened.policy else ""
            asked = [value for name, controls in controlled.items() for value in _asked(opened, name, controls)]
            return (*(table.view(*(_default(c) for c in table.inputs))[1] for table in (pvp, pve, subs, matches)),
                    policy.choose(chosen), opened.tab or gr.skip(), *asked,
                    opened.q if opened.tab == "matches" and opened.q else gr.skip(),
                    opened.match or gr.skip(),
                    {"match_id": opened.match, "tick": opened.tick} if opened.match else gr.skip(),
                    # what the timer's refresh would send now, this page has: its first tick sends
                    # nothing (an address that sets a filter or a policy: it compares with those).
                    # A table's own load may read standings a moment older than `state`: it is
                    # then one change behind until the next change, which is sent whole.
                    seen_now if opened == Opened.from_query({}) else gr.skip())

        controlled = {name: t.controls for name, t in (("pvp", pvp), ("pve", pve), ("submissions", subs)) if t.controls}
        demo.load(on_load, outputs=[pvp.empty, pve.empty, subs.empty, matches.empty, policy.chooser, opened_tab,
                                    *(c for controls in controlled.values() for c in controls.inputs),
                                    matches.inputs[0], replay.match_id, replay.viewer, seen],
                  api_visibility="private")  # a chosen policy's page follows, from the chooser's change

        page.tick(timer, policy.view, inputs=[policy.chooser], outputs=policy.outputs,  # the open policy's page, too
                  concurrency_id=POLICY_PAGE)

        def refresh_live(*values: Any):
            return (*subs.view(*values), *lines.view())

        page.live(fast, refresh_live, inputs=[*subs.inputs], outputs=[*subs.outputs, *lines.outputs])
        replay.open_on_select(matches.table, tabs)
    quiet_queue(demo)
    return demo


#: Seconds Gradio's queue waits between looks for work while it has none, and between looks
#: for progress to report. Gradio 6 looks every 1 ms and 10 ms (`gradio.queueing.Queue`'s
#: `sleep_when_free` and `progress_update_sleep_when_free`, with no setting): measured on a
#: Space with no page open, its server thread spent 2.7 CPU-seconds a minute on those looks,
#: more than all the rest of the idle Space. 10 ms adds at most that to an event's start (a
#: search's target is 200 ms); the pages report no progress.
QUEUE_LOOK_S = (0.01, 0.1)


def quiet_queue(demo: gr.Blocks) -> None:
    """Make `demo`'s queue look for work every `QUEUE_LOOK_S` rather than every millisecond.
    Raises `UnsupportedGradioError` if this Gradio's queue has not those attributes (a Gradio upgrade
    renamed them): say so, rather than idle at full cost unawares."""
    queue = demo._queue
    for name, seconds in zip(("sleep_when_free", "progress_update_sleep_when_free"), QUEUE_LOOK_S):
        if not isinstance(getattr(queue, name, None), float):
            raise UnsupportedGradioError(f"gradio.queueing.Queue has no `{name}` in this Gradio ({gr.__version__}): update "
                               "`leaderboard.pages.quiet_queue` to how it now waits for work")
        setattr(queue, name, seconds)


def _default(component: Any) -> Any:
    """A filter's value before anyone changed it (its initial value)."""
    return getattr(component, "value", None)


def _asked(opened: Opened, name: str, controls: Any) -> list[Any]:
    """What the page's address sets in tab `name`'s search, filters and columns (`gr.skip()`
    for each it does not ask about), in `controls.inputs`' order."""
    mine = opened.tab == name
    values = {controls.search: opened.q, controls.owner: opened.owner, controls.status: opened.status,
              controls.settled: opened.settled,
              controls.columns: [c for c in controls.every if c in opened.cols] if opened.cols else ""}
    return [values[c] if mine and values[c] else gr.skip() for c in controls.inputs]


#: Opens the tab whose id it is given (`opened_tab` in `build`), as a click on its button would.
OPEN_TAB_JS = """(tab) => {
  const button = document.querySelector(`button[role="tab"][data-tab-id="${CSS.escape(tab || "")}"]`);
  if (button && button.getAttribute("aria-selected") !== "true") button.click();
  return [];
}"""

#: Page script (Gradio 6 takes it at `launch(js=JS)`, with the CSS: `launch_options`): a click on a
#: table's header sorts the table by that column, a second click the other way. Gradio's
#: Dataframe sorts only from each header's menu (its "⋮"); this clicks that menu's own
#: "Sort ascending" / "Sort descending", so the table keeps Gradio's sort (in the browser:
#: no request, whatever the table's size) and the menu still works as before.
JS = """
() => {
  document.addEventListener("click", (event) => {
    const th = event.target.closest("[id$='-table'] th.header-cell");
    if (!th || event.target.closest(".cell-menu-button, [role=menu]")) return;
    const button = th.querySelector(".cell-menu-button");
    if (!button) return;
    const ascending = th.dataset.arenaSort !== "ascending";
    th.closest("table").querySelectorAll("th.header-cell").forEach((h) => { delete h.dataset.arenaSort; });
    th.dataset.arenaSort = ascending ? "ascending" : "descending";
    const wanted = ascending ? "Sort ascending" : "Sort descending";
    const pick = (tries) => {
      const item = [...document.querySelectorAll(".cell-menu [role=menuitem]")].find((b) => b.textContent.trim() === wanted);
      if (item) item.click(); else if (tries > 0) requestAnimationFrame(() => pick(tries - 1));
    };
    setTimeout(() => { button.click(); pick(20); }, 0);  // after the table's own handling of the click
  }, true);
}
"""

#: Page CSS (Gradio 6 takes it at `launch(css=CSS)`): table headers wrap between words, never
#: inside one (a squeezed header went one letter per line).
CSS = """
.table-wrap th, .table-wrap th * { word-break: normal !important; overflow-wrap: normal !important; hyphens: none; }
#now-playing { font-size: 0.95em; }
"""

def launch_options() -> dict[str, Any]:
    """What every launch of the pages passes to `Blocks.launch` (the Space, the tests, the
    benches): the CSS, the page's script (`JS`), and gzip for responses of 1 KB or more (the
    page, its config, the API's answers; Starlette leaves the event streams that carry a
    page's updates as they are). Gradio builds its FastAPI app at launch, so the middleware
    goes in through `app_kwargs`; a new dict each time, as Gradio adds to it."""
    return {"css": CSS, "js": JS, "app_kwargs": {"middleware": [Middleware(GZipMiddleware, minimum_size=1024)]}}
