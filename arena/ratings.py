"""How ratings are computed: three views of the same match history, each a pure function.

Input is always a sequence of `Outcome`s (who played, what each scored), read from the
history; output is a table of ratings. The same history gives the identical table.

- `trueskill_ratings`: TrueSkill as the IJCAI paper used it, through the `trueskill`
  package's algorithm: one rating per policy revision (a team of 8 is one player),
  16-team free-for-all ranked by Achievement with equal scores tied, `tau=0`, a small
  draw probability. Online: matches apply in the order of `Outcome.key` (start time, then
  match id) and the state can be checkpointed and extended.
- `plackett_luce`: an order-free maximum-likelihood rating. One batch fit of a
  Plackett-Luce model over the whole history (ties by Efron's rule, a small L2 penalty),
  anchored on the built-in teams' fixed ratings as AlphaStar anchored its MMR, with 95%
  intervals for rating and leaderboard position from a bootstrap over whole results,
  drawn over the results in id order: permuting start times or input order changes no
  rating, interval or rank.
- `elo_ratings`: Elo as in Hugging Face's AI vs. AI, a 16-team result read as pairwise
  duels.

Scales. Plackett-Luce ratings are log-strengths: a gap of 1 means the better policy wins a
duel e/(1+e), about 73% of the time. The anchors are given in that unit; TrueSkill and
Elo place them on their own scales by matching duel win probabilities (see
`ANCHOR_TRUESKILL_MU`, `anchor_elo`).
"""

from __future__ import annotations

import math
import os
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from arena.rules import ANCHORS
from arena.schema import MatchResult, player_id
from arena.scoring import competition_ranks

# -- anchors ------------------------------------------------------------------------------

# The anchors' fixed ratings, in Plackett-Luce units, are part of the rules (`arena.rules`).

#: TrueSkill mu per Plackett-Luce unit: a duel won with probability sigmoid(d) in PL is won
#: with probability Phi(mu_gap / (sqrt(2) beta)) in TrueSkill; matching the slopes at 0
#: (sigmoid'(0) = 1/4, Phi'(0) = 1/sqrt(2 pi)) gives mu_gap = d * sqrt(2) beta * sqrt(2 pi) / 4.
TRUESKILL_MU, TRUESKILL_SIGMA = 25.0, 25.0 / 3.0
TRUESKILL_BETA = TRUESKILL_SIGMA / 2.0
TRUESKILL_PER_PL = math.sqrt(2.0) * TRUESKILL_BETA * math.sqrt(2.0 * math.pi) / 4.0

#: Elo points per Plackett-Luce unit: Elo's duel probability is 1 / (1 + 10^(-gap/400)).
ELO_PER_PL = 400.0 / math.log(10.0)
ELO_START = 1200.0

#: TrueSkill draw probability: small, since large values distort the many ties at 0.
DRAW_PROBABILITY = 0.015


def anchor_trueskill_mu(value: float, mean_anchor: float) -> float:
    """An anchor's TrueSkill mu: centred so the anchors' mean sits at the default mu."""
    return TRUESKILL_MU + (value - mean_anchor) * TRUESKILL_PER_PL


def anchor_elo(value: float, mean_anchor: float) -> float:
    """An anchor's Elo: centred so the anchors' mean sits at the starting Elo."""
    return ELO_START + (value - mean_anchor) * ELO_PER_PL


# -- input --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """One rated result as the rating engines see it: a match, or a whole duplicate set."""

    key: tuple[str, str]
    """(start time, match id): the order online engines apply matches in. A duplicate
    set's key is its first match's start time and the set id."""
    players: tuple[str, ...]
    scores: tuple[float, ...]
    """A match: each seat's Achievement. A set: each player's mean Achievement over its
    seats in the set's matches."""

    def ranks(self) -> list[int]:
        """1 for the best score; equal scores share a rank."""
        return competition_ranks(self.scores)


@dataclass(frozen=True)
class Played:
    """One recorded match, as `rated` groups them: the fields that decide how it is rated."""

    started_at: str
    match_id: str
    set_id: str
    set_size: int
    players: tuple[str, ...]
    scores: tuple[int, ...]


def rated(matches: Iterable[Played]) -> list[Outcome]:
    """What the rating engines rate, in rating order: every match played on its own, and
    every complete duplicate set as one result.

    A set (matches sharing a `set_id`: one seed, seats rotated) is rated once all its
    `set_size` matches are recorded; until then none of it is rated. Its result ranks the
    players by their mean Achievement over all their seats in the set, so the spawn
    points, which every player has taken in turn, cancel out.
    """
    out = []
    sets: dict[str, list[Played]] = {}
    for m in matches:
        if m.set_id:
            sets.setdefault(m.set_id, []).append(m)
        else:
            out.append(Outcome((m.started_at, m.match_id), m.players, m.scores))
    for set_id, members in sets.items():
        unique = {m.match_id: m for m in members}
        if len(unique) < max(m.set_size for m in members):
            continue
        totals: dict[str, list[int]] = {}
        for m in unique.values():
            for p, score in zip(m.players, m.scores):
                totals.setdefault(p, []).append(score)
        players = tuple(sorted(totals))
        out.append(Outcome(
            (min(m.started_at for m in unique.values()), set_id),
            players,
            tuple(sum(totals[p]) / len(totals[p]) for p in players),
        ))
    return sorted(out, key=lambda o: o.key)


def by_id(outcome: Outcome) -> tuple:
    """The order-free sort key of a rated result: its id (match id, or set id), then its
    content (ids are unique; the rest only settles a malformed history deterministically)."""
    return (outcome.key[1], outcome.players, outcome.scores, outcome.key[0])


@dataclass(frozen=True)
class RatedTable:
    """Rated results as columns: the same results as a list of `Outcome`s in rating order,
    without a Python object per result (what the standings build from the history's rows,
    `leaderboard.standings.rated_table`). Every rating engine takes either form.
    """

    names: tuple[str, ...]
    """The players, sorted by id; `seats` index into them."""
    started: np.ndarray
    """[M] each result's start time (`Outcome.key[0]`), object array of str."""
    ids: np.ndarray
    """[M] each result's id (`Outcome.key[1]`): match id, or set id."""
    seats: np.ndarray
    """[M, W] int64 player index of each seat, in the result's own seat order; -1 padding."""
    scores: np.ndarray
    """[M, W] float64 each seat's score."""
    widths: np.ndarray
    """[M] int64 seats of each result."""

    def __len__(self) -> int:
        return len(self.ids)

    def key(self, row: int) -> tuple[str, str]:
        return (str(self.started[row]), str(self.ids[row]))

    def take(self, rows: np.ndarray) -> RatedTable:
        """The results at `rows` (indices or a boolean mask), same players."""
        return RatedTable(self.names, self.started[rows], self.ids[rows], self.seats[rows], self.scores[rows],
                          self.widths[rows])

    def after(self, key: tuple[str, str]) -> np.ndarray:
        """Mask of the results whose key is after `key` (the online engines' checkpoints)."""
        started, ids = self.started, self.ids
        return (started > key[0]) | ((started == key[0]) & (ids > key[1]))

    def outcomes(self) -> list[Outcome]:
        """The same results as `Outcome`s (scores as the rows hold them: int when whole)."""
        names = self.names
        out = []
        for row in range(len(self)):
            k = int(self.widths[row])
            out.append(Outcome(self.key(row), tuple(names[i] for i in self.seats[row, :k]),
                               tuple(int(v) if float(v).is_integer() else float(v) for v in self.scores[row, :k])))
        return out

    @classmethod
    def empty(cls) -> RatedTable:
        return cls((), np.empty(0, dtype=object), np.empty(0, dtype=object), np.zeros((0, 1), dtype=np.int64),
                   np.zeros((0, 1)), np.zeros(0, dtype=np.int64))

    @classmethod
    def concat(cls, parts: Sequence[RatedTable], *, sort: bool = False) -> RatedTable:
        """The results of `parts` in one table, over the union of their players: in the
        parts' order, or, with `sort`, in rating order (start, id)."""
        parts = [t for t in parts if len(t)]
        if not parts:
            return cls.empty()
        if len(parts) == 1:
            return parts[0]
        names = tuple(sorted(set().union(*(t.names for t in parts))))
        index = {p: i for i, p in enumerate(names)}
        width = max(t.seats.shape[1] for t in parts)
        seats, scores = [], []
        for t in parts:
            remap = np.array([index[p] for p in t.names] + [-1], dtype=np.int64)
            pad = width - t.seats.shape[1]
            seats.append(np.pad(remap[t.seats] if t.names != names else t.seats, ((0, 0), (0, pad)), constant_values=-1))
            scores.append(np.pad(t.scores, ((0, 0), (0, pad))))
        table = cls(names, np.concatenate([t.started for t in parts]), np.concatenate([t.ids for t in parts]),
                    np.concatenate(seats), np.concatenate(scores), np.concatenate([t.widths for t in parts]))
        if not sort or _in_rating_order(table.started, table.ids):
            return table  # (parts read in order, a shard at a time: nothing to sort)
        # sorted codes of the object columns (np.lexsort takes no objects)
        order = np.lexsort((np.unique(table.ids, return_inverse=True)[1], np.unique(table.started, return_inverse=True)[1]))
        return table.take(order)

    @classmethod
    def of(cls, history: Sequence[Outcome] | RatedTable) -> RatedTable:
        """`history` as a table (itself if it is one)."""
        if isinstance(history, RatedTable):
            return history
        names = tuple(sorted({p for o in history for p in o.players}))
        index = {p: i for i, p in enumerate(names)}
        seats, scores, widths = _seat_arrays(history, index, by_player=False)
        started = np.array([o.key[0] for o in history], dtype=object)
        ids = np.array([o.key[1] for o in history], dtype=object)
        return cls(names, started, ids, seats, scores, widths)


def _in_rating_order(started: np.ndarray, ids: np.ndarray) -> bool:
    """Whether the keys (start, id) never decrease from one result to the next (a stable
    sort would leave them as they are)."""
    if len(started) < 2:
        return True
    later, same = started[1:] > started[:-1], started[1:] == started[:-1]
    return bool(np.all(later | (same & (ids[1:] >= ids[:-1]))))


def _players_of(history: Sequence[Outcome] | RatedTable) -> list[str]:
    """The players who played in `history`, sorted by id."""
    if isinstance(history, RatedTable):
        used = np.unique(history.seats[history.seats >= 0])
        return [history.names[i] for i in used]
    return sorted({p for o in history for p in o.players})


def _last_key(history: Sequence[Outcome] | RatedTable, default: tuple[str, str]) -> tuple[str, str]:
    if not len(history):
        return default
    return history.key(len(history) - 1) if isinstance(history, RatedTable) else history[-1].key


def outcomes(results: Iterable[MatchResult], *, tracks: Sequence[str] = ("pvp",)) -> list[Outcome]:
    """The rated results of `tracks` (matches, and complete duplicate sets), in rating order."""
    return rated(
        Played(
            r.started_at, r.match_id, r.set_id, r.set_size,
            tuple(player_id(t.policy_id, t.revision) for t in r.teams),
            tuple(t.achievement for t in r.teams),
        )
        for r in results
        if r.track in tracks
    )


# -- TrueSkill ----------------------------------------------------------------------------


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


def _rate_match(ratings: list[tuple[float, float]], ranks: list[int]) -> list[tuple[float, float]]:
    """One free-for-all update; falls back to the package's mpmath backend where the
    default float maths fails (the package raises FloatingPointError, or ValueError
    "math domain error" for extreme rating gaps), as the package itself advises."""
    from arena.trueskill_ffa import rate_ffa

    try:
        return rate_ffa(
            ratings,
            ranks,
            mu=TRUESKILL_MU,
            sigma=TRUESKILL_SIGMA,
            beta=TRUESKILL_BETA,
            tau=0.0,
            draw_probability=DRAW_PROBABILITY,
        )
    except (FloatingPointError, ValueError):
        import trueskill

        env = trueskill.TrueSkill(
            mu=TRUESKILL_MU, sigma=TRUESKILL_SIGMA, beta=TRUESKILL_BETA, tau=0.0,
            draw_probability=DRAW_PROBABILITY, backend="mpmath",
        )
        rated = env.rate([(env.create_rating(mu, sigma),) for mu, sigma in ratings], ranks=ranks)
        return [(float(team[0].mu), float(team[0].sigma)) for team in rated]


#: Results sorted at a time where a whole history's seats are rearranged (`_seat_arrays`,
#: `_design`): the sorts' temporaries stay a few MB however long the history (a million
#: results at once took a gigabyte more than the arrays kept).
DESIGN_BLOCK = 1 << 16


def _seat_arrays(history: Sequence[Outcome] | RatedTable, index: Mapping[str, int], *, by_player: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The outcomes as padded arrays for the compiled kernels: player index and score of each
    seat, and seats per match; `by_player` puts each match's seats in (player id, seat)
    order, as `trueskill_ratings` rates them (`index` must number players in id order).
    Read only: without `by_player`, a table numbered as `index` gives its own arrays."""
    m = len(history)
    if isinstance(history, RatedTable):
        remap = np.array([index.get(p, -1) for p in history.names] + [-1], dtype=np.int64)  # -1 stays -1
        same = bool((remap[:-1] == np.arange(len(history.names))).all())  # the usual case: the table's own numbering
        if not (by_player and m):
            return history.seats if same else remap[history.seats], history.scores, history.widths
        # a block of results at a time, into the two arrays returned: the sort's temporaries
        # stay a few MB (a million results sorted at once took five times the arrays)
        seats, scores = np.empty_like(history.seats), np.empty_like(history.scores)
        for a in range(0, m, DESIGN_BLOCK):
            block = history.seats[a:a + DESIGN_BLOCK] if same else remap[history.seats[a:a + DESIGN_BLOCK]]
            order = np.argsort(np.where(block < 0, np.iinfo(np.int64).max, block), axis=1, kind="stable")
            seats[a:a + DESIGN_BLOCK] = np.take_along_axis(block, order, axis=1)
            scores[a:a + DESIGN_BLOCK] = np.take_along_axis(history.scores[a:a + DESIGN_BLOCK], order, axis=1)
        return seats, scores, history.widths
    width = max((len(o.players) for o in history), default=1)
    widths = np.fromiter((len(o.players) for o in history), dtype=np.int64, count=m)
    seats = np.full((m, width), -1, dtype=np.int64)
    scores = np.zeros((m, width), dtype=np.float64)
    if m and (widths == width).all():  # the usual case: every match has the same seats
        seats[:] = np.fromiter((index[p] for o in history for p in o.players), dtype=np.int64, count=m * width).reshape(m, width)
        scores[:] = np.fromiter((s for o in history for s in o.scores), dtype=np.float64, count=m * width).reshape(m, width)
    else:
        for row, o in enumerate(history):
            seats[row, : len(o.players)] = [index[p] for p in o.players]
            scores[row, : len(o.scores)] = o.scores
    if by_player and m:
        # stable sort by player index = sorted by (player id, seat); padding (-1) goes last
        key = np.where(seats < 0, np.iinfo(np.int64).max, seats)
        order = np.argsort(key, axis=1, kind="stable")
        seats = np.take_along_axis(seats, order, axis=1)
        scores = np.take_along_axis(scores, order, axis=1)
    return seats, scores, widths


def _check_after(history: Sequence[Outcome] | RatedTable, last: tuple[str, str]) -> None:
    """Every match after the checkpoint's last one and after the match before it."""
    if isinstance(history, RatedTable):
        if not len(history):
            return
        started, ids = history.started, history.ids
        later = (started[1:] > started[:-1]) | ((started[1:] == started[:-1]) & (ids[1:] > ids[:-1]))
        ok = np.concatenate([history.after(last)[:1], later])
        if not ok.all():
            row = int(np.argmin(ok))
            before = last if row == 0 else history.key(row - 1)
            raise ValueError(
                f"Match {history.ids[row]} is not after the checkpoint's last match {before[1]}: recompute from scratch."
            )
        return
    for outcome in history:
        if outcome.key <= last:
            raise ValueError(
                f"Match {outcome.key[1]} is not after the checkpoint's last match {last[1]}: recompute from scratch."
            )
        last = outcome.key


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
    either way (the compiled loop repeats the pure-Python arithmetic, see tests/test_kernels.py).

    Raises:
        `ValueError`: as `trueskill_ratings`.
    """
    from arena import kernels

    state = state or TrueSkillState()
    if not kernels.AVAILABLE:
        history = history.outcomes() if isinstance(history, RatedTable) else history
        trail: dict[str, deque] = {}

        rows = {id(o): r for r, o in enumerate(history)}

        def observe(outcome: Outcome, player: str, rating: TrueSkillRating) -> None:
            trail.setdefault(player, deque(maxlen=max(keep, 1))).append((rows[id(outcome)], rating.mu, rating.sigma))

        done = _trueskill_python(history, state=state, anchors=anchors, anchor_sigma=anchor_sigma,
                                 observe=observe if keep else None)
        return done, {p: list(t) for p, t in trail.items()}
    _check_after(history, state.last_key)
    names = sorted(set(_players_of(history)) | set(state.ratings) | set(anchors))
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
    seats, scores, widths = _seat_arrays(history, index, by_player=True)
    trail_match = np.zeros((n, keep), dtype=np.int64)
    trail_mu, trail_sigma = np.zeros((n, keep)), np.zeros((n, keep))
    trail_count = np.zeros(n, dtype=np.int64)
    from arena.trueskill_ffa import _draw_margin

    margin = _draw_margin(TRUESKILL_MU, TRUESKILL_SIGMA, TRUESKILL_BETA, 0.0, DRAW_PROBABILITY)
    import trueskill

    row = 0
    while True:
        row = kernels.trueskill_history(seats, scores, widths, row, mu, sigma, matches, present, fixed, fixed_mu,
                                        fixed_sigma, TRUESKILL_BETA, 0.0, margin, trueskill.DELTA, trail_match,
                                        trail_mu, trail_sigma, trail_count, 2.0)
        if row == kernels.OK:
            break
        # ALGO LOGIC: a match the compiled loop cannot rate exactly (the pure-Python code
        # would raise there): rated in Python, with the package's mpmath fallback, as before.
        k = int(widths[row])
        seated = seats[row, :k]
        ranks = competition_ranks(scores[row, :k].tolist())
        before = [(fixed_mu[i], fixed_sigma[i]) if fixed[i] else (mu[i], sigma[i]) for i in seated]
        after = _rate_match([(float(a), float(b)) for a, b in before], ranks)
        updates: dict[int, list[tuple[float, float]]] = {}
        for i, new in zip(seated.tolist(), after):
            if not fixed[i]:
                updates.setdefault(i, []).append(new)
        for i, news in updates.items():
            mu[i], sigma[i] = sum(m for m, _ in news) / len(news), sum(s for _, s in news) / len(news)
            matches[i] += 1
            present[i] = True
            if keep:
                slot = trail_count[i] % keep
                trail_match[i, slot], trail_mu[i, slot], trail_sigma[i, slot] = row, mu[i], sigma[i]
                trail_count[i] += 1
        row += 1
    ratings = {
        names[i]: TrueSkillRating(mu=float(mu[i]), sigma=float(sigma[i]), matches=int(matches[i]))
        for i in np.nonzero(present)[0]
    }
    trails: dict[str, list[tuple[int, float, float]]] = {}
    for i in np.nonzero(trail_count)[0] if keep else ():
        count = int(trail_count[i])
        slots = (count - np.arange(min(count, keep), 0, -1)) % keep  # oldest first
        trails[names[i]] = list(zip(trail_match[i, slots].tolist(), trail_mu[i, slots].tolist(),
                                    trail_sigma[i, slots].tolist()))
    return TrueSkillState(ratings=ratings, last_key=_last_key(history, state.last_key),
                          matches=state.matches + len(history)), trails


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
    return _trueskill_python(history, state=state, anchors=anchors, anchor_sigma=anchor_sigma, observe=observe)


def _trueskill_python(
    history: Sequence[Outcome] | RatedTable,
    *,
    state: TrueSkillState | None = None,
    anchors: Mapping[str, float] = ANCHORS,
    anchor_sigma: float = 1.0,
    observe: Callable[[Outcome, str, TrueSkillRating], None] | None = None,
) -> TrueSkillState:
    """The pure-Python `trueskill_ratings` (the reference the compiled loop is tested against)."""
    state = state or TrueSkillState()
    ratings = dict(state.ratings)
    mean_anchor = float(np.mean(list(anchors.values()))) if anchors else 0.0
    fixed = {p: (anchor_trueskill_mu(v, mean_anchor), anchor_sigma) for p, v in anchors.items()}
    last = state.last_key
    count = state.matches
    for outcome in history.outcomes() if isinstance(history, RatedTable) else history:
        if outcome.key <= last:
            raise ValueError(
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
        after = _rate_match(before, [ranks[i] for i in order])
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


def extend_trueskill(state: TrueSkillState, history: Sequence[Outcome], **kwargs) -> TrueSkillState:
    """Bring a checkpoint up to date: apply only matches after it, or recompute everything
    if a match earlier than the checkpoint has appeared since (out-of-order arrival)."""
    new = _after(history, state.last_key)
    if len(history) - len(new) != state.matches:
        return trueskill_ratings(history, **kwargs)
    return trueskill_ratings(new, state=state, **kwargs)


def _after(history: Sequence[Outcome] | RatedTable, key: tuple[str, str]) -> Sequence[Outcome] | RatedTable:
    """The results of `history` after `key`, in the same form."""
    if isinstance(history, RatedTable):
        later = history.after(key)
        return history if later.all() else history.take(later)  # (from scratch: no copy of every result)
    return [o for o in history if o.key > key]


def recomputed(state: TrueSkillState, history: Sequence[Outcome] | RatedTable) -> bool:
    """Whether `extend_trueskill(state, history)` has to start from scratch."""
    after = int(history.after(state.last_key).sum()) if isinstance(history, RatedTable) else len(_after(history, state.last_key))
    return len(history) - after != state.matches


# -- Elo ----------------------------------------------------------------------------------

#: Elo K per match, shared over the duels of a match: each of the n-1 duels moves a
#: rating by at most K/(n-1), so one 16-team match moves a rating by at most K.
ELO_K = 32.0


@dataclass(frozen=True)
class EloState:
    """Elo ratings after a prefix of the history: a checkpoint to extend with later matches."""

    ratings: Mapping[str, float] = field(default_factory=dict)
    last_key: tuple[str, str] = ("", "")
    matches: int = 0


def elo_ratings(
    history: Sequence[Outcome] | RatedTable,
    *,
    state: EloState | None = None,
    k: float = ELO_K,
    anchors: Mapping[str, float] = ANCHORS,
    compiled: bool = True,
    extends: bool = False,
) -> EloState:
    """Elo after `history`, in order, carried forward from `state` if given.

    A 16-team match is read as its duels (a higher Achievement wins, equal scores draw),
    computed for the whole match at once; anchors are fixed; new players start at 1200.
    If `history` holds matches at or before the checkpoint other than the ones it covers
    (out-of-order arrival), everything is recomputed from scratch. `compiled`: use the
    compiled loop (`arena.kernels`) where numba is installed (equal within 1e-9; the
    numpy loop below is the reference). `extends`: `history` holds only the matches after
    `state` (an incremental update, `leaderboard.standings.update`), each after the
    checkpoint's last one (`ValueError` otherwise).
    """
    from arena import kernels

    state = state or EloState()
    if extends:
        _check_after(history, state.last_key)
        new = history
    else:
        new = _after(history, state.last_key)
        if len(history) - len(new) != state.matches:
            state, new = EloState(), history
    mean_anchor = float(np.mean(list(anchors.values()))) if anchors else 0.0
    fixed = {p: anchor_elo(v, mean_anchor) for p, v in anchors.items()}
    ratings = dict(state.ratings)
    if compiled and kernels.AVAILABLE and new:
        names = sorted(set(_players_of(new)) | set(ratings) | set(fixed))
        index = {p: i for i, p in enumerate(names)}
        values = np.array([ratings.get(p, ELO_START) for p in names])
        is_fixed = np.array([p in fixed for p in names], dtype=np.bool_)
        fixed_values = np.array([fixed.get(p, 0.0) for p in names])
        seats, scores, widths = _seat_arrays(new, index, by_player=False)
        kernels.elo_history(seats, scores, widths, values, is_fixed, fixed_values, float(k))
        played = np.zeros(len(names), dtype=bool)
        played[seats[seats >= 0]] = True
        for i in np.nonzero(played & ~is_fixed)[0]:
            ratings[names[i]] = float(values[i])
        return EloState(ratings, _last_key(new, state.last_key), state.matches + len(new))
    if isinstance(new, RatedTable):
        new = new.outcomes()
    for o in new:
        current = np.array([fixed.get(p, ratings.get(p, ELO_START)) for p in o.players])
        scores = np.array(o.scores)
        n = len(current)
        expected = 1.0 / (1.0 + 10.0 ** ((current[None, :] - current[:, None]) / 400.0))
        actual = np.where(scores[:, None] > scores[None, :], 1.0, np.where(scores[:, None] == scores[None, :], 0.5, 0.0))
        same = np.array(o.players)[:, None] == np.array(o.players)[None, :]  # no duel with oneself
        delta = k / max(n - 1, 1) * np.where(same, 0.0, actual - expected).sum(axis=1)
        for p, d in zip(o.players, delta):
            if p not in fixed:
                ratings[p] = ratings.get(p, ELO_START) + float(d)
    return EloState(ratings, new[-1].key if new else state.last_key, state.matches + len(new))


# -- Plackett-Luce maximum likelihood -----------------------------------------------------


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
class _Design:
    """A history as padded arrays: per match, players in score order and their tie groups."""

    players: list[str]
    order: np.ndarray  # [M, K] player index by position (best first), -1 padding
    valid: np.ndarray  # [M, K] bool
    group_start: np.ndarray  # [M, K] position where each position's tie group starts
    group_size: np.ndarray  # [M, K] size of the group starting here, 0 elsewhere
    widths: np.ndarray  # [M] players in each match


def _design(history: Sequence[Outcome] | RatedTable, rows: np.ndarray | None = None) -> _Design:
    """Each match's players sorted by (score descending, player id), with tie groups; in
    whole-array steps over blocks of `DESIGN_BLOCK` results (one Python pass only to read
    outcomes). `rows`: the results in this order (default: as given), without a copy of
    the history in that order."""
    players = _players_of(history)
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
        seats, scores, _ = _seat_arrays(history.take(rows[a:b]), index, by_player=True)  # by player id first ...
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
    return _Design(players, order, valid, group_start, group_size, widths)


def _negative_log_likelihood(s: np.ndarray, design: _Design, weights: np.ndarray) -> tuple[float, np.ndarray]:
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


def _fit(design: _Design, weights: np.ndarray, fixed: dict[int, float], l2: float, start: np.ndarray | None = None) -> np.ndarray:
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
            nll, grad = _negative_log_likelihood(s, design, weights)
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
        bootstrap (`int`): resamples of whole results (a match, or a whole duplicate set)
            for the intervals (0: none).
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
    rows = None
    if isinstance(history, RatedTable):
        by_id_order = np.argsort(history.ids, kind="stable")
        ids = history.ids[by_id_order]
        if (ids[1:] != ids[:-1]).all():  # unique ids (always, but in a malformed history): the id is the key
            rows = by_id_order
        else:
            history = history.outcomes()
        del ids
    # ALGO LOGIC: order-free. The fit and the bootstrap see the results sorted by their id
    # (match id; set id for a duplicate set), never in start-time or input order: the
    # same set of results gives the same table bit for bit, however its start times or
    # its order change (floating-point sums included).
    if not isinstance(history, RatedTable):
        history = sorted(history, key=by_id)
    design = _design(history, rows)
    fixed = {design.players.index(p): v for p, v in anchors.items() if p in design.players}
    m = len(history)
    initial = None
    if start:
        prior = float(np.mean(list(fixed.values()))) if fixed else 0.0
        initial = np.array([start.get(p, prior) for p in design.players], dtype=np.float64)
    estimate = _fit(design, np.ones(m), fixed, l2, start=initial)
    ranks = np.array(competition_ranks(estimate.tolist()))
    counts = np.bincount(design.order[design.valid], minlength=len(design.players))
    samples = np.empty((bootstrap, len(design.players)))
    # ALGO LOGIC: the bootstrap. Each resample draws m results with replacement from the
    # m results in id order: `integers(0, m, m)` of one seeded generator, counted into
    # weights (a multinomial over that order). Why not Poisson weights keyed by id: this is
    # the classic nonparametric bootstrap (exactly m results a resample), its intervals keep
    # their usual meaning, and anyone reproduces it in two numpy lines; one generator for
    # all resamples, no per-result RNG, so 200 resamples of 100,000 results draw in
    # milliseconds.
    rng = np.random.default_rng(seed)
    workers = max(1, min(workers or os.cpu_count() or 1, bootstrap or 1))

    def resample(weights: np.ndarray) -> np.ndarray:
        return _fit(design, weights, fixed, l2, start=estimate)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        # draws in order, `workers` resamples at a time (bounded memory: one weight vector each)
        for first in range(0, bootstrap, workers):
            batch = [np.bincount(rng.integers(0, m, size=m), minlength=m).astype(np.float64)
                     for _ in range(min(workers, bootstrap - first))]
            for b, sample in enumerate(pool.map(resample, batch), start=first):
                samples[b] = sample
    if bootstrap:
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


__all__ = [
    "ANCHORS",
    "MLERating",
    "Outcome",
    "TrueSkillRating",
    "TrueSkillState",
    "EloState",
    "elo_ratings",
    "extend_trueskill",
    "Played",
    "RatedTable",
    "trueskill_trail",
    "by_id",
    "outcomes",
    "rated",
    "plackett_luce",
    "player_id",
    "trueskill_ratings",
]

