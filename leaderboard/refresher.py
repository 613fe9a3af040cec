"""The leaderboard's view of the history, kept fresh in the background.

Pages must answer in well under a second however long the history is, while ratings
over 100,000 matches take seconds to compute (the bootstrap most of all). So a thread
recomputes `Standings` whenever the history folder changes (cheaply: TrueSkill and Elo
carry forward, the Plackett-Luce bootstrap reruns at most every `mle_every_s`), and
pages read the latest snapshot. The same thread feeds the analytics
(`leaderboard.analytics.AnalyticsKeeper`) the replays of matches it has not read yet,
after the standings, so pages never wait for replays being read.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

from history.store import HistoryReader
from leaderboard.analytics import AnalyticsKeeper
from leaderboard.standings import Standings, compute

log = logging.getLogger(__name__)


class StandingsRefresher:
    """The latest `Standings` of a history store, and the statuses beside them."""

    def __init__(
        self,
        store: HistoryReader,
        *,
        statuses: Callable[[], list[Any]] = list,
        hub_url: str = "https://huggingface.co",
        mle_every_s: float = 60.0,
        bootstrap: int = 200,
        analytics: AnalyticsKeeper | None = None,
    ):
        self.store = store
        self.statuses = statuses
        self.hub_url = hub_url
        self.mle_every_s = mle_every_s
        self.bootstrap = bootstrap
        self._standings: Standings | None = None
        self._signature: Any = None
        self._mle_at = 0.0
        self._mle_signature: Any = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.analytics = analytics if analytics is not None else AnalyticsKeeper(store)
        """Per-policy analytics from the replays (in memory unless given one with a cache)."""
        self._analysed: Any = None

    def refresh(self) -> Standings:
        """Recompute if the history changed since the last call; return the standings."""
        with self._lock:
            signature = self.store.signature()
            now = time.monotonic()
            stale_mle = self._mle_signature != signature and now - self._mle_at >= self.mle_every_s
            if self._standings is None or signature != self._signature or stale_mle:
                refresh_mle = self._standings is None or stale_mle
                rows = self.store.table().to_pandas()
                self._standings = compute(rows, previous=self._standings, refresh_mle=refresh_mle, bootstrap=self.bootstrap)
                self._signature = signature
                if refresh_mle:
                    self._mle_at, self._mle_signature = now, signature
            standings = self._standings
        # analytics: only the new replays are read; a backlog is worked off over the next calls
        if signature != self._analysed or self.analytics.backlog:
            try:
                self.analytics.update(standings.teams)
                self._analysed = signature
            except Exception:  # noqa: BLE001 - the standings are served whatever the analytics do
                log.exception("analytics update failed (retried at the next refresh)")
        return standings

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
