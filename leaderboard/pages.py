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
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import gradio as gr
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware

from arena.activity import LiveMatch, QueueEntry
from arena.errors import UnsupportedGradioError
from arena.links import TABS, Opened, resolve_policy
from arena.revision import Revision
from arena.rules import MATCH
from arena.settings import ArenaSettings
from history.audits import AuditSummary
from leaderboard import tables
from leaderboard.analytics import analytics_tab
from leaderboard.first_rows import FirstRows
from leaderboard.refresher import StandingsRefresher
from leaderboard.served import Addressed, ServeDrawn
from leaderboard.tabs.about import about_tab
from leaderboard.tabs.context import TabContext
from leaderboard.tabs.following import GO_ELEM_ID, Following
from leaderboard.tabs.head_to_head import head_to_head_tab
from leaderboard.tabs.matches import matches_tab
from leaderboard.tabs.policy import policy_tab
from leaderboard.tabs.pve import pve_tab
from leaderboard.tabs.pvp import pvp_tab
from leaderboard.tabs.replay import replay_tab
from leaderboard.tabs.submissions import submissions_tab


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


def status_lines(page: TabContext, *, operator: Callable[[], list[str]], live: Callable[[], list[LiveMatch]],
                 isolation: Callable[[], Mapping[str, Any] | None]) -> None:
    """The isolation banner, the operator's status and the matches in flight (`build`'s
    `operator`, `live` and `isolation`), and the `/now_playing` and `/isolation` endpoints."""

    def now_playing() -> str:
        return tables.now_playing(live(), hub_url=page.data.hub_url, now=time.time())

    banner = gr.HTML(elem_id="isolation-banner")
    status = gr.Markdown(elem_id="operator-status")
    playing = gr.Markdown(elem_id="now-playing")

    def view() -> tuple[str, str, str]:
        return now_playing(), operator_markdown(operator()), isolation_banner(isolation())

    def api_now_playing() -> list[dict]:
        """The matches being played now: their track, teams, tick and expected end."""
        return [m.to_dict() for m in live()]

    def api_isolation() -> dict:
        """The isolation self-test's report on this machine ({"state": "running"} until it ends)."""
        return dict(isolation() or {"state": "running"})

    page.api(api_now_playing, "now_playing")
    page.api(api_isolation, "isolation")
    page.follow(view, outputs=[playing, status, banner], key=view)  # they change by the second, whatever the standings do


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
        status_lines(page, operator=operator, live=live, isolation=isolation)
        with gr.Tabs() as tabs:  # the page's order
            pvp = pvp_tab(page)
            head_to_head_tab(page)
            pve = pve_tab(page)
            subs = submissions_tab(page, queue)
            policy = policy_tab(page)
            analytics_tab(page.follow, data.analytics, lambda: data.standings().teams)
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
        controlled = {name: t.controls for name, t in (("pvp", pvp), ("pve", pve), ("submissions", subs)) if t.controls}

        def asked_by(address: Opened, followed: bool = False) -> dict[Any, Any]:
            """What `address` asks for (`arena.links`): a tab, a table's search, filters and
            columns, a policy, a match at a tick. A link `followed` in the page opens its tab
            (the first, if it names none) even where it was asked for before."""
            asked: dict[Any, Any] = {}
            for name, controls in controlled.items():
                asked.update(_asked(address, name, controls))
            if followed:  # a new value, so that its change opens the tab
                asked[opened_tab] = f"{address.tab or TABS[0]}@{time.monotonic_ns()}"
            elif address.tab:
                asked[opened_tab] = address.tab
            if address.tab == "matches" and address.q:
                asked[matches.inputs[0]] = address.q
            chosen = resolve_policy(address.policy, policy.players(), page.latest_players()) if address.policy else ""
            if chosen:
                asked[policy.chooser] = chosen
            if address.match:
                asked[replay.match_id] = address.match
                asked[replay.viewer] = {"match_id": address.match, "tick": address.tick}
            return asked


        def served(query: Mapping[str, str]) -> dict[Any, Any]:
            """The page an address is served as (`leaderboard.served.Addressed`): its tab
            open, its controls set, the views they are inputs of drawn (a policy's page, a
            table searched: `Following.drawn_for`); not the replay, which its load opens (a
            viewer served a match would load it again when the load sets it)."""
            address = Opened.from_query(query)
            every = asked_by(address)
            asked = {c: v for c, v in every.items() if c is not opened_tab and c is not replay.viewer}
            asked.update(page.following.drawn_for(every))
            return {tabs: gr.Tabs(selected=address.tab), **asked} if address.tab else asked

        page.following.address([*(c for controls in controlled.values() for c in controls.inputs), opened_tab,
                                matches.inputs[0], policy.chooser, replay.match_id, replay.viewer],
                                lambda query, followed: asked_by(Opened.from_query(query), followed))
        replay.open_on_select(matches.table, opened_tab)
        page.following.wire(demo)
    FOLLOWING[demo] = page.following
    ADDRESSED[demo] = Addressed(demo, served, serving=page.following.serving)
    quiet_queue(demo)
    return demo


#: Each page built by `build`, and how it follows the Space (`launch_options` serves its version).
FOLLOWING: weakref.WeakKeyDictionary[gr.Blocks, Following] = weakref.WeakKeyDictionary()

#: Each page `build` made, served as its addresses ask (`leaderboard.served.Addressed`).
ADDRESSED: weakref.WeakKeyDictionary[gr.Blocks, Addressed] = weakref.WeakKeyDictionary()


#: Seconds Gradio's queue waits between looks for work while it has none, and between looks
#: for progress to report. Gradio 6 looks every 1 ms and 10 ms (`gradio.queueing.Queue`'s
#: `sleep_when_free` and `progress_update_sleep_when_free`, with no setting): most of an idle
#: Space's CPU. A bare Gradio app's idle CPU-seconds a minute on this machine: 2.85 (Gradio's
#: own), 1.23 at 10 ms, 0.87 at 20 ms, 0.36 at 50 ms. 20 ms adds 10 ms to an event's start on
#: average (a search's target is 200 ms); the pages report no progress.
QUEUE_LOOK_S = (0.02, 0.1)


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


def _asked(opened: Opened, name: str, controls: Any) -> dict[Any, Any]:
    """What the page's address sets in tab `name`'s search, filters and columns."""
    if opened.tab != name:
        return {}
    values = {controls.search: opened.q, controls.owner: opened.owner, controls.status: opened.status,
              controls.settled: opened.settled,
              controls.columns: [c for c in controls.every if c in opened.cols] if opened.cols else ""}
    return {c: values[c] for c in controls.inputs if values[c]}


#: Opens the tab whose id it is given (`opened_tab` in `build`; anything after an "@" is left
#: out: it tells two asks for the same tab apart), as a click on its button would. One asked by
#: a click (a link followed, a match chosen: `tab@<ns>`) is shown from the page's top: a policy
#: followed from a row low in the PvP table opened with its heading above the window.
OPEN_TAB_JS = """(tab) => {
  const [id, clicked] = (tab || "").split("@");
  const button = document.querySelector(`button[role="tab"][data-tab-id="${CSS.escape(id)}"]`);
  if (button && button.getAttribute("aria-selected") !== "true") button.click();
  if (clicked !== undefined) window.scrollTo(0, 0);  // a new page shows from its top, as one loaded at its address
  return [];
}"""

#: Part of the page's script (`JS`): a plain click on a link to one of the page's own addresses
#: (`arena.links`: a row's policy, a match, a table searched) opens it in the page, as Back and
#: Forward do: the address's query goes to the page's address box (`Following.wire`), whose
#: event draws what it asks for and then opens its tab (`opened_tab` in `build`). Gradio's
#: tables and Markdown open every link in a new browser tab, which loaded the whole app again
#: for each policy a visitor looked at (1.1-1.4 s at 200,000 matches, most of it the
#: framework's own start). The tab opens once its page is drawn, not at the click: it would
#: show the page the visitor left until the new one came, and mounting it delays that by a
#: third of a second. The address bar follows (on a Space, the parent
#: page's too; and a policy chosen in its list: `window.arenaAddress`), so the address still
#: copies; a click with a modifier key or the middle button still opens a new tab. A press on a
#: link in a table's cell does not select the cell (after a sort of the PvP table, the selected
#: cell's content moved, the click landed beside the link and followed nothing).
GO_JS = """
  const arenaGo = (search) => {
    const box = document.querySelector("#GO_BOX textarea");
    if (!box) return;
    box.value = `${search.replace(/^\\?/, "")}&_go=${performance.now()}`;  // a new value: the same address again still goes
    box.dispatchEvent(new Event("input", {bubbles: true}));
  };
  const arenaTell = (search) => {
    if (window.parent !== window) window.parent.postMessage({queryString: search.replace(/^\\?/, "")}, "https://huggingface.co");
  };
  window.arenaAddress = (search) => {  // the page now shows `search`'s address (a policy chosen in its list)
    window.history.pushState(null, "", window.location.pathname + search);
    arenaTell(search);
  };
  // A press on a link in a table's cell is the link's: the table would select the cell (50-60
  // ms of its work at 200,000 matches) and move its content, so that the release missed the link.
  document.addEventListener("mousedown", (event) => {
    const link = event.target.closest && event.target.closest("a[href]");
    if (link && link.closest(".body-cell")) { event.preventDefault(); event.stopPropagation(); }
  }, true);
  document.addEventListener("click", (event) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const link = event.target.closest && event.target.closest("a[href]");
    if (!link) return;
    const to = new URL(link.getAttribute("href"), window.location.href);
    if (to.origin !== window.location.origin || to.pathname !== window.location.pathname
        || !/(^|&)(policy|match|tab)=/.test(to.search.slice(1)) || !document.querySelector("#GO_BOX textarea")) return;
    event.preventDefault(); event.stopPropagation();
    window.arenaAddress(to.search);
    arenaGo(to.search);
  }, true);
  window.addEventListener("popstate", () => { arenaTell(window.location.search); arenaGo(window.location.search); });
""".replace("GO_BOX", GO_ELEM_ID)

#: The table a page opened at `/` shows first, whose first rows its HTML carries
#: (`leaderboard.first_rows.FirstRows`), and the line over them while the page starts.
FIRST_TABLE = "pvp-table"
FIRST_ROWS_NOTE = "PvP leaderboard, best first. Search, sort, the other tabs and live updates come as the page finishes loading."

#: Page script (Gradio 6 takes it at `launch(js=JS)`, with the CSS: `launch_options`): a link to
#: one of the page's addresses followed in the page (`GO_JS`); a click on a
#: table's header sorts the table by that column, a second click the other way. A paged table
#: (one with a `<tab>-sort` box: `leaderboard.tabs.context.pager`) is sorted whole, by the
#: Space: the click writes `NAME` or `-NAME` in that box, whose change draws the table's first
#: page in that order. Other tables sort in the browser: Gradio's Dataframe sorts only from
#: each header's menu (its "⋮"), so the click picks that menu's own "Sort ascending" / "Sort
#: descending", and the menu still works as before.
JS = """
() => {
  document.addEventListener("click", (event) => {
    const th = event.target.closest("[id$='-table'] th.header-cell");
    if (!th || event.target.closest(".cell-menu-button, [role=menu]")) return;
    const ascending = th.dataset.arenaSort !== "ascending";
    th.closest("table").querySelectorAll("th.header-cell").forEach((h) => { delete h.dataset.arenaSort; });
    th.dataset.arenaSort = ascending ? "ascending" : "descending";
    const table = th.closest("[id$='-table']");
    const box = document.querySelector(`#${table.id.replace(/-table$/, "")}-sort textarea`);
    if (box) {
      const name = (th.querySelector("span.header") || th).textContent.trim();
      const page = document.querySelector(`#${table.id.replace(/-table$/, "")}-page input`);
      if (page && page.value !== "1") { page.value = "1"; page.dispatchEvent(new Event("input", {bubbles: true})); }
      box.value = (ascending ? "" : "-") + name;  // a new order starts at its first page
      box.dispatchEvent(new Event("input", {bubbles: true}));
      event.preventDefault(); event.stopPropagation();
      return;
    }
    const button = th.querySelector(".cell-menu-button");
    if (!button) return;
    const wanted = ascending ? "Sort ascending" : "Sort descending";
    const pick = (tries) => {
      const item = [...document.querySelectorAll(".cell-menu [role=menuitem]")].find((b) => b.textContent.trim() === wanted);
      if (item) item.click(); else if (tries > 0) requestAnimationFrame(() => pick(tries - 1));
    };
    setTimeout(() => { button.click(); pick(20); }, 0);  // after the table's own handling of the click
  }, true);
""" + GO_JS + "}\n"

#: Page CSS (Gradio 6 takes it at `launch(css=CSS)`): table headers wrap between words, never
#: inside one (a squeezed header went one letter per line); a paged table's header shows its
#: order, and its cell menu (which would sort only the page in view) is hidden.
CSS = """
.table-wrap th, .table-wrap th * { word-break: normal !important; overflow-wrap: normal !important; hyphens: none; }
.arena-hidden { display: none !important; }
.arena-paged .cell-menu-button { display: none !important; }
.arena-paged th.header-cell { cursor: pointer; }
.arena-paged th[data-arena-sort=ascending] .header-content::after { content: " ▲"; }
.arena-paged th[data-arena-sort=descending] .header-content::after { content: " ▼"; }
.arena-pager { align-items: center; }
#now-playing { font-size: 0.95em; }
"""


def launch_options(demo: gr.Blocks | None = None) -> dict[str, Any]:
    """What every launch of the pages passes to `Blocks.launch` (the Space, the tests, the
    benches): the CSS, the page's script (`JS`), gzip for responses of 1 KB or more (the
    page, its config, the API's answers; Starlette leaves the event streams that carry a
    page's updates as they are), and for a `demo` made by `build`, the route its open pages
    read the Space's version from (`leaderboard.tabs.following`) and the page served with its
    views drawn in (`leaderboard.served`), the PvP table's first rows in its HTML (`leaderboard.first_rows`). Gradio builds its FastAPI
    app at launch, so these go in through `app_kwargs`; a new dict each time, as Gradio adds to it."""
    following = FOLLOWING.get(demo) if demo is not None else None
    middleware = [Middleware(GZipMiddleware, minimum_size=1024)]
    if following is not None:
        addressed = ADDRESSED.get(demo) if demo is not None else None
        first_rows = FirstRows(demo, FIRST_TABLE, FIRST_ROWS_NOTE) if demo is not None else None
        middleware.append(Middleware(ServeDrawn, redraw=following.serve_soon, addressed=addressed, first_rows=first_rows))
    return {"css": CSS, "js": JS, "app_kwargs": {"middleware": middleware,
                                                 "routes": [following.route()] if following is not None else []}}
