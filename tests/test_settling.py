"""Settled ratings, the volume guarantee and the meter: one definition, checked in simulation."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import numpy as np
import pytest

from arena.errors import InvalidArgumentError
from arena.ratings import TRUESKILL_PER_PL, TRUESKILL_SIGMA, TrueSkillState, outcomes, trueskill_ratings
from arena.revision import player_id
from arena.rules import Pairing
from arena.settling import (
    SETTLED_SIGMA,
    SETTLED_WIDTH,
    Settling,
    interval_width,
    is_settled,
    matches_to_settle,
    priority_seats,
    seat_shares,
    settling,
)
from arena.simulation import Population, play
from matchmaking.service.pairing import make_pool

FIELD = [f"p{i:02d}@x" for i in range(40)]
SETTLED = 0.6  # a settled sigma (TrueSkill units)


def guarantee(players, sigmas, rng, counts=None):
    return make_pool(players, counts=counts or {}, rng=rng, how=Pairing.GUARANTEE, uncertainty=sigmas, fill=())


# -- the definition ---------------------------------------------------------------------------
def test_settled_is_a_95_percent_interval_at_most_one_unit_wide():
    assert interval_width(SETTLED_SIGMA) == pytest.approx(SETTLED_WIDTH) == pytest.approx(1.0)
    assert SETTLED_SIGMA == pytest.approx(TRUESKILL_PER_PL / (2 * 1.96))
    assert is_settled(SETTLED_SIGMA) and not is_settled(SETTLED_SIGMA + 1e-9) and not is_settled(TRUESKILL_SIGMA)
    assert matches_to_settle(SETTLED_SIGMA, gain=0.05) == 0
    with pytest.raises(InvalidArgumentError, match="`gain` must be positive"):
        matches_to_settle(2.0, gain=0.0)


# -- seat priority -----------------------------------------------------------------------------
def test_the_unsettled_always_get_a_seat_and_the_rest_is_random():
    sigmas = {p: SETTLED for p in FIELD[3:]}  # three never played
    rng = np.random.default_rng(0)
    seen = Counter()
    for _ in range(400):
        pool = guarantee(FIELD, sigmas, rng)
        assert len(pool) == len(set(pool)) == 16 and set(FIELD[:3]) <= set(pool)
        seen.update(p for p in pool if p not in FIELD[:3])
    assert set(seen) == set(FIELD[3:])  # every settled revision plays: random seats, not neighbours
    expected = 400 * 13 / 37
    assert all(abs(n - expected) < 0.35 * expected for n in seen.values())


def test_the_least_settled_go_first_in_at_most_half_the_pool():
    sigmas = {p: SETTLED for p in FIELD}
    for i, p in enumerate(FIELD[:12]):  # twelve unsettled, FIELD[0] the least settled
        sigmas[p] = 8.0 - 0.5 * i
    rng = np.random.default_rng(1)
    seats = Counter()
    for _ in range(300):
        pool = guarantee(FIELD, sigmas, rng)
        assert set(FIELD[:8]) <= set(pool)  # the 8 least settled, always
        seats.update(pool)
    assert priority_seats(16) == 8
    for p in FIELD[8:]:  # the others (unsettled or not) share the 8 other seats at random: 8 / 32
        assert abs(seats[p] / 300 - 8 / 32) < 0.09, p
    # the meter's shares for this state, with four or fewer unsettled (no rotation): exact
    few = {p: (8.0 if p in FIELD[:4] else SETTLED) for p in FIELD}
    shares = seat_shares(few, candidates=FIELD)
    assert all(shares[p] == 1.0 for p in FIELD[:4]) and shares[FIELD[9]] == pytest.approx(12 / 36)


def test_when_everyone_is_settled_pools_are_uniformly_random_and_small_fields_all_play():
    sigmas = {p: SETTLED for p in FIELD}
    rng = np.random.default_rng(2)
    seen = Counter(p for _ in range(500) for p in guarantee(FIELD, sigmas, rng))
    assert min(seen.values()) > 0.75 * 500 * 16 / 40 and max(seen.values()) < 1.25 * 500 * 16 / 40
    pool = make_pool(FIELD[:5], counts={}, rng=rng, how=Pairing.GUARANTEE, uncertainty={})
    assert set(FIELD[:5]) <= set(pool) and len(pool) == 16  # anchors fill the rest, as for every rule
    with pytest.raises(ValueError, match="needs `uncertainty`"):
        make_pool(FIELD, counts={}, rng=rng, how=Pairing.GUARANTEE)


# -- no starvation, in simulation --------------------------------------------------------------
def test_nobody_starves_under_a_stream_of_newcomers():
    """A field of 40 settled revisions and, every 8 pools, a newcomer (sigma falling as a real
    one's: precision up 0.05 a match): the worst case for the settled, unsettled always there.
    Each pool seats a revision with probability at least 8 / N, so a wait of 3 N pools has
    probability below e^-24: it never happens."""
    rng = np.random.default_rng(3)
    sigma = {p: SETTLED for p in FIELD}
    joined: dict[str, int] = {}
    settled_after: dict[str, int] = {}
    last = {p: 0 for p in FIELD}
    longest_wait = Counter()
    met = set()
    seats = Counter()
    pools, promised = 800, 0.0
    for t in range(1, pools + 1):
        if t % 8 == 0:
            new = f"new{t:04d}@x"
            sigma[new], joined[new], last[new] = TRUESKILL_SIGMA, t, t
        players = list(sigma)
        promised += 8 / len(players)  # the least share of the seats of this pool a revision may get
        pool = guarantee(players, sigma, rng)
        seats.update(pool)
        met.update(combinations(sorted(pool), 2))
        for p in pool:
            longest_wait[p] = max(longest_wait[p], t - last[p])
            last[p] = t
            sigma[p] = (1 / sigma[p] ** 2 + 0.05) ** -0.5 if not is_settled(sigma[p]) else sigma[p]
            if p in joined and p not in settled_after and is_settled(sigma[p]):
                settled_after[p] = t - joined[p]
    n = len(sigma)
    for p in FIELD:  # at least the (16 - 8) / N of the seats the guarantee promises (measured: 1.5x to 3x)
        assert seats[p] >= promised, p
        assert longest_wait[p] < 3 * n, p
    # every newcomer that had time settled, and quickly: a newcomer needs 23 matches at 0.05
    old = [p for p in joined if joined[p] < pools - 200]
    assert all(p in settled_after for p in old)
    assert np.median([settled_after[p] for p in old]) < 60
    # the unsettled meet the field: every newcomer met most of the original field
    for p in old:
        assert sum((min(p, q), max(p, q)) in met for q in FIELD) > 0.5 * len(FIELD), p


# -- the meter against a simulated schedule ----------------------------------------------------
def simulated_arena(seed: int, field: int = 40):
    """A settled field of `field` (uniformly random pools until every rating is settled) and a newcomer."""
    pop = Population.random(field + 1, seed=seed, prefix="sim-p")  # no "/": each its own owner (pools seat one per owner)
    ids = [player_id(p, "sim") for p in pop.ids]
    truth = dict(zip(ids, pop.skills))
    rng = np.random.default_rng(seed)
    state, index = TrueSkillState(), 0
    counts: Counter[str] = Counter()

    def step(pool):
        nonlocal state, index
        result = play([p.rsplit("@", 1)[0] for p in pool], [truth[p] for p in pool], rng=rng, index=index)
        state = trueskill_ratings(outcomes([result]), state=state, anchors={})
        counts.update(pool)
        index += 1

    members = ids[:field]
    while not all(p in state.ratings and is_settled(state.ratings[p].sigma) for p in members):
        step([members[i] for i in rng.choice(field, 16, replace=False)])
    return ids, ids[field], rng, step, lambda: {p: r.sigma for p, r in state.ratings.items()}, counts


def test_the_meter_forecasts_a_simulated_schedule():
    match_s, parallel = 30.0, 2  # each simulated match lasts 30 s, two at a time
    ratios = []
    for seed in range(3):
        ids, newcomer, rng, step, sigmas, counts = simulated_arena(seed)
        forecast: Settling | None = None
        played = 0
        while True:
            meter = settling(sigmas(), counts, candidates=ids, match_s=match_s, parallel=parallel)[newcomer]
            if counts[newcomer] == 3 and forecast is None:  # the meter read after its 3rd match
                forecast, played = meter, 0
            if meter.settled:
                break
            step(guarantee(ids, sigmas(), rng, counts))
            played += 1
        assert forecast is not None and not forecast.settled and forecast.seat_share == 1.0
        assert meter.text() == "settled" and meter.matches_left == 0 and meter.seconds_left == 0.0
        elapsed = played * match_s / parallel  # the simulated clock
        assert forecast.seconds_left == pytest.approx(forecast.arena_matches_left * match_s / parallel)
        ratios.append(forecast.seconds_left / elapsed)
        assert forecast.text().startswith(f"provisional: about {forecast.matches_left} more matches (≈ ")
    assert 0.85 < float(np.mean(ratios)) < 1.15, ratios  # measured: 0.95 to 1.0


def test_the_meter_without_a_duration_and_for_a_field_that_never_played():
    meter = settling({}, {}, candidates=["a@1", "b@1"], match_s=None)
    assert meter["a@1"].text() == "provisional: about 24 more matches" and meter["a@1"].seconds_left is None
    assert meter["a@1"].matches == 0 and meter["a@1"].width == pytest.approx(interval_width(TRUESKILL_SIGMA))
    with pytest.raises(InvalidArgumentError, match="`parallel`"):
        settling({}, {}, candidates=["a@1"], match_s=1.0, parallel=0)
    with pytest.raises(InvalidArgumentError, match="`match_s`"):
        settling({}, {}, candidates=["a@1"], match_s=0.0)
    # under the other rules too: a newcomer under least-played-first sits in every pool
    counts = {p: 50 for p in FIELD}
    shares = seat_shares({p: SETTLED for p in FIELD}, candidates=[*FIELD, "new@1"], how=Pairing.RANDOM, counts=counts)
    assert shares["new@1"] == 1.0 and shares[FIELD[0]] == pytest.approx(16 / 41)
