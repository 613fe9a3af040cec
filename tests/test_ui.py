"""The Space in a real browser (Debian's Chromium through Playwright) and through its API.

One app is built over a known history: synthetic PvP and PvE matches of named policies
(so the right rows and order are known), statuses of four revisions, and one real match
played by the runner with its replay recorded.
"""

from __future__ import annotations

import gzip
import re
import time
from dataclasses import replace

import pytest
from playwright.sync_api import expect

from arena.lifecycle import Status, SubmissionInfo
from arena.policies import PolicyRef, builtin
from arena.replay import ReplayRecorder
from arena.revision import Revision
from arena.rules import stage_opponents
from arena.simulation import Population, play
from history.statuses import StatusLog
from history.store import HistoryStore
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec, policies_for, run_match
from matchmaking.service.live import REPORT_EVERY_S, LiveBoard
from matchmaking.service.pve_queue import PveWork, forecast
from matchmaking.teams.factory import in_process_host
from tests_support import SCREENSHOTS, UI_WAIT_MS, free_port, record_lifecycle, serve_app

pytestmark = pytest.mark.browser

STRONG, WEAK = "alice/strong", "bob/weak"
MARKUP = "<img src=x onerror=window.__pwned=1> **bold** [a link](http://evil.example)"
SHOTS = SCREENSHOTS
SHOTS.mkdir(parents=True, exist_ok=True)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    import numpy as np

    from leaderboard.pages import build, launch_options
    from leaderboard.refresher import StandingsRefresher

    root = tmp_path_factory.mktemp("ui")
    store = HistoryStore(root / "history")
    registry = StatusLog(root / "statuses.jsonl")
    rng = np.random.default_rng(0)
    crowd = Population.random(14, seed=1, prefix="crowd/p")
    for i in range(120):  # PvP: STRONG far above WEAK, a crowd in between
        lineup = [STRONG, WEAK] + list(crowd.ids)
        skills = [4.0, -4.0] + list(crowd.skills)
        result = play(lineup, skills, rng=rng, index=i)
        teams = tuple(replace(t, revision="a" * 40 if t.policy_id == STRONG else "b" * 40 if t.policy_id == WEAK else t.revision) for t in result.teams)
        store.record(replace(result, teams=teams), replay=gzip.compress(b"NMRP garbage") if i == 0 else None)  # one damaged replay
    record_lifecycle(registry, STRONG, "a" * 40, Status.QUALIFIED, "qualified: mean Achievement 40.0 in PvE stage 1 (>= 25)")
    record_lifecycle(registry, WEAK, "b" * 40, Status.EVALUATED, "mean Achievement 3.0 in PvE stage 1, below the 25 that qualifies for PvP")
    record_lifecycle(registry, "carol/broken", "c" * 40, Status.REJECTED, "INIT while being built: ModuleNotFoundError: No module named 'torch'")
    registry.record(Revision("dave/new", "d" * 40), Status.QUEUED, "waiting for validation")
    # what a policy and its card say is shown as text, never as markup
    record_lifecycle(registry, "mallory/markup", "f" * 40, Status.REJECTED, f"ERROR at tick 1: {MARKUP}",
                     submission=SubmissionInfo(team_name=MARKUP))
    record_lifecycle(registry, "erin/pending", "e" * 40, Status.EVALUATING, "validated")
    recorder = ReplayRecorder()  # one real match, with its replay
    lineup = policies_for(builtin("elite"), [builtin(n) for n in stage_opponents(1)])
    real = run_match(MatchSpec(seed=9, policies=lineup, config=MatchConfig(horizon=60), track="pve", stage=1), recorder=recorder, host_factory=in_process_host)
    store.record(real, replay=recorder.data)
    store.flush()

    # a match in flight, as its process reports it (the real reporter), and the real PvE queue forecast
    board = LiveBoard(root / "live")
    report, _ = board.reporter(MatchSpec(seed=77, policies=policies_for(PolicyRef(Revision("erin/pending", "e" * 40)), [builtin(n) for n in stage_opponents(1)]),
                                         config=MatchConfig(horizon=1024), track="pve", stage=1))
    report(0)
    time.sleep(REPORT_EVERY_S)  # reports are at most once a second
    report(512)
    pending = PveWork(Revision("erin/pending", "e" * 40), 1, tuple(range(6)), 4, since=0.0)

    def live():
        return board.matches(stale_s=float("inf"))  # the test's report would go stale while the tests run

    def queue():
        return forecast([pending], workers=2, match_s=30.0, now=0.0)

    data = StandingsRefresher(store, statuses=registry.states, hub_url="http://hub.example", bootstrap=50)
    data.refresh()
    demo = build(data, operator=lambda: ["Hub http://hub.example (test): reachable since 2026-12-01 10:00 UTC; 0 files waiting to be pushed", *store.damaged],
                 live=live, queue=queue)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_options(demo))
    yield {"url": f"http://127.0.0.1:{port}/", "real": real, "data": data, "statuses": registry, "demo": demo}
    demo.close()


def test_the_served_queue_looks_for_work_every_20_ms_and_a_renamed_knob_is_an_error(app):
    """Gradio's queue looks for work every millisecond by default (most of an idle Space's
    CPU): the pages' queue is set to `QUEUE_LOOK_S` while it serves, and a Gradio whose
    queue lacks those attributes stops the build with a message rather than idling at full cost."""
    from types import SimpleNamespace

    from arena.errors import UnsupportedGradioError
    from leaderboard.pages import QUEUE_LOOK_S, quiet_queue

    queue = app["demo"]._queue
    assert (queue.sleep_when_free, queue.progress_update_sleep_when_free) == QUEUE_LOOK_S
    with pytest.raises(UnsupportedGradioError, match="sleep_when_free"):
        quiet_queue(SimpleNamespace(_queue=SimpleNamespace(sleep_when_free=0.001)))



@pytest.fixture()
def page(browser, app):
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(app["url"])
    page.get_by_role("tab", name="PvP leaderboard").wait_for()
    yield page
    assert errors == [], errors
    context.close()


def visible_cells(page, elem_id: str) -> list[str]:
    return page.locator(f"#{elem_id}").get_by_role("gridcell").all_inner_texts()


def test_what_a_policy_says_is_shown_as_text(page):
    """A rejection's reason and a card's team name holding HTML and markdown appear as
    written: no element made of them, no script run, no link."""
    page.get_by_role("tab", name="Submissions").click()
    row = page.locator("#submissions-table").get_by_role("row").filter(has_text="mallory/markup").first
    row.wait_for()
    assert row.inner_text().count(MARKUP) == 2  # the reason and the team, verbatim
    assert row.locator("img").count() == 0 and row.locator("a[href*='evil']").count() == 0
    assert row.locator("strong, b").count() == 0
    assert page.evaluate("() => window.__pwned") is None


def test_an_open_page_is_sent_nothing_while_nothing_changes(browser, app):
    """An open page reads the Space's version in the browser (`leaderboard.tabs.following`),
    with no event: after its load the only events are the refreshes the version asks for
    (this app has a match in flight, whose line changes by the minute, and a healing one
    every `HEAL_S`), and they send nothing but the lines that changed: no table again
    (before, two timers sent five events every 5 s, and the first tick every table again)."""
    import json

    from leaderboard.tabs.following import LOOK_S

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        joins, streams, bodies, looks = [], set(), [], []

        def sent(e):
            if "queue/join" in e["request"]["url"]:
                joins.append(e["request"].get("postData"))
            elif "arena/version" in e["request"]["url"]:
                looks.append(e["requestId"])

        def received(e):
            if "queue/data" in e["response"]["url"]:
                streams.add(e["requestId"])

        def finished(e):
            if e["requestId"] in streams:
                try:
                    bodies.append(cdp.send("Network.getResponseBody", {"requestId": e["requestId"]})["body"])
                except Exception:  # noqa: BLE001 - a body the browser no longer holds
                    pass

        cdp.on("Network.requestWillBeSent", sent)
        cdp.on("Network.responseReceived", received)
        cdp.on("Network.loadingFinished", finished)
        cdp.send("Network.enable")
        page.goto(app["url"])
        page.locator("#pvp-table .virtual-row").first.wait_for(timeout=UI_WAIT_MS)
        page.wait_for_timeout(1000)
        loaded, looked = len(joins), len(looks)
        config = page.evaluate("() => window.gradio_config")
        version = next(c["id"] for c in config["components"] if c.get("props", {}).get("elem_id") == "page-version")
        dependency = next(d for d in config["dependencies"] if [version, "change"] in d["targets"])
        refresh = dependency["id"]
        ids = {c["id"]: c.get("props", {}).get("elem_id") for c in config["components"]}
        shown = [ids.get(o) for o in dependency["outputs"]]
        page.wait_for_timeout(5 * LOOK_S * 1000)
    finally:
        context.close()
    assert len(looks) - looked >= 3, "the page did not look at the version"
    late = [json.loads(j) for j in joins[loaded:] if j]
    assert all(j["fn_index"] == refresh for j in late), late  # no timer event: only refreshes the version asked for
    after = [json.loads(line[5:]) for body in bodies for line in body.splitlines() if line.startswith("data:")]
    completed = [m for m in after if m.get("msg") == "process_completed" and "data" in m.get("output", {})]

    def skipped(out) -> bool:  # a skip (`gr.skip()`, or its props) or a state's place: no value
        return out is None or (out.get("__type__") == "update" and "value" not in out and "value" not in out.get("props", {}))

    for m in completed[1:]:  # the first is the load's
        data = m["output"]["data"]
        if len(data) == len(shown):  # a refresh: only the lines that change by the second (this app's match in
            assert all(skipped(out) or shown[i] in ("now-playing", "operator-status") for i, out in enumerate(data)), data  # flight)


def test_api_tables_match_the_known_history(app):
    from gradio_client import Client
    from gradio_client.exceptions import AppError

    client = Client(app["url"], verbose=False)
    pvp = client.predict("", False, 0, api_name="/pvp_table")
    rows = pvp["data"]
    headers = pvp["headers"]
    policy = headers.index("Policy")
    assert STRONG in rows[0][policy] and WEAK in rows[-1][policy]  # best first, worst last
    assert headers[:4] == ["Rank", "Policy", "Author", "TrueSkill"]
    assert rows[0][headers.index("Matches")] == 120
    subs = client.predict(api_name="/submissions")
    statuses = {r[0].split("]")[0].strip("["): (r[1], r[2]) for r in subs["data"]}
    assert statuses["carol/broken"][0] == "rejected" and "No module named 'torch'" in statuses["carol/broken"][1]
    assert statuses["dave/new"][0] == "queued"
    matches = client.predict("", "pve", "", "", "", api_name="/matches")
    assert [r[0] for r in matches["data"]] == [app["real"].match_id]
    answer = client.predict(STRONG, api_name="/policy")
    heading = answer[-1]  # owner/name: its latest revision, as the address
    assert answer[0].startswith("<svg") and "UTC: mu " in answer[0]  # the rating chart, its points' values in words
    assert f"/?policy={STRONG}@" in heading, heading
    assert client.predict(STRONG, api_name="/policy")[-1] == heading  # asked again in the same session: the same page
    with pytest.raises(AppError, match="names no policy of this Arena: write owner/name"):
        client.predict("nobody", api_name="/policy")


def test_tabs_and_filters(page):
    page.get_by_role("tab", name="Submissions").click()
    table = page.locator("#submissions-table")
    table.get_by_role("gridcell", name="rejected").first.wait_for()
    assert any("No module named 'torch'" in c for c in visible_cells(page, "submissions-table"))
    page.get_by_role("tab", name="PvP leaderboard").click()
    page.locator("#pvp-table .virtual-row", has_text=WEAK).first.wait_for()  # the rows are in before they are counted
    before = len(page.locator("#pvp-table").get_by_role("row").all())
    page.locator("#pvp-search textarea, #pvp-search input").first.fill("alice")
    page.wait_for_function(f"() => document.querySelectorAll('#pvp-table [role=row]').length < {before}", timeout=UI_WAIT_MS)
    cells = " ".join(visible_cells(page, "pvp-table"))
    assert STRONG in cells and WEAK not in cells
    page.locator("#pvp-search textarea, #pvp-search input").first.fill("")
    page.locator("#pvp-min-matches input").fill("1000")  # nobody played that much: only the header remains
    page.wait_for_function("() => document.querySelectorAll('#pvp-table [role=gridcell]').length === 0", timeout=UI_WAIT_MS)
    page.get_by_role("tab", name="PvE").click()
    page.locator("#builtin-table").get_by_role("gridcell", name="builtin:elite").wait_for()


def test_a_replay_plays_and_scrubs(page, app):
    page.get_by_role("tab", name="Matches").click()
    page.locator("#matches-table").get_by_role("gridcell", name=app["real"].match_id).first.click()
    expect(page.get_by_role("tab", name="Replay")).to_have_attribute("aria-selected", "true", timeout=UI_WAIT_MS)
    page.wait_for_function("() => window.__replayReady === true", timeout=UI_WAIT_MS)
    assert page.evaluate("window.__replayLoadMs") < 1000  # first frame within 1 s of choosing
    overview = page.locator("#replay-viewer .nr-overview")
    first = overview.screenshot()
    page.locator("#replay-viewer .nr-play").click()
    page.wait_for_function("() => window.__replayTick >= 20", timeout=UI_WAIT_MS)
    assert overview.screenshot() != first  # the canvas changes as the match plays
    page.locator("#replay-viewer .nr-play").click()  # pause
    page.evaluate(
        "() => { const s = document.querySelector('#replay-viewer .nr-scrub'); s.value = '45'; s.dispatchEvent(new Event('input')); }"
    )
    page.wait_for_function("() => window.__replayTick === 45", timeout=UI_WAIT_MS)
    assert "tick 45 / 60" in page.locator("#replay-viewer .nr-tick").inner_text()
    assert "health" in page.locator("#replay-viewer .nr-panel").inner_text()


def test_a_match_and_its_winners_are_links_and_a_click_anywhere_in_its_row_replays_it(page, app):
    """The Matches tab links each match to its replay's address and each winner to its page;
    a click on the link follows it in the page, a click elsewhere in the row opens the replay
    too (`ReplayTab.open_on_select` reads the cell's text, not its Markdown)."""
    match_id = app["real"].match_id
    page.get_by_role("tab", name="Matches").click()
    table = page.locator("#matches-table")
    link = table.get_by_role("link", name=match_id)
    link.wait_for(timeout=UI_WAIT_MS)
    assert link.get_attribute("href") == f"/?match={match_id}"
    winner = table.get_by_role("link", name="builtin:elite").first
    assert winner.get_attribute("href") == "/?policy=builtin:elite"
    sim = table.get_by_role("link", name="sim-0000119")
    assert sim.get_attribute("href") == "/?match=sim-0000119"
    page.screenshot(path=str(SHOTS / "matches-linked.png"))
    link.click()
    expect(page.get_by_role("tab", name="Replay")).to_have_attribute("aria-selected", "true", timeout=UI_WAIT_MS)
    expect(page.locator("#replay-match textarea, #replay-match input").first).to_have_value(match_id)
    page.wait_for_function("(m) => location.search.includes('match=' + m)", arg=match_id, timeout=UI_WAIT_MS)
    page.get_by_role("tab", name="Matches").click()
    row = table.get_by_role("row").filter(has_text="sim-0000118").first
    row.get_by_role("gridcell").nth(2).click()  # its track: no link there
    expect(page.get_by_role("tab", name="Replay")).to_have_attribute("aria-selected", "true", timeout=UI_WAIT_MS)
    expect(page.locator("#replay-match textarea, #replay-match input").first).to_have_value("sim-0000118")


def test_a_damaged_replay_says_so_and_the_operator_sees_it(page):
    expect(page.locator("#operator-status")).to_contain_text("reachable since", timeout=UI_WAIT_MS)
    page.get_by_role("tab", name="Replay").click()
    page.locator("#replay-match textarea, #replay-match input").first.fill("sim-0000000")
    page.locator("#replay-load").click()
    page.wait_for_function("() => typeof window.__replayError === 'string'", timeout=UI_WAIT_MS)
    status = page.locator("#replay-viewer .nr-status").inner_text()
    assert "damaged and cannot be played" in status and "loading" not in status
    page.screenshot(path=str(SHOTS / "replay-damaged.png"), full_page=True)
    page.wait_for_function("() => document.querySelector('#operator-status').innerText.includes('quarantine')", timeout=UI_WAIT_MS)


@pytest.fixture(scope="module")
def empty_app(tmp_path_factory):
    """The Space before anything happened: no history, no submissions."""
    from leaderboard.pages import build, launch_options
    from leaderboard.refresher import StandingsRefresher

    root = tmp_path_factory.mktemp("empty")
    data = StandingsRefresher(HistoryStore(root / "history"), statuses=StatusLog(root / "s.jsonl").states, hub_url="http://hub.example", bootstrap=0)
    data.refresh()
    demo = build(data)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_options(demo))
    yield f"http://127.0.0.1:{port}/"
    demo.close()


TABS = ["PvP leaderboard", "PvE", "Submissions", "Policy", "Matches", "Replay", "About / Submit"]


def test_links_render_as_links_and_status_and_reason_are_on_screen(page):
    for tab, table in (("Submissions", "submissions-table"), ("PvE", "pve-table"), ("PvP leaderboard", "pvp-table")):
        page.get_by_role("tab", name=tab).click()
        link = page.locator(f"#{table} a:visible", has_text="alice/strong").first
        link.wait_for()
        assert link.get_attribute("href") == "http://hub.example/alice/strong"
        # no raw markdown left (but what a policy wrote, shown as written: see below)
        assert "](" not in " ".join(visible_cells(page, table)).replace(MARKUP, "")
    page.get_by_role("tab", name="Submissions").click()
    width = page.viewport_size["width"]
    for header in ("Status", "Reason"):
        box = page.locator("#submissions-table th:visible", has_text=header).first.bounding_box()
        assert box is not None and box["x"] + box["width"] <= width, (header, box)


def test_headers_wrap_between_words_never_letter_by_letter(page):
    page.get_by_role("tab", name="PvE").click()
    page.locator("#pve-table a:visible").first.wait_for()
    heights = page.eval_on_selector_all("#pve-table th", "els => els.filter(e => e.offsetParent).map(e => e.getBoundingClientRect().height)")
    line = page.eval_on_selector("#pve-table th", "e => parseFloat(getComputedStyle(e).lineHeight) || 20")
    assert heights and max(heights) <= 4 * line + 24, (heights, line)  # "Stage 1 Achievement": at most 3 lines


def test_the_policy_tab_opens_on_a_policy_and_draws_it(page):
    page.get_by_role("tab", name="Policy").click()
    choice = page.locator("#policy-choice input").first
    page.wait_for_function("e => e.value !== ''", arg=choice.element_handle(), timeout=UI_WAIT_MS)  # filled at page load
    assert choice.input_value().startswith(STRONG)  # the PvP leader
    page.locator("#policy-recent").get_by_role("cell").first.wait_for(timeout=UI_WAIT_MS)  # a Markdown table
    # the charts are SVG drawn on the Space (`leaderboard.charts`), each mark titled with its values
    page.locator("#policy-rating svg circle").first.wait_for(timeout=UI_WAIT_MS)
    assert "UTC: mu " in page.locator("#policy-rating svg circle title").first.text_content()
    assert page.locator("#policy-tasks svg rect").count() >= 4  # four tasks, a bar each per track played
    assert page.locator("#policy-tasks svg").bounding_box()["width"] > 300


def test_a_policys_head_to_head_is_paged_and_sorted_whole_on_the_space(page):
    """The head to head (like the exposure's opponents) comes a page at a time, sorted whole by
    a click on a header, its arrow showing the order; a policy chosen next starts in the
    table's own order, its arrow gone (`leaderboard.tabs.context.pager`, `ARROWS_JS`)."""
    page.get_by_role("tab", name="Policy").click()

    def matches() -> list[int]:
        return [int(c) for c in visible_cells(page, "policy-h2h-table")[1::5]]

    page.wait_for_function("() => document.querySelectorAll('#policy-h2h-table [role=gridcell]').length > 5",
                           timeout=UI_WAIT_MS)
    expect(page.locator("#policy-h2h-rows")).to_be_hidden()  # one page of rows: no pager under them
    assert matches() == sorted(matches(), reverse=True)  # its own order: the most met first
    page.route("**/arena/version*", lambda route: route.abort())  # no refresh draws it: the click's own event must
    header = page.locator("#policy-h2h-table th.header-cell", has_text="Opponent").first
    names = """(order) => { const n = [...document.querySelectorAll('#policy-h2h-table [role=gridcell]')]
        .filter((c, i) => i % 5 === 0).map((c) => c.innerText.trim().toLowerCase());
        return n.length > 1 && n.every((v, i) => !i || (order === 'ascending' ? n[i - 1] <= v : n[i - 1] >= v)); }"""
    orders = []
    for order in ("ascending", "descending"):  # both: one of them is not the order it came in
        header.click()
        page.wait_for_function(names, arg=order, timeout=UI_WAIT_MS)
        assert header.get_attribute("data-arena-sort") == order
        orders.append(visible_cells(page, "policy-h2h-table")[::5])
    assert orders[0] == orders[1][::-1] and orders[0] != orders[1]
    choice = page.locator("#policy-choice input").first
    choice.click()
    choice.fill(f"{WEAK}@{'b' * 40}")
    choice.press("Enter")
    expect(page.locator("#policy-heading")).to_contain_text(WEAK, timeout=UI_WAIT_MS)
    page.wait_for_function("() => document.querySelector('#policy-h2h-sort textarea').value === ''", timeout=UI_WAIT_MS)
    page.wait_for_function("() => !document.querySelector('#policy-h2h-table th[data-arena-sort]')", timeout=UI_WAIT_MS)
    page.wait_for_timeout(500)
    assert matches() == sorted(matches(), reverse=True)


def test_now_playing_and_the_queue_with_its_estimate(page):
    playing = page.locator("#now-playing")
    playing.get_by_text("PvE stage 1").wait_for(timeout=UI_WAIT_MS)
    text = playing.inner_text()
    assert "tick 512 of 1024 (50%)" in text and "against 15 built-in teams" in text
    assert playing.locator("a", has_text="erin/pending").count() == 1
    page.get_by_role("tab", name="Submissions").click()
    row = page.locator("#submissions-table").get_by_role("row").filter(has_text="erin/pending").first
    row.wait_for()
    assert "1st of 1" in row.inner_text() and "stage 1: ~2 min (6 matches at most)" in row.inner_text()
    assert "PvE stage 1: 4 of 10 matches, about 2 min to a verdict" in row.inner_text()  # where it is now
    assert "validated" not in row.inner_text()  # not the validation's line any more
    page.screenshot(path=str(SHOTS / "submissions-queue.png"), full_page=True)


def test_every_tab_with_data_and_without(browser, app, empty_app):
    for url, label in ((app["url"], "data"), (empty_app, "empty")):
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
        page.goto(url)
        page.get_by_role("tab", name="PvP leaderboard").wait_for()
        for tab in TABS:
            page.get_by_role("tab", name=tab).click()
            page.wait_for_timeout(400)
            page.screenshot(path=str(SHOTS / f"tab-{label}-{tab.split()[0].lower()}.png"), full_page=True)
        if label == "empty":
            for tab, note in (("PvP leaderboard", "#pvp-empty"), ("PvE", "#pve-empty"), ("Submissions", "#submissions-empty"),
                              ("Matches", "#matches-empty"), ("Policy", "#policy-empty")):
                page.get_by_role("tab", name=tab).click()
                page.locator(note).wait_for(state="visible", timeout=UI_WAIT_MS)
                assert len(page.locator(note).inner_text()) > 40, tab  # says what will fill it, and how
                headers = " ".join(page.locator("th").all_inner_texts())
                assert not re.search(r"(^|\s)1\s+2\s+3(\s|$)", headers), (tab, headers)  # no placeholder headers
            assert "nothing at the moment" in page.locator("#now-playing").inner_text()
            for empty_table in ("#policy-h2h-table", "#policy-h2h-rows", "#policy-opponents-table", "#pvp-rows"):
                assert not page.locator(empty_table).is_visible(), empty_table  # no empty table, no "No rows."
        else:
            for note in ("#pvp-empty", "#pve-empty", "#submissions-empty"):
                assert not page.locator(note).is_visible()
        assert errors == [], errors
        context.close()


def test_a_page_opened_later_shows_what_happened_since_the_app_was_built(browser, app):
    """Tables are computed per page load: a revision seen after `build` is on the first
    frame of a new page. Every timer tick's request is held back (aborted), so the row can
    only be the page load's, however long the page takes to open."""
    repo = "frank/later"
    app["statuses"].record(Revision(repo, "f" * 40), Status.QUEUED, "waiting for validation")
    context = browser.new_context(viewport={"width": 1400, "height": 1000})

    def hold_ticks(route):
        asked = route.request.post_data_json or {}
        timers = {c["id"] for c in route.request.frame.evaluate("() => window.gradio_config.components")
                  if c.get("type") == "timer"}
        if asked.get("trigger_id") in timers:
            return route.abort()
        return route.continue_()

    try:
        page = context.new_page()
        page.route("**/queue/join*", hold_ticks)
        page.goto(app["url"])
        page.get_by_role("tab", name="PvE").click()
        page.locator("#pve-table a:visible", has_text=repo).wait_for(timeout=UI_WAIT_MS)
    finally:
        context.close()


def test_a_match_link_opens_its_replay(browser, app):
    """`arena.links.match_link`, the address a verdict's discussion gives: the page opens on
    the Replay tab with that match drawn."""
    from arena.links import match_link

    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    try:
        page = context.new_page()
        page.goto(match_link(app["url"], app["real"].match_id))
        page.wait_for_function("() => window.__replayReady === true", timeout=UI_WAIT_MS)
        expect(page.get_by_role("tab", name="Replay")).to_have_attribute("aria-selected", "true")
        assert page.locator("#replay-match textarea, #replay-match input").first.input_value() == app["real"].match_id
        assert "tick 0 / 60" in page.locator("#replay-viewer .nr-tick").inner_text()
    finally:
        context.close()


def test_the_pvp_tab_says_what_it_was_computed_from(page, app):
    """One line under the table: every match recorded, and how much of it the Hub dataset
    holds (no mirror here: it cannot be told, said so)."""
    standings = app["data"].standings()
    line = page.locator("#pvp-source")
    line.wait_for()
    text = line.inner_text()
    assert f"Computed from {standings.matches} matches ({standings.pvp_matches} PvP), each counted as it ended." in text
    assert "121 matches" in text and "120 PvP" in text and "Not yet confirmed in the Hub dataset" in text


def _fresh_page(browser, url: str):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    return context, page, errors


def test_a_policys_address_opens_its_page_in_a_fresh_browser(browser, app, monkeypatch):
    """`/?policy=OWNER/NAME` opens the Policy tab on that policy's latest revision, drawn
    once (the load draws it; the tab's opening that follows draws nothing), and `@SHA`
    (its first characters) on that revision; every table links its revisions there."""
    from arena.links import policy_link
    from leaderboard import tables

    drawn: list[str] = []
    heading = tables.policy_heading  # called at each draw of a policy's page (its figures are kept: `measured`)
    monkeypatch.setattr(tables, "policy_heading", lambda player, hub_url: (drawn.append(player), heading(player, hub_url))[1])
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script("""window.__greyed = [];
      new MutationObserver((changes) => { for (const c of changes) if (c.target.classList && c.target.classList.contains("pending")
        && c.target.closest("#tab-policy, [id^=policy]")) window.__greyed.push(c.target.id || c.target.className); })
        .observe(document, {subtree: true, attributes: true, attributeFilter: ["class"]});
      const timed = () => {  // a loading status's timer ("0.4s") shown over one of the page's blocks
        for (const b of document.querySelectorAll("[id^=policy] .wrap")) if (/\\d\\.\\ds/.test(b.innerText)) window.__greyed.push(b.closest("[id]").id);
        requestAnimationFrame(timed); };
      requestAnimationFrame(timed);""")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(app["url"] + "?policy=alice/strong")
    chooser = page.locator("#policy-choice input").first
    expect(chooser).to_have_value(f"{STRONG}@{'a' * 40}", timeout=UI_WAIT_MS)
    expect(page.get_by_role("tab", name="Policy")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#policy-heading")).to_contain_text(STRONG, timeout=UI_WAIT_MS)
    page.wait_for_timeout(1500)  # the tab's opening, had it drawn the page again
    assert drawn == [f"{STRONG}@{'a' * 40}"], drawn
    assert page.evaluate("window.__greyed") == []  # served drawn: neither the load nor the tab's opening greys it
    page.screenshot(path=str(SHOTS / "link-policy.png"))
    page.goto(app["url"] + "?policy=bob/weak@bbbb")
    expect(page.locator("#policy-choice input").first).to_have_value(f"{WEAK}@{'b' * 40}", timeout=UI_WAIT_MS)
    page.goto(app["url"])
    commit = page.locator("#pvp-table a:visible", has_text="aaaaaaa").first
    commit.wait_for()
    assert commit.get_attribute("href") == policy_link("", STRONG, "a" * 40)
    assert errors == [], errors
    context.close()


def test_a_link_followed_in_the_page_opens_there_and_back_returns(browser, app, monkeypatch):
    """A policy's link in the PvP table opens its page in this page (no new browser tab, no
    reload: `leaderboard.pages.GO_JS`), drawn once; its recent matches link to their replays
    the same way, the new page shown from its top; a press on a link does not select its
    cell; the address bar follows, Back and Forward return; a policy chosen in the list
    becomes the address; a click with Control still opens a new tab."""
    from arena.links import policy_link
    from leaderboard import tables

    drawn: list[str] = []
    heading = tables.policy_heading  # called at each draw of a policy's page (its figures are kept: `measured`)
    monkeypatch.setattr(tables, "policy_heading", lambda player, hub_url: (drawn.append(player), heading(player, hub_url))[1])
    context, page, errors = _fresh_page(browser, app["url"])
    strong = f"{STRONG}@{'a' * 40}"
    link = page.locator("#pvp-table a:visible", has_text="aaaaaaa").first
    link.wait_for(timeout=UI_WAIT_MS)
    page.evaluate("window.__samePage = true")
    link.click()
    expect(page.locator("#policy-heading")).to_contain_text(STRONG, timeout=UI_WAIT_MS)
    expect(page.get_by_role("tab", name="Policy")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#policy-choice input").first).to_have_value(strong)
    assert page.url == app["url"] + policy_link("", STRONG, "a" * 40).lstrip("/")
    page.wait_for_timeout(1500)  # the tab's opening, had it drawn the page again
    assert drawn == [strong], drawn
    assert page.evaluate("window.__samePage") is True and len(context.pages) == 1
    page.screenshot(path=str(SHOTS / "link-followed-policy.png"))

    match = page.locator("#policy-recent a[href^='/?match=']:visible").first
    match_id = match.inner_text().strip()
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    match.scroll_into_view_if_needed()
    assert page.evaluate("window.scrollY") > 0  # the link is low on the page
    match.click()
    expect(page.get_by_role("tab", name="Replay")).to_have_attribute("aria-selected", "true", timeout=UI_WAIT_MS)
    page.wait_for_function("() => window.scrollY === 0", timeout=UI_WAIT_MS)  # the new page from its top
    expect(page.locator("#replay-match textarea, #replay-match input").first).to_have_value(match_id, timeout=UI_WAIT_MS)
    assert f"match={match_id}" in page.url and len(context.pages) == 1

    page.go_back()
    expect(page.get_by_role("tab", name="Policy")).to_have_attribute("aria-selected", "true", timeout=UI_WAIT_MS)
    expect(page.locator("#policy-heading")).to_contain_text(STRONG)
    page.go_back()
    expect(page.get_by_role("tab", name="PvP leaderboard")).to_have_attribute("aria-selected", "true", timeout=UI_WAIT_MS)
    assert page.url == app["url"]
    page.go_forward()
    expect(page.get_by_role("tab", name="Policy")).to_have_attribute("aria-selected", "true", timeout=UI_WAIT_MS)
    page.go_back()
    expect(page.get_by_role("tab", name="PvP leaderboard")).to_have_attribute("aria-selected", "true", timeout=UI_WAIT_MS)
    # a press on a link is the link's, not the table's: its cell is not selected (the PvP table
    # at 200,000 matches, sorted, moved a selected cell's content and the click missed the link)
    cell = link.locator("xpath=ancestor::*[@role='gridcell'][1]")
    page.mouse.move(*(lambda b: (b["x"] + 3, b["y"] + b["height"] / 2))(link.bounding_box()))
    page.mouse.down()
    page.wait_for_timeout(300)
    assert cell.get_attribute("aria-selected") == "false"
    page.mouse.up()
    expect(page.get_by_role("tab", name="Policy")).to_have_attribute("aria-selected", "true", timeout=UI_WAIT_MS)
    assert page.url == app["url"] + policy_link("", STRONG, "a" * 40).lstrip("/")

    choice = page.locator("#policy-choice input").first
    choice.click()
    choice.fill(f"{WEAK}@{'b' * 40}")
    choice.press("Enter")
    expect(page.locator("#policy-heading")).to_contain_text(WEAK, timeout=UI_WAIT_MS)
    assert page.url == app["url"] + policy_link("", WEAK, "b" * 40).lstrip("/")

    page.get_by_role("tab", name="PvP leaderboard").click()
    with context.expect_page(timeout=UI_WAIT_MS) as opened:
        link.click(modifiers=["Control"])
    assert opened.value.url.endswith(policy_link("", STRONG, "a" * 40)) or "policy=" in opened.value.url
    assert page.evaluate("window.__samePage") is True
    assert errors == [], errors
    context.close()


def test_an_address_is_served_as_it_asks_before_any_event(browser, app):
    """`leaderboard.served.Addressed`: the page of an address mounts with its tab open, its
    controls set and the views they ask for drawn, with no event answered (the queue is cut
    off): a policy's address on the Policy tab with that policy's page, a table's on its tab
    searched; a page with no address on the first tab. A replay's viewer is left to the
    load (it would load twice)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.route("**/queue/join*", lambda route: route.abort())
    try:
        page.goto(app["url"] + "?policy=alice/strong")
        expect(page.get_by_role("tab", name="Policy")).to_have_attribute("aria-selected", "true", timeout=UI_WAIT_MS)
        expect(page.locator("#policy-choice input").first).to_have_value(f"{STRONG}@{'a' * 40}")
        expect(page.locator("#policy-heading")).to_contain_text(STRONG)
        expect(page.locator("#policy-recent")).to_contain_text("sim-0000119")  # its latest match
        page.goto(app["url"] + "?tab=submissions&q=carol")
        expect(page.get_by_role("tab", name="Submissions")).to_have_attribute("aria-selected", "true", timeout=UI_WAIT_MS)
        expect(page.locator("#submissions-search textarea, #submissions-search input").first).to_have_value("carol")
        expect(page.locator("#submissions-table")).to_contain_text("carol/broken")
        expect(page.locator("#submissions-table")).not_to_contain_text("alice/strong")
        page.goto(app["url"] + "?tab=pvp&q=bob")
        expect(page.locator("#pvp-table")).to_contain_text("bob/weak", timeout=UI_WAIT_MS)
        expect(page.locator("#pvp-table")).not_to_contain_text("alice/strong")
        page.goto(app["url"] + f"?match={app['real'].match_id}&tick=3")
        expect(page.get_by_role("tab", name="Replay")).to_have_attribute("aria-selected", "true", timeout=UI_WAIT_MS)
        assert page.locator("#replay-match textarea, #replay-match input").first.input_value() == app["real"].match_id
        page.goto(app["url"] + "?tab=nowhere&q=x")  # asks for nothing known: the page as built
        expect(page.get_by_role("tab", name="PvP leaderboard")).to_have_attribute("aria-selected", "true", timeout=UI_WAIT_MS)
        page.goto(app["url"])
        expect(page.get_by_role("tab", name="PvP leaderboard")).to_have_attribute("aria-selected", "true", timeout=UI_WAIT_MS)
    finally:
        context.close()


def test_the_first_rows_come_in_the_pages_html_until_gradios_table_has_them(browser, app, empty_app):
    """`leaderboard.first_rows.FirstRows`: the page `/` carries the PvP table's first page as
    plain HTML, so a browser shows the leaderboard before Gradio's script starts (here one
    with scripts off: rows in the table's order, its links plain links); once Gradio's table
    has its rows, they are gone. An address (another tab, a search) and a Space with no PvP
    row carry none."""
    import urllib.request

    def html(url: str, wanted: str = "") -> str:
        """The page at `url`; asked again until it holds `wanted` (a visit has the page drawn
        in the background: the next one is served it), for as long as the UI waits."""
        deadline = time.monotonic() + UI_WAIT_MS / 1000
        while True:
            page = urllib.request.urlopen(url, timeout=30).read().decode()
            if wanted in page or time.monotonic() > deadline:
                return page
            time.sleep(0.2)

    assert 'id="arena-first-rows" aria-busy' in html(app["url"], 'id="arena-first-rows"')
    # the Hub's page of a Space opens it at /?__theme=...: Gradio's parameter asks for nothing
    assert 'id="arena-first-rows" aria-busy' in html(app["url"] + "?__theme=system", 'id="arena-first-rows"')
    assert 'id="arena-first-rows" class="dark"' in html(app["url"] + "?__theme=dark", 'id="arena-first-rows"')
    assert 'id="arena-first-rows"' not in html(app["url"] + "?tab=pve")
    assert 'id="arena-first-rows"' not in html(app["url"] + "?tab=pvp&q=bob")
    assert 'id="arena-first-rows"' not in html(empty_app)
    scriptless = browser.new_context(viewport={"width": 1280, "height": 900}, java_script_enabled=False)
    page = scriptless.new_page()
    page.goto(app["url"])
    rows = page.locator("#arena-first-rows tbody tr")
    expect(rows.first).to_be_visible()
    assert STRONG in rows.first.inner_text() and WEAK in rows.last.inner_text()  # best first, as the PvP table
    assert page.locator("#arena-first-rows th").first.inner_text() == "Rank"
    link = rows.first.get_by_role("link", name="a" * 7)
    assert link.get_attribute("href") == f"/?policy={STRONG}@{'a' * 40}"
    assert rows.first.get_by_role("link", name=STRONG).get_attribute("href") == f"http://hub.example/{STRONG}"
    page.screenshot(path=str(SHOTS / "first-rows-without-scripts.png"))
    scriptless.close()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(app["url"])
    page.locator("#pvp-table .virtual-row").first.wait_for(timeout=UI_WAIT_MS)
    expect(page.locator("#arena-first-rows")).to_have_count(0, timeout=UI_WAIT_MS)  # removed, not just hidden
    page.get_by_role("tab", name="PvE").click()  # the page under them answers
    expect(page.get_by_role("tab", name="PvE")).to_have_attribute("aria-selected", "true")
    context.close()


def test_a_matchs_address_opens_its_replay_at_the_tick_and_follows_it(browser, app):
    """`/?match=ID&tick=N` opens the replay at tick N in a fresh browser; as it plays, the
    address follows the tick, so a copied URL reopens the moment on screen."""
    match_id = app["real"].match_id
    context, page, errors = _fresh_page(browser, app["url"] + f"?match={match_id}&tick=30")
    page.wait_for_function("() => window.__replayReady === true", timeout=UI_WAIT_MS)
    assert page.evaluate("window.__replayTick") == 30
    assert "tick 30 / 60" in page.locator("#replay-viewer .nr-tick").inner_text()
    page.wait_for_function("() => location.search.includes('tick=30')", timeout=UI_WAIT_MS)
    page.screenshot(path=str(SHOTS / "link-match-tick.png"))
    page.locator("#replay-viewer .nr-play").click()
    page.wait_for_function("() => window.__replayTick >= 40", timeout=UI_WAIT_MS)
    page.locator("#replay-viewer .nr-play").click()  # pause
    page.wait_for_timeout(700)
    shown = page.evaluate("window.__replayTick")
    address = page.evaluate("location.search")
    assert f"match={match_id}" in address and f"tick={shown}" in address, (address, shown)
    # the copied address reopens that moment
    again, copied, more_errors = _fresh_page(browser, app["url"] + address)
    copied.wait_for_function("() => window.__replayReady === true", timeout=UI_WAIT_MS)
    assert copied.evaluate("window.__replayTick") == shown
    assert errors == [] and more_errors == [], errors + more_errors
    again.close()
    context.close()


def test_a_filtered_tables_address_opens_it_filtered(browser, app):
    """`/?tab=pvp&q=TEXT` opens the PvP leaderboard searched for TEXT; the PvE and
    Submissions tables are searched the same way, and stay searched as they refresh."""
    context, page, errors = _fresh_page(browser, app["url"] + "?tab=pvp&q=alice")
    expect(page.locator("#pvp-search textarea, #pvp-search input").first).to_have_value("alice", timeout=UI_WAIT_MS)
    page.wait_for_function("() => { const t = document.querySelector('#pvp-table'); return t && t.innerText.includes('alice/strong')"
                           " && !t.innerText.includes('bob/weak'); }", timeout=UI_WAIT_MS)
    page.screenshot(path=str(SHOTS / "link-pvp-search.png"))
    page.goto(app["url"] + "?tab=submissions&q=carol")
    expect(page.get_by_role("tab", name="Submissions")).to_have_attribute("aria-selected", "true", timeout=UI_WAIT_MS)
    expect(page.locator("#submissions-search textarea, #submissions-search input").first).to_have_value("carol")
    page.wait_for_function("() => { const t = document.querySelector('#submissions-table'); return t && "
                           "t.innerText.includes('carol/broken') && !t.innerText.includes('alice/strong'); }", timeout=UI_WAIT_MS)
    page.wait_for_timeout(2500)  # the live refresh (every 2 s) keeps the search
    assert "alice/strong" not in page.locator("#submissions-table").inner_text()
    page.goto(app["url"] + "?tab=pve&q=bob")
    page.wait_for_function("() => { const t = document.querySelector('#pve-table'); return t && "
                           "t.innerText.includes('bob/weak') && !t.innerText.includes('alice/strong'); }", timeout=UI_WAIT_MS)
    page.screenshot(path=str(SHOTS / "link-pve-search.png"))
    assert errors == [], errors
    context.close()


def test_a_search_typed_before_the_load_answers_is_kept_and_cleared(browser, app):
    """A visitor who searches the PvP table before the page's load has answered (its rows
    are served in the page, so they can), then clears the search, gets every row back: the
    load leaves a view a control already drew in this session (it had marked the table as
    showing the page as served, and the cleared search then redrew nothing)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    # the load (the only queued event here) is sent 2 s late: it answers after the search
    context.add_init_script("""const send = window.fetch;
      window.fetch = (url, ...rest) => String(url).includes("queue/join")
        ? new Promise((done) => setTimeout(() => done(send(url, ...rest)), 2000)) : send(url, ...rest);""")
    page = context.new_page()
    try:
        page.goto(app["url"])
        rows = page.locator("#pvp-table")
        expect(rows).to_contain_text(WEAK, timeout=UI_WAIT_MS)
        box = page.locator("#pvp-search textarea, #pvp-search input").first
        box.fill("alice")
        expect(rows).not_to_contain_text(WEAK, timeout=UI_WAIT_MS)
        page.wait_for_timeout(3000)  # the load has answered
        box.fill("")
        expect(rows).to_contain_text(WEAK, timeout=UI_WAIT_MS)
        expect(rows).to_contain_text(STRONG)
    finally:
        context.close()


def test_tables_filter_by_owner_and_status_choose_columns_and_sort_by_a_header(browser, app):
    """At 1280 px: `/?tab=pvp&owner=...&cols=...` opens the PvP table with that owner's rows
    and those columns only; a click on a header sorts by it (again: the other way); the
    Submissions table filters by status from its address and from its dropdown."""
    url = app["url"] + "?tab=pvp&owner=bob&cols=Rank,Policy,MLE,Matches,Settling"
    context, page, errors = _fresh_page(browser, url)
    expect(page.locator("#pvp-owner textarea, #pvp-owner input").first).to_have_value("bob", timeout=UI_WAIT_MS)
    page.wait_for_function("() => { const t = document.querySelector('#pvp-table'); return t && t.innerText.includes('bob/weak')"
                           " && !t.innerText.includes('alice/strong'); }", timeout=UI_WAIT_MS)
    headers = [h.strip() for h in page.locator("#pvp-table thead th").all_inner_texts() if h.strip()]
    assert headers == ["Rank", "Policy", "MLE", "Settling", "Matches"], headers  # the table's order
    settling = page.locator("#pvp-table thead th", has_text="Settling").first.bounding_box()
    assert settling is not None and settling["x"] + settling["width"] <= 1280  # readable at 1280 px: nothing cut off
    page.screenshot(path=str(SHOTS / "pvp-owner-columns-1280.png"))
    page.goto(app["url"] + "?tab=pvp&cols=Rank,Policy,MLE,Matches")  # every owner: rows to sort
    page.wait_for_function("() => document.querySelectorAll('#pvp-table thead th').length === 4 && "
                           "document.querySelector('#pvp-table').innerText.includes('bob/weak')", timeout=UI_WAIT_MS)

    def mle() -> list[float]:  # the MLE column (the third shown), top to bottom as on screen
        cells = page.locator("#pvp-table .virtual-row [data-col='2']").all_inner_texts()
        return [float(c) for c in cells if c.strip()]

    before = mle()
    assert before == sorted(before, reverse=True) and len(before) >= 2, before  # best first, by rank
    in_order = ("(want) => JSON.stringify([...document.querySelectorAll(\"#pvp-table .virtual-row [data-col='2']\")]"
                ".map(c => c.innerText.trim()).filter(t => t).map(Number)) === JSON.stringify(want)")
    page.locator("#pvp-table thead th", has_text="MLE").first.click()
    page.wait_for_function(in_order, arg=sorted(before), timeout=UI_WAIT_MS)  # a click: ascending
    page.locator("#pvp-table thead th", has_text="MLE").first.click()
    page.wait_for_function(in_order, arg=sorted(before, reverse=True), timeout=UI_WAIT_MS)  # again: descending
    page.screenshot(path=str(SHOTS / "pvp-sorted.png"))

    page.goto(app["url"] + "?tab=submissions&status=rejected")
    page.wait_for_function("() => { const t = document.querySelector('#submissions-table'); return t && "
                           "t.innerText.includes('carol/broken') && !t.innerText.includes('dave/new'); }", timeout=UI_WAIT_MS)
    page.wait_for_timeout(2500)  # the live refresh (every 2 s) keeps the filter
    assert "dave/new" not in page.locator("#submissions-table").inner_text()
    page.screenshot(path=str(SHOTS / "submissions-rejected.png"))
    assert errors == [], errors
    context.close()


def test_a_replay_compacted_into_a_bundle_plays_within_a_second(browser, app):
    """Last (it compacts the module's history): the real match's replay read by range out
    of its day's bundle, and the table still counts every match once."""
    store = app["data"].store
    report = HistoryStore(store.root).compact()
    assert report.plans and store.replay_path(app["real"].match_id) is None and store.bundles()
    assert len(app["data"].refresh().teams.frame()["match_id"].unique()) == 121
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    page = context.new_page()
    page.goto(app["url"])
    page.get_by_role("tab", name="Replay").click()
    page.locator("#replay-match textarea, #replay-match input").first.fill(app["real"].match_id)
    page.locator("#replay-load").click()
    page.wait_for_function("() => window.__replayReady === true", timeout=UI_WAIT_MS)
    assert page.evaluate("window.__replayLoadMs") < 1000
    assert "tick 0 / 60" in page.locator("#replay-viewer .nr-tick").inner_text()
    context.close()


def test_while_restoring_every_table_says_so_rather_than_empty(browser, tmp_path):
    """A Space restarted on an empty disk: until its tables hold what the dataset holds, each
    says it is restoring and how far it has got; then the usual notes come back."""
    from leaderboard.pages import build, launch_options
    from leaderboard.refresher import StandingsRefresher

    data = StandingsRefresher(HistoryStore(tmp_path / "history"), statuses=StatusLog(tmp_path / "s.jsonl").states,
                              hub_url="http://hub.example", bootstrap=0)
    data.refresh()
    state = {"line": "restoring 4,100 of about 10,000 matches from nmmo-arena/match-history (3 of 7 shards)"}
    operator = ["Hub http://hub.example (test): reachable since 2026-12-01 10:00 UTC; 0 files waiting to be pushed"]
    demo = build(data, operator=lambda: operator + ([state["line"].capitalize()] if state["line"] else []),
                 restoring=lambda: state["line"])
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_options(demo))
    try:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"http://127.0.0.1:{port}/")
        page.get_by_role("tab", name="PvP leaderboard").wait_for()
        notes = (("PvP leaderboard", "#pvp-empty"), ("PvE", "#pve-empty"), ("Submissions", "#submissions-empty"),
                 ("Matches", "#matches-empty"))
        for tab, note in notes:
            page.get_by_role("tab", name=tab).click()
            page.locator(note).wait_for(state="visible", timeout=UI_WAIT_MS)
            assert "This table is being restored from the history dataset" in page.locator(note).inner_text(), tab
            assert "4,100 of about 10,000 matches" in page.locator(note).inner_text()
        assert "Restoring 4,100 of about 10,000" in page.locator("#operator-status").inner_text()
        page.get_by_role("tab", name="PvP leaderboard").click()
        page.screenshot(path=str(SHOTS / "restoring-pvp.png"), full_page=True)
        state["line"] = None  # restored
        page.reload()
        page.get_by_role("tab", name="PvP leaderboard").wait_for()
        # The page is served with the last draw in it (the restoring notes: `leaderboard.served`),
        # and its load replaces what changed since, so wait for the load's answer.
        expect(page.locator("#pvp-empty")).to_contain_text("No PvP matches yet", timeout=UI_WAIT_MS)
        expect(page.locator("#operator-status")).not_to_contain_text("Restoring", timeout=UI_WAIT_MS)
        expect(page.locator("#operator-status")).to_contain_text("0 files waiting to be pushed")
        assert errors == [], errors
        context.close()
    finally:
        demo.close()


def test_missing_isolation_shows_a_banner_and_the_report_at_the_isolation_endpoint(browser, tmp_path):
    """Under `warn` with file isolation missing, every page carries a red banner; under
    `strict` an amber one; `/isolation` serves the whole report (here built from probe
    results such as the weak-kernel tests see, `tests/test_isolation.py`)."""
    from gradio_client import Client

    from leaderboard.refresher import StandingsRefresher
    from matchmaking.sandbox.isolation import PROBES, IsolationReport, ProbeResult

    probes = tuple(ProbeResult(name, name == "read", "read its contents (the secret)" if name == "read" else "socket: EACCES")
                   for name in PROBES)
    state = {"report": IsolationReport("warn", probes, {"files": "not available"}, {"uid": 1000}).to_dict()}
    data = StandingsRefresher(HistoryStore(tmp_path / "history"), statuses=StatusLog(tmp_path / "s.jsonl").states,
                              hub_url="http://hub.example", bootstrap=0)
    data.refresh()
    demo, url = serve_app(data, isolation=lambda: state["report"],
                          operator=lambda: [IsolationReport.from_dict(state["report"]).line()])
    try:
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        page.goto(url)
        banner = page.locator("#isolation-banner [role=alert]")
        banner.wait_for(state="visible", timeout=UI_WAIT_MS)
        assert "isolation missing on this Space (files), and submitted code runs anyway" in banner.inner_text()
        assert "rgb(176, 0, 32)" in banner.evaluate("e => getComputedStyle(e).backgroundColor")
        assert "Isolation MISSING (files MISSING, network held" in page.locator("#operator-status").inner_text()
        page.screenshot(path=str(SHOTS / "isolation-warn.png"))
        answer = Client(url, verbose=False).predict(api_name="/isolation")
        assert answer["missing"] == ["files"] and answer["mode"] == "warn" and not answer["refuses_submitted_code"]
        assert answer["mechanisms"]["network"]["held"] and len(answer["probes"]) == len(PROBES)
        state["report"] = IsolationReport("strict", probes, {}, {}).to_dict()
        page.reload()
        expect(page.locator("#isolation-banner")).to_contain_text("submitted code does not run here", timeout=UI_WAIT_MS)
        page.screenshot(path=str(SHOTS / "isolation-strict.png"))
        state["report"] = IsolationReport("strict", tuple(ProbeResult(n, False, "stopped") for n in PROBES)).to_dict()
        page.reload()
        page.get_by_role("tab", name="PvP leaderboard").wait_for()
        expect(page.locator("#isolation-banner [role=alert]")).to_have_count(0, timeout=UI_WAIT_MS)  # all hold: no banner
        context.close()
    finally:
        demo.close()


def test_the_about_tab_says_the_ladder_is_alive_and_the_submissions_tab_each_owners_slots(page, app):
    """Issue 37, 6: the last rated match, the oldest revision waiting, and each owner's slots."""
    from gradio_client import Client

    page.get_by_role("tab", name="About / Submit").click()
    ladder = page.locator("#about-ladder")
    ladder.get_by_text("Is the ladder alive?").wait_for(timeout=UI_WAIT_MS)
    text = ladder.inner_text()
    assert "Play is running." in text and "The last rated match started" in text
    assert "the oldest revision waiting for its verdict, dave/new@ddddddd" in text or "erin/pending@eeeeeee" in text
    page.get_by_role("tab", name="Submissions").click()
    slots = page.locator("#owner-slots")
    expect(slots).to_contain_text("alice", timeout=UI_WAIT_MS)
    expect(slots).to_contain_text("1 of 3")
    answer = Client(app["url"], verbose=False).predict(api_name="/owner_slots")
    rows = {r[0]: r for r in answer["data"]}
    assert rows["alice"][1:3] == ["1 of 3", "1 of 5"] and rows["dave"][1:3] == ["0 of 3", "0 of 5"]
    assert rows["carol"][1] == "0 of 3" and rows["carol"][2] == "1 of 5"  # rejected: validated, not taking part
    page.screenshot(path=str(SHOTS / "submissions-owner-slots.png"), full_page=True)


def test_a_paused_ladder_says_why():
    import pandas as pd

    from leaderboard.about import ladder_markdown
    from leaderboard.pages import paused

    why = paused({"refuses_submitted_code": True, "missing": ["files"]}, None)
    text = ladder_markdown(pd.DataFrame(columns=["Match", "Track", "Started"]), [], now=0.0, paused=why)
    assert text.endswith("**Play is paused**: isolation is missing here (files), so submitted code does not run "
                         "(NMMO_ARENA_ISOLATION=strict); the built-in teams play on. No rated match yet; no revision is "
                         "waiting for a verdict.")
    assert paused(None, "3 of 9 shards") and paused(None, None) is None


@pytest.mark.browser
def test_a_long_table_shows_a_page_at_a_time_and_a_header_sorts_all_of_it(browser, tmp_path):
    """A field of 70 revisions: the PvP table shows `PAGE_ROWS` rows and says which; Next
    shows the rest; a click on a header orders the whole table (its first page holds the
    lowest MLE of all 70 and more, not of the page in view), a second click the other way,
    back on the first page."""
    import pandas as pd

    from arena.simulation import Population, random_history_columns
    from bench.ratings_recompute import write_history
    from leaderboard.pages import build, launch_options
    from leaderboard.refresher import StandingsRefresher
    from leaderboard.tables import PAGE_ROWS

    frame = pd.DataFrame(random_history_columns(Population.random(70, seed=0), 400, seed=1), copy=False)
    write_history(frame, tmp_path / "history", shard_matches=100)
    data = StandingsRefresher(HistoryStore(tmp_path / "history"), hub_url="http://hub.example", bootstrap=0)
    data.refresh()
    demo = build(data)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_options(demo))
    context, page, errors = _fresh_page(browser, f"http://127.0.0.1:{port}/?tab=pvp&cols=Rank,Policy,MLE")
    try:
        rows = page.locator("#pvp-table .virtual-row")
        expect(page.locator("#pvp-rows")).to_contain_text(f"Rows 1-{PAGE_ROWS} of ", timeout=UI_WAIT_MS)
        total = int(page.locator("#pvp-rows").inner_text().split(" of ")[1].split()[0].replace(",", ""))
        assert total > PAGE_ROWS and total >= 70, total

        def mle() -> list[float]:
            page.locator("#pvp-table").scroll_into_view_if_needed()
            return [float(c) for c in page.locator("#pvp-table .virtual-row [data-col='2']").all_inner_texts() if c.strip()]

        page.locator("#pvp-next").click()
        expect(page.locator("#pvp-rows")).to_contain_text(f"Rows {PAGE_ROWS + 1}-{total} of {total}", timeout=UI_WAIT_MS)
        assert rows.count() <= total - PAGE_ROWS
        page.locator("#pvp-table thead th", has_text="MLE").first.click()
        expect(page.locator("#pvp-rows")).to_contain_text(f"Rows 1-{PAGE_ROWS} of {total}", timeout=UI_WAIT_MS)  # back to the first page
        page.wait_for_function("() => { const c = [...document.querySelectorAll(\"#pvp-table .virtual-row [data-col='2']\")]"
                               ".map(e => Number(e.innerText)); return c.length > 2 && c.every((v, i) => i === 0 || c[i - 1] <= v); }",
                               timeout=UI_WAIT_MS)
        ascending = mle()
        page.locator("#pvp-table thead th", has_text="MLE").first.click()
        page.wait_for_function("(low) => { const c = [...document.querySelectorAll(\"#pvp-table .virtual-row [data-col='2']\")]"
                               ".map(e => Number(e.innerText)); return c.length > 2 && c[0] > low && "
                               "c.every((v, i) => i === 0 || c[i - 1] >= v); }", arg=ascending[0], timeout=UI_WAIT_MS)
        descending = mle()
        assert max(descending) > max(ascending)  # the pages hold different rows: the whole table was ordered
        page.screenshot(path=str(SHOTS / "pvp-paged-sorted.png"))
        assert errors == [], errors
    finally:
        context.close()
        demo.close()
