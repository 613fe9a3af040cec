"""The settling meter on the pages (`leaderboard.meter`): what the standings feed
`arena.settling`, the PvP table's Settling column, the policy page's line and `/settling`."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from arena.lifecycle import RevisionState, Status
from arena.revision import Revision
from arena.rules import ANCHORS, Pairing
from arena.schema import rows
from arena.settling import SETTLED_SIGMA, settling
from arena.simulation import Population, random_history
from history.store import HistoryStore
from leaderboard import meter, tables
from leaderboard.refresher import StandingsRefresher
from leaderboard.standings import compute
from tests_support import SCREENSHOTS, UI_WAIT_MS, serve_app


def qualified(player: str, *, latest: bool = True, status: Status = Status.QUALIFIED) -> RevisionState:
    repo_id, _, revision = player.partition("@")
    return RevisionState(Revision(repo_id, revision), status, "", 0.0, 0.0, latest=latest)


def standings_of(matches):
    return compute(pd.DataFrame([row for m in matches for row in rows(m)]), bootstrap=0)


def test_seconds_per_pvp_match_is_the_recent_pace_of_pvp_starts():
    summary = pd.DataFrame({"Track": ["pvp", "pve", "pvp", "pvp", "pvp"],
                            "Started": ["2026-01-01T00:09:00+00:00", "2026-01-01T00:08:00+00:00",
                                        "2026-01-01T00:06:00+00:00", "2026-01-01T00:03:00+00:00",
                                        "2026-01-01T00:00:00+00:00"]})  # newest first, as the standings keep it
    assert meter.seconds_per_pvp_match(summary) == 180.0  # 9 minutes over 3 gaps; the PvE match is not counted
    assert meter.seconds_per_pvp_match(summary, recent=2) == 180.0
    assert meter.seconds_per_pvp_match(summary.iloc[:2]) is None  # one PvP start: no pace yet
    assert meter.seconds_per_pvp_match(summary.iloc[0:0]) is None


def test_the_meter_is_arena_settling_fed_from_the_standings():
    population = Population.random(40, seed=7)
    matches = random_history(population, 58, seed=7)  # one match a second (arena.simulation); ~23 each
    standings = standings_of(matches)
    players = sorted(p for p in standings.trueskill.ratings if p not in ANCHORS)
    superseded, not_qualified = players[0], players[1]
    statuses = [qualified(p) for p in players[2:]] + [qualified(superseded, latest=False),
                                                     qualified(not_qualified, status=Status.EVALUATED)]
    readings = meter.meter(standings, statuses, pairing="guarantee")
    assert set(readings) == set(players[2:])  # each repo's latest qualified revision, nothing else
    ratings = standings.trueskill.ratings
    expected = settling({p: r.sigma for p, r in ratings.items()}, {p: r.matches for p, r in ratings.items()},
                        candidates=players[2:], match_s=1.0, parallel=1, how=Pairing.GUARANTEE)
    assert readings == expected
    assert any(r.settled for r in readings.values()) and any(not r.settled for r in readings.values())
    assert all(r.settled == (ratings[p].sigma <= SETTLED_SIGMA) for p, r in readings.items())

    # the PvP table's column: the meter's text for the qualified, blank for the anchors and the others
    table = tables.pvp_table(standings, hub_url="h", settling=meter.meter_texts(readings))
    by_policy = dict(zip(table["Policy"], table["Settling"]))
    for player, reading in readings.items():
        cell = next(v for k, v in by_policy.items() if player.split("@")[0] in k)
        assert cell == reading.text()
        assert cell == "settled" or (cell.startswith("provisional: about ") and "at the current rate" in cell)
    assert all(by_policy[k] == "" for k in by_policy if "builtin:" in k or superseded.split("@")[0] + "]" in k)

    records = meter.meter_records(readings)
    assert [r["settled"] for r in records] == sorted(r["settled"] for r in records)  # the least settled first
    first = records[0]
    reading = readings[f"{first['policy']}@{first['revision']}"]
    assert first["text"] == reading.text() and first["matches_left"] == reading.matches_left
    assert math.isclose(first["seconds_left"], round(reading.arena_matches_left * 1.0, 1), abs_tol=0.11)

    line = meter.meter_markdown(reading)
    assert "provisional: about" in line and "units wide after" in line
    assert meter.meter_markdown(None) == ""


def test_with_nothing_qualified_or_no_pace_the_meter_says_less_not_wrong():
    standings = standings_of([])
    assert meter.meter(standings, [], pairing="guarantee") == {}
    one = random_history(Population.random(20, seed=1), 1, seed=1)
    standings = standings_of(one)
    player = next(p for p in standings.trueskill.ratings if p not in ANCHORS)
    readings = meter.meter(standings, [qualified(player)], pairing="guarantee")
    assert readings[player].seconds_left is None  # one PvP match: no pace to forecast with
    assert readings[player].text().startswith("provisional: about ") and "≈" not in readings[player].text()
    assert meter.meter_records(readings)[0]["seconds_left"] is None


# -- the browser --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """The pages over a PvP history of 58 matches among 40 qualified revisions: some settled."""
    root = tmp_path_factory.mktemp("meter")
    store = HistoryStore(root / "history")
    for m in random_history(Population.random(40, seed=7), 58, seed=7):
        store.record(m)
    store.flush()
    data = StandingsRefresher(store, hub_url="http://hub.example", bootstrap=0)
    standings = data.refresh()
    states = [qualified(p) for p in standings.trueskill.ratings if p not in ANCHORS]
    data.statuses = lambda: states
    demo, url = serve_app(data)
    readings = meter.meter(standings, states, pairing="guarantee")
    yield url, readings
    demo.close()


@pytest.mark.browser
def test_the_pvp_table_and_the_policy_page_show_the_meter(browser, app):
    url, readings = app
    provisional = next(p for p, r in sorted(readings.items()) if not r.settled)
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    table = page.locator("#pvp-table")
    table.get_by_role("columnheader", name="Settling").first.wait_for(timeout=UI_WAIT_MS)
    table.get_by_role("gridcell", name="settled", exact=True).first.wait_for(timeout=UI_WAIT_MS)
    search = page.locator("#pvp-search textarea, #pvp-search input").first
    search.fill(provisional.split("@")[0])  # the table shows its rows as you scroll: bring this one up
    table.get_by_role("gridcell", name=readings[provisional].text(), exact=True).first.wait_for(timeout=UI_WAIT_MS)
    page.screenshot(path=str(SCREENSHOTS / "pvp-settling.png"), full_page=False)
    search.fill("")

    page.get_by_role("tab", name="Policy").click()
    choice = page.locator("#policy-choice input").first
    page.wait_for_function("e => e.value !== ''", arg=choice.element_handle(), timeout=UI_WAIT_MS)
    choice.click()
    choice.fill(provisional)
    choice.press("Enter")
    line = page.locator("#policy-settling")
    line.get_by_text("PvP rank: provisional").wait_for(timeout=UI_WAIT_MS)
    assert readings[provisional].text() in line.inner_text()
    page.screenshot(path=str(SCREENSHOTS / "policy-settling.png"), full_page=False)
    assert errors == [], errors
    context.close()


@pytest.mark.browser
def test_the_settling_api(app, tmp_path):
    from gradio_client import Client

    url, readings = app
    answer = Client(url, verbose=False).predict(api_name="/settling")
    assert {f"{r['policy']}@{r['revision']}" for r in answer} == set(readings)
    assert answer == meter.meter_records(readings)
    empty = StandingsRefresher(HistoryStore(tmp_path / "history"), bootstrap=0)
    demo, empty_url = serve_app(empty)
    try:
        assert Client(empty_url, verbose=False).predict(api_name="/settling") == []
    finally:
        demo.close()
