"""The Head to head tab in a real browser (Debian's Chromium through Playwright) and the
`/head_to_head` API, over a history with a planted cycle: rock beats scissors beats
paper beats rock, each pair meeting in its own matches (one match's ranking is always
transitive), among a crowd of 30 that is larger than the heatmap shows."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from arena.scoring import competition_ranks
from arena.simulation import Population, play
from history.statuses import StatusLog
from history.store import HistoryStore
from leaderboard.tables import HEATMAP_TOP
from tests_support import SCREENSHOTS, UI_WAIT_MS, serve_app

pytestmark = pytest.mark.browser

ROCK, PAPER, SCISSORS = "cycle/rock", "cycle/paper", "cycle/scissors"
CROWD = 30
SHOTS = SCREENSHOTS
SHOTS.mkdir(parents=True, exist_ok=True)


def _history() -> list:
    rng = np.random.default_rng(0)
    crowd = Population.random(CROWD, seed=1, prefix="crowd/p")
    results = []
    for k, (winner, loser) in enumerate([(ROCK, SCISSORS), (SCISSORS, PAPER), (PAPER, ROCK)] * 12):
        chosen = rng.choice(CROWD, size=11, replace=False)
        lineup = [winner, loser, *(crowd.ids[i] for i in chosen), "builtin:random", "builtin:random", "builtin:random"]
        result = play(lineup, [0.0, 0.0, *crowd.skills[chosen], 0.0, 0.0, 0.0], rng=rng, index=k)
        scores = [80, 40, *(t.achievement for t in result.teams[2:])]  # the pair above the crowd, the winner first
        ranks = competition_ranks(scores)
        teams = tuple(replace(t, achievement=s, rank=r) for t, s, r in zip(result.teams, scores, ranks))
        results.append(replace(result, teams=teams))
    return results


def _launch(store: HistoryStore, root) -> tuple:
    from leaderboard.refresher import StandingsRefresher

    data = StandingsRefresher(store, statuses=StatusLog(root / "s.jsonl").states, hub_url="http://hub.example", bootstrap=20)
    data.refresh()
    return serve_app(data)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    root = tmp_path_factory.mktemp("h2h")
    store = HistoryStore(root / "history")
    for result in _history():
        store.record(result)
    store.flush()
    demo, url = _launch(store, root)
    yield url
    demo.close()


@pytest.fixture(scope="module")
def empty_app(tmp_path_factory):
    root = tmp_path_factory.mktemp("h2h-empty")
    demo, url = _launch(HistoryStore(root / "history"), root)
    yield url
    demo.close()


def _open(browser, url: str):
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.get_by_role("tab", name="Head to head").click()
    return context, page, errors


def test_the_heatmap_shows_the_best_thirty_with_shares_counts_and_intervals(browser, app):
    context, page, errors = _open(browser, app)
    heatmap = page.locator("#h2h-heatmap table.h2h-heatmap")
    heatmap.wait_for(timeout=UI_WAIT_MS)
    shown = HEATMAP_TOP  # 34 players in all: 3 in the cycle, a crowd of 30, one built-in
    assert page.locator("#h2h-heatmap td.h2h-cell").count() == shown * (shown - 1)
    assert page.locator("#h2h-heatmap td.h2h-self").count() == shown
    assert f"best {shown} of 34" in page.locator("#h2h-caption").inner_text()
    box = heatmap.bounding_box()
    assert box is not None and box["width"] > 600 and box["height"] > 600
    cell = page.locator(f'#h2h-heatmap td.h2h-cell[data-a="{ROCK}@sim"][data-b="{SCISSORS}@sim"]')
    assert cell.inner_text().split() == ["1.00", "12"]  # share, then matches together
    assert "95% interval" in cell.get_attribute("title") and "12 won, 0 tied, 0 lost" in cell.get_attribute("title")
    colour = cell.evaluate("e => getComputedStyle(e).backgroundColor")
    assert colour == "rgb(33, 102, 172)"  # all blue: the row player always ahead
    cycles = page.locator("#h2h-cycles").inner_text()
    assert "cycle/paper@sim beats cycle/rock@sim (1.00), cycle/rock@sim beats cycle/scissors@sim (1.00), " \
           "cycle/scissors@sim beats cycle/paper@sim (1.00)" in cycles
    nash = page.locator("#h2h-nash").get_by_role("row").filter(has_text="cycle/rock@sim").first
    nash.wait_for()
    assert "Nash avg" in page.locator("#h2h-ratings-help").inner_text()
    page.screenshot(path=str(SHOTS / "head-to-head.png"), full_page=True)
    page.get_by_role("tab", name="PvP leaderboard").click()
    page.locator("#pvp-table th:visible", has_text="Nash avg").first.wait_for()
    assert "Nash avg" in page.locator("#pvp-ratings-help").inner_text()
    assert errors == [], errors
    context.close()


def test_the_api_answers_every_pair_the_cycle_and_the_nash_average(app):
    from gradio_client import Client

    answer = Client(app, verbose=False).predict("", api_name="/head_to_head")
    assert set(answer) == {"players", "pairs", "pairs_total", "offset", "next_offset", "cycles", "nash"}
    assert len(answer["players"]) == 34 and answer["pairs_total"] == len(answer["pairs"]) and answer["next_offset"] is None
    assert [f"{p}@sim" for p in (PAPER, ROCK, SCISSORS)] in answer["cycles"]
    pair = next(r for r in answer["pairs"] if r["a"] == f"{SCISSORS}@sim" and r["b"] == f"{PAPER}@sim")
    assert (pair["met"], pair["wins"], pair["ties"], pair["share"]) == (12, 12, 0, 1.0) and 0.7 < pair["low"] < pair["high"] == 1.0
    nash = {r["player"]: r for r in answer["nash"]}
    for p in (ROCK, PAPER, SCISSORS):  # the cycle is the mix: each a third, each rated 0
        assert nash[f"{p}@sim"]["weight"] == pytest.approx(1 / 3, abs=1e-4) and nash[f"{p}@sim"]["rating"] == 0
    assert all(r["rating"] < 0 for p, r in nash.items() if not p.startswith("cycle/"))
    only = Client(app, verbose=False).predict("cycle/rock", api_name="/head_to_head")
    assert only["pairs"] and all("cycle/rock" in r["a"] + r["b"] for r in only["pairs"])
    paged, offset = [], 0  # a page at a time: the same pairs, in the same order
    while offset is not None:
        page = Client(app, verbose=False).predict("", offset, 100, api_name="/head_to_head")
        assert len(page["pairs"]) <= 100 and page["offset"] == offset
        paged += page["pairs"]
        offset = page["next_offset"]
    assert paged == answer["pairs"] and len(paged) > 100


def test_before_any_pvp_match_the_tab_says_what_will_fill_it(browser, empty_app):
    context, page, errors = _open(browser, empty_app)
    note = page.locator("#h2h-empty")
    note.wait_for(state="visible", timeout=UI_WAIT_MS)
    assert "No PvP matches yet" in note.inner_text() and len(note.inner_text()) > 80
    assert page.locator("#h2h-heatmap td").count() == 0
    assert "none yet" in page.locator("#h2h-cycles").inner_text()
    page.screenshot(path=str(SHOTS / "head-to-head-empty.png"), full_page=True)
    assert errors == [], errors
    context.close()
