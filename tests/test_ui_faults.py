"""Faults and logs where the submitter looks, in a real browser (Debian's Chromium).

One real short match is played the way the matchmaker plays it (`executor.play_outcome`, every
submitted team in its sandbox, replay and logs recorded): `chatty` prints every tick,
raises at tick 5 and sleeps past the 1 s limit at tick 9; `raise_at_tick` raises at tick
5 too; 14 built-in teams fill the match. The recorded match is opened in the viewer: the
faults are on the timeline and in the list with team, tick and message, clicking jumps to
the tick, and the log download holds the team's printed lines with their ticks.
"""

from __future__ import annotations

import pytest

from arena.policies import builtin, local
from history.statuses import StatusLog
from history.store import HistoryStore
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec
from matchmaking.sandbox.host import sandboxed_host
from matchmaking.service.executor import play_outcome
from tests_support import POLICIES, SCREENSHOTS, UI_WAIT_MS, free_port

pytestmark = pytest.mark.browser

CONFIG = MatchConfig(horizon=16, time_bank_s=0.4)
SCREENSHOTS.mkdir(parents=True, exist_ok=True)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    from leaderboard.pages import build, launch_options
    from leaderboard.refresher import StandingsRefresher

    root = tmp_path_factory.mktemp("ui-faults")
    store = HistoryStore(root / "history")
    lineup = [local(POLICIES / "chatty"), builtin("combat"), local(POLICIES / "raise_at_tick")] + [builtin("forage")] * 13
    outcome = play_outcome(MatchSpec(seed=5, policies=tuple(lineup), config=CONFIG, track="pve", stage=1), sandboxed_host, True)
    assert outcome.result is not None, outcome.error
    assert store.record(outcome.result, replay=outcome.replay, logs=outcome.logs)
    store.flush()
    data = StandingsRefresher(store, statuses=StatusLog(root / "statuses.jsonl").states, hub_url="http://hub.example", bootstrap=0)
    data.refresh()
    demo = build(data)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_options(demo))
    yield {"url": f"http://127.0.0.1:{port}/", "result": outcome.result}
    demo.close()



@pytest.fixture()
def viewer(browser, app):
    context = browser.new_context(viewport={"width": 1500, "height": 1300}, accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(app["url"])
    page.get_by_role("tab", name="Replay").click()
    page.locator("#replay-match textarea, #replay-match input").first.fill(app["result"].match_id)
    page.locator("#replay-load").click()
    page.wait_for_function("() => window.__replayReady === true && window.__logsReady === true", timeout=UI_WAIT_MS)
    yield page
    assert errors == [], errors
    context.close()


def timeline_colour(page, tick: int) -> list[int]:
    """The colour of the timeline's fault band at `tick` (its lower half)."""
    return page.evaluate(
        """(tick) => {
            const c = document.querySelector('#replay-viewer .nr-timeline');
            const ticks = parseInt(document.querySelector('#replay-viewer .nr-scrub').max, 10);
            const x = Math.round(2 + (c.width - 4) * tick / ticks);
            return Array.from(c.getContext('2d').getImageData(x, c.height - 6, 1, 1).data.slice(0, 3));
        }""",
        tick,
    )


def click_timeline_at(page, tick: int) -> None:
    box = page.locator("#replay-viewer .nr-timeline").bounding_box()
    ticks = CONFIG.horizon
    width = page.evaluate("document.querySelector('#replay-viewer .nr-timeline').width")
    x = (2 + (width - 4) * tick / ticks) * box["width"] / width
    page.mouse.click(box["x"] + x, box["y"] + box["height"] * 0.75)


def test_the_faults_are_on_the_timeline_and_listed_per_team(viewer, app):
    result = app["result"]
    chatty, raiser = result.teams[0], result.teams[2]
    assert chatty.fault_counts["ERROR"] == 1 and chatty.fault_counts["TIMEOUT"] >= 1 and raiser.fault_counts == {"ERROR": 1}
    recorded = sum(t.total_faults for t in result.teams)
    assert viewer.evaluate("window.__replayFaults") == recorded
    listing = viewer.locator("#replay-viewer .nr-faults")
    text = listing.inner_text()
    assert "team 0: local:chatty" in text and "team 2: local:raise_at_tick" in text
    assert "team 1:" not in text  # the built-in team did not fault
    rows = listing.locator("tr.nr-fault")
    cells = [r.split("\t") for r in rows.all_inner_texts()]
    assert ["5", "ERROR"] == cells[0][:2] and "deliberate failure at tick 5" in cells[0][2]
    assert any(c[:2] == ["9", "TIMEOUT"] and "no answer within 1.00 s" in c[2] for c in cells)
    # the timeline: an ERROR marker at tick 5, a TIMEOUT marker at tick 9, nothing on a tick
    # whose neighbours did not fault either (how many ticks after 9 time out depends on the load)
    assert timeline_colour(viewer, 5) == [0xFF, 0x52, 0x52]
    assert timeline_colour(viewer, 9) == [0xFF, 0xD7, 0x40]
    faulted = {f.tick for t in result.teams for f in t.faults}
    quiet = next(t for t in range(2, result.ticks) if not faulted & {t - 1, t, t + 1})
    assert timeline_colour(viewer, quiet) not in ([0xFF, 0x52, 0x52], [0xFF, 0xD7, 0x40])
    viewer.locator("#replay-viewer").screenshot(path=str(SCREENSHOTS / "replay-faults.png"))


def test_clicking_a_fault_jumps_to_its_tick_and_team(viewer):
    row = viewer.locator("#replay-viewer .nr-faults tr.nr-fault", has_text="TIMEOUT").first
    row.click()
    viewer.wait_for_function("() => window.__replayTick === 9", timeout=UI_WAIT_MS)
    assert "tick 9 / 16" in viewer.locator("#replay-viewer .nr-tick").inner_text()
    assert "(team 0)" in viewer.locator("#replay-viewer .nr-panel").inner_text()  # follows the faulting team
    assert "nr-current" in (row.get_attribute("class") or "")
    lines = viewer.locator("#replay-viewer .nr-log-lines").inner_text()
    assert "output during tick 9" in lines and "stdout | sleeping at tick 9" in lines and "stdout | woke up at tick 9" in lines
    viewer.locator("#replay-viewer").screenshot(path=str(SCREENSHOTS / "replay-fault-jump.png"))
    click_timeline_at(viewer, 5)  # the marker on the timeline
    viewer.wait_for_function("() => window.__replayTick === 5", timeout=UI_WAIT_MS)
    viewer.locator("#replay-viewer .nr-jump-kind").select_option("faults")  # and previous / next, like kills
    viewer.locator("#replay-viewer .nr-next").click()
    viewer.wait_for_function("() => window.__replayTick === 9", timeout=UI_WAIT_MS)
    viewer.locator("#replay-viewer .nr-prev").click()
    viewer.wait_for_function("() => window.__replayTick === 5", timeout=UI_WAIT_MS)


def test_the_log_download_holds_the_team_lines_with_their_ticks(viewer, app, tmp_path):
    logs = viewer.locator("#replay-viewer .nr-logs").inner_text()
    assert "team 0 log" in logs and "team 2 log" in logs and "team 1 log" not in logs
    assert "14 built-in teams play in the match process: they have no logs" in logs
    with viewer.expect_download() as info:
        viewer.locator("#replay-viewer a.nr-log-download[data-slot='0']").click()
    download = info.value
    assert download.suggested_filename == f"{app['result'].match_id}-team0.log"
    path = tmp_path / "team0.log"
    download.save_as(path)
    text = path.read_text()
    assert f"# match {app['result'].match_id}, team 0: local:chatty" in text
    assert "tick    0 stdout | building team 0" in text
    assert "tick    1 stdout | hello from tick 1" in text
    assert "tick    5 stderr | about to fail at tick 5" in text
    assert "tick    9 stdout | woke up at tick 9" in text
    assert "raise_at_tick" not in text  # only that team's
    with viewer.expect_download() as info:
        viewer.locator("#replay-viewer a.nr-log-download[data-slot='all']").click()
    everything = info.value
    everything.save_as(tmp_path / "all.log")
    whole = (tmp_path / "all.log").read_text()
    assert "team 0: local:chatty" in whole and "team 2: local:raise_at_tick" in whole
