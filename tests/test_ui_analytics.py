"""The Analytics tab in a real browser, over a small history of real matches with replays."""

from __future__ import annotations

import gzip
import io

import numpy as np
import pytest

from arena.policies import builtin
from arena.replay import ReplayRecorder
from history.statuses import StatusLog
from history.store import HistoryStore
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec, run_match
from matchmaking.teams.factory import in_process_host
from tests_support import SCREENSHOTS, UI_WAIT_MS, serve_app

pytestmark = pytest.mark.browser

SCREENSHOTS.mkdir(parents=True, exist_ok=True)
PLOTS = ("analytics-visits", "analytics-trajectories", "analytics-tasks", "analytics-deaths", "analytics-alive")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    from leaderboard.analytics import AnalyticsKeeper
    from leaderboard.refresher import StandingsRefresher

    root = tmp_path_factory.mktemp("analytics-ui")
    store = HistoryStore(root / "history")
    played = []
    for seed, horizon, names in ((3, 100, ("random", "forage", "combat", "elite")), (8, 40, ("elite", "forage"))):
        recorder = ReplayRecorder()
        lineup = tuple(builtin(n) for n in names * (16 // len(names)))
        result = run_match(MatchSpec(seed=seed, policies=lineup, config=MatchConfig(horizon=horizon), track="pvp"), recorder=recorder, host_factory=in_process_host)
        store.record(result, replay=recorder.data)
        played.append(result)
    damaged = type(played[0])(**{**played[0].__dict__, "match_id": "damaged000000000000"})
    store.record(damaged, replay=gzip.compress(b"NMRP no replay here"))
    store.flush()
    data = StandingsRefresher(store, statuses=StatusLog(root / "s.jsonl").states, hub_url="http://hub.example", bootstrap=0,
                              analytics=AnalyticsKeeper(store, cache=root / "cache"))
    data.refresh()
    demo, url = serve_app(data)
    yield {"url": url, "played": played, "data": data}
    demo.close()


@pytest.fixture(scope="module")
def empty_app(tmp_path_factory):
    from leaderboard.refresher import StandingsRefresher

    root = tmp_path_factory.mktemp("analytics-empty")
    data = StandingsRefresher(HistoryStore(root / "history"), statuses=StatusLog(root / "s.jsonl").states, bootstrap=0)
    data.refresh()
    demo, url = serve_app(data)
    yield url
    demo.close()


def _drawn(locator) -> float:
    """Spread of the pixel values of an element's screenshot: 0 for a blank box."""
    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(locator.screenshot())).convert("L"), dtype=float)
    return float(pixels.std())


def test_the_tab_draws_a_policy_from_its_replays(browser, app):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(app["url"])
    page.get_by_role("tab", name="Analytics").click()
    chooser = page.locator("#analytics-choice input").first
    chooser.click()
    page.get_by_role("option", name="builtin:elite").click()
    for plot in PLOTS:
        page.locator(f"#{plot} .js-plotly-plot .main-svg").first.wait_for(timeout=UI_WAIT_MS)
    page.locator("#analytics-summary").get_by_text("2 matches analysed").wait_for(timeout=UI_WAIT_MS)
    assert not page.locator("#analytics-empty").is_visible()
    page.wait_for_timeout(800)  # plotly finishes drawing
    for plot in PLOTS:
        assert _drawn(page.locator(f"#{plot}")) > 10, plot
    assert "killed by a player" in page.locator("#analytics-deaths").inner_text()
    # the trajectory chooser lists elite's matches, newest first; picking the other redraws the paths
    first = page.locator("#analytics-match input").first.input_value()
    assert first in {m.match_id for m in app["played"]}
    page.locator("#analytics-match input").first.click()
    other = next(m.match_id for m in app["played"] if m.match_id != first)
    page.get_by_role("option", name=other).click()
    page.locator("#analytics-trajectories").get_by_text(f"Trajectories in match {other}").wait_for(timeout=UI_WAIT_MS)
    page.screenshot(path=str(SCREENSHOTS / "analytics-elite.png"), full_page=True)
    assert errors == [], errors
    context.close()


def test_the_api_answers_with_the_documented_keys(app):
    from gradio_client import Client

    client = Client(app["url"], verbose=False)
    elite = [m for m in app["played"]]
    answer = client.predict("builtin:elite", "", api_name="/analytics")
    assert set(answer) >= {"player", "matches", "visits", "deaths", "alive", "alive_field", "tasks", "trajectories"}
    assert sorted(answer["matches"]) == sorted(m.match_id for m in elite)
    deaths = sum(t.deaths for m in elite for t in m.teams if t.policy_id == "builtin:elite")
    assert sum(answer["deaths"].values()) == deaths
    assert answer["alive"][0] == 8 and len(answer["visits"]["top"]) > 0
    assert set(answer["tasks"]) == {"policy", "field"}
    chosen = app["played"][1].match_id
    paths = client.predict("builtin:elite", chosen, api_name="/analytics")["trajectories"]
    assert paths["match_id"] == chosen and len(paths["members"]) == 8 * 8  # 8 elite teams of 8 there
    assert "damaged000000000000" in app["data"].analytics.book.skipped
    nobody = client.predict("nobody/none", "", api_name="/analytics")
    assert nobody["matches"] == [] and nobody["analysed"] == 0


def test_an_empty_app_says_what_fills_the_tab(browser, empty_app):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.goto(empty_app)
    page.get_by_role("tab", name="Analytics").click()
    note = page.locator("#analytics-empty")
    note.wait_for(state="visible", timeout=UI_WAIT_MS)
    assert "replay" in note.inner_text() and len(note.inner_text()) > 60
    page.screenshot(path=str(SCREENSHOTS / "analytics-empty.png"), full_page=True)
    context.close()
