"""PvP pools and PvE plans: who plays next, from the counts, ratings and history alone."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from arena.revision import Revision
from arena.rules import ANCHORS, POOL_FILL, PVE, Pairing, builtin_team
from arena.schema import MatchResult, TaskResult, TeamResult
from matchmaking.service.pairing import make_pool
from matchmaking.service.pve import plan, qualifies, stage_seed, summarize

PLAYERS = [f"p{i:02d}@x" for i in range(40)]


# -- pools --------------------------------------------------------------------------------
def test_few_qualified_are_all_seated_and_the_anchors_fill_the_rest():
    pool = make_pool(PLAYERS[:5], counts={}, rng=np.random.default_rng(0), how=Pairing.RANDOM)
    assert len(pool) == 16 and set(PLAYERS[:5]) <= set(pool)
    fill = Counter(p for p in pool if p not in PLAYERS)
    assert set(fill) == set(ANCHORS) and max(fill.values()) - min(fill.values()) <= 1  # cycled evenly
    assert POOL_FILL == ("builtin:combat", "builtin:forage", "builtin:random")  # strongest first


def test_random_pools_seat_the_least_played_first():
    counts = {p: (0 if i < 16 else 5) for i, p in enumerate(PLAYERS)}
    pool = make_pool(PLAYERS, counts=counts, rng=np.random.default_rng(1), how=Pairing.RANDOM)
    assert sorted(pool) == sorted(PLAYERS[:16])
    counts = {p: 0 for p in PLAYERS}
    seen = Counter()
    rng = np.random.default_rng(2)
    for _ in range(50):  # equal counts kept equal: everybody plays about as often
        pool = make_pool(PLAYERS, counts=counts, rng=rng, how=Pairing.RANDOM)
        for p in pool:
            counts[p] += 1
            seen[p] += 1
    assert max(seen.values()) - min(seen.values()) <= 1


def test_uncertainty_pools_take_the_least_certain():
    uncertainty = {p: float(i) for i, p in enumerate(PLAYERS)}
    pool = make_pool(PLAYERS, counts={}, rng=np.random.default_rng(4), how=Pairing.UNCERTAINTY, uncertainty=uncertainty)
    assert sorted(pool) == sorted(PLAYERS[-16:])


@pytest.mark.parametrize("how", list(Pairing))
def test_no_pool_seats_two_revisions_of_one_owner_and_pools_stay_full(how):
    """No teammates in a free-for-all: 10 owners with 4 revisions each, 200 pools per rule."""
    entries = [f"owner{o}/team{t}@{'ab'[t % 2] * 40}" for o in range(10) for t in range(4)]
    uncertainty = {p: float(i % 7) for i, p in enumerate(entries)}
    counts, rng, seated = {p: 0 for p in entries}, np.random.default_rng(5), Counter()
    for _ in range(200):
        pool = make_pool(entries, counts=counts, rng=rng, how=how, uncertainty=uncertainty)
        owners = [p.split("/")[0] for p in pool if not p.startswith("builtin:")]
        assert len(pool) == 16 and len(owners) == len(set(owners)) == 10, pool  # one each; anchors fill the rest
        for p in pool:
            counts[p] = counts.get(p, 0) + 1
            seated[p] += 1
    if how is Pairing.RANDOM:  # (the others follow the sigmas, fixed here)
        assert all(seated[p] > 0 for p in entries)  # every revision still plays


def test_pool_arguments_are_checked():
    with pytest.raises(ValueError, match="needs `uncertainty`"):
        make_pool(PLAYERS, counts={}, rng=np.random.default_rng(0), how=Pairing.UNCERTAINTY)
    with pytest.raises(ValueError, match="at least 1"):
        make_pool(PLAYERS, counts={}, rng=np.random.default_rng(0), how=Pairing.RANDOM, size=0)
    a = make_pool(PLAYERS, counts={}, rng=np.random.default_rng(9), how=Pairing.RANDOM)
    assert a == make_pool(PLAYERS, counts={}, rng=np.random.default_rng(9), how=Pairing.RANDOM)  # seeded: reproducible


# -- PvE plans ----------------------------------------------------------------------------
ME, REV = "alice/team", "a" * 40


def pve_match(stage: int, index: int, *, achievement: int, top: bool, revision: str = REV) -> MatchResult:
    """A recorded PvE match of ME: its score, and whether it was the best."""
    seed = stage_seed(Revision(ME, revision), stage, index)
    other = achievement - 1 if top else achievement + 1
    tasks = {t: TaskResult(0, 0) for t in ("travel", "forage", "equipment", "eliminate")}
    teams = [TeamResult(0, ME, revision, achievement, 1 if top else 2, tasks, 8, 0, 0)]
    teams += [TeamResult(s, "builtin:forage", "builtin", max(other, 0), 2 if top else 1, tasks, 8, 0, 0) for s in range(1, 16)]
    return MatchResult(f"m-{stage}-{index}-{revision[:3]}", seed, 1, 1024, 1024, "2.1.2", "t", f"2026-01-01T00:{stage:02d}:{index:02d}",
                       1.0, tuple(teams), track="pve", stage=stage)


def test_an_empty_history_plans_all_of_stage_one():
    p = plan([], Revision(ME, REV))
    assert (p.stage, p.finished, len(p.seeds)) == (1, False, PVE.matches_per_stage)
    assert p.seeds == tuple(stage_seed(Revision(ME, REV), 1, i) for i in range(PVE.matches_per_stage))


def test_a_half_played_stage_plans_only_what_is_missing_and_ignores_other_revisions():
    history = [pve_match(1, i, achievement=30, top=True) for i in range(4)]
    history += [pve_match(1, i, achievement=30, top=True, revision="b" * 40) for i in range(10)]
    p = plan(history, Revision(ME, REV))
    assert p.stage == 1 and p.seeds == tuple(stage_seed(Revision(ME, REV), 1, i) for i in range(4, 10))


def test_a_weak_stage_one_ends_pve_and_a_strong_one_opens_stage_two():
    weak = [pve_match(1, i, achievement=10, top=i < 4) for i in range(10)]  # Top1Ratio 0.4
    p = plan(weak, Revision(ME, REV))
    assert p.finished and p.stage == 1 and p.summaries[1].top1_ratio == pytest.approx(0.4)
    assert qualifies(p.summaries) == (False, "mean Achievement 10.0 in PvE stage 1, below the 25 that qualifies for PvP")
    strong = [pve_match(1, i, achievement=30, top=i < 5) for i in range(10)]  # Top1Ratio 0.5 opens stage 2
    p = plan(strong, Revision(ME, REV))
    assert not p.finished and p.stage == 2 and len(p.seeds) == PVE.matches_per_stage
    ok, reason = qualifies(p.summaries)
    assert ok and reason == "qualified: mean Achievement 30.0 in PvE stage 1 (>= 25)"


def test_three_stages_played_finish_pve():
    history = [pve_match(s, i, achievement=40, top=True) for s in (1, 2, 3) for i in range(10)]
    p = plan(history, Revision(ME, REV))
    assert p.finished and p.stage == PVE.last_stage and set(p.summaries) == {1, 2, 3}
    assert summarize(history, ME).matches == 30
    assert qualifies({}) == (False, "PvE stage 1 not finished")


def test_stage_opponents_and_builtin_names():
    assert [len(PVE.opponents(s)) for s in PVE.stages] == [15, 15, 15]
    assert PVE.describe(1) == "3 Combat, 5 Forage, 7 Random"
    assert builtin_team("Forage") is builtin_team("builtin:FORAGE") is builtin_team("forage")
    with pytest.raises(ValueError, match="No PvE stage 4"):
        PVE.opponents(4)


def test_builtin_names_are_case_insensitive_everywhere():
    from arena.errors import PolicyNotFoundError
    from arena.policies import builtin, parse_target

    assert builtin("Forage") == builtin("forage") and builtin("Forage").policy_id == "builtin:forage"
    assert parse_target("builtin:Combat") == builtin("combat")
    with pytest.raises(PolicyNotFoundError, match="No built-in team 'Foraging'. Available: builtin:random"):
        builtin("Foraging")


def test_settings_thresholds_drive_the_plan():
    history = [pve_match(1, i, achievement=10, top=i < 2) for i in range(3)]  # 2 of 3 won
    opened = plan(history, Revision(ME, REV), matches_per_stage=3, next_stage_top1=0.5)
    assert not opened.finished and opened.stage == 2 and len(opened.seeds) == 3
    stopped = plan(history, Revision(ME, REV), matches_per_stage=3, next_stage_top1=0.7)
    assert stopped.finished and stopped.stage == 1 and stopped.summaries[1].top1_ratio == pytest.approx(2 / 3)


def test_replace_keeps_plans_pure():
    history = [pve_match(1, i, achievement=30, top=True) for i in range(10)]
    shuffled = list(reversed(history))
    assert plan(history, Revision(ME, REV)) == plan(shuffled, Revision(ME, REV))
    assert plan([replace(history[0], track="pvp")], Revision(ME, REV)).seeds == plan([], Revision(ME, REV)).seeds


def test_a_stage_ends_as_soon_as_its_bars_are_decided():
    from matchmaking.service.pve import decide

    winner = [pve_match(1, i, achievement=84, top=True) for i in range(3)]  # 252 points: the mean of ten is >= 25 whatever comes
    assert decide(winner, ME, of=10, top1_bar=0.5, qualify_bar=25).qualifies is True
    assert decide(winner, ME, of=10, top1_bar=0.5, qualify_bar=25).passes is None  # 3 wins of 10 may still end below 0.5
    five = [pve_match(1, i, achievement=84, top=True) for i in range(5)]
    p = plan(five, Revision(ME, REV))
    assert p.stage == 2 and p.summaries[1].matches == 5 and p.stage1.early
    assert qualifies(p.summaries) == (True, "qualified: mean Achievement 84.0 in PvE stage 1 (>= 25, decided after 5 of 10 matches)")
    loser = [pve_match(1, i, achievement=0, top=False) for i in range(8)]  # at most 2 x 84 = 168 < 250 to come; 0.2 < 0.5
    p = plan(loser, Revision(ME, REV))
    assert p.finished and p.stage == 1 and p.summaries[1].matches == 8
    assert qualifies(p.summaries)[1].endswith("below the 25 that qualifies for PvP, decided after 8 of 10 matches")
    seven = loser[:7]  # 3 x 84 = 252 could still reach 250: open
    assert not plan(seven, Revision(ME, REV)).finished and plan(seven, Revision(ME, REV)).stage1 is None


def test_an_early_decision_agrees_with_the_full_stage_whatever_the_rest_brings():
    from matchmaking.service.pve import decide

    rng = np.random.default_rng(4)
    for _ in range(300):
        scores = rng.choice([0, 4, 14, 25, 31, 45, 84], size=10)
        wins = rng.random(10) < rng.random()
        history = [pve_match(1, i, achievement=int(scores[i]), top=bool(wins[i])) for i in range(10)]
        full = decide(history, ME, of=10, top1_bar=0.5, qualify_bar=25)
        for k in range(1, 10):
            early = decide(history[:k], ME, of=10, top1_bar=0.5, qualify_bar=25)
            assert early.passes in (None, full.passes) and early.qualifies in (None, full.qualifies)
