"""Duplicate sets: seats rotated over one seed's spawn points, and the set rated as one."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from huggingface_hub import HfApi

from arena.ratings import Played, outcomes, rated
from arena.settings import ArenaSettings
from localhub import LocalHub
from matchmaking import game, maps, seating
from matchmaking.config import MatchConfig
from matchmaking.match import MatchSpec, run_match
from matchmaking.policy import builtin
from tests_support import EXAMPLES, push_policy


def _layout(rng: np.random.Generator) -> list[tuple[int, int]]:
    points = [(side, index) for side in range(4) for index in range(4)]
    return [points[i] for i in rng.permutation(16)]


def test_rotations_put_every_team_on_every_side_at_the_same_point():
    rng = np.random.default_rng(0)
    for _ in range(50):
        layout = _layout(rng)
        lineup = [f"p{i}" for i in range(16)]
        seated = seating.rotations(lineup, layout)
        assert seated[0] == lineup and len(seated) == 4
        for team in lineup:
            points = [layout[seats.index(team)] for seats in seated]
            assert sorted(side for side, _ in points) == [0, 1, 2, 3]  # every edge once
            assert len({index for _, index in points}) == 1  # the same place along each edge
        assert all(sorted(seats) == sorted(lineup) for seats in seated)


def test_rotations_refuse_a_layout_that_cannot_rotate():
    with pytest.raises(seating.SeatingError, match="multiple of 4"):
        seating.rotations(list("abcdef"), [(0, 0), (0, 1), (1, 0), (2, 0), (3, 0), (3, 1)])
    with pytest.raises(seating.SeatingError, match="2 slots"):
        seating.rotations(list("abc"), [(0, 0), (1, 0)])


def test_a_real_set_spawns_every_team_on_every_edge(tmp_path):
    config = MatchConfig(horizon=3, cache_dir=tmp_path)
    seed = 11
    layout = game.spawn_layout(config, seed, maps.spec_map(seed, False, None, config)[1])
    names = ["random", "forage", "combat", "melee"] * 4
    lineup = [builtin(n) for n in names]
    results = [
        run_match(MatchSpec(seed=seed, policies=tuple(seats), config=config, track="pvp", set_id="set-x", set_size=4, set_rotation=r))
        for r, seats in enumerate(seating.rotations(lineup, layout))
    ]
    assert [(t.spawn_side, t.spawn_index) for t in results[0].teams] == layout  # the layout is the match's
    assert all([(t.spawn_side, t.spawn_index) for t in r.teams] == layout for r in results)  # one seed, one layout
    sides = Counter((t.policy_id, t.spawn_side) for r in results for t in r.teams)
    assert set(sides.values()) == {4} and len(sides) == 16  # each built-in seated 4 times, on each edge 4 times
    assert len({r.match_id for r in results}) == 4 and {r.map_id for r in results} == {results[0].map_id}
    # rated as one result: the mean Achievement of each player over its seats
    [one] = outcomes(results)
    assert one.key == (min(r.started_at for r in results), "set-x")
    mean = {p: np.mean([t.achievement for r in results for t in r.teams if t.policy_id == p]) for p in one.players}
    assert one.scores == tuple(mean[p] for p in one.players)
    assert outcomes(results[:3]) == []  # an incomplete set is not rated yet


def test_rated_keeps_single_matches_and_orders_sets_by_their_first_start():
    single = Played("2026-01-01T00:00:05", "m1", "", 1, ("a", "b"), (10, 4))
    in_set = [Played(f"2026-01-01T00:00:0{i}", f"s{i}", "set-1", 2, ("a", "b") if i else ("b", "a"), (4, 21)) for i in range(2)]
    out = rated([single, *in_set])
    assert [o.key for o in out] == [("2026-01-01T00:00:00", "set-1"), ("2026-01-01T00:00:05", "m1")]
    assert out[0].players == ("a", "b") and out[0].scores == (12.5, 12.5)  # 21 and 4 each: even over the set
    assert rated([single, *in_set, in_set[1]]) == out  # a match read twice counts once


@pytest.mark.slow
def test_the_matchmaker_plays_sets_and_finishes_one_left_incomplete(tmp_path):
    from matchmaking.service import Arena

    hub = LocalHub(tmp_path / "hub").start()
    try:
        push_policy(HfApi(endpoint=hub.endpoint, token="t"), "alice/gatherer", EXAMPLES / "gatherer")
        settings = ArenaSettings(
            data_dir=tmp_path / "data", hub_endpoint=hub.endpoint, match_horizon=8, workers=2, next_stage_top1=0.0,
            pve_matches_per_stage=1, qualify_achievement=0.0, seed_examples=False, pvp_format="duplicate",
        )
        arena = Arena.start(settings, schedule=False)
        try:
            m = arena.matchmaker
            m.sync()
            m.validate()
            while m.play_pve():
                pass
            assert m.play_pvp() == 4  # one set: one match per edge
            pvp = [r for r in arena.store.results() if r.track == "pvp"]
            assert len({r.set_id for r in pvp}) == 1 and sorted(r.set_rotation for r in pvp) == [0, 1, 2, 3]
            assert len({r.seed for r in pvp}) == 1
            assert all(r.held_out and r.map_id > maps.PUBLISHED_POOL for r in pvp)  # PvP plays the held-out pool
            layout = game.spawn_layout(m.config, pvp[0].seed, maps.spec_map(pvp[0].seed, True, m.config.map_key, m.config)[1])
            by_rotation = {r.set_rotation: r for r in pvp}
            assert [(t.spawn_side, t.spawn_index) for t in by_rotation[0].teams] == layout  # seated by its own map
            mine = sorted(t.spawn_side for r in pvp for t in r.teams if t.policy_id == "alice/gatherer")
            assert mine == [0, 1, 2, 3]
            refs = {"alice/gatherer@" + pvp[0].team("alice/gatherer").revision: ("alice/gatherer", pvp[0].team("alice/gatherer").revision)}
            for lost in range(4):  # any one match lost: the rebuilt spec is that very match
                kept = [r for r in pvp if r.set_rotation != lost]
                [again] = m._unfinished_sets(kept, refs)
                original = next(r for r in pvp if r.set_rotation == lost)
                assert again.match_id == original.match_id and again.set_rotation == lost
            assert m._unfinished_sets(pvp, refs) == []
        finally:
            arena.stop()
    finally:
        hub.stop()


def test_the_study_counts_matches_until_the_order_stays_settled():
    from bench.duplicate_study import _median_needed, needed

    assert needed([(4, 0.9), (8, 0.96), (12, 0.94), (16, 0.97), (20, 1.0)]) == 16  # settled for good only from 16
    assert needed([(4, 0.96), (8, 0.99)]) == 4 and needed([(4, 0.5), (8, 0.9)]) is None
    assert _median_needed([4, 8, None], total=20) == 8.0
    assert _median_needed([None, None, 8], total=20) is None  # mostly never settled: no figure
