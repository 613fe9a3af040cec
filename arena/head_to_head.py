"""Head to head: every pair's record, the cycles that are clear, and the Nash average.

Input is the PvP history as `Outcome`s (`arena.ratings`); output is a `HeadToHead`. Pure
(numpy and scipy only): the same history gives the same result.

What each part answers:

- **share** (a over b): in the matches a and b played together, how often did a finish
  above b? ``share = (wins + ties / 2) / met``. The unit is the match: a match is one
  trial for a pair however many seats the two held, so the 95% interval is a binomial
  one over matches. It is the Wilson score interval, not the normal ("Wald") one: with the
  few meetings most pairs have, and shares near 0 or 1, Wald's interval collapses to a
  point or leaves [0, 1]; Wilson's stays inside and keeps close to its nominal coverage
  (Brown, Cai & DasGupta 2001). A tie counts as half a win in the interval too.
- **Players seated twice or more in one match** (the built-ins fill pools several times
  over): the match still counts once for each pair. a beat b in it when more of the
  (a seat, b seat) pairs had a above than below, tied when as many went each way (the
  sign of the Mann-Whitney count over their seats); with one seat each that is simply who
  scored more. A player never meets itself.
- **clear cycles**: a beats b beats c beats a, where every "beats" is clear: the pair met
  at least `MIN_MEETINGS` times and the share's whole interval lies above 0.5. One such
  cycle means no single number orders those players.
- **Nash average** (Balduzzi, Tuyls, Perolat & Graepel 2018, "Re-evaluating evaluation"):
  how well does a player do against the toughest mix of the field? The meta-game is the
  antisymmetric matrix ``A[i, j] = logit(share_ij)`` (the paper's log-odds of the
  empirical win rate), with each share taken as ``(wins + ties/2 + 1/2) / (met + 1)``:
  half a pseudo-win each way keeps the log-odds finite and pulls pairs with few meetings
  toward even. Pairs that never met have ``A = 0`` (no evidence either way). The mix ``p``
  is the maximum-entropy Nash equilibrium of that symmetric zero-sum game, and player i's
  rating is ``(A p)_i``: its expected log-odds against the mix. Players in the
  equilibrium's support score 0, everyone else below 0. Unlike a mean win rate, adding
  copies of a weak player changes nothing: the copies share one weight, and beating them
  earns no more than beating one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from arena.errors import ComputationError, InvalidArgumentError
from arena.ratings.results import Outcome, RatedTable, players_of, seat_arrays

#: A pair must have met this often before its "beats" counts as clear (a cycle edge).
MIN_MEETINGS = 5

#: z for a two-sided 95% interval.
Z95 = 1.959963984540054

#: Cycles listed at most (the strongest first); `HeadToHead.cycle_count` has them all.
MAX_CYCLES = 50

#: Equilibrium weights below this count as outside the support (LP tolerance).
SUPPORT_TOL = 1e-6


@dataclass(frozen=True)
class Cycle:
    """A cycle of clear wins: players[0] beats players[1] ... beats players[0]."""

    players: tuple[str, ...]
    shares: tuple[float, ...]
    """shares[k]: the share of players[k] over players[k + 1] (the last: over players[0])."""

    @property
    def weakest(self) -> float:
        return min(self.shares)


@dataclass(frozen=True)
class HeadToHead:
    """Every pair's record over the PvP history, the clear cycles, and the Nash average.

    Matrices are indexed ``[a, b]`` in the order of `players` (sorted ids): row a's
    record against column b. ``wins[a, b]`` is the number of matches a finished above b,
    ``ties`` is symmetric, ``share = (wins + ties/2) / met`` (NaN where they never met),
    and ``low``/``high`` bound its Wilson 95% interval.
    """

    players: tuple[str, ...] = ()
    met: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    wins: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    ties: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    share: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    low: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    high: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    cycles: tuple[Cycle, ...] = ()
    """The clear cycles of length 3 and 4, strongest (largest weakest edge) first, at most
    `MAX_CYCLES`."""
    cycle_count: int = 0
    """How many clear cycles of length 3 and 4 there are in all."""
    nash: dict[str, float] = field(default_factory=dict)
    """Nash-averaged rating per player: its expected log-odds against the maximum-entropy
    Nash mix of the field (0 for players in the mix, negative otherwise)."""
    nash_weight: dict[str, float] = field(default_factory=dict)
    """Each player's weight in that mix."""

    def index(self, player: str) -> int:
        return self.players.index(player)

    def pairs(self, *, naming: str = "", offset: int = 0, limit: int | None = None) -> list[dict]:
        """The ordered pairs that met, as dicts with keys a, b, met, wins, ties, share, low,
        high (the `/head_to_head` API's rows), in `players` order: only those with `naming`
        in a's or b's id (if given), from the `offset`-th, at most `limit`. Only the rows
        returned are built: a field of 500 has 250,000."""
        i, j = self._met_pairs(naming)
        end = len(i) if limit is None else offset + limit
        return [{
            "a": self.players[a], "b": self.players[b], "met": int(self.met[a, b]),
            "wins": int(self.wins[a, b]), "ties": int(self.ties[a, b]),
            "share": float(self.share[a, b]), "low": float(self.low[a, b]), "high": float(self.high[a, b]),
        } for a, b in zip(i[offset:end].tolist(), j[offset:end].tolist())]

    def count_pairs(self, *, naming: str = "") -> int:
        """How many ordered pairs met (with `naming` in a's or b's id, if given)."""
        return len(self._met_pairs(naming)[0])

    def _met_pairs(self, naming: str) -> tuple[np.ndarray, np.ndarray]:
        i, j = np.nonzero(self.met)
        if naming:
            named = np.array([naming in p for p in self.players], dtype=bool)
            keep = named[i] | named[j]
            i, j = i[keep], j[keep]
        return i, j


# -- intervals ----------------------------------------------------------------------------


def wilson_interval(successes: np.ndarray | float, n: np.ndarray | float, *, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval of a binomial proportion `successes / n` (NaN where n = 0).

    >>> low, high = wilson_interval(5, 10)
    >>> round(float(low), 4), round(float(high), 4)
    (0.2366, 0.7634)
    """
    s = np.asarray(successes, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = s / n
        z2 = z * z
        centre = (p + z2 / (2 * n)) / (1 + z2 / n)
        half = z / (1 + z2 / n) * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    low = np.where(n > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
    high = np.where(n > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
    return low, high


# -- counting -----------------------------------------------------------------------------


#: Matches counted at once (bounds memory: a chunk holds chunk x 120 seat pairs).
_CHUNK = 4096


def _counts(history: Sequence[Outcome] | RatedTable, players: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """met, wins, ties per ordered pair, the match as the unit (see the module docstring)."""
    n = len(players)
    met = np.zeros((n, n), dtype=np.int64)
    wins = np.zeros((n, n), dtype=np.int64)
    ties = np.zeros((n, n), dtype=np.int64)
    if not len(history) or n < 2:
        return met, wins, ties
    index = {p: i for i, p in enumerate(players)}
    all_who, all_score, widths = seat_arrays(history, index, by_player=False)
    from arena import kernels

    if kernels.AVAILABLE:  # the same counts in one compiled pass (tests/test_kernels.py)
        kernels.pair_counts(all_who, all_score, widths, met, wins, ties)
        return met, wins, ties
    width = all_who.shape[1]
    si, sj = np.triu_indices(width, k=1)
    for first in range(0, len(history), _CHUNK):
        who = all_who[first:first + _CHUNK]
        score = all_score[first:first + _CHUNK]
        # every seat pair of a match with two different players, oriented from the smaller
        # player index to the larger: +1 if the smaller scored more, -1 if less
        pa, pb = who[:, si], who[:, sj]
        valid = (pa >= 0) & (pb >= 0) & (pa != pb)
        sign = np.sign(score[:, si] - score[:, sj])
        rows = np.nonzero(valid)[0]
        pa, pb, sign = pa[valid], pb[valid], sign[valid]
        lo, hi = np.minimum(pa, pb), np.maximum(pa, pb)
        sign = np.where(pa == lo, sign, -sign)
        # one net count per (match, lo, hi): the match is the unit
        key = (rows * n + lo) * n + hi
        unique, inverse = np.unique(key, return_inverse=True)
        net = np.bincount(inverse, weights=sign, minlength=len(unique))
        pair = unique % (n * n)
        flipped = (pair % n) * n + pair // n

        def tally(cells: np.ndarray) -> np.ndarray:
            return np.bincount(cells, minlength=n * n).reshape(n, n)

        met += tally(pair) + tally(flipped)
        ties += tally(pair[net == 0]) + tally(flipped[net == 0])
        wins += tally(pair[net > 0]) + tally(flipped[net < 0])
    return met, wins, ties


# -- cycles -------------------------------------------------------------------------------


def _cycles(players: Sequence[str], clear: np.ndarray, share: np.ndarray) -> tuple[list[Cycle], int]:
    """Clear cycles of length 3 and 4, each once (its smallest index first), strongest first."""
    e = clear.astype(bool)
    ef = e.astype(np.float64)  # BLAS products (exact: counts stay far below 2^53)
    found: list[tuple[int, ...]] = []
    # length 3: a -> b -> c -> a with a the smallest index (only edges a -> b that close)
    two = ef @ ef  # two[a, c]: paths a -> . -> c
    count3 = int(round(np.trace(two @ ef))) // 3
    for a, b in zip(*np.nonzero(e & (two.T > 0))):
        if b > a:
            found += [(a, b, c) for c in np.nonzero(e[b] & e[:, a])[0] if c > a]
    # length 4: a -> b -> c -> d -> a with a the smallest index (c opposite a)
    count4 = 0
    for a, c in zip(*np.nonzero((two > 0) & (two.T > 0))):
        if c <= a:
            continue
        bs = [b for b in np.nonzero(e[a] & e[:, c])[0] if b > a]
        ds = [d for d in np.nonzero(e[c] & e[:, a])[0] if d > a]
        for b in bs:
            for d in ds:
                if b != d:
                    count4 += 1
                    found.append((a, b, c, d))
    cycles = [
        Cycle(tuple(players[i] for i in cyc), tuple(float(share[i, j]) for i, j in zip(cyc, cyc[1:] + cyc[:1])))
        for cyc in ((tuple(int(i) for i in c)) for c in found)
    ]
    cycles.sort(key=lambda c: (-c.weakest, len(c.players), c.players))
    return cycles[:MAX_CYCLES], count3 + count4


# -- Nash average -------------------------------------------------------------------------


def meta_game(met: np.ndarray, wins: np.ndarray, ties: np.ndarray) -> np.ndarray:
    """The antisymmetric log-odds matrix of the module docstring (0 where pairs never met)."""
    smoothed = (wins + ties / 2.0 + 0.5) / (met + 1.0)
    a = np.log(smoothed) - np.log1p(-smoothed)
    a = np.where(met > 0, a, 0.0)
    np.fill_diagonal(a, 0.0)
    return (a - a.T) / 2.0  # exactly antisymmetric (it is already, up to rounding)


def nash_average(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The maximum-entropy Nash equilibrium of the symmetric zero-sum game `a`, and each
    strategy's payoff against it.

    The row player's payoff is ``p @ a @ q``; `a` must be antisymmetric, so the game's
    value is 0 and the equilibria are the polytope ``{p >= 0, sum p = 1, a @ p <= 0}``.
    Found in two steps:

    1. The largest support any equilibrium has, in one linear program over the cone
       ``{x >= 0, a @ x <= 0}``: maximise ``sum y`` with ``y_j <= min(1, x_j)``. Any j
       positive in some equilibrium gets ``y_j = 1`` by scaling, and the sum of such
       points stays in the cone, so the optimum marks exactly that support.
    2. On the support S every equilibrium has ``(a @ p)_S = 0``; the entropy is maximised
       over ``p_S`` in that affine set (a null-space parametrisation) with ``p >= 0`` and
       ``(a @ p)_j <= 0`` off S, by SLSQP. Where the set is a single point (the generic
       case), that point is the answer.

    Args:
        a (`np.ndarray`): an antisymmetric [n, n] payoff matrix.

    Returns:
        `(ratings, weights)`: ``a @ p`` (values within 1e-9 of 0 set to 0) and ``p``.

    Raises:
        `ValueError`: `a` is not square and antisymmetric.

    Example:
        >>> rps = np.array([[0, 1, -1], [-1, 0, 1], [1, -1, 0]], dtype=float)
        >>> ratings, weights = nash_average(rps)
        >>> weights.round(3).tolist(), ratings.round(3).tolist()
        ([0.333, 0.333, 0.333], [0.0, 0.0, 0.0])
    """
    a = np.asarray(a, dtype=float)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or not np.allclose(a, -a.T, atol=1e-9):
        raise InvalidArgumentError("`a` must be a square antisymmetric matrix (a[i, j] == -a[j, i]): build it with `meta_game`.")
    n = a.shape[0]
    if n == 0:
        return np.zeros(0), np.zeros(0)
    if n == 1:
        return np.zeros(1), np.ones(1)
    p = _max_entropy(a, _support(a))
    ratings = a @ p
    ratings[np.abs(ratings) < 1e-9] = 0.0
    return ratings, p


def _support(a: np.ndarray) -> np.ndarray:
    """Step 1 of `nash_average`: the largest equilibrium support, and a point with it."""
    from scipy.optimize import linprog

    n = a.shape[0]
    # variables [x (n), y (n)]; minimise -sum y
    cost = np.concatenate([np.zeros(n), -np.ones(n)])
    upper = np.block([[a, np.zeros((n, n))], [-np.eye(n), np.eye(n)], [np.ones((1, n)), np.zeros((1, n))]])
    bound = np.concatenate([np.zeros(2 * n), [n / SUPPORT_TOL]])
    bounds = [(0, None)] * n + [(0, 1)] * n
    result = linprog(cost, A_ub=upper, b_ub=bound, bounds=bounds, method="highs")
    if result.status != 0:  # cannot happen for an antisymmetric matrix (uniform scaling of any equilibrium is feasible)
        raise ComputationError(f"the equilibrium support LP failed: {result.message}")
    x = np.maximum(result.x[:n], 0.0)
    return x / x.sum()


def _max_entropy(a: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Step 2 of `nash_average`."""
    from scipy.linalg import null_space
    from scipy.optimize import minimize

    n = a.shape[0]
    support = np.nonzero(start > SUPPORT_TOL / 10)[0]
    off = np.setdiff1d(np.arange(n), support)
    p0 = np.zeros(n)
    p0[support] = start[support] / start[support].sum()
    if len(support) == 1:
        return p0
    # affine set: a[S, S] p_S = 0, sum p_S = 1 -> p_S = p0_S + N z
    equal = np.vstack([a[np.ix_(support, support)], np.ones((1, len(support)))])
    basis = null_space(equal, rcond=1e-9)
    if basis.shape[1] == 0:
        return p0
    x0 = p0[support]

    def negentropy(z: np.ndarray) -> tuple[float, np.ndarray]:
        q = np.maximum(x0 + basis @ z, 1e-300)
        return float(np.sum(q * np.log(q))), basis.T @ (np.log(q) + 1.0)

    constraints = [{"type": "ineq", "fun": lambda z: x0 + basis @ z, "jac": lambda z: basis}]
    if len(off):
        block = a[np.ix_(off, support)]
        constraints.append({"type": "ineq", "fun": lambda z: -(block @ (x0 + basis @ z)), "jac": lambda z: -(block @ basis)})
    result = minimize(negentropy, np.zeros(basis.shape[1]), jac=True, method="SLSQP", constraints=constraints,
                      options={"maxiter": 500, "ftol": 1e-12})
    q = np.maximum(x0 + basis @ result.x, 0.0)
    p = np.zeros(n)
    p[support] = q / q.sum()
    # keep the LP's equilibrium if the optimiser strayed off the polytope
    return p if np.max(a @ p) <= 1e-7 and np.sum(p * np.log(np.maximum(p, 1e-300))) <= np.sum(p0 * np.log(np.maximum(p0, 1e-300))) + 1e-12 else p0


# -- all together -------------------------------------------------------------------------


def head_to_head(history: Sequence[Outcome] | RatedTable, *, min_meetings: int = MIN_MEETINGS) -> HeadToHead:
    """Every pair's record in `history`, the clear cycles, and the Nash average.

    Args:
        history (`Sequence[Outcome] | RatedTable`): PvP matches (order does not matter).
        min_meetings (`int`): meetings a pair needs before its win counts as clear.

    Returns:
        `HeadToHead` over every player in `history`, sorted by id.

    Example:
        >>> games = [Outcome((str(k), str(k)), ("a", "b"), (2, 1)) for k in range(3)]
        >>> h = head_to_head(games)
        >>> int(h.wins[0, 1]), float(h.share[1, 0]), {p: round(r, 3) for p, r in h.nash.items()}
        (3, 0.0, {'a': 0.0, 'b': -1.946})
    """
    if min_meetings < 1:
        raise InvalidArgumentError(f"`min_meetings` must be 1 or more, got {min_meetings}.")
    players = players_of(history)
    met, wins, ties = _counts(history, players)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(met > 0, (wins + ties / 2.0) / np.maximum(met, 1), np.nan)
    low, high = wilson_interval(wins + ties / 2.0, met)
    clear = (met >= min_meetings) & (np.nan_to_num(low, nan=0.0) > 0.5)
    cycles, count = _cycles(players, clear, share)
    ratings, weights = nash_average(meta_game(met, wins, ties))
    return HeadToHead(
        players=tuple(players), met=met, wins=wins, ties=ties, share=share, low=low, high=high,
        cycles=tuple(cycles), cycle_count=count,
        nash={p: float(r) for p, r in zip(players, ratings)},
        nash_weight={p: float(w) for p, w in zip(players, weights)},
    )


__all__ = ["Cycle", "HeadToHead", "MIN_MEETINGS", "head_to_head", "meta_game", "nash_average", "wilson_interval"]
