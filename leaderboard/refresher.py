"""The leaderboard's view of the history, kept fresh in the background.

Pages must answer in well under a second however long the history is, while ratings
over 100,000 matches take seconds to compute (the bootstrap most of all). So a thread
moves the `Standings` on as the history index (`history.index.HistoryIndex`, shared with
the matchmaker in a Space) folds new matches, and pages read the latest snapshot.

Every match recorded here counts as soon as the index has it (a few seconds after it
ended), before it is flushed into a shard or pushed to the Hub dataset; the PvP tab says
how much of it the dataset holds (`Standings.source`), from which anyone recomputes the
table (`examples/recompute_ratings.py`). TrueSkill and Elo move with every match; the
whole-history columns (the Plackett-Luce fit with its bootstrap, the head to head, the
held-out fit) rerun at most every `mle_every_s` (the bootstrap's cost), and
`Standings.mle_source` names the matches they are of.

Each fit of matches the Hub dataset holds, all of them, is published for the next Space
(`publish_fit`, `leaderboard.standings.fits`), and the first standings take a published fit
of the same PvP results (or of the most shards held) rather than fitting again: a Space
restored on an empty disk shows the same table as the writer as soon as it has read the
shards (on a million matches the fit is more than half of the work). Without one, a long
history's first standings come without their whole-history columns (`Standings.fitting`,
`FIT_LATER_FROM`): its rows are shown at once, and the next refresh fits them.

The same thread then feeds the analytics (`leaderboard.analytics.AnalyticsKeeper`) the
replays of matches it has not read yet, so pages never wait for replays being read. A
second thread measures how much of a result is luck (`arena.luck`) at most every
`luck_every_s`, over the latest `LUCK_MATCHES` matches, never on a page view: the fit
with its bootstrap takes about a minute on two thousand matches.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from arena.errors import NotEnoughMatchesError
from arena.lifecycle import RevisionState
from arena.luck import LuckReport, luck_report
from history.index import HistoryIndex, Snapshot
from history.store import HistoryReader
from leaderboard.analytics import AnalyticsKeeper
from leaderboard.standings import Source, Standings, compute
from leaderboard.standings.fits import PublishedFit, read_fits, results_digest, write_fit
from leaderboard.standings.online import Online, RatedAhead

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

#: PvP results from which a Space's first standings are shown before their whole-history
#: columns (the Plackett-Luce fit, its bootstrap, the head to head, the held-out fit), which
#: the next refresh computes: at 200,000 matches the bootstrap alone is 15-30 s of a
#: restore's wait; below this the fit is a few seconds and comes with the first standings.
FIT_LATER_FROM = 20_000

#: Bootstrap resamples of the luck report (the bench's default is 50).
LUCK_BOOTSTRAP = 20


class StandingsRefresher:
    """The latest `Standings` of a history, and the statuses beside them.

    Args:
        history (`HistoryIndex` or `HistoryReader`): the history's index (a Space's, shared
            with its matchmaker), or a history folder, read through an index of its own.
            While the index waits for a restore (`HistoryIndex.ready`), the standings are
            those of no match, and the first after it are computed at once from all of it.
        statuses: the submissions' statuses, now.
        hub_url (`str`): where repo links point.
        mle_every_s (`float`): the whole-history columns are fitted again at most this often.
        bootstrap (`int`): Plackett-Luce bootstrap resamples.
        published (`Callable`, *optional*): the shards already in the Hub dataset
            (`HubMirror.published`); None (or a function returning None: the Hub not
            reached yet) when that cannot be told, as the PvP tab then says.
        luck_every_s (`float`): seconds between luck reports.
        luck_horizon (`int`, *optional*): only matches of this many ticks count for luck.
        analytics (`AnalyticsKeeper`, *optional*): the per-policy analytics to feed
            (in memory unless given one with a cache).
        publish_fit (`tuple`, *optional*): (path, writer id): where this writer keeps its
            latest Plackett-Luce fit of matches all in the Hub dataset, for the mirror to push
            (`leaderboard.standings.fits.fit_path`); without it, fits are not published.
    """

    def __init__(
        self,
        history: HistoryIndex | HistoryReader,
        *,
        statuses: Callable[[], list[RevisionState]] = list,
        hub_url: str = "https://huggingface.co",
        mle_every_s: float = 60.0,
        bootstrap: int = 200,
        published: Published | None = None,
        luck_every_s: float = LUCK_EVERY_S,
        luck_horizon: int | None = None,
        analytics: AnalyticsKeeper | None = None,
        publish_fit: tuple[Path, str] | None = None,
    ):
        self.index = history if isinstance(history, HistoryIndex) else HistoryIndex(history)
        self.store = self.index.store
        self.statuses = statuses
        self.hub_url = hub_url
        self.mle_every_s = mle_every_s
        self.bootstrap = bootstrap
        self.published = published
        self._standings: Standings | None = None
        self.version = 0
        """Counts the standings computed: a page compares it to skip a refresh with nothing new."""
        self._generation = -1
        """The index's generation the standings are of (-1: none yet, or those of a restore's wait)."""
        self._fitted = -1
        """The index's generation the whole-history columns are of."""
        self._computed_at = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.luck_every_s = luck_every_s
        self.luck_horizon = luck_horizon
        self._luck: LuckReport | str = "The luck figures are being computed from the history."
        self._luck_at: float | None = None
        self._luck_source: Any = None
        self.analytics = analytics if analytics is not None else AnalyticsKeeper(self.store)
        self._analysed: Any = None
        self.publish_fit = publish_fit
        self._published_fit: Source | None = None
        self._ahead: RatedAhead | None = RatedAhead()
        """Rates the matches the index folds while it reads the rest, for the first standings."""
        self.index.follow(self._ahead)

    def source(self, snapshot: Snapshot) -> Source:
        """Which matches `snapshot` holds, and which of its shards the Hub dataset holds."""
        names = self.published() if self.published is not None else None
        published = None if names is None else tuple(s for s in snapshot.shards if s in set(names))
        return Source(snapshot.shards, snapshot.unsharded, published)

    def refresh(self) -> Standings:
        """Move the standings to the matches the index holds now (the whole-history columns
        at most every `mle_every_s`); feed the analytics the new replays; return the standings."""
        with self._lock:
            snapshot = self.index.refresh()
            restoring = self.index.ready is not None and not self.index.ready()
            source = self.source(snapshot)
            now = time.monotonic()
            previous = self._standings
            mle_due = now - self._computed_at >= self.mle_every_s
            if restoring:  # the tables wait for all of it (those of no match meanwhile)
                if previous is None:
                    self._standings = compute(snapshot.folded, bootstrap=0, source=source)
                    self._generation = self._fitted = -1
            elif previous is None or self._generation < 0:
                # the first standings, or the first of a restored history: with a fit a writer
                # published of the same results; else without the whole-history columns, shown
                # at once and fitted at the next refresh (the bootstrap of 200,000 matches is
                # most of a restore's wait)
                self._standings = compute(snapshot.folded, bootstrap=self.bootstrap, source=source,
                                          fits=read_fits(self.store.root),
                                          whole_history=len(snapshot.folded.rated) < FIT_LATER_FROM,
                                          online=self._rated_ahead())
                self._generation = snapshot.generation
                self._fitted = -1 if self._standings.fitting else snapshot.generation
                self._computed_at = -math.inf if self._standings.fitting else now
            elif snapshot.generation != self._generation or (mle_due and self._fitted != snapshot.generation):
                self._standings = compute(snapshot.folded, previous=previous, refresh_mle=mle_due,
                                          bootstrap=self.bootstrap, source=source)
                self._generation = snapshot.generation
                if mle_due:
                    self._fitted, self._computed_at = snapshot.generation, now
            elif source != previous.source:  # the same matches, named again: a push, or a compaction
                fitted = self._fitted == self._generation and not previous.mle_writer
                self._standings = replace(previous, source=source, mle_source=source if fitted else previous.mle_source)
            standings = self._standings
            assert standings is not None  # set by the first branch at the latest
            if standings is not previous:
                self.version += 1
            self._publish(standings)
        # analytics: only the new replays are read; a backlog is worked off over the next calls
        if standings.source != self._analysed or self.analytics.backlog:
            try:
                self.analytics.update(standings.teams)
                self._analysed = standings.source
            except Exception:  # noqa: BLE001 - the standings are served whatever the analytics do
                log.exception("analytics update failed (retried at the next refresh)")
        return standings

    def _rated_ahead(self) -> Online | None:
        """What was rated while the index read the history (`RatedAhead`), for the first
        standings; from then on, the standings carry their ratings forward themselves."""
        ahead, self._ahead = self._ahead, None
        if ahead is None:
            return None
        self.index.unfollow(ahead)
        try:
            return ahead.online()
        finally:
            ahead.close()

    def _publish(self, standings: Standings) -> None:
        """Write this writer's fit if the standings hold a new one of all their matches, and
        the Hub dataset holds every one of those."""
        fitted = standings.mle_source
        if (self.publish_fit is None or standings.mle_writer or not fitted.on_hub or not fitted.shards
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

    def covers(self, shards: Iterable[str]) -> bool:
        """Whether the latest standings hold the matches of every shard of `shards` (names
        inside `data/`): a Space restored on an empty disk says it is restoring until then."""
        standings = self._standings
        return standings is not None and self._generation >= 0 and set(shards) <= set(standings.source.shards)

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

    def run_in_background(self, every_s: float = 1.0) -> threading.Thread:
        """Refresh every `every_s` (a look at the history folder's signature while nothing
        changed: a recorded match reaches the standings within about that) and recompute the
        luck report at most every `luck_every_s`, each in a daemon thread."""
        def luck_loop() -> None:
            while True:
                try:
                    self.refresh_luck()
                except Exception:  # noqa: BLE001 - keep serving the last figures
                    log.exception("luck report failed")
                if self._stop.wait(30.0):
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
        if self._ahead is not None:
            self._ahead.close()
