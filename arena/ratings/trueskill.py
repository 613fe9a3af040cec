"""TrueSkill as the IJCAI paper used it: one rating per revision, 16-team free-for-all,
`tau=0`, a small draw probability; online, in the order of `Outcome.key`, checkpointed and
extended. The update itself, the one every caller uses, is `arena.kernels.rate_ffa` (a
numba kernel, plain Python without numba): `ffa_update` for one match, `trueskill_history`
for a whole history."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import trueskill

from arena.errors import CheckpointOrderError, InvalidArgumentError
from arena.ratings.results import Outcome, RatedTable, check_after, last_key, players_of, results_after, seat_arrays
from arena.ratings.scales import DRAW_PROBABILITY, TRUESKILL_BETA, TRUESKILL_MU, TRUESKILL_SIGMA, anchor_trueskill_mu
from arena.rules import ANCHORS
from arena.scoring import competition_ranks


@dataclass(frozen=True)
class TrueSkillRating:
    mu: float
    sigma: float
    matches: int = 0

    @property
    def conservative(self) -> float:
        """mu - 3 sigma: what the leaderboard shows (the paper's convention)."""
        return self.mu - 3.0 * self.sigma


@dataclass(frozen=True)
class TrueSkillState:
    """Ratings after a prefix of the history: a checkpoint to extend with later matches."""

    ratings: Mapping[str, TrueSkillRating] = field(default_factory=dict)
    last_key: tuple[str, str] = ("", "")
    matches: int = 0


@lru_cache(maxsize=16)
def draw_margin(beta: float, draw_probability: float) -> float:
    """The draw margin between two one-player teams, from the package's `calc_draw_margin`
    (it depends on beta and the draw probability only)."""
    env = trueskill.TrueSkill(beta=beta, draw_probability=draw_probability)
    return trueskill.calc_draw_margin(draw_probability, 2, env)


def ffa_update(
    ratings: Sequence[tuple[float, float]],
    ranks: Sequence[int],
    *,
    beta: float,
    tau: float,
    draw_probability: float,
    min_delta: float = trueskill.DELTA,
) -> list[tuple[float, float]] | None:
    """New (mu, sigma) of each player after one free-for-all of one-player teams, by the
    Arena's one TrueSkill update (`arena.kernels.rate_ffa`); None where its float maths fails.

    The same result as `trueskill.TrueSkill(beta=beta, tau=tau, draw_probability=
    draw_probability).rate([(Rating(m, s),) for m, s in ratings], ranks=ranks,
    min_delta=min_delta)`, read back as (rating.mu, rating.sigma), within 1e-6 (bit for bit
    in practice) and more than ten times faster. None where that call raises
    `FloatingPointError` or `ValueError: math domain error` (a result too unlikely for
    double precision, an extreme rating gap), or would divide by zero or overflow: rate
    those with the package's `backend="mpmath"` (`rate_match` does).

    Args:
        ratings: (mu, sigma) of each player (a team is rated as one player).
        ranks: integer rank of each player, lower is better; equal ranks are draws.
        beta: performance noise: the skill gap giving about a 76% chance of winning.
        tau: dynamic factor, added in quadrature to every sigma before the match.
        draw_probability: fixed draw probability between two teams.
        min_delta: the iteration stops once no truncation moves its difference by more.

    Raises:
        ValueError: fewer than two players, not one rank per player, or min_delta <= 0 (as
            the package).
    """
    from arena import kernels

    n = len(ratings)
    if n < 2:
        raise InvalidArgumentError("need multiple rating groups")
    if len(ranks) != n:
        raise InvalidArgumentError("wrong ranks")
    if min_delta <= 0:
        raise InvalidArgumentError("min_delta must be greater than 0")
    mus = np.array([mu for mu, _ in ratings], dtype=np.float64)
    sigmas = np.array([sigma for _, sigma in ratings], dtype=np.float64)
    new_mu, new_sigma = np.zeros(n), np.zeros(n)
    order, work = np.zeros(n, dtype=np.int64), np.zeros((16, n))
    rated = kernels.rate_ffa(mus, sigmas, np.asarray(ranks, dtype=np.int64), n, beta, tau,
                             draw_margin(beta, draw_probability), min_delta, new_mu, new_sigma, order, work, 2.0)
    return list(zip(new_mu.tolist(), new_sigma.tolist())) if rated else None


def rate_match(ratings: list[tuple[float, float]], ranks: list[int]) -> list[tuple[float, float]]:
    """One free-for-all update in the Arena's environment (`ffa_update`); where its float
    maths fails (the package would raise FloatingPointError, or ValueError "math domain
    error" for extreme rating gaps), the package's mpmath backend, as the package advises."""
    rated = ffa_update(ratings, ranks, beta=TRUESKILL_BETA, tau=0.0, draw_probability=DRAW_PROBABILITY)
    if rated is not None:
        return rated
    env = trueskill.TrueSkill(
        mu=TRUESKILL_MU, sigma=TRUESKILL_SIGMA, beta=TRUESKILL_BETA, tau=0.0,
        draw_probability=DRAW_PROBABILITY, backend="mpmath",
    )
    teams = env.rate([(env.create_rating(mu, sigma),) for mu, sigma in ratings], ranks=ranks)
    return [(float(team[0].mu), float(team[0].sigma)) for team in teams]


def trueskill_trail(
    history: Sequence[Outcome] | RatedTable,
    *,
    state: TrueSkillState | None = None,
    anchors: Mapping[str, float] = ANCHORS,
    anchor_sigma: float = 1.0,
    keep: int = 0,
) -> tuple[TrueSkillState, dict[str, list[tuple[int, float, float]]]]:
    """`trueskill_ratings`, and each player's last `keep` new ratings as (row in `history`,
    mu, sigma), oldest first: what `observe` would have seen of them, without a Python call
    per rating. Compiled (`arena.kernels`) where numba is installed; the same numbers
    either way (both loops apply the one update, `rate_ffa`; see tests/test_kernels.py).

    Raises:
        `ValueError`: as `trueskill_ratings`.
    """
    from arena import kernels

    state = state or TrueSkillState()
    if not kernels.AVAILABLE:
        return _trail_in_python(history, state, anchors, anchor_sigma, keep)
    check_after(history, state.last_key)
    names = sorted(set(players_of(history)) | set(state.ratings) | set(anchors))
    players = _Players.of(names, state, anchors, anchor_sigma, keep)
    seats, scores, widths = seat_arrays(history, {p: i for i, p in enumerate(names)}, by_player=True)
    margin = draw_margin(TRUESKILL_BETA, DRAW_PROBABILITY)
    row = 0
    while True:
        row = kernels.trueskill_history(seats, scores, widths, row, players.mu, players.sigma, players.matches,
                                        players.present, players.fixed, players.fixed_mu, players.fixed_sigma,
                                        TRUESKILL_BETA, 0.0, margin, trueskill.DELTA, players.trail_match,
                                        players.trail_mu, players.trail_sigma, players.trail_count, 2.0)
        if row == kernels.OK:
            break
        # ALGO LOGIC: a match whose float maths fails: rated by `rate_match`, with the
        # package's mpmath fallback.
        k = int(widths[row])
        players.rate_refused(row, seats[row, :k], scores[row, :k])
        row += 1
    return TrueSkillState(ratings=players.ratings(), last_key=last_key(history, state.last_key),
                          matches=state.matches + len(history)), players.trails()


def _trail_in_python(history: Sequence[Outcome] | RatedTable, state: TrueSkillState, anchors: Mapping[str, float],
                     anchor_sigma: float, keep: int) -> tuple[TrueSkillState, dict[str, list[tuple[int, float, float]]]]:
    """`trueskill_trail` without numba: `trueskill_reference`, its new ratings observed."""
    history = history.outcomes() if isinstance(history, RatedTable) else history
    trail: dict[str, deque] = {}

    rows = {id(o): r for r, o in enumerate(history)}

    def observe(outcome: Outcome, player: str, rating: TrueSkillRating) -> None:
        trail.setdefault(player, deque(maxlen=max(keep, 1))).append((rows[id(outcome)], rating.mu, rating.sigma))

    done = trueskill_reference(history, state=state, anchors=anchors, anchor_sigma=anchor_sigma,
                               observe=observe if keep else None)
    return done, {p: list(t) for p, t in trail.items()}


@dataclass
class _Players:
    """Every player's rating as the compiled loop reads and updates it (`kernels.trueskill_history`):
    by index in `names`, the anchors fixed, and the last `keep` new ratings in ring buffers."""

    names: list[str]
    mu: np.ndarray
    sigma: np.ndarray
    matches: np.ndarray
    present: np.ndarray
    fixed: np.ndarray
    fixed_mu: np.ndarray
    fixed_sigma: np.ndarray
    keep: int
    trail_match: np.ndarray
    trail_mu: np.ndarray
    trail_sigma: np.ndarray
    trail_count: np.ndarray

    @classmethod
    def of(cls, names: list[str], state: TrueSkillState, anchors: Mapping[str, float], anchor_sigma: float,
           keep: int) -> _Players:
        """`names` rated as `state` has them (the others new), `anchors` fixed."""
        index = {p: i for i, p in enumerate(names)}
        n = len(names)
        mu = np.full(n, TRUESKILL_MU)
        sigma = np.full(n, TRUESKILL_SIGMA)
        matches = np.zeros(n, dtype=np.int64)
        present = np.zeros(n, dtype=np.bool_)
        for p, r in state.ratings.items():
            i = index[p]
            mu[i], sigma[i], matches[i], present[i] = r.mu, r.sigma, r.matches, True
        mean_anchor = float(np.mean(list(anchors.values()))) if anchors else 0.0
        fixed = np.zeros(n, dtype=np.bool_)
        fixed_mu, fixed_sigma = np.zeros(n), np.zeros(n)
        for p, v in anchors.items():
            i = index[p]
            fixed[i], fixed_mu[i], fixed_sigma[i] = True, anchor_trueskill_mu(v, mean_anchor), anchor_sigma
        return cls(names, mu, sigma, matches, present, fixed, fixed_mu, fixed_sigma, keep,
                   np.zeros((n, keep), dtype=np.int64), np.zeros((n, keep)), np.zeros((n, keep)),
                   np.zeros(n, dtype=np.int64))

    def rate_refused(self, row: int, seated: np.ndarray, scores: np.ndarray) -> None:
        """Rate match `row` (its players `seated`, their `scores`), which the compiled loop
        refused, by `rate_match`, and apply it as the loop applies its own."""
        ranks = competition_ranks(scores.tolist())
        before = [(self.fixed_mu[i], self.fixed_sigma[i]) if self.fixed[i] else (self.mu[i], self.sigma[i])
                  for i in seated]
        after = rate_match([(float(a), float(b)) for a, b in before], ranks)
        updates: dict[int, list[tuple[float, float]]] = {}
        for i, new in zip(seated.tolist(), after):
            if not self.fixed[i]:
                updates.setdefault(i, []).append(new)
        for i, news in updates.items():
            self.mu[i], self.sigma[i] = sum(m for m, _ in news) / len(news), sum(s for _, s in news) / len(news)
            self.matches[i] += 1
            self.present[i] = True
            if self.keep:
                slot = self.trail_count[i] % self.keep
                self.trail_match[i, slot], self.trail_mu[i, slot], self.trail_sigma[i, slot] = row, self.mu[i], self.sigma[i]
                self.trail_count[i] += 1

    def ratings(self) -> dict[str, TrueSkillRating]:
        """The rating of every player that has one."""
        return {
            self.names[i]: TrueSkillRating(mu=float(self.mu[i]), sigma=float(self.sigma[i]), matches=int(self.matches[i]))
            for i in np.nonzero(self.present)[0]
        }

    def trails(self) -> dict[str, list[tuple[int, float, float]]]:
        """Each player's last `keep` new ratings as (row, mu, sigma), oldest first."""
        trails: dict[str, list[tuple[int, float, float]]] = {}
        for i in np.nonzero(self.trail_count)[0] if self.keep else ():
            count = int(self.trail_count[i])
            slots = (count - np.arange(min(count, self.keep), 0, -1)) % self.keep  # oldest first
            trails[self.names[i]] = list(zip(self.trail_match[i, slots].tolist(), self.trail_mu[i, slots].tolist(),
                                             self.trail_sigma[i, slots].tolist()))
        return trails


def trueskill_ratings(
    history: Sequence[Outcome] | RatedTable,
    *,
    state: TrueSkillState | None = None,
    anchors: Mapping[str, float] = ANCHORS,
    anchor_sigma: float = 1.0,
    observe: Callable[[Outcome, str, TrueSkillRating], None] | None = None,
) -> TrueSkillState:
    """TrueSkill after `history`, starting from `state` (a checkpoint) if given.

    Each match updates every non-anchor player once. Teams are sorted by player id before
    the update, because the algorithm's result depends on the input order of tied teams.
    Anchors enter each update with a fixed rating (`anchor_sigma`) and are not changed. A
    player appearing twice in one match takes the mean of its updates.

    `observe(outcome, player, rating)`, if given, sees every new rating as it is made
    (then the pure-Python loop runs; `trueskill_trail` gives the latest ones compiled).
    Without it the compiled loop runs where numba is installed (`arena.kernels`): the same
    ratings, about a hundred times faster.

    Raises:
        `ValueError`: `history` holds a match at or before the checkpoint's last one (then
            recompute from scratch: online ratings depend on order).
    """
    from arena import kernels

    if observe is None and kernels.AVAILABLE:
        return trueskill_trail(history, state=state, anchors=anchors, anchor_sigma=anchor_sigma)[0]
    if isinstance(history, RatedTable):
        history = history.outcomes()
    return trueskill_reference(history, state=state, anchors=anchors, anchor_sigma=anchor_sigma, observe=observe)


def trueskill_reference(
    history: Sequence[Outcome] | RatedTable,
    *,
    state: TrueSkillState | None = None,
    anchors: Mapping[str, float] = ANCHORS,
    anchor_sigma: float = 1.0,
    observe: Callable[[Outcome, str, TrueSkillRating], None] | None = None,
) -> TrueSkillState:
    """`trueskill_ratings` as a Python loop over `rate_match` (the reference the compiled loop is tested against)."""
    state = state or TrueSkillState()
    ratings = dict(state.ratings)
    mean_anchor = float(np.mean(list(anchors.values()))) if anchors else 0.0
    fixed = {p: (anchor_trueskill_mu(v, mean_anchor), anchor_sigma) for p, v in anchors.items()}
    last = state.last_key
    count = state.matches
    for outcome in history.outcomes() if isinstance(history, RatedTable) else history:
        if outcome.key <= last:
            raise CheckpointOrderError(
                f"Match {outcome.key[1]} is not after the checkpoint's last match {last[1]}: recompute from scratch."
            )
        last = outcome.key
        order = sorted(range(len(outcome.players)), key=lambda i: (outcome.players[i], i))
        players = [outcome.players[i] for i in order]
        ranks = outcome.ranks()
        before = []
        for p in players:
            if p in fixed:
                before.append(fixed[p])
            else:
                r = ratings.get(p)
                before.append((r.mu, r.sigma) if r else (TRUESKILL_MU, TRUESKILL_SIGMA))
        after = rate_match(before, [ranks[i] for i in order])
        updates: dict[str, list[tuple[float, float]]] = {}
        for p, new in zip(players, after):
            if p not in fixed:
                updates.setdefault(p, []).append(new)
        for p, news in updates.items():
            played = ratings[p].matches if p in ratings else 0
            ratings[p] = TrueSkillRating(
                mu=sum(m for m, _ in news) / len(news), sigma=sum(s for _, s in news) / len(news), matches=played + 1
            )
            if observe is not None:
                observe(outcome, p, ratings[p])
        count += 1
    return TrueSkillState(ratings=ratings, last_key=last, matches=count)


def extend_trueskill(state: TrueSkillState, history: Sequence[Outcome] | RatedTable, **kwargs) -> TrueSkillState:
    """Bring a checkpoint up to date: apply only matches after it, or recompute everything
    if a match earlier than the checkpoint has appeared since (out-of-order arrival)."""
    new = results_after(history, state.last_key)
    if len(history) - len(new) != state.matches:
        return trueskill_ratings(history, **kwargs)
    return trueskill_ratings(new, state=state, **kwargs)


def recomputed(state: TrueSkillState, history: Sequence[Outcome] | RatedTable) -> bool:
    """Whether `extend_trueskill(state, history)` has to start from scratch."""
    after = int(history.after(state.last_key).sum()) if isinstance(history, RatedTable) else len(results_after(history, state.last_key))
    return len(history) - after != state.matches


