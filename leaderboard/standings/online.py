"""The online ratings: TrueSkill, Elo and each player's TrueSkill trajectory, applied match by
match in rating order (`Online`), and rated ahead while a history is being folded (`RatedAhead`).

Unlike the whole-history columns (the Plackett-Luce fit, the head to head), these are carried
forward: the standings of more matches extend those of fewer when every new match comes after
the last one rated (`Online.extended`), and are recomputed from nothing otherwise.

A Space's first standings of a long history are mostly TrueSkill's loop (9 s of 200,000
matches on this machine) after the index has folded the shards (as long again, most of it
waiting for the interpreter lock while the app is built). Both compiled loops run without
that lock, so `RatedAhead` rates each batch the index folds as soon as it is folded, on the
other core, and the first standings start from what it has rated: the restored Space's first
page comes the TrueSkill loop's time sooner (`bench/ui_scale.py`, `first_page_s`).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from arena.errors import ArenaError
from arena.ratings import EloState, RatedTable, TrueSkillState, elo_ratings, recomputed, trueskill_trail

log = logging.getLogger(__name__)

#: Ratings kept per player for the "rating over time" plot.
TRAJECTORY_POINTS = 500

Trajectory = Mapping[str, deque[tuple[str, float, float]]]
"""Per player, its last `TRAJECTORY_POINTS` TrueSkill ratings: (start time, mu, sigma)."""


@dataclass(frozen=True)
class Online:
    """TrueSkill, Elo and the trajectories after the first `trueskill.matches` rated results
    of a history (in rating order: start time, then match id)."""

    trueskill: TrueSkillState = field(default_factory=TrueSkillState)
    elo: EloState = field(default_factory=EloState)
    trajectory: Trajectory = field(default_factory=dict)

    def extended(self, rated: RatedTable) -> Online:
        """The online ratings of `rated`, every rated result of a history: these carried
        forward over the results after them if `rated` begins with exactly the results
        these are of, else computed from nothing. Elo runs beside TrueSkill (both loops
        release the interpreter lock: on two cores Elo then costs nothing)."""
        fresh = recomputed(self.trueskill, rated)
        start = TrueSkillState() if fresh else self.trueskill
        trajectory = {} if fresh else _copied(self.trajectory)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="elo") as beside:
            elo_done = beside.submit(elo_ratings, rated, state=None if fresh else self.elo)
            trueskill = _extend_trajectory(rated if fresh else rated.take(rated.after(start.last_key)), start, trajectory)
            return Online(trueskill, elo_done.result(), trajectory)

    def then(self, later: RatedTable) -> Online:
        """These ratings carried forward over `later`, results that all come after the last
        one rated here.

        Raises:
            `ValueError` (`arena.errors.CheckpointOrderError`): a result of `later` is not after
                the last one rated here.
        """
        trajectory = _copied(self.trajectory)
        trueskill = _extend_trajectory(later, self.trueskill, trajectory)
        return Online(trueskill, elo_ratings(later, state=self.elo, extends=True), trajectory)


class RatedAhead:
    """The online ratings of the batches a history index folds (`HistoryIndex.follow`),
    rated in a thread of their own while the index reads the next ones: `online()` waits
    for the last and gives the ratings of them all. The batches that arrive while others are
    rated are rated together, in one call (a call's Python part, the trajectories most of
    all, costs as much for a shard as for the whole history).

    A batch that does not come after the last one rated (a fold begun again after a failure,
    matches that started before others already folded) stops the rating: `online()` is then
    None, and the caller rates the whole history as it would have without this.
    """

    def __init__(self) -> None:
        self._rated: Online | None = Online()
        self._waiting: list[RatedTable] = []
        self._rating = False
        self._closed = False
        self._changed = threading.Condition()

    def __call__(self, batch: RatedTable) -> None:
        """Queue `batch`, the rated results of the batch just folded (the index's follower:
        returns at once)."""
        if not len(batch):
            return
        with self._changed:
            if self._closed:
                return
            self._waiting.append(batch)
            if not self._rating:
                self._rating = True
                threading.Thread(target=self._rate_waiting, daemon=True, name="rated-ahead").start()

    def _rate_waiting(self) -> None:
        while True:
            with self._changed:
                batches, self._waiting = self._waiting, []
                if not batches or self._closed:
                    self._rating = False
                    self._changed.notify_all()
                    return
            self._rate(RatedTable.concat(batches))

    def _rate(self, later: RatedTable) -> None:
        if self._rated is None:
            return
        try:
            self._rated = self._rated.then(later)
        except ArenaError as exc:  # out of order: the caller rates the whole history
            log.info("the history's ratings are computed once it is folded, not ahead: %s", exc)
            self._rated = None
        except Exception:  # noqa: BLE001 - the caller rates the whole history itself: slower, the same figures
            log.exception("rating the history ahead failed; it is rated once folded")
            self._rated = None

    def online(self) -> Online | None:
        """The online ratings of every batch queued, once rated; None if one could not be."""
        with self._changed:
            self._changed.wait_for(lambda: not self._rating)
            return self._rated

    def close(self) -> None:
        """Stop rating (batches still waiting are dropped)."""
        with self._changed:
            self._closed = True
            self._waiting = []


def _copied(trajectory: Trajectory) -> dict[str, deque]:
    return {p: deque(t, maxlen=TRAJECTORY_POINTS) for p, t in trajectory.items()}


def _extend_trajectory(todo: RatedTable, start: TrueSkillState, trajectory: dict[str, deque]) -> TrueSkillState:
    """TrueSkill over `todo` from `start`; each player's new ratings appended to `trajectory`."""
    ts, trail = trueskill_trail(todo, state=start, keep=TRAJECTORY_POINTS)
    started = todo.started
    for player, points in trail.items():
        rows_, mus, sigmas = zip(*points)
        trajectory.setdefault(player, deque(maxlen=TRAJECTORY_POINTS)).extend(
            zip(started[list(rows_)].tolist(), mus, sigmas))
    return ts
