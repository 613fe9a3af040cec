"""The TrueSkill update, defined once (`rate_ffa`), and the whole history rated with it
(`trueskill_history`). See the package's docstring for why it is compiled and how it
equals the `trueskill` package.
"""

from __future__ import annotations

import math

import numpy as np

from arena.kernels.compiler import jit

#: `trueskill_history` finished every match.
OK = -1

_INF = math.inf
_SQRT2 = math.sqrt(2)
_PDF_0 = 1 / math.sqrt(2 * math.pi)
_MAX_ROUNDS = 10
#: |x| above this would overflow x**2 (Python raises OverflowError there).
_POW_LIMIT = 1e150


# The package's cdf(x) is 0.5 * erfc(-x / sqrt(2)) and its pdf(x) is _PDF_0 * exp(-(x**2 / 2)),
# bit for bit; they are written out below because the calls cost as much as the rest of a step.


@jit(inline="always")
def _erfc(x):
    """`trueskill.backends.erfc`, the same polynomial in the same order."""
    z = abs(x)
    t = 1.0 / (1.0 + z / 2.0)
    r = t * math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (
        0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (
            0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
                -0.82215223 + t * 0.17087277
            )))
        )))
    )))
    return 2.0 - r if x < 0 else r


@jit(inline="always")
def _sum_message(a_pi, a_tau, b_pi, b_tau, b_coeff):
    """Message of a sum factor to x = a + b_coeff * b (b_coeff is +1 or -1), as `SumFactor.update`.

    a and b are the cavities (each variable divided by this factor's message to it). A cavity
    with zero precision makes the message flat (pi = 0), as the package's ZeroDivisionError
    branch does. The third value is False where the package would divide by zero.
    """
    if a_pi != 0 and b_pi != 0:
        variance = 1.0 / a_pi + 1.0 / b_pi
        if variance < _INF:  # the usual case; no overflow, so the same as the general path below
            if variance == 0:
                return 0.0, 0.0, False
            pi = 1.0 / variance
            return pi, pi * (a_tau / a_pi + b_coeff * (b_tau / b_pi)), True
    mean = (a_tau / a_pi if a_pi != 0 else a_pi) + b_coeff * (b_tau / b_pi if b_pi != 0 else b_pi)
    variance = 1.0 / a_pi if a_pi != 0 else _INF
    if variance != _INF:
        variance = variance + 1.0 / b_pi if b_pi != 0 else _INF
    if variance == 0:
        return 0.0, 0.0, False
    pi = 1.0 / variance
    return pi, pi * mean, True


@jit(inline="always")
def _as_rating(mu, sigma):
    """(mu, sigma) as read back from `trueskill.Rating(mu, sigma)`, which stores pi and tau.

    The round trip can move the last bit; repeating it keeps results identical to the package's.
    """
    pi = sigma ** -2.0  # as in Python (pow, not 1 / sigma**2); the caller checks for 0 and overflow
    tau = pi * mu
    return (tau / pi if pi != 0 else pi), (math.sqrt(1.0 / pi) if pi != 0 else _INF)


@jit(inline="always")
def v_w_win(t, eps, two):
    """`TrueSkill.v_win` and `w_win` at (t, eps): the truncation of a won difference.

    The third value is False where the package raises FloatingPointError (w outside (0, 1)),
    or where x**2 would overflow. `two` is 2.0 (see `rate_ffa`)."""
    x = t - eps
    if abs(x) > _POW_LIMIT:
        return 0.0, 0.0, False
    den = 0.5 * _erfc(-x / _SQRT2)  # cdf(x)
    v = (_PDF_0 * math.exp(-(x ** two / 2)) / den) if den != 0 else -x
    w = v * (v + x)
    return v, w, 0 < w < 1


@jit(inline="always")
def v_w_draw(t, eps, two):
    """`TrueSkill.v_draw` and `w_draw` at (t, eps): the truncation of a drawn difference.

    The third value is False where the package raises FloatingPointError (cdf(a) - cdf(b) is
    0), or where a square would overflow. `two` is 2.0 (see `rate_ffa`)."""
    abs_t = abs(t)
    a, b = eps - abs_t, -eps - abs_t
    if abs(a) > _POW_LIMIT or abs(b) > _POW_LIMIT:
        return 0.0, 0.0, False
    den = 0.5 * _erfc(-a / _SQRT2) - 0.5 * _erfc(-b / _SQRT2)  # cdf(a) - cdf(b)
    if den == 0:
        return 0.0, 0.0, False
    pdf_a, pdf_b = _PDF_0 * math.exp(-(a ** two / 2)), _PDF_0 * math.exp(-(b ** two / 2))
    v = (pdf_b - pdf_a) / den
    if abs(v) > _POW_LIMIT:
        return 0.0, 0.0, False
    w = (v ** two) + (a * pdf_a - b * pdf_b) / den
    return (-v if t < 0 else v), w, True


@jit()
def rate_ffa(mus, sigmas, ranks, n, beta, tau, draw_margin, min_delta, out_mu, out_sigma, order, work, two):
    """The Arena's TrueSkill update: one free-for-all match of one-player teams (the first n
    entries of `mus`, `sigmas`, `ranks`), new ratings written into `out_mu`, `out_sigma`.

    Returns True, or False where the float maths fails: where the package's default backend
    raises (a `FloatingPointError` in its `w_win` / `w_draw`, or, in extreme matches,
    `ValueError: math domain error`), or where the arithmetic would divide by zero or
    overflow. The caller then rates the match with the package's `backend="mpmath"`.

    Why a specialisation: `trueskill.TrueSkill.rate` builds a factor graph of Python objects
    for every match (about 11 ms for a 16-team free-for-all). The Arena rates a whole team
    (8 agents) as ONE player, so the graph is always the same chain:

        rating_i -> performance_i -> team performance_i -> difference of rank neighbours -> truncation

    This runs the package's message-passing schedule on that chain over arrays, repeating
    the package's arithmetic operation by operation (in natural parameters: precision
    pi = 1/sigma**2 and tau = pi * mu), with the package's own `erfc` and draw margin
    (`arena.ratings.trueskill.draw_margin`). Kept from `TrueSkill.rate` / `run_schedule`
    (trueskill 0.4.5), in this order, a compiled helper each (LLVM inlines them: as fast as the
    one body they were, measured over a history; numba's own `inline="always"` made it 50%
    slower, and so did a chain step taking `work` whole rather than its rows):

    1. players are sorted by rank (a stable sort); results are put back in input order
       (`_sort_by_rank`);
    2. prior, performance and team-performance messages are sent down once (`_send_down`);
    3. the chain of the N-1 differences of rank neighbours is iterated in rounds: a forward
       sweep over differences 0..N-3, then a backward sweep over N-2..1 (so the two end
       differences are truncated once per round, the middle ones twice); at most 10 rounds,
       stopping when the largest change a truncation made to its difference is <=
       `min_delta` (in practice a 16-player match nearly always runs all 10 rounds)
       (`_iterate_chain`, each truncation a `_chain_step`);
    4. the two end differences send their messages out to their teams (`_send_out_ends`),
       then every team performance goes up to its player's performance and on to the
       rating (`_send_up`).

    The result equals the package's within 1e-6 on thousands of random matches, bit for bit
    in practice (tests/test_trueskill_update.py).

    Args:
        mus, sigmas: float64[>= n] each player's rating (a team is rated as one player).
        ranks: int64[>= n] each player's rank, lower is better; equal ranks are draws.
        n: the number of players (at least 2).
        beta: performance noise: the skill gap giving about a 76% chance of winning.
        tau: dynamic factor, added in quadrature to every sigma before the match.
        draw_margin: the draw margin between two one-player teams.
        min_delta: the chain stops iterating once no truncation moves its difference by
            more than this (> 0).
        out_mu, out_sigma: float64[>= n] the new ratings, in the order of the input.
        order, work: scratch space, int64[>= n] and float64[16, >= n] (its rows: `_RATING_PI`
            and the rest below).
        two: 2.0, passed in so that `x ** two` stays a call of pow() as Python's `x**2` is
            (the compiler would turn a constant `x ** 2.0` into x * x, which differs from
            pow in the last bit).
    """
    _sort_by_rank(ranks, n, order)
    perf_variance = beta ** two
    if not _send_down(mus, sigmas, n, order, tau, perf_variance, work, two):
        return False
    if not _iterate_chain(ranks, order, n - 1, draw_margin, min_delta, work, two):
        return False
    if not _send_out_ends(n - 1, work):
        return False
    return _send_up(n, order, perf_variance, work, out_mu, out_sigma)


# The rows of `rate_ffa`'s `work`. Each variable is kept as its value plus the messages it received.
_RATING_PI, _RATING_TAU = 0, 1
_PERF_PI, _PERF_TAU = 2, 3
_TEAM_PI, _TEAM_TAU = 4, 5
_DOWN_PI, _DOWN_TAU = 6, 7  # the team factor's messages, fixed once sent down
# diff_j divided by the difference factor's message: all that is needed of diff_j's value
# and that message, as the package always computes it ("value - old message + new").
_CAV_PI, _CAV_TAU = 8, 9
_TRUNC_PI, _TRUNC_TAU = 10, 11  # truncation j -> diff_j
_LEFT_PI, _LEFT_TAU = 12, 13  # difference factor j -> team_j
_RIGHT_PI, _RIGHT_TAU = 14, 15  # difference factor j -> team_{j+1}


@jit()
def _sort_by_rank(ranks, n, order):
    """`order`: the players by rank, a stable sort (insertion sort: n <= a few dozen), as `rate` sorts."""
    for k in range(n):
        order[k] = k
    for k in range(1, n):
        key = order[k]
        j = k - 1
        while j >= 0 and ranks[order[j]] > ranks[key]:
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = key


@jit()
def _send_down(mus, sigmas, n, order, tau, perf_variance, work, two):
    """Stage 2 of `rate_ffa`; False where the float maths fails."""
    rating_pi, rating_tau = work[_RATING_PI], work[_RATING_TAU]
    perf_pi, perf_tau = work[_PERF_PI], work[_PERF_TAU]
    team_pi, team_tau = work[_TEAM_PI], work[_TEAM_TAU]
    down_pi, down_tau = work[_DOWN_PI], work[_DOWN_TAU]
    # ALGO LOGIC: send down once. rating_i = N(mu_i, sigma_i**2 + tau**2) (PriorFactor);
    # performance_i = rating_i + N(0, beta**2) (LikelihoodFactor); team performance_i =
    # performance_i (SumFactor, weight 1).
    for k in range(n):
        i = order[k]
        s = sigmas[i]
        if s == 0 or abs(s) < 1e-150 or abs(s) > _POW_LIMIT:
            return False
        prior_mu, prior_sigma = _as_rating(mus[i], s)
        if abs(prior_sigma) > _POW_LIMIT:
            return False
        root = math.sqrt(prior_sigma ** two + tau ** two)
        if root == 0 or root < 1e-150:
            return False
        r_pi = root ** -2.0
        r_tau = r_pi * prior_mu
        den = 1.0 + perf_variance * r_pi
        if den == 0:
            return False
        a = 1.0 / den
        p_pi, p_tau = a * r_pi, a * r_tau
        inv = 1.0 / p_pi if p_pi != 0 else _INF
        if inv == 0:
            return False
        t_pi = 1.0 / inv
        rating_pi[k], rating_tau[k] = r_pi, r_tau
        perf_pi[k], perf_tau[k] = p_pi, p_tau
        team_pi[k] = t_pi
        team_tau[k] = t_pi * (p_tau / p_pi if p_pi != 0 else p_pi)
        down_pi[k], down_tau[k] = team_pi[k], team_tau[k]
    return True


@jit()
def _iterate_chain(ranks, order, m, draw_margin, min_delta, work, two):
    """Stage 3 of `rate_ffa` on its `m` differences; False where the float maths fails."""
    # ALGO LOGIC: the difference chain. diff_j = team_j - team_{j+1}, truncated to > margin
    # (a win) or to |diff_j| <= margin (a draw). Messages start flat (0, 0), as the package's
    # new factors' do.
    team_pi, team_tau = work[_TEAM_PI], work[_TEAM_TAU]
    cav_pi, cav_tau = work[_CAV_PI], work[_CAV_TAU]
    trunc_pi, trunc_tau = work[_TRUNC_PI], work[_TRUNC_TAU]
    left_pi, left_tau = work[_LEFT_PI], work[_LEFT_TAU]
    right_pi, right_tau = work[_RIGHT_PI], work[_RIGHT_TAU]
    for j in range(m):
        cav_pi[j] = cav_tau[j] = trunc_pi[j] = trunc_tau[j] = 0.0
        left_pi[j] = left_tau[j] = right_pi[j] = right_tau[j] = 0.0
    steps = 1 if m == 1 else 2 * (m - 1)
    for _ in range(_MAX_ROUNDS):
        delta = 0.0
        for step in range(steps):
            # One round: forward over 0..m-2, each passing its news right (toward 2), then
            # backward over m-1..1, each passing it left (toward 1); two players: the one
            # difference, passing nothing (toward 0).
            if m == 1:
                j, toward = 0, 0
            elif step < m - 1:
                j, toward = step, 2
            else:
                j, toward = m - 1 - (step - (m - 1)), 1
            draw = ranks[order[j]] == ranks[order[j + 1]]
            d_pi, d_tau, new_pi, new_tau, ok = _chain_step(j, toward, draw, draw_margin, two, team_pi, team_tau, cav_pi,
                                                           cav_tau, trunc_pi, trunc_tau, left_pi, left_tau, right_pi,
                                                           right_tau)
            if not ok:
                return False
            # ALGO LOGIC: (d) how much the truncation moved diff_j (Variable.delta: the larger
            # of |change of tau| and sqrt|change of pi|; 0 if pi changed by infinity). The
            # round's delta is the largest; once above min_delta, the rest cannot matter.
            if delta <= min_delta:
                pi_delta = abs(d_pi - new_pi)
                if pi_delta == _INF:
                    moved = 0.0
                else:
                    moved = abs(d_tau - new_tau)
                    sqrt_delta = math.sqrt(pi_delta)
                    if sqrt_delta > moved:
                        moved = sqrt_delta
                if moved > delta or m == 1:  # with two players the package takes it as is, even NaN
                    delta = moved
        if delta <= min_delta:
            break
    return True


@jit()
def _chain_step(j, toward, draw, draw_margin, two, team_pi, team_tau, cav_pi, cav_tau, trunc_pi, trunc_tau, left_pi,
                left_tau, right_pi, right_tau):
    """One truncation of difference `j` in `rate_ffa`'s chain, its news passed on `toward`
    the next team of the sweep: (diff_j before and after it, as pi and tau each, True), or
    False last where the float maths fails. The arrays are rows of `work`."""
    # Cavities of team_j and team_{j+1}: their values divided by this factor's messages.
    a_pi, a_tau = team_pi[j] - left_pi[j], team_tau[j] - left_tau[j]
    b_pi, b_tau = team_pi[j + 1] - right_pi[j], team_tau[j + 1] - right_tau[j]

    # ALGO LOGIC: (a) difference factor -> diff_j = team_j - team_{j+1} (SumFactor.down).
    pi, tau_, ok = _sum_message(a_pi, a_tau, b_pi, b_tau, -1.0)
    if not ok:
        return 0.0, 0.0, 0.0, 0.0, False
    # Variable.update_message: the value becomes value / old message * new message.
    d_pi, d_tau = cav_pi[j] + pi, cav_tau[j] + tau_

    # ALGO LOGIC: (b) truncation -> diff_j (TruncateFactor.up): moment-match the cavity
    # of diff_j truncated by the result, through the v and w functions.
    tr_pi, tr_tau = trunc_pi[j], trunc_tau[j]
    c_pi, c_tau = d_pi - tr_pi, d_tau - tr_tau
    if c_pi < 0:  # math domain error
        return 0.0, 0.0, 0.0, 0.0, False
    sqrt_pi = math.sqrt(c_pi)
    if sqrt_pi == 0:
        return 0.0, 0.0, 0.0, 0.0, False
    t = c_tau / sqrt_pi
    eps = draw_margin * sqrt_pi
    if draw:
        v, w, ok = v_w_draw(t, eps, two)
    else:
        v, w, ok = v_w_win(t, eps, two)
    if not ok:
        return 0.0, 0.0, 0.0, 0.0, False
    denom = 1.0 - w
    if denom == 0:
        return 0.0, 0.0, 0.0, 0.0, False
    new_pi, new_tau = c_pi / denom, (c_tau + sqrt_pi * v) / denom
    # Variable.update_value: the message becomes new value * old message / old value.
    trunc_pi[j], trunc_tau[j] = new_pi + tr_pi - d_pi, new_tau + tr_tau - d_tau

    # ALGO LOGIC: (c) difference factor -> the next team of the sweep (SumFactor.up),
    # from the new cavity of diff_j and the cavity of the other team (unchanged).
    e_pi, e_tau = new_pi - pi, new_tau - tau_
    cav_pi[j], cav_tau[j] = e_pi, e_tau
    if toward == 2:  # team_{j+1} = team_j - diff_j
        pi, tau_, ok = _sum_message(a_pi, a_tau, e_pi, e_tau, -1.0)
        if not ok:
            return 0.0, 0.0, 0.0, 0.0, False
        team_pi[j + 1], team_tau[j + 1] = b_pi + pi, b_tau + tau_
        right_pi[j], right_tau[j] = pi, tau_
    elif toward == 1:  # team_j = diff_j + team_{j+1}
        pi, tau_, ok = _sum_message(e_pi, e_tau, b_pi, b_tau, 1.0)
        if not ok:
            return 0.0, 0.0, 0.0, 0.0, False
        team_pi[j], team_tau[j] = a_pi + pi, a_tau + tau_
        left_pi[j], left_tau[j] = pi, tau_
    return d_pi, d_tau, new_pi, new_tau, True


@jit()
def _send_out_ends(m, work):
    """Stage 4 of `rate_ffa`, first half; False where the float maths fails."""
    team_pi, team_tau = work[_TEAM_PI], work[_TEAM_TAU]
    cav_pi, cav_tau = work[_CAV_PI], work[_CAV_TAU]
    left_pi, left_tau = work[_LEFT_PI], work[_LEFT_TAU]
    right_pi, right_tau = work[_RIGHT_PI], work[_RIGHT_TAU]
    # ALGO LOGIC: the two ends of the chain send their messages out, in this order:
    # diff_0 -> team_0 (= diff_0 + team_1), then diff_{m-1} -> team_m (= team_{m-1} - diff_{m-1}).
    j = 0
    pi, tau_, ok = _sum_message(cav_pi[j], cav_tau[j], team_pi[j + 1] - right_pi[j],
                                team_tau[j + 1] - right_tau[j], 1.0)
    if not ok:
        return False
    team_pi[j], team_tau[j] = team_pi[j] - left_pi[j] + pi, team_tau[j] - left_tau[j] + tau_
    left_pi[j], left_tau[j] = pi, tau_
    j = m - 1
    pi, tau_, ok = _sum_message(team_pi[j] - left_pi[j], team_tau[j] - left_tau[j], cav_pi[j], cav_tau[j], -1.0)
    if not ok:
        return False
    team_pi[j + 1] = team_pi[j + 1] - right_pi[j] + pi
    team_tau[j + 1] = team_tau[j + 1] - right_tau[j] + tau_
    right_pi[j], right_tau[j] = pi, tau_
    return True


@jit()
def _send_up(n, order, perf_variance, work, out_mu, out_sigma):
    """Stage 4 of `rate_ffa`, second half: the new ratings, in input order; False where
    the float maths fails."""
    rating_pi, rating_tau = work[_RATING_PI], work[_RATING_TAU]
    perf_pi, perf_tau = work[_PERF_PI], work[_PERF_TAU]
    team_pi, team_tau = work[_TEAM_PI], work[_TEAM_TAU]
    down_pi, down_tau = work[_DOWN_PI], work[_DOWN_TAU]
    # ALGO LOGIC: back up: team performance -> performance (SumFactor.up) -> rating
    # (LikelihoodFactor.up), then un-sort.
    for k in range(n):
        i = order[k]
        c_pi, c_tau = team_pi[k] - down_pi[k], team_tau[k] - down_tau[k]
        inv = 1.0 / c_pi if c_pi != 0 else _INF
        if inv == 0:
            return False
        up_pi = 1.0 / inv
        p_pi = perf_pi[k] + up_pi
        p_tau = perf_tau[k] + up_pi * (c_tau / c_pi if c_pi != 0 else c_pi)
        msg_pi, msg_tau = p_pi - perf_pi[k], p_tau - perf_tau[k]
        den = 1.0 + perf_variance * msg_pi
        if den == 0:
            return False
        a = 1.0 / den
        r_pi, r_tau = rating_pi[k] + a * msg_pi, rating_tau[k] + a * msg_tau
        if r_pi < 0:  # math domain error in sqrt(1 / r_pi)
            return False
        mean = r_tau / r_pi if r_pi != 0 else r_pi
        sd = math.sqrt(1 / r_pi) if r_pi != 0 else _INF
        if sd == 0 or sd < 1e-150 or sd > _POW_LIMIT:
            return False
        out_mu[i], out_sigma[i] = _as_rating(mean, sd)
    return True


@jit(nogil=True)
def trueskill_history(seats, scores, widths, start, mu, sigma, matches, present, fixed, fixed_mu, fixed_sigma,
                      beta, tau, draw_margin, min_delta, trail_match, trail_mu, trail_sigma, trail_count, two):
    """TrueSkill over matches `start..` in order, as `arena.ratings.trueskill_ratings` does.

    Args:
        seats: int64[M, W] player index of each seat, seats already sorted by (player id,
            seat) as `trueskill_ratings` sorts them; -1 padding after `widths[r]`.
        scores: float64[M, W] each seat's score (ranks are computed from them here).
        mu, sigma, matches, present: per player, updated in place (`present`: has a rating).
        fixed, fixed_mu, fixed_sigma: anchors, entering every match with their fixed rating.
        trail_match, trail_mu, trail_sigma: [P, K] ring buffers of each player's last K new
            ratings (match row, mu, sigma), `trail_count[p]` written so far (K = 0: none).
        two: 2.0, from the caller (see `rate_ffa`).

    Returns:
        `OK`, or the row of the first match `rate_ffa` cannot rate (its float maths fails
        there: rate it with `rate_match`); every match before it is applied.
    """
    width = seats.shape[1]
    keep = trail_match.shape[1]
    ranks = np.zeros(width, dtype=np.int64)
    mus = np.zeros(width)
    sigmas = np.zeros(width)
    new_mu = np.zeros(width)
    new_sigma = np.zeros(width)
    order = np.zeros(width, dtype=np.int64)
    work = np.zeros((16, width))
    for r in range(start, seats.shape[0]):
        n = widths[r]
        for k in range(n):
            count = 1
            for q in range(n):
                if scores[r, q] > scores[r, k]:
                    count += 1
            ranks[k] = count
            p = seats[r, k]
            if fixed[p]:
                mus[k], sigmas[k] = fixed_mu[p], fixed_sigma[p]
            else:
                mus[k], sigmas[k] = mu[p], sigma[p]
        if n < 2 or not rate_ffa(mus, sigmas, ranks, n, beta, tau, draw_margin, min_delta, new_mu, new_sigma,
                                 order, work, two):
            return r
        # a player seated more than once takes the mean of its updates, in seat order
        for k in range(n):
            p = seats[r, k]
            if fixed[p]:
                continue
            first = True
            for q in range(k):
                if seats[r, q] == p:
                    first = False
                    break
            if not first:
                continue
            total_mu, total_sigma, copies = 0.0, 0.0, 0
            for q in range(k, n):
                if seats[r, q] == p:
                    total_mu += new_mu[q]
                    total_sigma += new_sigma[q]
                    copies += 1
            mu[p], sigma[p] = total_mu / copies, total_sigma / copies
            matches[p] += 1
            present[p] = True
            if keep:
                slot = trail_count[p] % keep
                trail_match[p, slot], trail_mu[p, slot], trail_sigma[p, slot] = r, mu[p], sigma[p]
                trail_count[p] += 1
    return OK
