"""Pushing the history folder to its Hub dataset, every few minutes, in one commit each.

`huggingface_hub.CommitScheduler` does the pushing: it commits what changed since its
last push (append-only folders, as ours is) and retries a failed push at the next
interval. `HistoryPusher` subclasses it, as its guide invites, only to report each push's
outcome (so the Space's Hub status says when pushes fail, once, instead of a log line per
attempt) and to count what is still waiting. `HubMirror` starts it once the Hub can be
reached, since creating it contacts the Hub.

The pusher also compacts the history (`HistoryStore.compact`), every
`compact_every_minutes`, on its own thread and under its own lock, so that no push runs
meanwhile: a compaction's new files and the deletion of the files they replace go to the
Hub in ONE commit (`CommitOperationAdd`s and `CommitOperationDelete`s; `CommitScheduler`
alone only ever adds), before anything is deleted locally, and `last_uploaded` forgets the
replaced files and records the new ones, so no push sends a replaced file again or a new
one twice. A push never sends the files of a compaction not yet published (after a crash):
the compaction's own commit does. So the dataset holds every match once after every commit.

While the Hub is unreachable nothing is lost: files stay on disk and the next push sends
them (compaction waits for the Hub too: it deletes nothing before its commit). `HubMirror.published()` names the shards the dataset holds, so the leaderboard
can rate exactly what anyone can download. Only the dataset's own files are pushed: the
card, the shards, the replays, the teams' logs, the status, audit and publication journals
and the heartbeat; never the write-ahead log, temporary files or the quarantine.

Several writers may push to one dataset (`history.writers`): each pushes only the files
that carry its own id (`own_patterns`), so no push can replace another writer's file, and
compacts and deletes only its own. Before each push it writes its heartbeat; after each
push it pulls what the other writers pushed (`history.restore.DatasetPull`), so its
tables, its statuses and its view of who leads follow theirs. A compaction's commit names
the head it listed the dataset at (`parent_commit`): if another writer committed
meanwhile, it is listed again on the new head and retried.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from huggingface_hub import CommitOperationAdd, CommitOperationDelete, CommitScheduler, HfApi
from huggingface_hub.errors import HfHubHTTPError
from huggingface_hub.utils import filter_repo_objects

from arena.errors import InvalidArgumentError
from history import views
from history.restore import DatasetPull
from history.store import CompactionPlan, CompactionReport, HistoryReader, HistoryStore
from history.writers import Writers

log = logging.getLogger(__name__)

#: What of the history folder is the dataset.
#: (`fnmatch` patterns: `*` matches `/` too, so `data/*.parquet` is every shard of every day.)
PUSHED = ["README.md", "eval.yaml", "tables/*.parquet", "data/*.parquet", "replays/*.replay", "replays/*.bundle",
          "logs/*.json.gz", "logs/*.bundle", "submissions/*.jsonl", "audits/*.jsonl", "modelcards/*.jsonl", "incidents/*.jsonl", "writers/*.json",
          "fits/*.json"]
NOT_PUSHED = ["**/.*", ".*", "wal/**", "quarantine/**", "compaction/**", "*.damaged.jsonl"]

#: A file named before writers: its tag, 8 hex digits (fnmatch has no repetition).
_LEGACY = "-" + "[0-9a-f]" * 8

#: A runner's match id, 20 hex digits: a loose file named by it alone was made before writers.
_MATCH = "[0-9a-f]" * 20

#: Times a compaction's commit is retried on a new head when another writer committed meanwhile.
COMMIT_RETRIES = 5


def own_patterns(writer: str | None, *, legacy: bool = False) -> list[str]:
    """The files of the dataset that `writer` pushes: those its id names, and the card (which
    it pushes only where the dataset has none: `history.restore` marks the dataset's as
    pushed). With `legacy`, also the files this folder made before writers. With no writer,
    everything (`PUSHED`)."""
    if writer is None:
        return list(PUSHED)
    mine = [f"data/*-{writer}.parquet", f"replays/*-{writer}.bundle", f"logs/*-{writer}.bundle",
            f"replays/loose/*.{writer}.replay", f"logs/loose/*.{writer}.json.gz",
            f"submissions/*-{writer}.jsonl", f"audits/*-{writer}.jsonl", f"modelcards/*-{writer}.jsonl",
            f"incidents/*-{writer}.jsonl", f"tables/*-{writer}.parquet", f"writers/{writer}.json",
            f"fits/fit-{writer}.json", "README.md", "eval.yaml"]
    if legacy:
        mine += [f"data/*{_LEGACY}.parquet", f"replays/*{_LEGACY}.bundle", f"logs/*{_LEGACY}.bundle",
                 f"replays/*{_MATCH}.replay", f"logs/*{_MATCH}.json.gz"]
    return mine

#: Paths asked about in one `get_paths_info` request.
_PATHS_PER_REQUEST = 500

#: Called with None after a push that worked, or with the exception of one that failed.
PushReport = Callable[[BaseException | None], None]


@dataclass(frozen=True)
class Push:
    """One push of this writer's files, as the log and the operator line tell it."""

    at: float
    """When it ended (Unix time)."""
    seconds: float
    files: int = 0
    bytes: int = 0
    commit: str | None = None
    """The commit it made; None when there was nothing new to send, or it failed."""
    error: str = ""
    waiting: int = 0
    """Files left waiting for the next push (a failed push's)."""

    @classmethod
    def sent(cls, seconds: float, paths: list[Path], *, commit: str | None) -> Push:
        size = 0
        for path in paths:
            try:
                size += path.stat().st_size
            except FileNotFoundError:  # compacted away since: counted as nothing
                continue
        return cls(time.time(), seconds, len(paths), size, commit)

    @classmethod
    def failed(cls, seconds: float, exc: BaseException, *, waiting: int) -> Push:
        first = (str(exc).strip().splitlines() or [""])[0]
        return cls(time.time(), seconds, error=f"{type(exc).__name__}: {first}"[:300], waiting=waiting)

    def line(self) -> str:
        """`history push: 12 files, 1.3 MB in 2.1 s, commit 0a1b2c3d4e5f` (or why it failed)."""
        if self.error:
            return (f"history push failed after {self.seconds:.1f} s ({self.waiting} file{'s' if self.waiting != 1 else ''} "
                    f"wait for the next): {self.error}")
        if self.commit is None and not self.files:
            return f"history push: nothing new to send ({self.seconds:.1f} s)"
        return (f"history push: {self.files} file{'s' if self.files != 1 else ''}, {self.bytes / 1e6:.1f} MB in "
                f"{self.seconds:.1f} s, commit {(self.commit or '?')[:12]}")

    def age(self) -> str:
        """When it ended (UTC; a clock time, not an age: the line changes only when a push
        does, so an open page is sent nothing meanwhile), and how it went, for the operator line."""
        when = time.strftime("%H:%M:%S UTC", time.gmtime(self.at))
        return f"last push at {when}: " + ("failed" if self.error else "nothing new" if not self.files else f"{self.files} files")


class HistoryPusher(CommitScheduler):
    """A `CommitScheduler` that reports each push, counts the files it has not pushed,
    knows which shards are in the dataset, and compacts the history on a schedule.

    Args:
        store (`HistoryStore`, *optional*): the history to compact (none: never compacts).
        compact_every_minutes (`float`, *optional*): least minutes between compactions
            (None or 0: never), counted from the last one (kept in `compaction/last`, so a
            restart does not put it off).
        report (`PushReport`, *optional*): told the outcome of each push.
    """

    not_pushed: list[str]
    """What is never pushed: `NOT_PUSHED` and the library's defaults."""

    def __init__(self, *args: Any, report: PushReport | None = None, store: HistoryStore | None = None,
                 compact_every_minutes: float | None = None, writers: Writers | None = None,
                 pull: DatasetPull | None = None, writer: str | None = None, **kwargs: Any):
        self.report = report
        self.writer = writer
        """Whose logs' parquet views this pusher keeps current (`history.views`; None: every log's)."""
        self.store = store
        self.writers = writers
        self.pull = pull
        self.compact_every_minutes = compact_every_minutes
        self.compactions: list[CompactionReport] = []
        """What each compaction did (the latest last)."""
        self.published: tuple[str, ...] | None = None
        """Names of the shards (inside `data/`) in the Hub dataset, sorted, as of the last
        push that worked; None before the first one."""
        self.last_push: Push | None = None
        """The last push tried (None before the first)."""
        # pushes and compactions one at a time (the scheduler's own `lock` covers only a
        # push's listing, and a compaction must not delete a file a push is sending)
        self.exclusive = threading.RLock()
        super().__init__(*args, **kwargs)  # starts the first push

    # -- pushing -------------------------------------------------------------------------
    @property
    def ignore_patterns(self) -> list[str]:
        """What a push leaves out: `not_pushed`, the files of a compaction not yet
        published, which its own commit sends, and loose replays and logs of matches this
        writer does not hold (`HistoryStore.orphans`: another writer recorded them first).
        `CommitScheduler.push_to_hub` reads this after it lists the folder, so a compaction
        begun meanwhile is left out too."""
        if self.store is None:
            return self.not_pushed
        root = self.store.root
        return [*self.not_pushed, *self.store.unpublished(),
                *(path.relative_to(root).as_posix() for path in self.store.orphans(older_than_s=0.0))]

    @ignore_patterns.setter
    def ignore_patterns(self, patterns: list[str]) -> None:  # `CommitScheduler.__init__` sets them
        self.not_pushed = patterns

    def push_to_hub(self) -> Any:
        with self.exclusive:
            started, before = time.monotonic(), dict(self.last_uploaded)
            try:
                if self.writers is not None:
                    self.writers.beat()
                if self.store is not None and (self.store.journal_plans() or self._compaction_due()):
                    self.compact()
                views.refresh(Path(self.folder_path), writer=self.writer)
                info = super().push_to_hub()
            except Exception as exc:
                self.last_push = Push.failed(time.monotonic() - started, exc, waiting=self.pending())
                log.warning("%s", self.last_push.line())
                if self.report is not None:
                    self.report(exc)
                raise
            sent = [path for path, mtime in self.last_uploaded.items() if before.get(path) != mtime]
            self.last_push = Push.sent(time.monotonic() - started, sent, commit=getattr(info, "oid", None))
            log.info("%s", self.last_push.line())
            # The push worked (or had nothing new to send): every file in `last_uploaded` is in
            # the dataset. This runs on the pushing thread, right after the commit updated it.
            self._note_published()
            if self.pull is not None:
                try:
                    pulled = self.pull.run()
                except Exception as exc:
                    if self.report is not None:
                        self.report(exc)
                    raise
                if pulled.marked_pushed:  # a first pull: this writer's files the dataset already held
                    self.mark_pushed(pulled.marked_pushed)
                self._note_published()
            if self.report is not None:
                self.report(None)
            return info

    def mark_pushed(self, paths: list[Path]) -> None:
        """Take `paths` as pushed as they are now (the dataset holds them: `DatasetPull`)."""
        with self.lock:
            for path in paths:
                try:
                    self.last_uploaded[path] = path.stat().st_mtime
                except FileNotFoundError:
                    continue
        self._note_published()

    def _note_published(self) -> None:
        data = Path(self.folder_path) / "data"
        with self.lock:
            own = {path.relative_to(data).as_posix() for path in self.last_uploaded
                   if data in path.parents and path.suffix == ".parquet" and not path.name.startswith(".")}
        foreign = self.pull.foreign if self.pull is not None else frozenset()
        self.published = tuple(sorted(own | foreign))

    def pending(self) -> int:
        """Files of the dataset changed since they were last pushed."""
        folder = Path(self.folder_path)
        paths = {p.relative_to(folder).as_posix(): p for p in folder.glob("**/*") if p.is_file()}
        waiting = 0
        for relative in filter_repo_objects(paths, allow_patterns=self.allow_patterns, ignore_patterns=self.not_pushed):
            try:
                mtime = paths[relative].stat().st_mtime
            except FileNotFoundError:
                continue
            waiting += self.last_uploaded.get(paths[relative]) != mtime
        return waiting

    # -- compacting ----------------------------------------------------------------------
    def _marker(self) -> Path:
        return Path(self.folder_path) / "compaction" / "last"

    def _compaction_due(self) -> bool:
        if not self.compact_every_minutes:
            return False
        marker = self._marker()
        if not marker.exists():  # the clock starts with the first push
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
            return False
        return time.time() - marker.stat().st_mtime >= self.compact_every_minutes * 60

    def compact(self) -> CompactionReport:
        """Compact the history now, each compaction published in one commit (call it on the
        pushing thread, or with no push running: `HubMirror.compact_now`).

        Raises:
            Whatever the Hub raised: the compaction is finished at the next call.
        """
        if self.store is None:
            raise InvalidArgumentError("this pusher was given no store to compact: pass store= (HubMirror does)")
        with self.exclusive:
            report = self.store.compact(publish=self._publish)
            self._marker().parent.mkdir(parents=True, exist_ok=True)
            self._marker().touch()
            self.compactions.append(report)
            if report.plans or report.finished:
                log.info("history compacted: %d files into %d (%d finished from before)", report.replaced,
                         report.written, report.finished)
            return report

    def _publish(self, plan: CompactionPlan) -> None:
        """ONE commit: the compaction's new files, and the deletion of the replaced files the
        dataset holds (asked of the Hub: after a restart `last_uploaded` knows none), made on
        the head they were asked at; retried on the new head when another writer committed."""
        folder = Path(self.folder_path)
        for attempt in range(COMMIT_RETRIES + 1):
            head = self.api.repo_info(self.repo_id, repo_type=self.repo_type, revision=self.revision).sha
            on_hub: set[str] = set()
            for start in range(0, len(plan.inputs), _PATHS_PER_REQUEST):
                chunk = list(plan.inputs[start : start + _PATHS_PER_REQUEST])
                on_hub.update(info.path for info in self.api.get_paths_info(
                    self.repo_id, chunk, repo_type=self.repo_type, revision=head))
            operations: list[Any] = [CommitOperationAdd(path_in_repo=output, path_or_fileobj=folder / output)
                                     for output in plan.outputs]
            operations += [CommitOperationDelete(path_in_repo=path) for path in plan.inputs if path in on_hub]
            if not operations:  # only files never pushed (orphans): nothing to tell the Hub
                break
            try:
                self.api.create_commit(
                    repo_id=self.repo_id, repo_type=self.repo_type, revision=self.revision, operations=operations,
                    commit_message=f"Compact {len(plan.inputs)} files ({plan.matches} matches) into {len(plan.outputs)}",
                    parent_commit=head,
                )
                break
            except HfHubHTTPError as exc:
                if getattr(exc.response, "status_code", None) not in (409, 412) or attempt == COMMIT_RETRIES:
                    raise
                log.info("compaction %s lost a race with another writer's commit: retried on the new head", plan.name)
        with self.lock:
            for output in plan.outputs:
                self.last_uploaded[folder / output] = (folder / output).stat().st_mtime
            for path in plan.inputs:
                self.last_uploaded.pop(folder / path, None)
        self._note_published()


class HubMirror:
    """Keeps a `HistoryPusher` running for one history store's folder. Call `ensure()` periodically:
    it is cheap once started, and starts the pusher as soon as the Hub answers."""

    def __init__(self, store: HistoryReader, *, api: HfApi, repo_id: str, every_minutes: float = 5.0,
                 report: PushReport | None = None, compact_every_minutes: float | None = None,
                 writers: Writers | None = None, pull: DatasetPull | None = None):
        self.store = store
        self.writers = writers
        self.pull = pull
        writer = getattr(store, "writer", None)
        self.allow_patterns = own_patterns(writer, legacy=getattr(store, "legacy", False))
        """What this writer pushes: its own files only."""
        self.compact_every_minutes = compact_every_minutes
        self.root = Path(store.root)
        self.api = api
        self.repo_id = repo_id
        self.every_minutes = every_minutes
        self.report = report
        self.scheduler: HistoryPusher | None = None
        self._marked: list[Path] = []
        self._starting = threading.Lock()

    def mark_pushed(self, paths: list[Path]) -> None:
        """Take `paths` as pushed as they are now (the dataset holds them: `DatasetPull`),
        now or when the pusher starts."""
        self._marked.extend(paths)
        if self.scheduler is not None:
            self.scheduler.mark_pushed(paths)

    def ensure(self) -> bool:
        """Start the pusher if it is not running; False while the Hub is unreachable.

        Safe to call from several threads (the restore and a round both push when the Hub
        returns): one pusher is started, never two over the same folder."""
        if self.scheduler is not None:
            return True
        with self._starting:
            if self.scheduler is not None:
                return True
            try:
                scheduler = HistoryPusher(
                    repo_id=self.repo_id,
                    repo_type="dataset",
                    folder_path=self.root,
                    every=self.every_minutes,
                    allow_patterns=self.allow_patterns,
                    ignore_patterns=NOT_PUSHED,
                    hf_api=self.api,
                    report=self.report,
                    store=self.store if isinstance(self.store, HistoryStore) else None,
                    compact_every_minutes=self.compact_every_minutes,
                    writers=self.writers,
                    pull=self.pull,
                    writer=getattr(self.store, "writer", None),
                )
            except Exception as exc:  # noqa: BLE001 - the Hub is away: try again at the next call
                if self.report is not None:
                    self.report(exc)
                else:
                    log.warning("history push not started: %s: %s", type(exc).__name__, exc)
                return False
            # set before the marks are applied: a `mark_pushed` that saw no pusher extended them first
            self.scheduler = scheduler
            if self._marked:  # (its first push may send some of them again: the Hub keeps an identical file as it is)
                scheduler.mark_pushed(list(self._marked))
        return True

    def published(self) -> tuple[str, ...] | None:
        """Names of the shards already in the Hub dataset (paths inside `data/`, sorted), as
        of the last push that worked since this Space started; None while it cannot tell
        (the Hub not reached yet). A shard quarantined locally since is left out: the
        leaderboard reads the local copies. Shards are never rewritten (compaction writes
        new ones), so a name pushed once is in the dataset with this content until a
        compaction's commit replaces it, which this then says."""
        names = self.scheduler.published if self.scheduler is not None else None
        if names is None:
            return None
        return tuple(name for name in names if (self.store.data / name).exists())

    def last_push(self) -> Push | None:
        """The last push tried since this Space started (None before the first)."""
        return self.scheduler.last_push if self.scheduler is not None else None

    def pending(self) -> int:
        """Files waiting to be pushed (all of the dataset's, before the first push)."""
        if self.scheduler is not None:
            return self.scheduler.pending()
        return sum(1 for _ in filter_repo_objects(
            [p.relative_to(self.root).as_posix() for p in self.root.glob("**/*") if p.is_file()],
            allow_patterns=self.allow_patterns, ignore_patterns=NOT_PUSHED,
        ))

    def push_now(self) -> bool:
        """Push whatever changed, now (waits for it). False if the Hub is unreachable."""
        if not self.ensure():
            return False
        assert self.scheduler is not None  # `ensure` started it
        try:
            self.scheduler.trigger().result()
        except Exception:  # noqa: BLE001 - reported through `report`
            return False
        return True

    def compact_now(self) -> CompactionReport | None:
        """Compact now, on the pushing thread (waits for it). None if the Hub is unreachable
        or the compaction failed (reported through `report`; finished at the next one)."""
        if not self.ensure():
            return None
        scheduler = self.scheduler
        assert scheduler is not None  # `ensure` started it
        try:
            return scheduler.api.run_as_future(scheduler.compact).result()
        except Exception as exc:  # noqa: BLE001 - the Hub failed: the next compaction finishes the job
            if self.report is not None:
                self.report(exc)
            else:
                log.warning("history compaction failed: %s: %s", type(exc).__name__, exc)
            return None

    def stop(self, *, final: bool = False) -> bool:
        """Stop pushing. With `final` (a clean stop of the Space): first compact this writer's
        files (so that no small file of it is left for ever), say in its heartbeat that it
        stopped (another writer may lead at once) and push; returns whether that push worked
        (what it could not send is lost with the disk, unless the disk is kept)."""
        pushed = True
        if final and self.scheduler is not None:
            if self.writers is not None:
                self.writers.beat(stopped=True)
            if self.compact_every_minutes and isinstance(self.store, HistoryStore):
                self.compact_now()
            pushed = self.push_now()
        if self.scheduler is not None:
            self.scheduler.stop()
            self.scheduler = None
        return pushed
