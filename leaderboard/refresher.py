"""The leaderboard's view of the history, kept fresh in the background.

Pages must answer in well under a second however long the history is, while ratings
over 100,000 matches take seconds to compute (the bootstrap most of all). So a thread
recomputes `Standings` when the history's shards change, and pages read the latest
snapshot.

One consistent set of matches: the standings are computed from whole shards only, never
from the write-ahead log's matches not yet flushed; with a Hub mirror, from the shards
already pushed to the dataset (`HubMirror.published`), so the table is exactly what anyone
can recompute from the dataset (`examples/recompute_ratings.py`). Every column moves to a
new set of shards together, at most every `mle_every_s` (the bootstrap's cost): TrueSkill
and Elo carry forward, the Plackett-Luce fit and its bootstrap rerun.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Sequence

from history.store import HistoryReader
from leaderboard.standings import Source, Standings, compute

log = logging.getLogger(__name__)

#: The shard names already in the Hub dataset, or None while that cannot be told.
Published = Callable[[], "Sequence[str] | None"]


class StandingsRefresher:
    """The latest `Standings` of a history store, and the statuses beside them.

    Args:
        store (`HistoryReader`): the history.
        statuses: the submissions' statuses, now.
        hub_url (`str`): where repo links point.
        mle_every_s (`float`): the standings move to new shards at most this often.
        bootstrap (`int`): Plackett-Luce bootstrap resamples.
        published (`Callable`, *optional*): the shards already in the Hub dataset
            (`HubMirror.published`); while it returns None (the Hub not reached yet), and
            without it, the standings use every local shard, and say so.
    """

    def __init__(
        self,
        store: HistoryReader,
        *,
        statuses: Callable[[], list[Any]] = list,
        hub_url: str = "https://huggingface.co",
        mle_every_s: float = 60.0,
        bootstrap: int = 200,
        published: Published | None = None,
    ):
        self.store = store
        self.statuses = statuses
        self.hub_url = hub_url
        self.mle_every_s = mle_every_s
        self.bootstrap = bootstrap
        self.published = published
        self._standings: Standings | None = None
        self._computed_at = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def source(self) -> Source:
        """The shards the standings should be computed from now."""
        names = self.published() if self.published is not None else None
        if names is not None:
            return Source(tuple(sorted(names)), published=True)
        return Source(tuple(p.name for p in self.store.shards()), published=False)

    def refresh(self) -> Standings:
        """Recompute if the shards changed since the last computation (and it is at least
        `mle_every_s` old); return the standings."""
        with self._lock:
            source = self.source()
            now = time.monotonic()
            if self._standings is not None and (
                source == self._standings.source or now - self._computed_at < self.mle_every_s
            ):
                return self._standings  # unchanged, or all of it held on the previous shards
            rows = self.store.shard_table(source.shards).to_pandas()
            self._standings = compute(rows, previous=self._standings, bootstrap=self.bootstrap, source=source)
            self._computed_at = now
            return self._standings

    def standings(self) -> Standings:
        """The latest standings (computed now if none were computed yet)."""
        return self._standings if self._standings is not None else self.refresh()

    def run_in_background(self, every_s: float = 5.0) -> threading.Thread:
        def loop() -> None:
            while not self._stop.wait(every_s):
                try:
                    self.refresh()
                except Exception:  # noqa: BLE001 - keep serving the last standings
                    log.exception("leaderboard refresh failed")

        thread = threading.Thread(target=loop, daemon=True, name="leaderboard-refresh")
        thread.start()
        return thread

    def stop(self) -> None:
        self._stop.set()
