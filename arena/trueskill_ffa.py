"""TrueSkill for free-for-all matches between one-player teams: a fast, exact specialization.

Why this exists: `trueskill.TrueSkill.rate` builds a factor graph of Python objects for
every match and needs about 11 ms for a 16-team free-for-all, so recomputing the
leaderboard from 100,000 recorded matches takes about 18 minutes. This project rates a
whole team (8 agents) as ONE player, so the graph is always the same chain:

    rating_i -> performance_i -> team performance_i -> difference of rank neighbours -> truncation

`rate_ffa` runs the package's message-passing schedule on that chain with plain floats and
lists instead of factor objects, repeating the package's arithmetic operation by operation
(in natural parameters: precision pi = 1/sigma**2 and tau = pi * mu). Its cdf and pdf are the
package's backend-None ones (the package's own `erfc`) written out inline, and the draw margin
comes from the package's `calc_draw_margin`. tests/test_trueskill_ffa.py checks the result
against the package within 1e-6 on thousands of random matches; in practice it is identical
bit for bit.

Kept from `TrueSkill.rate` / `run_schedule` (trueskill 0.4.5), in this order:

1. players are sorted by rank (a stable sort); results are put back in input order;
2. prior, performance and team-performance messages are sent down once;
3. the chain of the N-1 differences of rank neighbours is iterated in rounds: a forward
   sweep over differences 0..N-3, then a backward sweep over N-2..1 (so the two end
   differences are truncated once per round, the middle ones twice); at most 10 rounds,
   stopping when the largest change a truncation made to its difference is <= `min_delta`
   (in practice a 16-player match nearly always runs all 10 rounds);
4. the two end differences send their messages out to their teams, then every team
   performance goes up to its player's performance and on to the rating.

`FloatingPointError` is raised exactly where the package raises it (its `w_win` / `w_draw`);
callers then fall back to the package with `backend="mpmath"`. Like the package, extreme
matches (skill gaps of hundreds of points) can also end in `ValueError: math domain error`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import trueskill
from trueskill.backends import erfc as _erfc

__all__ = ["rate_ffa"]

_INF = float("inf")
_SQRT2 = math.sqrt(2)
# The standard normal density at 0, computed as `trueskill.backends.pdf` does.
_PDF_0 = 1 / math.sqrt(2 * math.pi)

# Rounds of the difference chain, fixed in `TrueSkill.run_schedule`.
_MAX_ROUNDS = 10
# Where the difference factor sends its news after a truncation, in a sweep.
_TO_NONE, _TO_LEFT, _TO_RIGHT = 0, 1, 2

_FLOAT_ERROR = 'Cannot calculate correctly, set backend to "mpmath"'


def _mean(pi: float, tau: float) -> float:
    """The mean of a Gaussian in natural parameters; 0 when pi is 0 (as `Gaussian.mu`)."""
    return pi and tau / pi


def _as_rating(mu: float, sigma: float) -> tuple[float, float]:
    """(mu, sigma) as read back from `trueskill.Rating(mu, sigma)`, which stores pi and tau.

    The round trip can move the last bit; repeating it keeps results identical to the package's.
    """
    if sigma == 0:
        raise ValueError("sigma**2 should be greater than 0")
    pi = sigma**-2
    tau = pi * mu
    return (pi and tau / pi), (math.sqrt(1 / pi) if pi else _INF)


def _sum_message(a_pi: float, a_tau: float, b_pi: float, b_tau: float, b_coeff: float) -> tuple[float, float]:
    """Message of a sum factor to x = a + b_coeff * b (b_coeff is +1 or -1), as `SumFactor.update`.

    a and b are the cavities (each variable divided by this factor's message to it). A
    cavity with zero precision makes the message flat (pi = 0), as the package's
    ZeroDivisionError branch does.
    """
    if a_pi and b_pi:
        variance = 1.0 / a_pi + 1.0 / b_pi
        if variance < _INF:  # the usual case; no overflow, so the same as the general path below
            pi = 1.0 / variance
            return pi, pi * (a_tau / a_pi + b_coeff * (b_tau / b_pi))
    mean = _mean(a_pi, a_tau) + b_coeff * _mean(b_pi, b_tau)
    variance = 1.0 / a_pi if a_pi else _INF
    if variance != _INF:
        variance = variance + 1.0 / b_pi if b_pi else _INF
    pi = 1.0 / variance
    return pi, pi * mean


# The package's cdf(x) is 0.5 * erfc(-x / sqrt(2)) and its pdf(x) is _PDF_0 * exp(-(x**2 / 2)),
# bit for bit; they are written out below because the calls cost as much as the rest of a step.


def _v_w_win(t: float, eps: float) -> tuple[float, float]:
    """`TrueSkill.v_win` and `w_win` at (t, eps): the truncation of a won difference."""
    x = t - eps
    denom = 0.5 * _erfc(-x / _SQRT2)  # cdf(x)
    v = (_PDF_0 * math.exp(-(x**2 / 2)) / denom) if denom else -x
    w = v * (v + x)
    if 0 < w < 1:
        return v, w
    raise FloatingPointError(_FLOAT_ERROR)


def _v_w_draw(t: float, eps: float) -> tuple[float, float]:
    """`TrueSkill.v_draw` and `w_draw` at (t, eps): the truncation of a drawn difference."""
    abs_t = abs(t)
    a, b = eps - abs_t, -eps - abs_t
    denom = 0.5 * _erfc(-a / _SQRT2) - 0.5 * _erfc(-b / _SQRT2)  # cdf(a) - cdf(b)
    if not denom:
        raise FloatingPointError(_FLOAT_ERROR)
    pdf_a, pdf_b = _PDF_0 * math.exp(-(a**2 / 2)), _PDF_0 * math.exp(-(b**2 / 2))
    v = (pdf_b - pdf_a) / denom
    w = (v**2) + (a * pdf_a - b * pdf_b) / denom
    return (-v if t < 0 else v), w


@lru_cache(maxsize=16)
def _draw_margin(mu: float, sigma: float, beta: float, tau: float, draw_probability: float) -> float:
    """The draw margin between two one-player teams, from the package's `calc_draw_margin`."""
    env = trueskill.TrueSkill(mu=mu, sigma=sigma, beta=beta, tau=tau, draw_probability=draw_probability)
    return trueskill.calc_draw_margin(draw_probability, 2, env)


def rate_ffa(
    ratings: Sequence[tuple[float, float]],
    ranks: Sequence[int],
    *,
    mu: float,
    sigma: float,
    beta: float,
    tau: float,
    draw_probability: float,
    min_delta: float = trueskill.DELTA,
) -> list[tuple[float, float]]:
    """New (mu, sigma) of each player after one free-for-all match of one-player teams.

    The same result as `trueskill.TrueSkill(mu, sigma, beta, tau, draw_probability).rate(
    [(Rating(m, s),) for m, s in ratings], ranks=ranks, min_delta=min_delta)`, read back as
    (rating.mu, rating.sigma), more than ten times faster.

    Args:
        ratings: (mu, sigma) of each player (each team is rated as one player).
        ranks: rank of each player, lower is better; equal ranks are draws.
        mu: default mean of the TrueSkill environment (as in the package, it does not
            change the result).
        sigma: default standard deviation of the environment (likewise).
        beta: performance noise: the skill gap giving about a 76% chance of winning.
        tau: dynamic factor, added in quadrature to every sigma before the match.
        draw_probability: fixed draw probability between two teams (not a callable).
        min_delta: the chain stops iterating once no truncation moves its difference by
            more than this.

    Returns:
        New (mu, sigma) of each player, in the order of `ratings`.

    Raises:
        ValueError: fewer than two players, not one rank per player, min_delta <= 0, or a
            sigma of 0; also "math domain error" where the package has it (a negative
            precision in an extreme match).
        FloatingPointError: where the package's default backend raises it (a result too
            unlikely to compute in double precision); use the package with
            `backend="mpmath"` instead.
    """
    n = len(ratings)
    if n < 2:
        raise ValueError("need multiple rating groups")
    if len(ranks) != n:
        raise ValueError("wrong ranks")
    if min_delta <= 0:
        raise ValueError("min_delta must be greater than 0")

    # ALGO LOGIC: sort the players by rank (stable, as `rate` does); neighbours get compared.
    order = sorted(range(n), key=lambda i: ranks[i])
    draw_margin = _draw_margin(mu, sigma, beta, tau, draw_probability)
    perf_variance = beta**2
    sqrt = math.sqrt

    # ALGO LOGIC: send down once. rating_i = N(mu_i, sigma_i**2 + tau**2) (PriorFactor);
    # performance_i = rating_i + N(0, beta**2) (LikelihoodFactor); team performance_i =
    # performance_i (SumFactor, weight 1). Kept: each value and the message that made it.
    rating_pi, rating_tau = [0.0] * n, [0.0] * n
    perf_pi, perf_tau = [0.0] * n, [0.0] * n
    team_pi, team_tau = [0.0] * n, [0.0] * n
    for k, i in enumerate(order):
        prior_mu, prior_sigma = _as_rating(*ratings[i])
        r_pi = sqrt(prior_sigma**2 + tau**2) ** -2
        r_tau = r_pi * prior_mu
        a = 1.0 / (1.0 + perf_variance * r_pi)
        p_pi, p_tau = a * r_pi, a * r_tau
        t_pi = 1.0 / (1 / p_pi if p_pi else _INF)
        rating_pi[k], rating_tau[k] = r_pi, r_tau
        perf_pi[k], perf_tau[k] = p_pi, p_tau
        team_pi[k], team_tau[k] = t_pi, t_pi * _mean(p_pi, p_tau)
    team_down_pi, team_down_tau = team_pi[:], team_tau[:]  # the team factor's messages, fixed now

    # ALGO LOGIC: the difference chain. diff_j = team_j - team_{j+1}, truncated to > margin
    # (a win) or to |diff_j| <= margin (a draw). Each variable is kept as its value plus
    # the messages it received, all flat (0, 0) at first, as the package's new factors' are.
    m = n - 1
    v_w = [_v_w_draw if ranks[order[j]] == ranks[order[j + 1]] else _v_w_win for j in range(m)]  # tie?
    # diff_j divided by the difference factor's message: all that is needed of diff_j's value
    # and that message, as the package always computes it ("value - old message + new").
    cav_pi, cav_tau = [0.0] * m, [0.0] * m
    trunc_pi, trunc_tau = [0.0] * m, [0.0] * m  # truncation j -> diff_j
    left_pi, left_tau = [0.0] * m, [0.0] * m  # difference factor j -> team_j
    right_pi, right_tau = [0.0] * m, [0.0] * m  # difference factor j -> team_{j+1}

    # One round: forward over 0..m-2, each passing its news right, then backward over
    # m-1..1, each passing it left; two players: the one difference, passing nothing.
    if m == 1:
        sweeps = [(0, _TO_NONE)]
    else:
        sweeps = [(j, _TO_RIGHT) for j in range(m - 1)] + [(j, _TO_LEFT) for j in range(m - 1, 0, -1)]
    for _ in range(_MAX_ROUNDS):
        delta = 0.0
        for j, toward in sweeps:
            # Cavities of team_j and team_{j+1}: their values divided by this factor's messages.
            a_pi, a_tau = team_pi[j] - left_pi[j], team_tau[j] - left_tau[j]
            b_pi, b_tau = team_pi[j + 1] - right_pi[j], team_tau[j + 1] - right_tau[j]

            # ALGO LOGIC: (a) difference factor -> diff_j = team_j - team_{j+1} (SumFactor.down).
            if a_pi and b_pi and (variance := 1.0 / a_pi + 1.0 / b_pi) < _INF:
                pi = 1.0 / variance
                tau_ = pi * (a_tau / a_pi - b_tau / b_pi)
            else:
                pi, tau_ = _sum_message(a_pi, a_tau, b_pi, b_tau, -1)
            # Variable.update_message: the value becomes value / old message * new message.
            d_pi, d_tau = cav_pi[j] + pi, cav_tau[j] + tau_

            # ALGO LOGIC: (b) truncation -> diff_j (TruncateFactor.up): moment-match the cavity
            # of diff_j truncated by the result, through the v and w functions.
            tr_pi, tr_tau = trunc_pi[j], trunc_tau[j]
            c_pi, c_tau = d_pi - tr_pi, d_tau - tr_tau
            sqrt_pi = sqrt(c_pi)
            v, w = v_w[j](c_tau / sqrt_pi, draw_margin * sqrt_pi)
            denom = 1.0 - w
            new_pi, new_tau = c_pi / denom, (c_tau + sqrt_pi * v) / denom
            # Variable.update_value: the message becomes new value * old message / old value.
            trunc_pi[j], trunc_tau[j] = new_pi + tr_pi - d_pi, new_tau + tr_tau - d_tau

            # ALGO LOGIC: (c) difference factor -> the next team of the sweep (SumFactor.up),
            # from the new cavity of diff_j and the cavity of the other team (unchanged).
            cav_pi[j], cav_tau[j] = e_pi, e_tau = new_pi - pi, new_tau - tau_
            if toward == _TO_RIGHT:  # team_{j+1} = team_j - diff_j
                if a_pi and e_pi and (variance := 1.0 / a_pi + 1.0 / e_pi) < _INF:
                    pi = 1.0 / variance
                    tau_ = pi * (a_tau / a_pi - e_tau / e_pi)
                else:
                    pi, tau_ = _sum_message(a_pi, a_tau, e_pi, e_tau, -1.0)
                team_pi[j + 1], team_tau[j + 1] = b_pi + pi, b_tau + tau_
                right_pi[j], right_tau[j] = pi, tau_
            elif toward == _TO_LEFT:  # team_j = diff_j + team_{j+1}
                if e_pi and b_pi and (variance := 1.0 / e_pi + 1.0 / b_pi) < _INF:
                    pi = 1.0 / variance
                    tau_ = pi * (e_tau / e_pi + b_tau / b_pi)
                else:
                    pi, tau_ = _sum_message(e_pi, e_tau, b_pi, b_tau, 1.0)
                team_pi[j], team_tau[j] = a_pi + pi, a_tau + tau_
                left_pi[j], left_tau[j] = pi, tau_

            # ALGO LOGIC: (d) how much the truncation moved diff_j (Variable.delta: the larger
            # of |change of tau| and sqrt|change of pi|; 0 if pi changed by infinity). The
            # round's delta is the largest; once above min_delta, the rest cannot matter.
            if delta <= min_delta:
                pi_delta = abs(d_pi - new_pi)
                if pi_delta == _INF:
                    moved = 0.0
                else:
                    moved, sqrt_delta = abs(d_tau - new_tau), sqrt(pi_delta)
                    if sqrt_delta > moved:
                        moved = sqrt_delta
                if moved > delta or m == 1:  # with two players the package takes it as is, even NaN
                    delta = moved
        if delta <= min_delta:
            break

    # ALGO LOGIC: the two ends of the chain send their messages out, in this order:
    # diff_0 -> team_0 (= diff_0 + team_1), then diff_{m-1} -> team_m (= team_{m-1} - diff_{m-1}).
    j = 0
    pi, tau_ = _sum_message(
        cav_pi[j], cav_tau[j],
        team_pi[j + 1] - right_pi[j], team_tau[j + 1] - right_tau[j], 1.0,
    )  # fmt: skip
    team_pi[j], team_tau[j] = team_pi[j] - left_pi[j] + pi, team_tau[j] - left_tau[j] + tau_
    left_pi[j], left_tau[j] = pi, tau_
    j = m - 1
    pi, tau_ = _sum_message(
        team_pi[j] - left_pi[j], team_tau[j] - left_tau[j],
        cav_pi[j], cav_tau[j], -1.0,
    )  # fmt: skip
    team_pi[j + 1], team_tau[j + 1] = team_pi[j + 1] - right_pi[j] + pi, team_tau[j + 1] - right_tau[j] + tau_
    right_pi[j], right_tau[j] = pi, tau_

    # ALGO LOGIC: back up: team performance -> performance (SumFactor.up) -> rating
    # (LikelihoodFactor.up), then un-sort.
    result: list[tuple[float, float]] = [(0.0, 0.0)] * n
    for k, i in enumerate(order):
        c_pi, c_tau = team_pi[k] - team_down_pi[k], team_tau[k] - team_down_tau[k]
        up_pi = 1.0 / (1.0 / c_pi if c_pi else _INF)
        p_pi, p_tau = perf_pi[k] + up_pi, perf_tau[k] + up_pi * _mean(c_pi, c_tau)
        msg_pi, msg_tau = p_pi - perf_pi[k], p_tau - perf_tau[k]
        a = 1.0 / (1.0 + perf_variance * msg_pi)
        r_pi, r_tau = rating_pi[k] + a * msg_pi, rating_tau[k] + a * msg_tau
        result[i] = _as_rating(_mean(r_pi, r_tau), math.sqrt(1 / r_pi) if r_pi else _INF)
    return result
