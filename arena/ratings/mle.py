"""The order-free rating: a Plackett-Luce maximum-likelihood fit of the whole history
(ties by Efron's rule, a small L2 penalty), anchored on the built-in teams, with 95%
intervals for rating and position from a bootstrap over whole results in id order."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from arena.ratings.results import DESIGN_BLOCK, Outcome, RatedTable, by_id, players_of, seat_arrays
from arena.rules import ANCHORS
from arena.scoring import competition_ranks


@dataclass(frozen=True)
class MLERating:
    """A maximum-likelihood rating with its 95% bootstrap intervals."""

    rating: float
    low: float
    high: float
    rank: int
    rank_low: int
    rank_high: int
    matches: int
    anchor: bool = False


@dataclass(frozen=True)
class Design:
    """A history as padded arrays: per match, players in score order and their tie groups."""

    players: list[str]
    order: np.ndarray  # [M, K] player index by position (best first), -1 padding
    valid: np.ndarray  # [M, K] bool
    group_start: np.ndarray  # [M, K] position where each position's tie group starts
    group_size: np.ndarray  # [M, K] size of the group starting here, 0 elsewhere
    widths: np.ndarray  # [M] players in each match


def build_design(history: Sequence[Outcome] | RatedTable, rows: np.ndarray | None = None) -> Design:
    """Each match's players sorted by (score descending, player id), with tie groups; in
    whole-array steps over blocks of `DESIGN_BLOCK` results (one Python pass only to read
    outcomes). `rows`: the results in this order (default: as given), without a copy of
    the history in that order."""
    players = players_of(history)
    index = {p: i for i, p in enumerate(players)}
    if not isinstance(history, RatedTable):
        history = RatedTable.of(history)
    rows = np.arange(len(history)) if rows is None else rows
    m, width = len(rows), history.seats.shape[1]
    order = np.empty((m, width), dtype=np.int64)
    valid = np.empty((m, width), dtype=bool)
    group_start = np.empty((m, width), dtype=np.int64)
    group_size = np.zeros((m, width), dtype=np.float64)
    positions = np.arange(width)
    for a in range(0, m, DESIGN_BLOCK):
        b = min(a + DESIGN_BLOCK, m)
        seats, scores, _ = seat_arrays(history.take(rows[a:b]), index, by_player=True)  # by player id first ...
        rank_key = np.where(seats >= 0, -scores, np.inf)
        by_score = np.argsort(rank_key, axis=1, kind="stable")  # ... then stably by score: (-score, id)
        block_order = order[a:b] = np.take_along_axis(seats, by_score, axis=1)
        ranked = np.take_along_axis(rank_key, by_score, axis=1)
        block_valid = valid[a:b] = block_order >= 0
        new_group = np.ones((b - a, width), dtype=bool)
        new_group[:, 1:] = ranked[:, 1:] != ranked[:, :-1]
        start = np.maximum.accumulate(np.where(new_group, positions, 0), axis=1)
        start = group_start[a:b] = np.where(block_valid, start, 0)
        rows_valid = np.nonzero(block_valid)[0]
        np.add.at(group_size[a:b], (rows_valid, start[block_valid]), 1.0)
    widths = history.widths[rows]
    return Design(players, order, valid, group_start, group_size, widths)


def negative_log_likelihood(s: np.ndarray, design: Design, weights: np.ndarray) -> tuple[float, np.ndarray]:
    """Plackett-Luce with ties by Efron's rule, weighted by match.

    A tie group G of d teams, taken from the remaining teams R, contributes
    sum_G s - sum_{k<d} log(sum_R e^s - (k/d) sum_G e^s): the likelihood of G's members
    coming next in some order, averaged over orders (Breslow's simpler rule, all d
    denominators equal to sum_R e^s, shrinks ratings toward each other when ties are
    common, as they are here). Returns the weighted NLL and its gradient in s.
    """
    valid = design.valid
    safe = np.where(valid, design.order, 0)
    strength = np.where(valid, np.exp(s[safe]), 0.0)
    remaining = np.cumsum(strength[:, ::-1], axis=1)[:, ::-1]  # sum over positions >= p
    csum = np.cumsum(strength, axis=1)
    start = design.group_start
    end = start + np.take_along_axis(design.group_size, start, axis=1).astype(np.int64) - 1
    end = np.where(valid, end, start)
    before = np.where(start > 0, np.take_along_axis(csum, np.maximum(start - 1, 0), axis=1), 0.0)
    tied = np.take_along_axis(csum, end, axis=1) - before  # sum over the group of e^s
    size = np.take_along_axis(design.group_size, start, axis=1)
    k = np.arange(valid.shape[1])[None, :] - start
    share = np.where(valid, k / np.where(size > 0, size, 1.0), 0.0)
    denominator = np.where(valid, np.take_along_axis(remaining, start, axis=1) - share * tied, 1.0)
    w = weights[:, None]
    nll = -float(np.sum(w * np.where(valid, s[safe] - np.log(denominator), 0.0)))
    # d log(den_p)/d s_j = e^s_j (1[j remains at p] - share_p 1[j in p's group]) / den_p
    a = np.where(valid, w / denominator, 0.0)
    b = np.where(valid, w * share / denominator, 0.0)
    reach = np.take_along_axis(np.cumsum(a, axis=1), end, axis=1)  # all p whose group starts <= q's end
    csum_b = np.cumsum(b, axis=1)
    group_b = np.take_along_axis(csum_b, end, axis=1) - np.where(start > 0, np.take_along_axis(csum_b, np.maximum(start - 1, 0), axis=1), 0.0)
    push = strength * (reach - group_b)
    occurrences = np.broadcast_to(w, valid.shape)
    grad = np.bincount(safe[valid], weights=push[valid] - occurrences[valid], minlength=len(s))
    return nll, grad


def _fit(design: Design, weights: np.ndarray, fixed: dict[int, float], l2: float, start: np.ndarray | None = None) -> np.ndarray:
    from scipy.optimize import minimize

    n = len(design.players)
    free = np.array([i for i in range(n) if i not in fixed], dtype=np.int64)
    base = np.zeros(n)
    for i, v in fixed.items():
        base[i] = v
    prior = float(np.mean(list(fixed.values()))) if fixed else 0.0

    from arena import kernels

    compiled = kernels.AVAILABLE
    buffer = np.zeros(n)

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        s = base.copy()
        s[free] = x
        if compiled:  # the same function in one compiled pass, the GIL released (`arena.kernels`)
            nll = kernels.plackett_luce_nll(s, design.order, design.widths, design.group_size, weights, buffer)
            grad = buffer
        else:
            nll, grad = negative_log_likelihood(s, design, weights)
        penalty = 0.5 * l2 * float(np.sum((x - prior) ** 2))
        return nll + penalty, grad[free] + l2 * (x - prior)

    x0 = start[free] if start is not None else np.full(len(free), prior)
    if len(free) == 0:
        return base
    solution = minimize(objective, x0, jac=True, method="L-BFGS-B", options={"maxiter": 500, "gtol": 1e-6})
    s = base.copy()
    s[free] = solution.x
    return s


def plackett_luce(
    history: Sequence[Outcome] | RatedTable,
    *,
    anchors: Mapping[str, float] = ANCHORS,
    l2: float = 0.01,
    bootstrap: int = 200,
    seed: int = 0,
    workers: int | None = None,
    start: Mapping[str, float] | None = None,
) -> dict[str, MLERating]:
    """Order-free maximum-likelihood ratings, anchored, with 95% bootstrap intervals.

    Args:
        history (`Sequence[Outcome]`): the rated results. Neither their order nor their
            start times matter: everything is computed over them sorted by id (`by_id`).
        anchors (`Mapping[str, float]`): players whose ratings are fixed (built-ins).
        l2 (`float`): penalty pulling free ratings toward the anchors' mean, so that a
            policy that always wins (or always loses) still gets a finite rating.
        bootstrap (`int`): resamples of whole results (matches) for the intervals (0: none).
        seed (`int`): seed of the resampling.
        workers (`int`, *optional*): threads fitting resamples at once (default: one per
            core). The compiled likelihood releases the GIL, so two cores fit two at once;
            every resample's weights are drawn in order from the one generator first, so
            the intervals are the same for any number of workers.
        start (`Mapping[str, float]`, *optional*): a previous estimate to start the fit
            from (a warm start: the standings after more matches); players it lacks start
            at the anchors' mean. The optimum is the same within the fit's tolerance
            (gradient norm 1e-6), reached in fewer steps.

    Returns:
        `dict[str, MLERating]`: per player, rating with interval, and leaderboard position
        among all rated players with its interval.
    """
    if not len(history):
        return {}
    # ALGO LOGIC: order-free. The fit and the bootstrap see the results sorted by their id
    # (the match id), never in start-time or input order: the same set of results gives
    # the same table bit for bit, however its start times or its order change
    # (floating-point sums included).
    history, rows = _in_id_order(history)
    design = build_design(history, rows)
    fixed = {design.players.index(p): v for p, v in anchors.items() if p in design.players}
    initial = None
    if start:
        prior = float(np.mean(list(fixed.values()))) if fixed else 0.0
        initial = np.array([start.get(p, prior) for p in design.players], dtype=np.float64)
    estimate = _fit(design, np.ones(len(history)), fixed, l2, start=initial)
    ranks = np.array(competition_ranks(estimate.tolist()))
    counts = np.bincount(design.order[design.valid], minlength=len(design.players))
    if bootstrap:
        samples = _bootstrap(design, estimate, fixed, l2, resamples=bootstrap, seed=seed, workers=workers)
        low, high = np.percentile(samples, [2.5, 97.5], axis=0)
        sample_ranks = np.array([competition_ranks(row) for row in samples])
        rank_low, rank_high = np.percentile(sample_ranks, [2.5, 97.5], axis=0)
    else:
        low, high, rank_low, rank_high = estimate, estimate, ranks, ranks
    return {
        player: MLERating(
            rating=float(estimate[i]),
            low=float(low[i]),
            high=float(high[i]),
            rank=int(ranks[i]),
            rank_low=int(math.floor(rank_low[i])),
            rank_high=int(math.ceil(rank_high[i])),
            matches=int(counts[i]),
            anchor=i in fixed,
        )
        for i, player in enumerate(design.players)
    }


def _in_id_order(history: Sequence[Outcome] | RatedTable) -> tuple[Sequence[Outcome] | RatedTable, np.ndarray | None]:
    """The history in id order: a table and the rows that put it in that order (no copy), or
    the outcomes sorted (a table whose ids repeat, as only a malformed history's do, too)."""
    if isinstance(history, RatedTable):
        by_id_order = np.argsort(history.ids, kind="stable")
        ids = history.ids[by_id_order]
        if (ids[1:] != ids[:-1]).all():  # unique ids: the id is the key
            return history, by_id_order
        history = history.outcomes()
    return sorted(history, key=by_id), None


def _bootstrap(design: Design, estimate: np.ndarray, fixed: dict[int, float], l2: float, *, resamples: int,
               seed: int, workers: int | None) -> np.ndarray:
    """The fit of each of `resamples` resamples of the results (warm-started at `estimate`),
    as rows, fitted `workers` at a time (`plackett_luce`)."""
    m = len(design.widths)
    samples = np.empty((resamples, len(design.players)))
    # ALGO LOGIC: the bootstrap. Each resample draws m results with replacement from the
    # m results in id order: `integers(0, m, m)` of one seeded generator, counted into
    # weights (a multinomial over that order). Why not Poisson weights keyed by id: this is
    # the classic nonparametric bootstrap (exactly m results a resample), its intervals keep
    # their usual meaning, and anyone reproduces it in two numpy lines; one generator for
    # all resamples, no per-result RNG, so 200 resamples of 100,000 results draw in
    # milliseconds.
    rng = np.random.default_rng(seed)
    workers = max(1, min(workers or os.cpu_count() or 1, resamples))

    def resample(weights: np.ndarray) -> np.ndarray:
        return _fit(design, weights, fixed, l2, start=estimate)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        # draws in order, `workers` resamples at a time (bounded memory: one weight vector each)
        for first in range(0, resamples, workers):
            batch = [np.bincount(rng.integers(0, m, size=m), minlength=m).astype(np.float64)
                     for _ in range(min(workers, resamples - first))]
            for b, sample in enumerate(pool.map(resample, batch), start=first):
                samples[b] = sample
    return samples


def interval_ranks(mle: Mapping[str, MLERating], shown: Sequence[str]) -> dict[str, int]:
    """The leaderboard's Rank of each player in `shown` that the fit rates: 1 + the number of
    those players whose 95% interval lies entirely above its own, so that two players whose
    intervals overlap share a rank rather than being told apart by noise. The PvP table and
    `evaluate --against top:K` rank with it.

    Example:
        >>> fit = {p: MLERating(r, r - 0.5, r + 0.5, 0, 0, 0, 10) for p, r in (("a", 3.0), ("b", 2.8), ("c", 1.0))}
        >>> interval_ranks(fit, ["a", "b", "c", "unrated"])
        {'a': 1, 'b': 1, 'c': 3}
    """
    rated = [p for p in shown if p in mle]
    lows = np.sort(np.array([mle[p].low for p in rated], dtype=np.float64))
    return {p: 1 + int(len(lows) - np.searchsorted(lows, mle[p].high, side="right")) for p in rated}
