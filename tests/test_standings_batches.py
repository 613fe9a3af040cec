"""The standings folded from the history's shards one at a time equal the standings of all
the rows in one frame: the whole recomputation never holds every row twice."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from test_standings_update import assert_same, pve_matches

from arena import PROJECT_ROOT
from arena.schema import rows
from arena.simulation import Population, random_history
from history.index import HistoryIndex, narrow, team_rows
from history.store import HistoryStore
from leaderboard.refresher import StandingsRefresher
from leaderboard.standings import Online, RatedAhead, compute, update
from tests_synthetic import arena_history


def frame(results) -> pd.DataFrame:
    return pd.DataFrame([row for r in results for row in rows(r)])


@pytest.fixture(scope="module")
def history() -> pd.DataFrame:
    """Every case at once: old duplicate sets' matches (one set incomplete), a submission
    seated twice, held-out maps, PvE stages of a submission with two revisions, and ties."""
    results = arena_history(matches=40, sets=4, seed=5) + pve_matches(np.random.default_rng(5), first_index=3000, hour=12)
    results = sorted(results, key=lambda r: (r.started_at, r.match_id))
    table = frame(results)
    ids = list(dict.fromkeys(table["match_id"]))
    table["held_out"] = table["match_id"].isin(ids[::3])
    return table


def batches_of(table: pd.DataFrame, sizes: list[int]) -> list[pd.DataFrame]:
    """`table` cut into batches of `sizes[k]` whole matches, cycling through `sizes`."""
    ids = list(dict.fromkeys(table["match_id"]))
    cuts, at, k = [0], 0, 0
    while at < len(ids):
        at = min(at + sizes[k % len(sizes)], len(ids))
        cuts.append(int(table["match_id"].isin(ids[:at]).sum()))
        k += 1
    return [table.iloc[a:b].reset_index(drop=True) for a, b in zip(cuts, cuts[1:])]


@pytest.mark.parametrize("sizes", [[1], [3], [7, 2, 11], [1000]])
def test_batches_of_whole_matches_give_the_standings_of_the_whole_frame(history, sizes):
    """Cut every 3 matches, each old duplicate set (4 matches) spans two batches: its
    matches are rated one by one wherever they are."""
    batches = batches_of(history, sizes)
    whole = compute(history, bootstrap=0)
    folded = compute(iter(batches), bootstrap=0)
    assert_same(folded, whole, mle_tolerance=0.0)
    assert folded.rated_results == whole.rated_results > 0 and len(folded.held_out_rated) > 0
    assert_same(compute((narrow(b) for b in batches), bootstrap=0), whole, mle_tolerance=0.0)


def test_an_update_whose_new_rows_hold_old_sets_equals_a_full_computation(history):
    """Rows of an old duplicate set split between the standings and an update (refused while
    a complete set was rated as one result): each match is rated on its own either way."""
    ids = list(dict.fromkeys(history["match_id"]))
    in_set = history.groupby("match_id", sort=False)["set_id"].first().loc[ids].to_numpy() != ""
    first = int(np.argmax(in_set))
    cut = int(history["match_id"].isin(ids[:first + 2]).sum())  # halfway through the first set
    carried = update(compute(history.iloc[:cut], bootstrap=0), history.iloc[cut:], bootstrap=0, refresh_mle=True)
    full = compute(history, bootstrap=0)
    assert_same(carried, full, mle_tolerance=1e-4)
    assert full.rated_results == full.pvp_matches == int(in_set.sum()) + 40  # 40 single matches, every set's one by one


def test_batches_out_of_start_order_give_the_standings_of_their_rows(history):
    """A shard may hold a match that started before matches of an earlier shard (two
    workers finish out of order): the results are rated in start order all the same."""
    batches = batches_of(history, [5])
    shuffled = [batches[k] for k in np.random.default_rng(1).permutation(len(batches))]
    folded = compute(shuffled, bootstrap=0)
    assert_same(folded, compute(pd.concat(shuffled, ignore_index=True), bootstrap=0), mle_tolerance=0.0)
    assert folded.trueskill == compute(history, bootstrap=0).trueskill  # the order of the batches does not matter


def test_no_batch_or_empty_ones_give_empty_standings_with_columns(history):
    for nothing in ([], [history.iloc[0:0]], iter([])):
        standings = compute(nothing, bootstrap=0)
        assert standings.matches == 0 and standings.rated_results == 0 and not standings.mle
        assert "match_id" in standings.teams.of_player("nobody").columns
    with_empty = compute([history.iloc[0:0], history, history.iloc[0:0]], bootstrap=0)
    assert_same(with_empty, compute(history, bootstrap=0), mle_tolerance=0.0)


def test_a_match_split_across_batches_is_refused_with_its_id(history):
    first = history["match_id"].iloc[0]
    with pytest.raises(ValueError, match=f"Match {first} has rows in more than one batch"):
        compute([history.iloc[:8], history.iloc[8:]], bootstrap=0)


def test_the_chunks_stay_within_their_cap_and_read_as_the_whole(history, monkeypatch):
    monkeypatch.setattr(team_rows, "MAX_CHUNK_ROWS", 64)
    standings = compute(batches_of(history, [1]), bootstrap=0)
    assert max(len(c) for c in standings.teams.chunks) <= 64 and len(standings.teams.chunks) >= len(history) // 64
    pd.testing.assert_frame_equal(standings.teams.frame().astype(object), compute(history, bootstrap=0).teams.frame().astype(object))


def test_the_index_reads_the_stores_shards_one_at_a_time_each_match_once(tmp_path):
    """`HistoryIndex`: each shard's rows, a match read from an earlier shard left out of a
    later one (a crash between a flush and the WAL's deletion can leave a match twice)."""
    store = HistoryStore(tmp_path / "history")
    matches = list(random_history(Population.random(20, seed=2), 9, seed=2))
    for chunk in (matches[:4], matches[4:7], matches[7:]):
        for m in chunk:
            store.record(m)
        store.flush()
    again = tmp_path / "history" / "data" / "zz-again.parquet"  # the first shard's matches, once more
    again.write_bytes(store.shards()[0].read_bytes())
    read = []
    read_shard = store.read_shard
    store.read_shard = lambda path: read.append(path.name) or read_shard(path)
    folded = HistoryIndex(store).refresh().folded
    assert len(read) == 4 and folded.matches == 9 and len(folded.teams) == 9 * 16  # the copy adds nothing
    standings = compute(folded, bootstrap=0)
    assert_same(standings, compute(store.shard_table().to_pandas(), bootstrap=0), mle_tolerance=0.0)


#: 15 random matches in start order.
MATCHES = sorted(random_history(Population.random(20, seed=3), 15, seed=3), key=lambda m: (m.started_at, m.match_id))


def sharded_store(tmp_path, cuts: list[slice]) -> HistoryStore:
    """A store of the first 12 `MATCHES`, flushed into one shard per slice of them, in that order."""
    store = HistoryStore(tmp_path / "history")
    matches = MATCHES[:12]
    for cut in cuts:
        for m in matches[cut]:
            store.record(m)
        store.flush()
    return store


def test_the_matches_rated_while_the_index_reads_the_rest_give_the_standings_of_them_all(tmp_path):
    """`RatedAhead` rates each shard as the index folds it (a long history's first standings
    wait for the fold, not for the fold and then TrueSkill): the standings that start from
    it are those computed from nothing, trajectories included."""
    store = sharded_store(tmp_path, [slice(0, 4), slice(4, 7), slice(7, None)])
    index, ahead = HistoryIndex(store), RatedAhead()
    index.follow(ahead)
    folded = index.refresh().folded
    online = ahead.online()
    assert online is not None and online.trueskill.matches == len(folded.rated) == 12  # every shard, in order
    assert online.trajectory and all(len(t) for t in online.trajectory.values())
    assert_same(compute(folded, bootstrap=0, online=online), compute(folded, bootstrap=0), mle_tolerance=0.0)
    partly = Online().then(folded.rated.take(np.arange(5)))  # of the first matches only: carried forward
    assert_same(compute(folded, bootstrap=0, online=partly), compute(folded, bootstrap=0), mle_tolerance=0.0)


def test_a_shard_of_earlier_matches_stops_the_rating_ahead_and_the_standings_are_the_same(tmp_path):
    """A shard folded after one whose matches started later (two workers finished out of
    order) cannot be rated on top of it: `online()` says so (None), and the first standings
    rate every match in start order."""
    store = sharded_store(tmp_path, [slice(6, None), slice(0, 6)])
    index, ahead = HistoryIndex(store), RatedAhead()
    index.follow(ahead)
    folded = index.refresh().folded
    assert ahead.online() is None
    wrong = Online().then(folded.rated.take(np.arange(6, 12)))  # of other matches: recomputed from nothing
    assert_same(compute(folded, bootstrap=0, online=wrong), compute(store.shard_table().to_pandas(), bootstrap=0),
                mle_tolerance=0.0)


def test_a_refreshers_first_standings_of_a_sharded_history_are_those_computed_from_nothing(tmp_path):
    """The refresher rates ahead for its first standings only, then carries its own forward."""
    store = sharded_store(tmp_path, [slice(0, 5), slice(5, None)])
    refresher = StandingsRefresher(store, bootstrap=0)
    first = refresher.refresh()
    assert_same(first, compute(store.shard_table().to_pandas(), bootstrap=0), mle_tolerance=0.0)
    for m in MATCHES[12:]:
        store.record(m)
    store.flush()
    later = refresher.refresh()
    assert later.trueskill == compute(store.shard_table().to_pandas(), bootstrap=0).trueskill and later.matches == 15


@pytest.mark.slow
def test_the_ratings_bench_recomputes_from_day_shards_and_prints_the_issues_keys(tmp_path):
    """`python -m bench.ratings_recompute --json`: the figures issue 12 names, on the last
    line; the whole recomputation in a fresh process from the history written as shards."""
    done = subprocess.run([sys.executable, "-m", "bench.ratings_recompute", "--matches", "300", "--bootstrap", "2",
                           "--package-sample", "40", "--standings-bootstrap", "2", "--shard-matches", "100", "--json"],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    for key in ("trueskill_full_s", "trueskill_max_abs_diff", "mle_fit_s", "bootstrap_200_s", "standings_s", "peak_rss_mb"):
        assert isinstance(report[key], (int, float)), key
    assert report["trueskill_max_abs_diff"] <= 1e-6 and report["recompute_shards"] == 3
    assert report["peak_rss_mb"] > 50 and report["recompute_chunks"] >= 1
