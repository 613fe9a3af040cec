"""How much is luck (arena.luck): the fit finds planted seat and map effects again, finds
none where none were planted, and the shares of Achievement's variance add up."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from arena.errors import NotEnoughMatchesError
from arena.luck import SHARE_GROUPS, decompose, fit_effects, luck_report, seats
from arena.schema import rows
from arena.simulation import Population, SeatEffects, play, random_history, seated_history
from tests_support import TESTS, UI_WAIT_MS

MAPS = 8


def planted(seed: int = 0) -> SeatEffects:
    """Sides of +/-0.5, slots of about 0.3 and map x side of about 0.4, the interaction
    centred within each map and each side (else part of it would be a side's own effect)."""
    rng = np.random.default_rng(seed)
    grid = rng.normal(0.0, 0.4, (MAPS, 4))
    grid -= grid.mean(axis=1, keepdims=True)
    grid -= grid.mean(axis=0)
    return SeatEffects(maps=MAPS, side=np.array([0.5, -0.5, 0.5, -0.5]), slot=rng.normal(0.0, 0.3, 16), map_side=grid)


def centred(values: np.ndarray) -> np.ndarray:
    return values - values.mean()


def test_the_fit_recovers_planted_seat_and_map_effects():
    population = Population.random(40, seed=1, spread=1.0)
    effects = planted()
    history = seated_history(population, 1500, effects=effects, seed=2)
    fit = fit_effects(seats(history), bootstrap=0)
    # spawn sides of +/-0.5: each within 0.15
    assert np.max(np.abs(fit.side - centred(effects.side))) < 0.15, fit.side
    assert abs(fit.spreads["side"].sd - 0.5) < 0.1
    # slots: the planted pattern, each within 0.2
    truth = centred(effects.slot)
    assert np.corrcoef(fit.slot, truth)[0, 1] > 0.85
    assert np.max(np.abs(fit.slot - truth)) < 0.2, (fit.slot - truth).round(2)
    # which side is good on which map: the interaction beyond the side's own effect
    grid = effects.map_side
    found = np.array([fit.map_side[(False, m + 1)] for m in range(MAPS)])
    assert np.corrcoef(found.ravel(), grid.ravel())[0, 1] > 0.85
    assert np.max(np.abs(found - grid)) < 0.3
    # nothing planted along the edge: nothing found
    assert fit.spreads["index"].sd < 0.08
    # and the policies' strengths, net of their seats, are their skills
    skills = np.array([population.skill(p.rsplit("@", 1)[0]) for p in fit.policy])
    assert np.corrcoef(list(fit.policy.values()), skills)[0, 1] > 0.97


def test_no_planted_luck_gives_spreads_near_zero_and_small_shares():
    population = Population.random(40, seed=3, spread=1.0)
    history = seated_history(population, 800, effects=SeatEffects(maps=MAPS), seed=4)
    report = luck_report(history, bootstrap=8)
    spreads = report.effects.spreads
    for group in ("side", "index", "slot", "map_side"):
        assert spreads[group].sd < 0.08, (group, spreads[group])
        assert spreads[group].low is not None and spreads[group].low <= spreads[group].sd <= spreads[group].high + 1e-9
    assert 0.8 < spreads["policy"].sd < 1.2
    assert spreads["policy"].low > 0.7
    shares = report.achievement.shares
    for group in ("map", "side", "index", "slot", "lobby", "map_side"):
        assert abs(shares[group]) < 0.02, (group, shares[group])
    assert shares["policy"] > 0.2
    assert sum(shares.values()) == pytest.approx(1.0, abs=1e-9)


def test_shares_sum_to_one_and_find_a_planted_map_level():
    population = Population.random(30, seed=5, spread=1.0)
    effects = SeatEffects(maps=MAPS, side=np.array([0.6, -0.2, 0.0, -0.4]), map_level=np.linspace(-1.5, 1.5, MAPS))
    history = seated_history(population, 600, effects=effects, seed=6)
    s = seats(history)
    fit = fit_effects(s, bootstrap=0)
    result = decompose(s, fit.policy)
    assert set(result.shares) == {*SHARE_GROUPS, "residual"}
    assert sum(result.shares.values()) == pytest.approx(1.0, abs=1e-9)
    # the map's share is its between-map variance (maps are dealt independently of the rest)
    y = s.achievement
    between = np.mean((pd.Series(y).groupby(s.map).transform("mean").to_numpy() - y.mean()) ** 2) / y.var()
    assert between > 0.1
    assert result.shares["map"] == pytest.approx(between, abs=0.03)
    assert result.shares["side"] > 0.02
    # a side effect is in the ranking too; a map's level is not (every team shares it)
    assert fit.spreads["side"].sd > 0.25
    assert fit.spreads["map_side"].sd < 0.1


def test_only_matches_with_spawn_points_count_and_too_few_is_said():
    population = Population.random(20, seed=7)
    old = random_history(population, 6, seed=8)  # no spawn points, as schema 1 records
    new = seated_history(population, 12, effects=SeatEffects(maps=3), seed=9)
    new = [dataclasses.replace(r, match_id=f"new-{i}") for i, r in enumerate(new)]
    s = seats(old + new)
    assert s.matches == 12 and s.excluded_matches == 6 and len(s.match) == 12 * 16
    with pytest.raises(NotEnoughMatchesError, match=r"at least 20 matches .* has 12 such matches \(6 older"):
        luck_report(old + new, min_matches=20, bootstrap=0)
    report = luck_report(old + new, bootstrap=0)
    assert report.excluded_matches == 6 and "6 older matches without spawn points left out" in report.summary()[0]
    with pytest.raises(NotEnoughMatchesError):
        luck_report(old, bootstrap=0)
    spawns = [(k // 4, k % 4) for k in range(16)]
    one = [play(["sim/one"] * 16, [0.0] * 16, rng=np.random.default_rng(i), index=i, spawns=spawns) for i in range(12)]
    with pytest.raises(NotEnoughMatchesError, match="1 policies"):
        luck_report(one, bootstrap=0)


def test_frames_and_records_agree_and_old_sets_count_as_matches():
    population = Population.random(20, seed=10)
    history = seated_history(population, 30, effects=planted(), seed=11)
    # an old duplicate set's matches (recorded before sets were retired) are separate matches
    history = [dataclasses.replace(r, set_id="set-a" if i < 4 else "", set_size=4 if i < 4 else 1, set_rotation=i % 4)
               for i, r in enumerate(history)]
    frame = pd.DataFrame([row for r in history for row in rows(r)])
    from_frame = luck_report(frame, bootstrap=3, seed=1)
    from_records = luck_report(history, bootstrap=3, seed=1)
    assert from_frame.to_json() == from_records.to_json()
    assert from_frame.matches == 30
    # filters: a track and a horizon nothing has; the latest matches only
    with pytest.raises(NotEnoughMatchesError):
        luck_report(frame, tracks=("pve",), bootstrap=0)
    with pytest.raises(NotEnoughMatchesError):
        luck_report(frame, horizon=64, bootstrap=0)
    assert seats(frame, latest=12).matches == 12
    # held-out maps are other maps than the published ones of the same number
    held = frame.assign(held_out=frame["match_id"].isin(frame["match_id"].unique()[:10]))
    assert seats(held).maps != seats(frame).maps and len(seats(held).maps) > len(seats(frame).maps)


def test_bench_prints_the_figures_and_a_json_line_last(tmp_path):
    from history.store import HistoryStore

    store = HistoryStore(tmp_path / "history")
    for result in seated_history(Population.random(16, seed=12), 24, effects=planted(), seed=13):
        store.record(result)
    store.flush()
    done = subprocess.run([sys.executable, "-m", "bench.luck", "--data", str(tmp_path), "--bootstrap", "3"],
                          cwd=TESTS.parent, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    figures = json.loads(lines[-1])
    assert {"policy_sd", "side_sd", "index_sd", "slot_sd", "map_side_sd", "shares", "matches", "teams"} <= set(figures)
    assert set(figures["shares"]) == {"policy", "map", "side", "index", "slot", "lobby", "map_side", "residual"}
    assert figures["matches"] == 24 and figures["teams"] == 24 * 16
    assert any(line.startswith("From 24 matches") for line in lines)
    empty = subprocess.run([sys.executable, "-m", "bench.luck", "--data", str(tmp_path / "none")],
                           cwd=TESTS.parent, capture_output=True, text=True, timeout=120)
    assert empty.returncode == 1 and "Luck needs at least" in empty.stderr


def refresher_over(root, history):
    from history.statuses import StatusLog
    from history.store import HistoryStore
    from leaderboard.refresher import StandingsRefresher

    store = HistoryStore(root / "history")
    for result in history:
        store.record(result)
    store.flush()
    return StandingsRefresher(store, statuses=StatusLog(root / "s.jsonl").states, hub_url="http://hub.example",
                              bootstrap=0, luck_horizon=1024)


def test_the_refresher_computes_luck_in_the_background_and_the_about_section_shows_it(tmp_path):
    from arena.luck import LuckReport
    from leaderboard.about_luck import luck_markdown

    data = refresher_over(tmp_path / "seated", seated_history(Population.random(16, seed=14), 24, effects=planted(), seed=15))
    assert isinstance(data.luck(), str)  # a page asking first gets a note, never a fit
    report = data.refresh_luck()
    assert isinstance(report, LuckReport) and report.matches == 24
    assert data.refresh_luck() is report  # the history did not change: not recomputed
    text = luck_markdown(data.luck())
    assert "## How much is luck?" in text and "From the latest 24 full matches" in text
    assert f"spawn side\n  ±{report.effects.spreads['side'].sd:.2f}" in text and "Of Achievement's variance" in text
    # only full matches count: a refresher for other horizons has none
    data.luck_horizon = 64
    assert "Luck needs at least 10 matches" in data.refresh_luck(force=True)
    old = refresher_over(tmp_path / "old", random_history(Population.random(16, seed=16), 12, seed=17))
    text = luck_markdown(old.refresh_luck())
    assert "Not measured yet" in text and "0 such matches (12 older ones have no spawn points)" in text


@pytest.mark.browser
def test_the_about_tab_shows_how_much_is_luck(tmp_path, browser):
    from leaderboard.pages import build, launch_options
    from tests_support import free_port

    data = refresher_over(tmp_path, seated_history(Population.random(16, seed=18), 20, effects=planted(), seed=19))
    data.refresh()
    data.refresh_luck()
    demo = build(data)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_options(demo))
    try:
        page = browser.new_page()
        page.goto(f"http://127.0.0.1:{port}/")
        page.get_by_role("tab", name="About / Submit").click()
        section = page.locator("#about-luck")
        section.get_by_text("How much is luck?").wait_for(timeout=UI_WAIT_MS)
        text = section.inner_text()
        assert "From the latest 20 full matches" in text and "spawn side" in text and "unexplained" in text
        page.close()
    finally:
        demo.close()


def test_a_space_without_enough_matches_measures_luck_as_soon_as_it_has_them(tmp_path):
    from arena.luck import LuckReport

    history = seated_history(Population.random(16, seed=18), 24, effects=planted(), seed=19)
    data = refresher_over(tmp_path / "young", history[:4])
    data.mle_every_s = 0
    assert "Luck needs at least 10 matches" in data.refresh_luck()
    assert data.refresh_luck() == data.luck()  # nothing moved: not tried again
    for result in history[4:]:
        data.store.record(result)
    data.store.flush()
    data.refresh()
    report = data.refresh_luck()  # well inside luck_every_s (15 minutes) of the first try
    assert isinstance(report, LuckReport) and report.matches == 24
    assert data.refresh_luck() is report  # a report stands for luck_every_s


def test_the_refresher_reads_luck_from_the_latest_matches_only(tmp_path, monkeypatch):
    """A bounded read however long the history: the latest `LUCK_CANDIDATES` matches by
    start, the report of the latest `LUCK_MATCHES` usable ones among them, as a report of
    the latest `LUCK_MATCHES` of the whole history is when they are all usable."""
    from leaderboard import refresher as module

    history = seated_history(Population.random(16, seed=20), 30, effects=planted(), seed=21)
    data = refresher_over(tmp_path / "long", history)
    monkeypatch.setattr(module, "LUCK_MATCHES", 12)
    monkeypatch.setattr(module, "LUCK_CANDIDATES", 15)
    read = []
    monkeypatch.setattr(module, "luck_report", lambda rows, **kw: read.append(rows) or luck_report(rows, **kw))
    report = data.refresh_luck(force=True)
    assert read[0]["match_id"].nunique() == 15 and report.matches == 12
    latest = sorted(history, key=lambda r: (r.started_at, r.match_id))[-15:]
    assert set(read[0]["match_id"]) == {r.match_id for r in latest}
    whole = luck_report(data.standings().teams.frame(), horizon=1024, latest=12, bootstrap=module.LUCK_BOOTSTRAP)
    assert report.effects.spreads["side"].sd == pytest.approx(whole.effects.spreads["side"].sd, abs=1e-12)
