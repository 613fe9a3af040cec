"""The standings' tables from sums and counts equal the pandas groupbys they replace, and
`update` with only the new rows equals `compute` on all of them."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from arena.schema import TASK_NAMES, rows
from arena.simulation import Population, play, random_history
from history.index import with_players
from leaderboard.standings import HistoryChangedError, compute, update

POINTS = [f"{task}_points" for task in TASK_NAMES]


def frame(results) -> pd.DataFrame:
    return pd.DataFrame([row for r in results for row in rows(r)])


def pve_matches(rng: np.random.Generator, *, first_index: int, hour: int = 0) -> list:
    """Six PvE matches of one submission (two revisions, stages 1 and 2) against built-ins."""
    results = []
    for i in range(6):
        pve = play(["alice/strong", *["builtin:forage"] * 15], [float(i % 3)] + [0.0] * 15, rng=rng,
                   index=first_index + i, track="pve")
        revision = "a" * 40 if i % 2 else "b" * 40
        results.append(replace(pve, stage=1 + i % 2, started_at=f"2026-03-0{1 + i}T{hour:02d}:00:00+00:00",
                               teams=tuple(replace(t, revision=revision) if t.slot == 0 else t for t in pve.teams)))
    return results


@pytest.fixture(scope="module")
def mixed():
    """PvP matches with ties, a submission with two revisions, built-ins, and PvE stages."""
    results = list(random_history(Population.random(24, seed=3), 40, seed=3))
    results += pve_matches(np.random.default_rng(3), first_index=2000)
    return sorted(results, key=lambda r: (r.started_at, r.match_id))


def reference_tables(history: pd.DataFrame):
    """The groupbys the standings used before the sums (the reference)."""
    rows_ = with_players(history)
    pvp = rows_[rows_["track"] == "pvp"]
    pvp_players = pvp.groupby("player").agg(
        policy_id=("policy_id", "first"), revision=("revision", "first"), matches=("match_id", "nunique"),
        achievement=("achievement", "mean"), **{t: (f"{t}_points", "mean") for t in TASK_NAMES})
    builtin = rows_["policy_id"].astype(str).str.startswith("builtin:")
    pve = rows_[(rows_["track"] == "pve") & ~builtin]
    pve_stages = pve.assign(won=pve["rank"] == 1).groupby(["player", "stage"]).agg(
        matches=("match_id", "nunique"), top1=("won", "mean"), mean=("achievement", "mean"),
        **{t: (f"{t}_points", "mean") for t in TASK_NAMES})
    meta = rows_.groupby("match_id", sort=False).agg(Started=("started_at", "first"), Teams=("slot", "count"),
                                                     top=("achievement", "max"))
    return pvp_players, pve_stages, meta


def test_the_tables_equal_the_groupbys_they_replace(mixed):
    history = frame(mixed)
    standings = compute(history, bootstrap=0)
    pvp_players, pve_stages, meta = reference_tables(history)
    pd.testing.assert_frame_equal(standings.pvp_players, pvp_players, check_dtype=False, rtol=1e-12)
    pd.testing.assert_frame_equal(standings.pve_stages, pve_stages, check_dtype=False, rtol=1e-12)
    assert len(standings.pve_stages) == 2 and standings.pve_stages["matches"].sum() == 6
    summary = standings.match_summary.set_index("Match")
    assert list(summary["Started"]) == sorted(meta["Started"], reverse=True)
    assert (summary.loc[meta.index, "Teams"].to_numpy() == meta["Teams"].to_numpy()).all()
    assert (summary.loc[meta.index, "Top score"].to_numpy() == meta["top"].to_numpy()).all()
    played = {p: sorted(g) for p, g in history.groupby("policy_id")["match_id"]}
    assert {p: sorted(m) for p, m in standings.policy_matches.items()} == played


def assert_same(a, b, *, mle_tolerance=None):
    pd.testing.assert_frame_equal(a.pvp_players, b.pvp_players, rtol=1e-12)
    pd.testing.assert_frame_equal(a.pve_stages, b.pve_stages, rtol=1e-12)
    pd.testing.assert_frame_equal(a.match_summary.astype(object), b.match_summary.astype(object))
    pd.testing.assert_frame_equal(a.teams.frame().reset_index(drop=True).astype(object), b.teams.frame().reset_index(drop=True).astype(object))
    assert a.policy_matches.keys() == b.policy_matches.keys()
    assert all((a.policy_matches[p] == b.policy_matches[p]).all() for p in a.policy_matches)
    assert a.trueskill == b.trueskill and a.elo.last_key == b.elo.last_key and a.elo.matches == b.elo.matches
    assert a.elo.ratings.keys() == b.elo.ratings.keys()
    assert max(abs(a.elo.ratings[p] - b.elo.ratings[p]) for p in a.elo.ratings) <= 1e-9
    assert {p: list(t) for p, t in a.trajectory.items()} == {p: list(t) for p, t in b.trajectory.items()}
    assert (a.matches, a.pvp_matches, a.rated_results) == (b.matches, b.pvp_matches, b.rated_results)
    for x, y in ((a.rated, b.rated), (a.held_out_rated, b.held_out_rated)):  # what the fits rerun from
        assert x.names == y.names and (x.started == y.started).all() and (x.ids == y.ids).all()
        assert (x.seats == y.seats).all() and (x.scores == y.scores).all() and (x.widths == y.widths).all()
    if mle_tolerance is not None:
        assert a.mle.keys() == b.mle.keys()
        assert max(abs(a.mle[p].rating - b.mle[p].rating) for p in a.mle) <= mle_tolerance
        assert (a.head_to_head.met == b.head_to_head.met).all() and (a.head_to_head.wins == b.head_to_head.wins).all()


def test_an_update_with_only_the_new_rows_equals_a_full_computation(mixed):
    history = frame(mixed)
    match_ids = history["match_id"].unique()
    cut = int((history["match_id"].isin(match_ids[:30])).sum())
    first = compute(history.iloc[:cut], bootstrap=0)
    full = compute(history, bootstrap=0)
    carried = update(first, history.iloc[cut:], bootstrap=0)
    assert_same(carried, full)
    assert carried.mle == first.mle and carried.mle_source == first.mle_source  # kept until refreshed
    # in two steps, the Plackett-Luce fit refreshed (warm-started) at the second
    middle = int((history["match_id"].isin(match_ids[:38])).sum())
    twice = update(update(first, history.iloc[cut:middle], bootstrap=0), history.iloc[middle:], bootstrap=0,
                   refresh_mle=True)
    assert_same(twice, full, mle_tolerance=1e-4)


def test_match_by_match_updates_equal_a_full_computation(mixed):
    """The refresher's path over a day: one match at a time, the rows kept in chunks that
    merge as they grow, the whole-history fits rerun from the kept rated results."""
    history = frame(mixed)
    match_ids = list(dict.fromkeys(history["match_id"]))
    history["held_out"] = history["match_id"].isin(match_ids[::3])  # some on held-out maps
    cuts = [int(history["match_id"].isin(match_ids[:k]).sum()) for k in range(10, len(match_ids) + 1)]
    standings = compute(history.iloc[:cuts[0]], bootstrap=0)
    for a, b in zip(cuts, cuts[1:]):
        standings = update(standings, history.iloc[a:b], bootstrap=0)
        # each chunk less than half the one before it: about log2(matches) chunks
        assert len(standings.teams.chunks) <= np.log2(standings.matches + 1) + 1
    refreshed = update(standings, history.iloc[0:0], bootstrap=0, refresh_mle=True)
    full = compute(history, bootstrap=0)
    assert_same(refreshed, full, mle_tolerance=1e-4)
    assert len(full.held_out_rated) and refreshed.held_out_mle.keys() == full.held_out_mle.keys()


def test_rows_already_counted_are_refused_and_late_ones_rated_in_their_place(mixed):
    """Matches end out of their start order: one that started before the last rated match is
    rated where it started (TrueSkill and Elo recomputed), as `compute` of all the rows."""
    history = frame(mixed)
    cut = int((history["match_id"].isin(history["match_id"].unique()[:30])).sum())
    first = compute(history.iloc[:cut], bootstrap=0)
    with pytest.raises(HistoryChangedError, match="already counted"):
        update(first, history.iloc[cut - 16:], bootstrap=0)
    late = history.iloc[cut:].copy()
    late["started_at"] = "2000-01-01T00:00:00+00:00"
    late["match_id"] = late["match_id"] + "-late"
    carried = update(first, late, bootstrap=0)
    assert carried.trueskill.last_key == first.trueskill.last_key  # the late ones rated before the others
    assert_same(carried, compute(pd.concat([history.iloc[:cut], late], ignore_index=True), bootstrap=0))


def test_the_warm_started_fit_equals_the_cold_one():
    from arena.ratings import plackett_luce
    from history.index import rated_table

    table = rated_table(with_players(frame(random_history(Population.random(20, seed=9), 80, seed=9))))
    cold = plackett_luce(table, bootstrap=0)
    warm = plackett_luce(table, bootstrap=0, start={p: r.rating + 0.3 for p, r in cold.items()})
    assert max(abs(cold[p].rating - warm[p].rating) for p in cold) <= 1e-4


def test_dictionary_encoded_rows_give_the_same_standings(mixed):
    from history.index import narrow

    history = frame(mixed)
    assert (narrow(history).dtypes == "category").sum() >= 5
    plain, narrowed = compute(history, bootstrap=0), compute(narrow(history), bootstrap=0)
    assert_same(narrowed, plain, mle_tolerance=0.0)
    # categories in no sorted order (as merged chunks and Arrow's dictionaries hold them)
    unsorted = narrow(history)
    for column in unsorted.columns:
        if unsorted[column].dtype == "category":
            unsorted[column] = unsorted[column].cat.reorder_categories(unsorted[column].cat.categories[::-1])
    assert_same(compute(unsorted, bootstrap=0), plain, mle_tolerance=0.0)
    cut = int((history["match_id"].isin(history["match_id"].unique()[:30])).sum())
    step = update(compute(narrow(history.iloc[:cut]), bootstrap=0), narrow(history.iloc[cut:]), bootstrap=0)
    assert (step.teams.frame().dtypes == "category").sum() >= 5  # still narrow after the update
    pd.testing.assert_frame_equal(step.pvp_players, plain.pvp_players, rtol=1e-12)
    pd.testing.assert_frame_equal(step.match_summary.astype(object), plain.match_summary.astype(object))
    assert step.trueskill == plain.trueskill
