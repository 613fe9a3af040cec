"""The history index equals what the matchmaker computed from every match as a
`MatchResult`, and holds every match once for the tables, on a history spread over shards, a
compacted day and the WAL, read once and then again after it grows."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from arena import ARENA_VERSION
from arena.ratings import TrueSkillState, extend_trueskill, outcomes
from arena.revision import Revision, player_id
from arena.schema import Fault, FaultKind, MatchResult, faulty
from arena.simulation import play
from history.audits import next_to_audit, other_versions
from history.index import HistoryIndex, fold
from history.store import HistoryStore

NMMO = "2.1.2"
INSTALLED = (NMMO, ARENA_VERSION)
SUBMITTED = [f"team/p-{i}" for i in range(6)]
FILL = ["builtin:forage", "builtin:combat", "builtin:random"]


def _matches(rng: np.random.Generator, start: int, count: int) -> list[MatchResult]:
    """PvE matches (one submission against built-ins) and PvP pools, some faulty, some of
    another version, some of the local track, in no particular start order."""
    made = []
    for i in range(start, start + count):
        if i % 3 == 0:
            lineup = [SUBMITTED[i % len(SUBMITTED)]] + [FILL[k % 3] for k in range(15)]
            fields = {"track": "pve", "stage": 1 + i % 2, "seed": 1000 + i}
        else:
            lineup = [SUBMITTED[k] for k in rng.permutation(len(SUBMITTED))] + [FILL[k % 3] for k in range(10)]
            fields = {"track": "local" if i % 11 == 0 else "pvp", "seed": 5000 + i}
        result = play(lineup, list(rng.normal(0, 1, 16)), rng=rng, index=i)
        teams = tuple(replace(t, revision="builtin" if t.policy_id.startswith("builtin:") else "r" * 40) for t in result.teams)
        if i % 7 == 0:  # a submitted team crashed
            crashed = next(k for k, t in enumerate(teams) if not t.policy_id.startswith("builtin:"))
            teams = tuple(replace(t, fault_counts={"CRASH": 1}, faults=(Fault(3, FaultKind.CRASH, "it died"),))
                          if k == crashed else t for k, t in enumerate(teams))
        made.append(replace(result, match_id=f"m{i:05d}", teams=teams, started_at=f"2026-05-0{1 + i % 3}T{i % 24:02d}:00:{i % 60:02d}",
                            duration_s=float(i % 13), nmmo_version=NMMO, arena_version="0.0-old" if i % 10 == 0 else ARENA_VERSION,
                            ticks=64, **fields))
    return made


def _check(index: HistoryIndex, store: HistoryStore) -> None:
    index.refresh()
    history = store.results()
    assert index.matches == len(history)
    for policy in SUBMITTED:
        mine = [r for r in history if r.track == "pve" and any(t.policy_id == policy for t in r.teams)]
        assert [r.match_id for r in index.pve_results(Revision(policy, "r" * 40))] == [r.match_id for r in mine]
        assert index.pve_results(Revision(policy, "r" * 40)) == mine  # whole records, equal field for field
        reasons = [reason for r in history for t in r.teams
                   if t.policy_id == policy and (reason := faulty(t, r.ticks))]
        assert index.faulty_reasons(Revision(policy, "r" * 40)) == reasons
    assert index.pvp_counts() == Counter(player_id(t.policy_id, t.revision) for r in history if r.track == "pvp" for t in r.teams)
    assert index.recent_pve_durations(20) == [r.duration_s for r in history if r.track == "pve" and r.duration_s > 0][-20:]
    assert index.other_version(INSTALLED) == other_versions(history, nmmo_version=NMMO, arena_version=ARENA_VERSION)
    for skipped in ([], [r.match_id for r in history[::2]], [r.match_id for r in history]):
        expected = next_to_audit(history, skipped, nmmo_version=NMMO, arena_version=ARENA_VERSION)
        assert index.next_to_audit(skipped, INSTALLED) == expected
    reference = extend_trueskill(TrueSkillState(), outcomes([r for r in history if r.track == "pvp"]))
    got = extend_trueskill(TrueSkillState(), index.rated)
    assert got.ratings == reference.ratings and got.matches == reference.matches
    # the tables' side: every match once, its rows with it
    snapshot = index.refresh()
    assert snapshot.folded.matches == len(history) and len(snapshot.folded.teams) == sum(len(r.teams) for r in history)
    assert sorted(snapshot.folded.summary["Match"]) == sorted(r.match_id for r in history)
    assert snapshot.unsharded == len(store.read_wal())
    whole = fold([store.table().to_pandas()])  # the pure fold of every row at once
    assert (snapshot.folded.rated.ids == whole.rated.ids).all() and (snapshot.folded.rated.scores == whole.rated.scores).all()
    for mine, theirs in ((snapshot.folded.tallies.pvp, whole.tallies.pvp), (snapshot.folded.tallies.pve, whole.tallies.pve)):
        pd.testing.assert_frame_equal(mine.sort_index().astype(float, errors="ignore"), theirs.sort_index().astype(float, errors="ignore"),
                                      check_dtype=False, check_index_type=False, check_categorical=False)


@pytest.mark.parametrize("seed", [1, 2])
def test_the_index_equals_the_matchmakers_reading_of_every_match(tmp_path, seed):
    rng = np.random.default_rng(seed)
    store = HistoryStore(tmp_path / "history")
    index = HistoryIndex(store)
    _check(index, store)  # empty
    for batch in (_matches(rng, 0, 40), _matches(rng, 40, 30)):
        for result in batch:
            store.record(result)
        store.flush()
    _check(index, store)
    store.compact()  # the shards folded so far are replaced by one a day
    for result in _matches(rng, 70, 25):  # more, some flushed and some only in the WAL
        store.record(result)
        if result.match_id == "m00080":
            store.flush()
    _check(index, store)
    store.flush()
    store.compact()
    _check(index, store)


def test_a_fold_that_fails_half_way_is_read_again_whole(tmp_path, monkeypatch):
    """What the index had read of a refresh that raised is forgotten: the next refresh folds
    the folder from the start, so no shard is taken as read while its matches are missing."""
    import history.index.index as module

    rng = np.random.default_rng(5)
    store = HistoryStore(tmp_path / "history")
    for result in _matches(rng, 0, 12):
        store.record(result)
    store.flush()
    index = HistoryIndex(store)
    fold_ = module.fold

    def failing(batches, **kwargs):
        next(iter(batches))  # a shard read, then the fold fails
        raise MemoryError("the fold failed half-way")

    monkeypatch.setattr(module, "fold", failing)
    with pytest.raises(MemoryError):
        index.refresh()
    monkeypatch.setattr(module, "fold", fold_)
    _check(index, store)
