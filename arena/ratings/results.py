"""What the rating engines read: rated results (`Outcome`), as objects or as a columnar
`RatedTable`, and the padded seat arrays the compiled kernels take."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from arena.errors import CheckpointOrderError
from arena.revision import player_id
from arena.schema import MatchResult
from arena.scoring import competition_ranks


@dataclass(frozen=True)
class Outcome:
    """One rated result as the rating engines see it: one PvP match.

    Every match is rated on its own, those of a duplicate set recorded before sets were
    retired (2026-12-03) too: their `set_id` no longer groups them (docs/history.md)."""

    key: tuple[str, str]
    """(start time, match id): the order online engines apply matches in."""
    players: tuple[str, ...]
    scores: tuple[float, ...]
    """Each seat's Achievement."""

    def ranks(self) -> list[int]:
        """1 for the best score; equal scores share a rank."""
        return competition_ranks(self.scores)


def by_id(outcome: Outcome) -> tuple:
    """The order-free sort key of a rated result: its id (the match id), then its
    content (ids are unique; the rest only settles a malformed history deterministically)."""
    return (outcome.key[1], outcome.players, outcome.scores, outcome.key[0])


@dataclass(frozen=True)
class RatedTable:
    """Rated results as columns: the same results as a list of `Outcome`s in rating order,
    without a Python object per result (what the standings build from the history's rows,
    `history.index.rated_table`). Every rating engine takes either form.
    """

    names: tuple[str, ...]
    """The players, sorted by id; `seats` index into them."""
    started: np.ndarray
    """[M] each result's start time (`Outcome.key[0]`), object array of str."""
    ids: np.ndarray
    """[M] each result's id (`Outcome.key[1]`): the match id."""
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
        head = len(parts[0])
        if len(table) - head <= head and _in_rating_order(table.started[:head], table.ids[:head]):
            # a few results folded onto many (`history.index`): merged into place, not all sorted again
            return table.take(_merged_order(table.started, table.ids, head))
        return table.take(_rating_order(table.started, table.ids))

    @classmethod
    def of(cls, history: Sequence[Outcome] | RatedTable) -> RatedTable:
        """`history` as a table (itself if it is one)."""
        if isinstance(history, RatedTable):
            return history
        names = tuple(sorted({p for o in history for p in o.players}))
        index = {p: i for i, p in enumerate(names)}
        seats, scores, widths = seat_arrays(history, index, by_player=False)
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


def _rating_order(started: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The stable order of the keys (start, id), through sorted codes (np.lexsort takes no objects)."""
    return np.lexsort((np.unique(ids, return_inverse=True)[1], np.unique(started, return_inverse=True)[1]))


def _merged_order(started: np.ndarray, ids: np.ndarray, head: int) -> np.ndarray:
    """`_rating_order` of the keys when the first `head` are in rating order already: the
    rest sorted alone and each placed by binary search, after the equal keys before it (as
    the stable sort would), in O(rest x log(head)) comparisons rather than a sort of all."""
    tail = head + _rating_order(started[head:], ids[head:])
    first, last = np.searchsorted(started[:head], started[tail], side="left"), np.searchsorted(started[:head], started[tail], side="right")
    place = first.copy()
    for k in np.flatnonzero(last > first):  # the same start time: by id among those
        place[k] += np.searchsorted(ids[first[k]:last[k]], ids[tail[k]], side="right")
    return np.insert(np.arange(head), place, tail)


def players_of(history: Sequence[Outcome] | RatedTable) -> list[str]:
    """The players who played in `history`, sorted by id."""
    if isinstance(history, RatedTable):
        used = np.unique(history.seats[history.seats >= 0])
        return [history.names[i] for i in used]
    return sorted({p for o in history for p in o.players})


def last_key(history: Sequence[Outcome] | RatedTable, default: tuple[str, str]) -> tuple[str, str]:
    if not len(history):
        return default
    return history.key(len(history) - 1) if isinstance(history, RatedTable) else history[-1].key


def outcomes(results: Iterable[MatchResult], *, tracks: Sequence[str] = ("pvp",)) -> list[Outcome]:
    """The rated results of `tracks`, one per match, in rating order (start time, then match id)."""
    return sorted(
        (Outcome((r.started_at, r.match_id), tuple(player_id(t.policy_id, t.revision) for t in r.teams),
                 tuple(t.achievement for t in r.teams))
         for r in results if r.track in tracks),
        key=lambda o: o.key,
    )




#: Results sorted at a time where a whole history's seats are rearranged (`seat_arrays`,
#: `design`): the sorts' temporaries stay a few MB however long the history (a million
#: results at once took a gigabyte more than the arrays kept).
DESIGN_BLOCK = 1 << 16


def seat_arrays(history: Sequence[Outcome] | RatedTable, index: Mapping[str, int], *, by_player: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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


def check_after(history: Sequence[Outcome] | RatedTable, last: tuple[str, str]) -> None:
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
            raise CheckpointOrderError(
                f"Match {history.ids[row]} is not after the checkpoint's last match {before[1]}: recompute from scratch."
            )
        return
    for outcome in history:
        if outcome.key <= last:
            raise CheckpointOrderError(
                f"Match {outcome.key[1]} is not after the checkpoint's last match {last[1]}: recompute from scratch."
            )
        last = outcome.key


def results_after(history: Sequence[Outcome] | RatedTable, key: tuple[str, str]) -> Sequence[Outcome] | RatedTable:
    """The results of `history` after `key`, in the same form."""
    if isinstance(history, RatedTable):
        later = history.after(key)
        return history if later.all() else history.take(later)  # (from scratch: no copy of every result)
    return [o for o in history if o.key > key]
