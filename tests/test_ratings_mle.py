"""The order-free maximum-likelihood rating: its math, its recovery of hidden skills, its
indifference to match order, its anchors and its intervals."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from arena.ratings import Outcome, outcomes, plackett_luce
from arena.ratings import mle as ratings_mle
from arena.ratings.mle import build_design, negative_log_likelihood
from arena.revision import player_id
from arena.schema import rows
from arena.simulation import Population, random_history
from history.index import rated_table, with_players
from tests_synthetic import arena_history, permute_start_times


def test_gradient_matches_finite_differences():
    history = [
        Outcome(("0", "a"), ("p", "q", "r", "s"), (21, 10, 10, 0)),
        Outcome(("1", "b"), ("q", "s", "p"), (4, 4, 4)),
        Outcome(("2", "c"), ("r", "p", "s", "q"), (0, 35, 0, 14)),
    ]
    design = build_design(history)
    rng = np.random.default_rng(0)
    s = rng.normal(size=len(design.players))
    weights = np.array([1.0, 2.0, 0.5])
    _, grad = negative_log_likelihood(s, design, weights)
    for i in range(len(s)):
        step = np.zeros_like(s)
        step[i] = 1e-6
        numeric = (negative_log_likelihood(s + step, design, weights)[0] - negative_log_likelihood(s - step, design, weights)[0]) / 2e-6
        assert grad[i] == pytest.approx(numeric, abs=1e-5)


def test_likelihood_by_hand_for_one_match_with_a_tie():
    # p wins; q and r tie below. Efron: e^p/(e^p+e^q+e^r) * e^q e^r / ((e^q+e^r) (e^q+e^r)/2)
    history = [Outcome(("0", "m"), ("p", "q", "r"), (10, 4, 4))]
    design = build_design(history)
    s = np.log(np.array([3.0, 2.0, 1.0]))  # players sorted: p, q, r
    nll, _ = negative_log_likelihood(s, design, np.ones(1))
    assert nll == pytest.approx(-np.log(3 / 6 * (2 * 1) / (3 * 1.5)))


def simulate(coarse: bool):
    population = Population.random(30, seed=3)
    history = outcomes(random_history(population, 2500, seed=3, coarse=coarse))
    anchors = {player_id(population.ids[i], "sim"): float(population.skills[i]) for i in range(3)}
    truth = {player_id(p, "sim"): population.skill(p) for p in population.ids}
    return history, anchors, truth


@pytest.fixture(scope="module")
def simulated():
    return simulate(coarse=True)


def test_recovers_hidden_skills_with_honest_intervals():
    """Where the model is exactly right (scores keep the full order), the fit finds the
    hidden skills on the anchors' scale and its 95% intervals cover them."""
    history, anchors, truth = simulate(coarse=False)
    fitted = plackett_luce(history, anchors=anchors, bootstrap=60)
    free = [p for p in truth if p not in anchors]
    estimated, true = np.array([fitted[p].rating for p in free]), np.array([truth[p] for p in free])
    assert spearmanr(estimated, true).correlation > 0.98
    assert np.mean(np.abs(estimated - true)) < 0.15
    assert 0.9 < np.polyfit(true, estimated, 1)[0] < 1.1  # the scale is the anchors'
    assert np.mean([fitted[p].low <= truth[p] <= fitted[p].high for p in free]) >= 0.85
    for p, value in anchors.items():  # anchors stay where they are put
        assert fitted[p].rating == value and fitted[p].anchor
    assert all(fitted[p].rank_low <= fitted[p].rank <= fitted[p].rank_high for p in fitted)


def test_recovers_the_order_from_tied_coarse_scores(simulated):
    """Scored like real matches (many ties and zeros), the order is still recovered."""
    history, anchors, truth = simulated
    fitted = plackett_luce(history, anchors=anchors, bootstrap=0)
    free = [p for p in truth if p not in anchors]
    assert spearmanr([fitted[p].rating for p in free], [truth[p] for p in free]).correlation > 0.97


def test_order_of_matches_changes_nothing(simulated):
    """Input order: the same results in another order give the identical table, intervals
    and rank intervals included, bit for bit."""
    history, anchors, _ = simulated
    first = plackett_luce(history[:800], anchors=anchors, bootstrap=20, seed=5)
    shuffled = list(history[:800])
    random.Random(1).shuffle(shuffled)
    second = plackett_luce(shuffled, anchors=anchors, bootstrap=20, seed=5)
    assert first == second


def test_permuted_start_times_change_no_rating_interval_or_rank():
    """Start times decide the online engines' order, never the MLE's: permuting them
    (old duplicate sets' matches, a policy seated twice, ties and anchors included) leaves every
    rating, interval, rank and rank interval identical."""
    history = arena_history(matches=80, sets=4, seed=2)
    permuted = permute_start_times(history, seed=3)
    before, after = outcomes(history), outcomes(permuted)
    assert [o.key[1] for o in before] != [o.key[1] for o in after]  # the rating order did change
    assert {o.key[1] for o in before} == {o.key[1] for o in after}  # the same results
    first = plackett_luce(before, bootstrap=40, seed=0)
    second = plackett_luce(after, bootstrap=40, seed=0)
    assert first == second
    for p, r in first.items():
        assert (r.rating, r.low, r.high, r.rank, r.rank_low, r.rank_high) == (
            second[p].rating, second[p].low, second[p].high, second[p].rank, second[p].rank_low, second[p].rank_high)
    assert any(r.rank_low < r.rank_high for r in first.values())  # the intervals are not degenerate


def test_the_design_built_in_blocks_equals_the_design_built_at_once(monkeypatch):
    """`build_design` arranges the results a block at a time (bounded temporaries) and in the
    order asked for, without a reordered copy of the history: the same arrays."""
    table = rated_table(with_players(pd.DataFrame([r for m in arena_history(matches=30, seed=2) for r in rows(m)])))
    by_id = np.argsort(table.ids, kind="stable")
    whole = build_design(table.take(by_id))
    monkeypatch.setattr(ratings_mle, "DESIGN_BLOCK", 4)
    blocks = build_design(table, by_id)
    assert blocks.players == whole.players
    for name in ("order", "valid", "group_start", "group_size", "widths"):
        assert np.array_equal(getattr(blocks, name), getattr(whole, name)), name
    assert (whole.group_size.sum(axis=1) == whole.widths).all() and (whole.group_size > 1).any()  # ties, sizes counted
