"""The compiled rating loops (`arena.kernels`) against the pure-Python code they replace; for
TrueSkill, the compiled history loop against the per-match loop of `rate_match` (the one
update itself is tested against the `trueskill` package in tests/test_trueskill_update.py)."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest
import trueskill

from arena import kernels
from arena.ratings import (
    ANCHORS,
    DRAW_PROBABILITY,
    TRUESKILL_BETA,
    TRUESKILL_MU,
    TRUESKILL_SIGMA,
    Outcome,
    RatedTable,
    TrueSkillRating,
    TrueSkillState,
    elo_ratings,
    outcomes,
    plackett_luce,
    trueskill_ratings,
    trueskill_trail,
)
from arena.ratings.mle import build_design, negative_log_likelihood
from arena.ratings.trueskill import draw_margin, trueskill_reference
from arena.scoring import competition_ranks
from arena.simulation import Population, random_history
from tests_synthetic import arena_history

pytestmark = pytest.mark.skipif(not kernels.AVAILABLE, reason="numba is not installed")


@pytest.fixture(scope="module")
def arena_like() -> list[Outcome]:
    """Anchors, built-ins seated several times, a submission seated twice, old duplicate sets' matches."""
    return outcomes(arena_history(matches=150, sets=6, seed=5))


def test_compiled_trueskill_equals_the_python_loop_bit_for_bit(arena_like):
    """`trueskill_history` over a history equals `rate_match` applied match by match."""
    assert trueskill_ratings(arena_like) == trueskill_reference(arena_like)
    population = outcomes(random_history(Population.random(60, seed=1), 400, seed=1))
    assert trueskill_ratings(population, anchors={}) == trueskill_reference(population, anchors={})


def test_compiled_trueskill_extends_a_checkpoint_like_the_python_loop(arena_like):
    checkpoint = trueskill_reference(arena_like[:90])
    assert trueskill_ratings(arena_like[90:], state=checkpoint) == trueskill_reference(arena_like)
    with pytest.raises(ValueError, match="recompute from scratch"):
        trueskill_ratings(arena_like[:10], state=checkpoint)


@pytest.mark.parametrize(
    ("ratings", "scores"),
    [
        ([(0.0, 1.0), (300.0, 1.0)], [10, 0]),  # a hopeless underdog wins: FloatingPointError
        ([(89.0, 2.3), (339.0, 1.5), (367.0, 0.4), (133.0, 2.8), (285.0, 0.3)], [0, 0, 4, 4, 8]),  # math domain error
    ],
)
def test_a_match_the_compiled_loop_cannot_rate_is_rated_in_python(ratings, scores):
    """Where the float maths fails (the package raises), the compiled loop stops before the
    match, `rate_match` rates it with the package's mpmath backend, and the loop carries on:
    the result is the pure-Python loop's, and the refused match's is the package's."""
    players = [f"p{i}" for i in range(len(ratings))]
    state = TrueSkillState(ratings={p: TrueSkillRating(m, s, 3) for p, (m, s) in zip(players, ratings)},
                           last_key=("t0", "m0"), matches=3)
    history = [Outcome(("t1", "m1"), tuple(players), tuple(scores)),
               Outcome(("t2", "m2"), tuple(players), tuple(reversed(scores)))]
    assert trueskill_ratings(history, state=state, anchors={}) == trueskill_reference(history, state=state, anchors={})
    env = trueskill.TrueSkill(mu=TRUESKILL_MU, sigma=TRUESKILL_SIGMA, beta=TRUESKILL_BETA, tau=0.0,
                              draw_probability=DRAW_PROBABILITY, backend="mpmath")
    expected = env.rate([(env.create_rating(m, s),) for m, s in ratings], ranks=competition_ranks(scores))
    first = trueskill_ratings(history[:1], state=state, anchors={}).ratings
    assert [(first[p].mu, first[p].sigma) for p in players] == [(float(m), float(s)) for (m, s), in expected]
    # the kernel itself refuses the match (returns its row) rather than rating it
    n = len(players)
    empty = np.zeros((n, 0))
    stop = kernels.trueskill_history(
        np.arange(n)[None, :], np.array([scores], dtype=float), np.array([n]), 0,
        np.array([m for m, _ in ratings]), np.array([s for _, s in ratings]), np.zeros(n, dtype=np.int64),
        np.ones(n, dtype=bool), np.zeros(n, dtype=bool), np.zeros(n), np.zeros(n),
        TRUESKILL_BETA, 0.0, draw_margin(TRUESKILL_BETA, DRAW_PROBABILITY),
        trueskill.DELTA, empty.astype(np.int64), empty, empty, np.zeros(n, dtype=np.int64), 2.0)
    assert stop == 0


def test_trail_is_what_observe_sees(arena_like):
    seen: dict[str, deque] = {}
    rows = {id(o): r for r, o in enumerate(arena_like)}
    trueskill_reference(arena_like, observe=lambda o, p, r: seen.setdefault(p, deque(maxlen=7)).append(
        (rows[id(o)], r.mu, r.sigma)))
    state, trail = trueskill_trail(arena_like, keep=7)
    assert state == trueskill_reference(arena_like)
    assert trail == {p: list(t) for p, t in seen.items()}


def test_compiled_elo_equals_the_numpy_version(arena_like):
    ours = elo_ratings(arena_like).ratings
    reference = elo_ratings(arena_like, compiled=False).ratings
    assert ours.keys() == reference.keys()
    assert max(abs(ours[p] - reference[p]) for p in ours) < 1e-9
    assert not set(ours) & set(ANCHORS)


def test_compiled_likelihood_and_gradient_equal_the_numpy_version(arena_like):
    design = build_design(arena_like)
    rng = np.random.default_rng(0)
    s = rng.normal(0, 1, len(design.players))
    weights = np.bincount(rng.integers(0, len(arena_like), len(arena_like)), minlength=len(arena_like)).astype(float)
    nll, grad = negative_log_likelihood(s, design, weights)
    grad_c = np.zeros_like(grad)
    nll_c = kernels.plackett_luce_nll(s, design.order, design.valid.sum(axis=1), design.group_size, weights, grad_c)
    assert nll_c == pytest.approx(nll, rel=1e-12)
    assert np.abs(grad_c - grad).max() < 1e-9


def test_plackett_luce_compiled_and_threaded_equals_the_numpy_fit(arena_like, monkeypatch):
    """The fit and its bootstrap with the compiled likelihood on two threads give the
    intervals of the numpy likelihood on one (within 1e-9), and the same ranks."""
    fast = plackett_luce(arena_like, bootstrap=30, workers=2)
    assert plackett_luce(arena_like, bootstrap=30, workers=1) == fast  # any number of workers: identical
    monkeypatch.setattr(kernels, "AVAILABLE", False)
    reference = plackett_luce(arena_like, bootstrap=30, workers=1)
    assert fast.keys() == reference.keys()
    for p, r in reference.items():
        f = fast[p]
        assert abs(f.rating - r.rating) < 1e-9 and abs(f.low - r.low) < 1e-9 and abs(f.high - r.high) < 1e-9, p
        assert (f.rank, f.rank_low, f.rank_high, f.matches, f.anchor) == (r.rank, r.rank_low, r.rank_high, r.matches, r.anchor)


def test_compiled_head_to_head_counts_equal_the_numpy_ones(arena_like, monkeypatch):
    from arena.head_to_head import _counts

    players = sorted({p for o in arena_like for p in o.players})
    fast = _counts(arena_like, players)
    monkeypatch.setattr(kernels, "AVAILABLE", False)
    reference = _counts(arena_like, players)
    for a, b in zip(fast, reference):
        assert np.array_equal(a, b)
    assert fast[0].sum() > 0 and fast[2].sum() > 0  # met, and some ties: the case is not empty


def test_every_engine_takes_the_columns_or_the_outcomes_alike(arena_like):
    """`RatedTable` (what the standings build from the rows) and the list of outcomes give
    the same ratings, also for a subset of the table (unused player names)."""
    table = RatedTable.of(arena_like)
    assert table.outcomes() == arena_like
    assert trueskill_ratings(table) == trueskill_ratings(arena_like)
    assert elo_ratings(table) == elo_ratings(arena_like)
    assert plackett_luce(table, bootstrap=5) == plackett_luce(arena_like, bootstrap=5)
    part = table.take(np.arange(len(table)) % 3 == 0)
    assert plackett_luce(part, bootstrap=0) == plackett_luce(part.outcomes(), bootstrap=0)
    assert trueskill_ratings(part) == trueskill_ratings(part.outcomes())


def test_columnar_standings_equal_the_per_object_path():
    """`compute` from the rows' columns: the rated results, the TrueSkill trajectory and the
    match winners are what the per-match objects gave (pvp_outcomes, observe, the joined group)."""
    from collections import deque

    import pandas as pd

    from arena.ratings import extend_trueskill
    from arena.schema import rows
    from history.index import pvp_outcomes, rated_table, with_players
    from leaderboard.standings import TRAJECTORY_POINTS, compute

    frame = pd.DataFrame([r for m in arena_history(matches=150, sets=6, seed=5) for r in rows(m)])
    players = with_players(frame)
    assert "player" not in frame  # the caller's frame is untouched
    history = pvp_outcomes(players)
    assert rated_table(players).outcomes() == history
    standings = compute(frame, bootstrap=0)
    trajectory: dict[str, deque] = {}
    state = extend_trueskill(TrueSkillState(), history, observe=lambda o, p, r: trajectory.setdefault(
        p, deque(maxlen=TRAJECTORY_POINTS)).append((o.key[0], r.mu, r.sigma)))
    assert standings.trueskill == state
    assert {p: list(t) for p, t in standings.trajectory.items()} == {p: list(t) for p, t in trajectory.items()}
    # carried forward from the standings of a prefix: the same again
    cut = frame["match_id"].isin(frame["match_id"].drop_duplicates().iloc[:100])
    later = compute(frame, previous=compute(frame[cut], bootstrap=0), refresh_mle=False, bootstrap=0)
    assert later.trueskill == state and later.elo == standings.elo
    assert {p: list(t) for p, t in later.trajectory.items()} == {p: list(t) for p, t in trajectory.items()}
    winners = players[players["rank"] == 1].drop_duplicates(["match_id", "policy_id"]).groupby("match_id")["policy_id"].agg(", ".join)
    summary = standings.match_summary.set_index("Match")["Winner"]
    assert summary.to_dict() == winners.reindex(summary.index).to_dict()
    assert (summary.str.contains(", ")).any()  # shared wins are in the case


def test_columnar_synthetic_history_is_the_same_rows():
    import pandas as pd

    from arena.schema import TEAM_COLUMNS, rows
    from arena.simulation import random_history_columns

    population = Population.random(40, seed=3)
    expected = pd.DataFrame([r for m in random_history(population, 60, seed=9) for r in rows(m)])
    got = pd.DataFrame(random_history_columns(population, 60, seed=9))
    assert list(got.columns) == [name for name, _ in TEAM_COLUMNS]
    for column in expected.columns:
        assert got[column].tolist() == expected[column].tolist(), column
