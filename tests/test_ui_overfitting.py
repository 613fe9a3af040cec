"""The overfitting signal: PvE standing against PvP standing on held-out maps, in the
standings, in the PvP table and as the PvP tab's plot in a real browser.

A known history: eight submissions whose PvE stage-1 Achievement follows their PvP
strength, except `alice/overfit`, best in PvE and worst on held-out maps (it did well
on published maps before held-out maps existed, too: those PvP matches must not count
in the held-out standing).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from arena.schema import rows
from arena.simulation import play
from history.statuses import StatusLog
from history.store import HistoryStore
from leaderboard import tables
from leaderboard.standings import compute, far_threshold
from tests_support import SCREENSHOTS, UI_WAIT_MS, serve_app

pytestmark = pytest.mark.browser

OVERFIT = "alice/overfit"
HONEST = [f"team{i}/honest" for i in range(7)]
SUBMISSIONS = [OVERFIT, *HONEST]
ANCHORS = ["builtin:random", "builtin:forage", "builtin:combat"] * 2 + ["builtin:random", "builtin:forage"]
SHOTS = SCREENSHOTS
SHOTS.mkdir(parents=True, exist_ok=True)


def history():
    rng = np.random.default_rng(3)
    pvp_skill = {OVERFIT: -3.0, **{p: 3.0 - 0.8 * i for i, p in enumerate(HONEST)}}
    pve_achievement = {OVERFIT: 60, **{p: 50 - 5 * i for i, p in enumerate(HONEST)}}
    lineup = SUBMISSIONS + ANCHORS
    out = []
    for i in range(40):  # PvP on the published pool, before held-out maps: OVERFIT on top there
        skills = [6.0 if p == OVERFIT else pvp_skill[p] for p in SUBMISSIONS] + [0.0, 1.88, 2.65] * 2 + [0.0, 1.88]
        out.append(play(lineup, skills, rng=rng, index=i))
    for i in range(40, 160):  # PvP on held-out maps
        skills = [pvp_skill[p] for p in SUBMISSIONS] + [0.0, 1.88, 2.65] * 2 + [0.0, 1.88]
        result = play(lineup, skills, rng=rng, index=i)
        out.append(replace(result, held_out=True, map_id=300 + i % 50))
    for k, policy in enumerate(SUBMISSIONS):  # PvE stage 1 on published maps
        for j in range(3):
            result = play([policy] + ["builtin:forage"] * 15, [0.0] * 16, rng=rng, index=1000 + 10 * k + j, track="pve")
            teams = tuple(replace(t, achievement=pve_achievement[policy] + j) if t.slot == 0 else t for t in result.teams)
            out.append(replace(result, stage=1, teams=teams))
    return out


@pytest.fixture(scope="module")
def standings():
    return compute(pd.DataFrame([row for r in history() for row in rows(r)]), bootstrap=0)


def test_the_held_out_standing_counts_only_held_out_matches(standings):
    held = standings.held_out_mle
    assert held[f"{OVERFIT}@sim"].matches == 120 and standings.mle[f"{OVERFIT}@sim"].matches == 160
    honest = [f"{p}@sim" for p in HONEST]
    assert held[f"{OVERFIT}@sim"].rating < min(held[p].rating for p in honest)  # last on held-out maps
    assert standings.mle[f"{OVERFIT}@sim"].rating > held[f"{OVERFIT}@sim"].rating  # the published pool flattered it


def test_the_overfitting_signal_names_the_policy_far_from_the_diagonal(standings):
    frame = standings.overfitting.set_index("player")
    assert len(frame) == 8 and far_threshold(8) == 3  # built-ins have no PvE standing
    me = frame.loc[f"{OVERFIT}@sim"]
    assert (me.pve_rank, me.pvp_rank, me.gap, bool(me.far)) == (1, 8, 7, True)
    others = frame.drop(index=f"{OVERFIT}@sim")
    assert not others["far"].any() and set(others["gap"]) <= {-1, 0, 1}


def test_the_pvp_table_shows_the_held_out_rating_and_the_gap(standings):
    table = tables.pvp_table(standings, hub_url="http://hub.example")
    assert {"Held-out", "PvE vs PvP", "MLE", "TrueSkill"} <= set(table.columns)
    row = table[table["Policy"].str.contains(OVERFIT, regex=False)].iloc[0]
    assert row["PvE vs PvP"] == "+7 (PvE better, far)"
    assert row["Held-out"] == round(standings.held_out_mle[f"{OVERFIT}@sim"].rating, 2)
    anchors = table[table["Policy"].str.contains("(anchor)", regex=False)]
    assert (anchors["PvE vs PvP"] == "").all()  # no PvE standing, no gap


def _serve(store: HistoryStore, root) -> tuple:
    from leaderboard.refresher import StandingsRefresher

    data = StandingsRefresher(store, statuses=StatusLog(root / "statuses.jsonl").states, hub_url="http://hub.example", bootstrap=0)
    data.refresh()
    return serve_app(data)


@pytest.fixture(scope="module")
def apps(tmp_path_factory):
    full = tmp_path_factory.mktemp("overfit")
    store = HistoryStore(full / "history")
    for result in history():
        store.record(result)
    store.flush()
    empty = tmp_path_factory.mktemp("overfit-empty")
    served = [_serve(store, full), _serve(HistoryStore(empty / "history"), empty)]
    yield {"data": served[0][1], "empty": served[1][1]}
    for demo, _ in served:
        demo.close()


def _open(browser, url: str):
    context = browser.new_context(viewport={"width": 1400, "height": 1100})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.get_by_role("tab", name="PvP leaderboard").wait_for()
    return context, page, errors


def test_the_plot_draws_the_policies_and_names_the_far_one(browser, apps):
    context, page, errors = _open(browser, apps["data"])
    plot = page.locator("#overfitting-plot")
    plot.locator(".main-svg").first.wait_for(timeout=UI_WAIT_MS)  # plotly drew it
    texts = plot.locator("text").evaluate_all("els => els.map(e => e.textContent)")  # SVG text
    assert f"{OVERFIT}@sim" in texts and sum(t.endswith("/honest@sim") for t in texts) == 7, texts
    assert any("held-out maps" in t for t in texts)  # the axis and title say what is plotted
    note = page.locator("#overfitting-note").inner_text()
    assert "Far from the diagonal" in note and OVERFIT in note and "PvE 1, PvP 8" in note
    assert not any(p in note for p in HONEST)
    header = " ".join(page.locator("#pvp-table th").all_inner_texts())
    assert "Held-out" in header and "PvE vs PvP" in header
    cells = page.locator("#pvp-table").get_by_role("gridcell").all_inner_texts()
    assert "+7 (PvE better, far)" in cells
    plot.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    page.screenshot(path=str(SHOTS / "overfitting-plot.png"), full_page=True)
    plot.screenshot(path=str(SHOTS / "overfitting-plot-only.png"))
    assert errors == [], errors
    context.close()


def test_the_plot_without_results_says_what_will_fill_it(browser, apps):
    context, page, errors = _open(browser, apps["empty"])
    note = page.locator("#overfitting-note")
    note.wait_for(state="visible", timeout=UI_WAIT_MS)
    page.wait_for_function("document.querySelector('#overfitting-note').innerText.includes('No policy')", timeout=UI_WAIT_MS)
    assert "PvE rank against its PvP rank on held-out maps" in note.inner_text()
    assert not page.locator("#overfitting-plot").is_visible()
    page.screenshot(path=str(SHOTS / "overfitting-empty.png"), full_page=True)
    assert errors == [], errors
    context.close()
