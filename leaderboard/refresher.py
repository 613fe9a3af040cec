"""The leaderboard's view of the history, kept fresh in the background.

Pages must answer in well under a second however long the history is, while ratings
over 100,000 matches take seconds to compute (the bootstrap most of all). So a thread
recomputes `Standings` when the history's shards change, and pages read the latest
snapshot.

One consistent set of matches: the standings are computed from whole shards only, never
from the write-ahead log's matches not yet flushed; with a Hub mirror, from the shards
already pushed to the dataset (`HubMirror.published`), so the table is exactly what anyone
can recompute from the dataset (`examples/recompute_ratings.py`). When shards are only
added, the standings move to them at once from the new shards' rows alone
(`leaderboard.standings.update`: TrueSkill and Elo carried forward, per-policy sums merged,
match summaries appended); the whole-history columns (the Plackett-Luce fit with its
bootstrap, the head to head, the held-out fit) rerun at most every `mle_every_s` (the
bootstrap's cost), and `Standings.mle_source` names the shards they are of. When a shard
read before is gone (a compaction replaced it) or the new rows are not whole new matches
after the rated ones, everything is computed again from every shard.

Each fit of published shards is published for the next Space (`publish_fit`,
`leaderboard.standings.fits`), and the first standings take a published fit of the same
PvP results (or of the most shards held) rather than fitting again: a Space restored on an empty disk shows the same
table as the writer as soon as it has read the shards (on a million matches the fit is more
than half of the work).

The same thread then feeds the analytics (`leaderboard.analytics.AnalyticsKeeper`) the
replays of matches it has not read yet, so pages never wait for replays being read. A
second thread measures how much of a result is luck (`arena.luck`) at most every
`luck_every_s`, over the latest `LUCK_MATCHES` matches, never on a page view: the fit
with its bootstrap takes about a minute on two thousand matches.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from arena.errors import NotEnoughMatchesError
from arena.luck import LuckReport, luck_report
from history.store import HistoryReader
from leaderboard.analytics import AnalyticsKeeper
from leaderboard.standings import HistoryChangedError, Source, Standings, compute, frames, update
from leaderboard.standings.fits import PublishedFit, read_fits, results_digest, write_fit

log = logging.getLogger(__name__)

#: The shard names already in the Hub dataset, or None while that cannot be told.
Published = Callable[[], "Sequence[str] | None"]

#: Seconds between luck reports (the fit and its bootstrap are the refresher's costliest work).
LUCK_EVERY_S = 900.0

#: The luck report reads at most this many of the latest usable matches: a bounded cost
#: however long the history grows, and enough for seat effects of a tenth of a rating unit ...
LUCK_MATCHES = 2000

#: ... looked for among this many of the latest matches (by start): a bounded read of the
#: rows however long the history grows (a copy of all of them, 16 million at a million
#: matches, cost gigabytes); older matches, and those without spawn points or of another
#: horizon, are not looked at.
LUCK_CANDIDATES = 4 * LUCK_MATCHES

#: Bootstrap resamples of the luck report (the bench's default is 50).
LUCK_BOOTSTRAP = 20


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
        luck_every_s (`float`): seconds between luck reports.
        luck_horizon (`int`, *optional*): only matches of this many ticks count for luck.
        analytics (`AnalyticsKeeper`, *optional*): the per-policy analytics to feed
            (in memory unless given one with a cache).
        ready (`Callable`, *optional*): False while the history folder is being restored
            from the dataset (`history.restore`): the standings then wait for the whole of
            it, computed once, rather than again and again as its shards arrive.
        publish_fit (`tuple`, *optional*): (path, writer id): where this writer keeps its
            latest Plackett-Luce fit of published shards, for the mirror to push
            (`leaderboard.standings.fits.fit_path`); without it, fits are not published.
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
        luck_every_s: float = LUCK_EVERY_S,
        luck_horizon: int | None = None,
        analytics: AnalyticsKeeper | None = None,
        ready: Callable[[], bool] | None = None,
        publish_fit: tuple[Path, str] | None = None,
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
        self.luck_every_s = luck_every_s
        self.luck_horizon = luck_horizon
        self._luck: LuckReport | str = "The luck figures are being computed from the history."
        self._luck_at: float | None = None
        self._luck_source: Any = None
        self.analytics = analytics if analytics is not None else AnalyticsKeeper(store)
        self._analysed: Any = None
        self.ready = ready
        self._waited = False
        self.publish_fit = publish_fit
        self._published_fit: Source | None = None

    def source(self) -> Source:
        """The shards the standings should be computed from now."""
        names = self.published() if self.published is not None else None
        if names is not None:
            return Source(tuple(sorted(names)), published=True)
        return Source(tuple(self.store.shard_names()), published=False)

    def refresh(self) -> Standings:
        """Move the standings to the shards now (from only the new shards' rows when shards
        were only added; the whole-history columns at most every `mle_every_s`); feed the
        analytics the new replays; return the standings."""
        with self._lock:
            if self.ready is not None and not self.ready():  # restoring: the tables wait for all of it
                self._waited = True
                if self._standings is None:
                    self._standings = compute(iter(()), bootstrap=0, source=Source(published=False))
                return self._standings
            source = self.source()
            now = time.monotonic()
            previous = self._standings
            # the first standings of a restored history are computed whole, at once (folding a
            # million restored matches into the empty standings as an update took 1.7 times as long)
            mle_due = now - self._computed_at >= self.mle_every_s
            if previous is None or self._waited:
                self._waited = False
                fits = read_fits(self.store.root)
                self._standings = self._recompute(source, None, refresh_mle=True, fits=fits)
                self._computed_at = now
            elif source != previous.source or (mle_due and previous.mle_source != previous.source):
                standings = self._extend(previous, source, refresh_mle=mle_due)
                if standings is None:  # a shard read before is gone, or the rows are not new matches
                    standings = self._recompute(source, previous, refresh_mle=mle_due)
                self._standings = standings
                if mle_due:
                    self._computed_at = now
            standings = self._standings
            assert standings is not None  # set by both branches above
            self._publish(standings)
        # analytics: only the new replays are read; a backlog is worked off over the next calls
        if standings.source != self._analysed or self.analytics.backlog:
            try:
                self.analytics.update(standings.teams)
                self._analysed = standings.source
            except Exception:  # noqa: BLE001 - the standings are served whatever the analytics do
                log.exception("analytics update failed (retried at the next refresh)")
        return standings

    def _publish(self, standings: Standings) -> None:
        """Write this writer's fit if the standings hold a new one of all their shards, and
        those are published."""
        fitted = standings.mle_source
        if (self.publish_fit is None or standings.mle_writer or not fitted.published or not fitted.shards
                or fitted != standings.source or fitted == self._published_fit):
            return
        path, writer = self.publish_fit
        try:
            write_fit(path, PublishedFit(shards=fitted.shards, bootstrap=self.bootstrap, mle=standings.mle,
                                         writer=writer, results=len(standings.rated),
                                         digest=results_digest(standings.rated)))
            self._published_fit = fitted
        except OSError:  # only a shortcut for the next Space: the standings are served regardless
            log.exception("the Plackett-Luce fit could not be written to %s", path)

    def _recompute(self, source: Source, previous: Standings | None, *, refresh_mle: bool,
                   fits: list[PublishedFit] | None = None) -> Standings:
        """Every shard of `source` read again, one at a time (never a frame of every row), and
        again by their new names if a compaction replaced shards while they were read. With
        `fits` (published fits), one of them rather than a fit here if one qualifies."""
        for _ in range(3):
            standings = compute(frames(self.store.shard_batches(source.shards)), previous=previous,
                                refresh_mle=refresh_mle or previous is None, bootstrap=self.bootstrap, source=source,
                                fits=fits or ())
            again = self.source()
            # only a shard gone meanwhile (compacted away) spoils what was read; shards added
            # meanwhile are the next refresh's to add
            if set(source.shards) <= set(again.shards) and again.published == source.published:
                break
            source = again
        return standings

    def _extend(self, previous: Standings, source: Source, *, refresh_mle: bool) -> Standings | None:
        """`update` with the rows of the shards added since `previous`, or None when the
        shards did not only grow (then every shard is read again)."""
        known = previous.source.shards
        if source.shards[:len(known)] != known or source.published != previous.source.published:
            return None
        added = source.shards[len(known):]
        try:
            batches = list(frames(self.store.shard_batches(added)))
        except (FileNotFoundError, OSError):  # compacted away while read: read every shard
            return None
        if self.source() != source:
            return None
        try:
            return update(previous, batches, refresh_mle=refresh_mle, bootstrap=self.bootstrap, source=source)
        except HistoryChangedError as exc:
            log.info("standings recomputed from every shard: %s", exc)
            return None

    def covers(self, shards: Iterable[str]) -> bool:
        """Whether the latest standings were computed from every shard of `shards` (names
        inside `data/`): a Space restored on an empty disk says it is restoring until then."""
        standings = self._standings
        return standings is not None and set(shards) <= set(standings.source.shards)

    def standings(self) -> Standings:
        """The latest standings (computed now if none were computed yet)."""
        return self._standings if self._standings is not None else self.refresh()

    def luck(self) -> LuckReport | str:
        """The latest luck report, or why there is none yet (never computed here)."""
        return self._luck

    def refresh_luck(self, *, force: bool = False) -> LuckReport | str:
        """Recompute the luck report if the standings moved and `luck_every_s` has passed
        (or there is no report yet), or if `force`; outside the standings' lock, so pages
        keep updating meanwhile."""
        now = time.monotonic()
        standings = self.standings()
        # a Space without enough matches yet tries again as soon as the standings move (cheap
        # while the history is short), not a quarter of an hour later
        due = self._luck_at is None or now - self._luck_at >= self.luck_every_s or isinstance(self._luck, str)
        if not force and (not due or self._luck_source == standings.source):
            return self._luck
        self._luck_at, self._luck_source = now, standings.source
        try:
            recent = standings.match_summary["Match"].head(LUCK_CANDIDATES)  # newest first
            rows = standings.teams.where(lambda chunk: chunk["match_id"].isin(recent).to_numpy())
            self._luck = luck_report(rows, horizon=self.luck_horizon, latest=LUCK_MATCHES,
                                     bootstrap=LUCK_BOOTSTRAP)
        except NotEnoughMatchesError as exc:
            self._luck = str(exc)
        return self._luck

    def run_in_background(self, every_s: float = 5.0) -> threading.Thread:
        def luck_loop() -> None:
            while True:
                try:
                    self.refresh_luck()
                except Exception:  # noqa: BLE001 - keep serving the last figures
                    log.exception("luck report failed")
                if self._stop.wait(max(every_s, 30.0)):
                    return

        # its own thread: a luck report takes a minute, the standings must not wait for it
        threading.Thread(target=luck_loop, daemon=True, name="leaderboard-luck").start()

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
