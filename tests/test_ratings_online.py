"""TrueSkill and Elo from the history: hand-computed cases, the package, checkpoints."""

from __future__ import annotations

import math

import pytest
import trueskill

from arena.ratings import (
    ANCHORS,
    DRAW_PROBABILITY,
    ELO_K,
    TRUESKILL_BETA,
    TRUESKILL_MU,
    TRUESKILL_SIGMA,
    Outcome,
    elo_ratings,
    extend_trueskill,
    outcomes,
    trueskill_ratings,
)
from arena.simulation import Population, random_history


def duel(a: str, b: str, score_a: int, score_b: int, i: int = 0) -> Outcome:
    return Outcome((f"2026-01-01T00:00:{i:02d}", f"m{i:03d}"), (a, b), (score_a, score_b))


def test_elo_by_hand():
    ratings = elo_ratings([duel("a", "b", 10, 0)], anchors={}).ratings
    assert ratings == {"a": pytest.approx(1200 + ELO_K / 2), "b": pytest.approx(1200 - ELO_K / 2)}
    draw = elo_ratings([duel("a", "b", 4, 4)], anchors={}).ratings
    assert draw == {"a": 1200.0, "b": 1200.0}
    # three players: each duel moves K/(n-1) times (result - expected)
    three = elo_ratings([Outcome(("t", "m"), ("a", "b", "c"), (21, 10, 10))], anchors={}).ratings
    assert three["a"] == pytest.approx(1200 + ELO_K / 2 * (0.5 + 0.5))
    assert three["b"] == pytest.approx(1200 + ELO_K / 2 * (-0.5 + 0.0))
    assert sum(three.values()) == pytest.approx(3600)  # zero-sum


def test_trueskill_two_player_win_by_hand():
    """The textbook update for a two-player win (no draw margin when p_draw -> 0 is not
    used here: the margin comes from DRAW_PROBABILITY, as the package computes it)."""
    state = trueskill_ratings([duel("a", "b", 10, 0)], anchors={})
    c = math.sqrt(2 * TRUESKILL_BETA**2 + 2 * TRUESKILL_SIGMA**2)
    eps = math.sqrt(2) * TRUESKILL_BETA * trueskill.backends.ppf((DRAW_PROBABILITY + 1) / 2.0)
    t = (0.0 - eps) / c  # mu gap 0, minus the draw margin
    v = trueskill.backends.pdf(t) / trueskill.backends.cdf(t)
    w = v * (v + t)
    mu = TRUESKILL_MU + TRUESKILL_SIGMA**2 / c * v
    sigma = TRUESKILL_SIGMA * math.sqrt(1 - TRUESKILL_SIGMA**2 / c**2 * w)
    assert state.ratings["a"].mu == pytest.approx(mu, abs=1e-6)
    assert state.ratings["a"].sigma == pytest.approx(sigma, abs=1e-6)
    assert state.ratings["b"].mu == pytest.approx(2 * TRUESKILL_MU - mu, abs=1e-6)


def test_trueskill_equals_the_package_over_a_history():
    history = outcomes(random_history(Population.random(25, seed=2), 150, seed=2))
    ours = trueskill_ratings(history, anchors={})
    env = trueskill.TrueSkill(mu=TRUESKILL_MU, sigma=TRUESKILL_SIGMA, beta=TRUESKILL_BETA, tau=0.0, draw_probability=DRAW_PROBABILITY)
    ratings: dict[str, trueskill.Rating] = {}
    for o in history:
        order = sorted(range(len(o.players)), key=lambda i: (o.players[i], i))
        ranks = o.ranks()
        rated = env.rate([(ratings.get(o.players[i], env.create_rating()),) for i in order], ranks=[ranks[i] for i in order])
        for i, team in zip(order, rated):
            ratings[o.players[i]] = team[0]
    for player, rating in ratings.items():
        assert ours.ratings[player].mu == pytest.approx(rating.mu, abs=1e-6)
        assert ours.ratings[player].sigma == pytest.approx(rating.sigma, abs=1e-6)


def test_checkpoint_plus_new_matches_equals_recomputation():
    history = outcomes(random_history(Population.random(25, seed=4), 120, seed=4))
    full = trueskill_ratings(history)
    checkpoint = trueskill_ratings(history[:70])
    assert extend_trueskill(checkpoint, history) == full
    late = history[:70] + [history[100]]  # a match that arrived out of order
    assert extend_trueskill(trueskill_ratings(late), history) == full
    with pytest.raises(ValueError, match="recompute from scratch"):
        trueskill_ratings(history[:50], state=checkpoint)


def test_anchors_do_not_move():
    anchor = next(iter(ANCHORS))
    history = [Outcome((f"t{i}", f"m{i}"), (anchor, "newcomer"), (0, 10)) for i in range(5)]
    assert anchor not in trueskill_ratings(history).ratings
    assert anchor not in elo_ratings(history).ratings
    assert trueskill_ratings(history).ratings["newcomer"].matches == 5
