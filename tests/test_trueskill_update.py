"""The Arena's one TrueSkill update (`arena.kernels.rate_ffa`, called through
`arena.ratings.trueskill.ffa_update`) against the trueskill package: the same ratings
within 1e-6, a refusal exactly where the package fails, the same v and w functions bit
for bit; and without numba, the same update run as plain Python, bit for bit.

The package is the reference, run on every match here; it is slow (about 5 ms for an average
match here), which is what sets the number of matches.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trueskill
from trueskill import Rating

from arena import kernels
from arena.kernels import trueskill as ts_kernels
from arena.ratings.trueskill import ffa_update, rate_match

ROOT = Path(__file__).resolve().parent.parent
TOLERANCE = 1e-6
# The project's environment, and a second one with a dynamic factor and more draws.
PROJECT = dict(mu=25.0, sigma=25 / 3, beta=25 / 6, tau=0.0, draw_probability=0.015)
OTHER = dict(mu=25.0, sigma=25 / 3, beta=25 / 6, tau=25 / 300, draw_probability=0.1)

Ratings = list[tuple[float, float]]
Match = tuple[Ratings, list[int]]


def package_rate(params: dict, ratings: Ratings, ranks: list[int], **kwargs) -> Ratings:
    """The package's result for one-player teams, read back as (mu, sigma)."""
    teams = [(Rating(m, s),) for m, s in ratings]
    rated = trueskill.TrueSkill(**params).rate(teams, ranks=ranks, **kwargs)
    return [(team[0].mu, team[0].sigma) for team in rated]


def update(params: dict, ratings: Ratings, ranks: list[int], **kwargs) -> Ratings | None:
    """The Arena's update in the environment `params` (mu and sigma do not change a result)."""
    return ffa_update(ratings, ranks, beta=params["beta"], tau=params["tau"],
                      draw_probability=params["draw_probability"], **kwargs)


def random_ranks(rng: random.Random, n: int) -> list[int]:
    """Ranks of n players, in random order, mostly with many ties."""
    kind = rng.random()
    if kind < 0.1:  # everybody tied
        return [0] * n
    if kind < 0.35:  # a few distinct winners, then most tie at the bottom (many teams score 0)
        winners = rng.randint(1, min(3, n - 1))
        ranks = list(range(winners)) + [winners] * (n - winners)
    elif kind < 0.6:  # competition ranks ("1224") of integer scores, many of them 0
        scores = [0 if rng.random() < 0.5 else rng.randint(1, 4) for _ in range(n)]
        ranks = [sum(other > score for other in scores) for score in scores]
    elif kind < 0.75:  # no ties
        ranks = list(range(n))
    else:  # ranks drawn from a small range: ties anywhere
        top = rng.randint(1, n - 1)
        ranks = [rng.randint(0, top) for _ in range(n)]
    rng.shuffle(ranks)
    return ranks


def random_matches(seed: int, count: int, max_players: int = 16) -> Iterator[Match]:
    """Random matches of 2..max_players players: mu in [0, 50], sigma in [0.5, 8.33]."""
    rng = random.Random(seed)
    for _ in range(count):
        n = rng.randint(2, max_players)
        ratings = [(rng.uniform(0, 50), rng.uniform(0.5, 8.33)) for _ in range(n)]
        yield ratings, random_ranks(rng, n)


def assert_same_as_package(params: dict, matches: Iterator[Match], **kwargs) -> int:
    """Compare every match with the package; returns how many were rated (not refused)."""
    rated = 0
    for ratings, ranks in matches:
        try:
            expected = package_rate(params, ratings, ranks, **kwargs)
        except FloatingPointError:
            assert update(params, ratings, ranks, **kwargs) is None, (ratings, ranks)
            continue
        got = update(params, ratings, ranks, **kwargs)
        assert got is not None, (ratings, ranks)
        assert len(got) == len(expected)
        for (mu, sigma), (exp_mu, exp_sigma) in zip(got, expected):
            assert abs(mu - exp_mu) <= TOLERANCE, (ratings, ranks, got, expected)
            assert abs(sigma - exp_sigma) <= TOLERANCE, (ratings, ranks, got, expected)
        rated += 1
    return rated


def package_mpmath(ratings: Ratings, ranks: list[int]) -> Ratings:
    """The package with the mpmath backend in the project's environment: `rate_match`'s fallback."""
    env = trueskill.TrueSkill(**PROJECT, backend="mpmath")
    rated = env.rate([(env.create_rating(m, s),) for m, s in ratings], ranks=ranks)
    return [(float(team[0].mu), float(team[0].sigma)) for team in rated]


@pytest.mark.slow
def test_same_as_package_on_3000_random_matches():
    assert assert_same_as_package(PROJECT, random_matches(seed=2024, count=3000)) == 3000


def test_same_as_package_with_dynamic_factor_and_more_draws():
    assert assert_same_as_package(OTHER, random_matches(seed=7, count=200)) == 200


def test_same_as_package_when_the_chain_stops_early():
    # A large min_delta stops the chain after fewer rounds: the stopping rule must match.
    assert assert_same_as_package(PROJECT, random_matches(seed=11, count=150, max_players=8), min_delta=0.05) == 150


def test_edge_shapes_match_the_package():
    ratings16 = [(25.0 + i, 8.0 - 0.4 * i) for i in range(16)]
    matches = [
        ([(25.0, 25 / 3), (25.0, 25 / 3)], [0, 0]),  # two newcomers draw
        ([(25.0, 25 / 3), (25.0, 25 / 3)], [1, 0]),  # the second wins
        (ratings16, [0] * 16),  # all tied
        (ratings16, [0, 1, 2] + [3] * 13),  # most tie at the bottom
        (ratings16, [15 - i for i in range(16)]),  # reversed order
        (ratings16, [7, 3, 3, 0, 12, 3, 7, 7, 1, 12, 12, 12, 3, 0, 5, 12]),  # shuffled ties
    ]
    assert assert_same_as_package(PROJECT, iter(matches)) == len(matches)


def test_rate_match_is_the_update_in_the_projects_environment():
    for ratings, ranks in random_matches(seed=5, count=50):
        assert rate_match(ratings, ranks) == update(PROJECT, ratings, ranks)


@pytest.mark.parametrize(
    ("ratings", "ranks"),
    [
        ([(0.0, 1.0), (300.0, 1.0)], [0, 1]),  # a hopeless underdog wins
        ([(0.0, 1.0), (300.0, 1.0)], [0, 0]),  # ... or draws
        ([(25.0, 2.0)] * 15 + [(400.0, 1.0)], [0] * 15 + [1]),  # the favourite is last of 16
        ([(25.0 + i, 2.0) for i in range(15)] + [(-300.0, 1.0)], list(range(1, 16)) + [0]),
        ([(30.0 * i, 1.0) for i in range(16)], list(range(16))),  # exactly the wrong order
    ],
)
def test_refused_where_the_package_raises_floating_point_error(ratings, ranks):
    with pytest.raises(FloatingPointError):
        package_rate(PROJECT, ratings, ranks)
    assert update(PROJECT, ratings, ranks) is None
    # The caller's fallback: the package with the mpmath backend rates these.
    assert rate_match(ratings, ranks) == package_mpmath(ratings, ranks)


def test_refused_where_the_package_has_a_math_domain_error():
    # In extreme matches the package also fails with a ValueError (a negative precision
    # reaches math.sqrt) instead of a FloatingPointError; refused too, and the mpmath
    # backend rates it.
    ratings, ranks = [(89.0, 2.3), (339.0, 1.5), (367.0, 0.4), (133.0, 2.8), (285.0, 0.3)], [3, 3, 1, 1, 0]
    with pytest.raises(ValueError, match="math domain error"):
        package_rate(PROJECT, ratings, ranks)
    assert update(PROJECT, ratings, ranks) is None
    assert rate_match(ratings, ranks) == package_mpmath(ratings, ranks)


def test_truncation_functions_equal_the_package_bit_for_bit():
    # The update writes out the package's cdf/pdf inline: v and w must be exactly the package's.
    env = trueskill.TrueSkill(**PROJECT)
    rng = random.Random(3)
    for _ in range(3000):
        t = rng.choice([rng.uniform(-3, 3), rng.uniform(-40, 40)])
        eps = rng.choice([0.0, rng.uniform(0, 0.5), rng.uniform(0, 5)])
        for ours, v_ref, w_ref in ((ts_kernels.v_w_win, env.v_win, env.w_win),
                                   (ts_kernels.v_w_draw, env.v_draw, env.w_draw)):
            v, w, ok = ours(t, eps, 2.0)
            try:
                expected = (v_ref(t, eps), w_ref(t, eps))
            except FloatingPointError:
                assert not ok, (ours, t, eps)
                continue
            assert ok and (v, w) == expected, (ours, t, eps)


@pytest.mark.parametrize(
    ("ratings", "ranks", "kwargs"),
    [
        ([(25.0, 8.0)], [0], {}),  # one player
        ([(25.0, 8.0), (25.0, 8.0)], [0], {}),  # ranks do not match
        ([(25.0, 8.0), (25.0, 8.0)], [0, 1], {"min_delta": 0.0}),
    ],
)
def test_invalid_input_raises_value_error_like_the_package(ratings, ranks, kwargs):
    with pytest.raises(ValueError):
        package_rate(PROJECT, ratings, ranks, **kwargs)
    with pytest.raises(ValueError):
        update(PROJECT, ratings, ranks, **kwargs)


WITHOUT_NUMBA = """
import json, sys
sys.modules["numba"] = None  # import numba fails: arena.kernels runs its code as plain Python
from arena import kernels
from arena.ratings.trueskill import ffa_update
assert not kernels.AVAILABLE
params, matches = json.load(sys.stdin)
out = [ffa_update(ratings, ranks, **params) for ratings, ranks in matches]
print(json.dumps([[[mu.hex(), sigma.hex()] for mu, sigma in rated] for rated in out]))
"""


@pytest.mark.skipif(not kernels.AVAILABLE, reason="numba is not installed: the update runs as plain Python anyway")
def test_without_numba_the_same_update_runs_as_python_bit_for_bit():
    matches = list(random_matches(seed=13, count=60))
    params = {key: OTHER[key] for key in ("beta", "tau", "draw_probability")}
    done = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", WITHOUT_NUMBA],
                          input=json.dumps([params, matches]), cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    compiled = [[[mu.hex(), sigma.hex()] for mu, sigma in update(OTHER, ratings, ranks)] for ratings, ranks in matches]
    assert json.loads(done.stdout) == compiled
