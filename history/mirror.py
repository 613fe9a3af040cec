"""Pushing the history folder to its Hub dataset, every few minutes, in one commit each.

`huggingface_hub.CommitScheduler` does the pushing: it commits what changed since its
last push (append-only folders, as ours is) and retries a failed push at the next
interval. `HistoryPusher` subclasses it, as its guide invites, only to report each push's
outcome (so the Space's Hub status says when pushes fail, once, instead of a log line per
attempt) and to count what is still waiting. `HubMirror` starts it once the Hub can be
reached, since creating it contacts the Hub.

While the Hub is unreachable nothing is lost: files stay on disk and the next push sends
them. `HubMirror.published()` names the shards the dataset holds, so the leaderboard
can rate exactly what anyone can download. Only the dataset's own files are pushed: the
card, the shards, the replays, the teams' logs and the status log and the audit log; never the write-ahead
log, temporary files or the quarantine.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable

from huggingface_hub import CommitScheduler
from huggingface_hub.utils import filter_repo_objects

from history.store import HistoryReader

log = logging.getLogger(__name__)

#: What of the history folder is the dataset.
PUSHED = ["README.md", "data/*.parquet", "replays/*.replay", "logs/*.json.gz", "submissions/statuses.jsonl",
          "audits/audits.jsonl"]
NOT_PUSHED = ["**/.*", ".*", "wal/**", "quarantine/**"]

#: Called with None after a push that worked, or with the exception of one that failed.
PushReport = Callable[[BaseException | None], None]


class HistoryPusher(CommitScheduler):
    """A `CommitScheduler` that reports each push, counts the files it has not pushed, and
    knows which shards are in the dataset."""

    def __init__(self, *args: Any, report: PushReport | None = None, **kwargs: Any):
        self.report = report
        self.published: tuple[str, ...] | None = None
        """Names of the shards (`data/*.parquet`) in the Hub dataset, sorted, as of the
        last push that worked; None before the first one."""
        super().__init__(*args, **kwargs)  # starts the first push

    def push_to_hub(self) -> Any:
        try:
            info = super().push_to_hub()
        except Exception as exc:
            if self.report is not None:
                self.report(exc)
            raise
        # The push worked (or had nothing new to send): every file in `last_uploaded` is in
        # the dataset. This runs on the pushing thread, right after the commit updated it.
        data = Path(self.folder_path) / "data"
        self.published = tuple(sorted(
            path.name for path in self.last_uploaded
            if path.parent == data and path.suffix == ".parquet" and not path.name.startswith(".")
        ))
        if self.report is not None:
            self.report(None)
        return info

    def pending(self) -> int:
        """Files of the dataset changed since they were last pushed."""
        folder = Path(self.folder_path)
        paths = {p.relative_to(folder).as_posix(): p for p in folder.glob("**/*") if p.is_file()}
        waiting = 0
        for relative in filter_repo_objects(paths, allow_patterns=self.allow_patterns, ignore_patterns=self.ignore_patterns):
            try:
                mtime = paths[relative].stat().st_mtime
            except FileNotFoundError:
                continue
            waiting += self.last_uploaded.get(paths[relative]) != mtime
        return waiting


class HubMirror:
    """Keeps a `HistoryPusher` running for one history store's folder. Call `ensure()` periodically:
    it is cheap once started, and starts the pusher as soon as the Hub answers."""

    def __init__(self, store: HistoryReader, *, api: Any, repo_id: str, every_minutes: float = 5.0,
                 report: PushReport | None = None):
        self.store = store
        self.root = Path(store.root)
        self.api = api
        self.repo_id = repo_id
        self.every_minutes = every_minutes
        self.report = report
        self.scheduler: HistoryPusher | None = None

    def ensure(self) -> bool:
        """Start the pusher if it is not running; False while the Hub is unreachable."""
        if self.scheduler is not None:
            return True
        try:
            self.scheduler = HistoryPusher(
                repo_id=self.repo_id,
                repo_type="dataset",
                folder_path=self.root,
                every=self.every_minutes,
                allow_patterns=PUSHED,
                ignore_patterns=NOT_PUSHED,
                hf_api=self.api,
                report=self.report,
            )
        except Exception as exc:  # noqa: BLE001 - the Hub is away: try again at the next call
            if self.report is not None:
                self.report(exc)
            else:
                log.warning("history push not started: %s: %s", type(exc).__name__, exc)
            return False
        return True

    def published(self) -> tuple[str, ...] | None:
        """Names of the shards already in the Hub dataset (`teams-....parquet`, sorted), as
        of the last push that worked since this Space started; None while it cannot tell
        (the Hub not reached yet). A shard quarantined locally since is left out: the
        leaderboard reads the local copies. Shards are never rewritten, so a name pushed
        once is in the dataset with this content."""
        names = self.scheduler.published if self.scheduler is not None else None
        if names is None:
            return None
        return tuple(name for name in names if (self.store.data / name).exists())

    def pending(self) -> int:
        """Files waiting to be pushed (all of the dataset's, before the first push)."""
        if self.scheduler is not None:
            return self.scheduler.pending()
        return sum(1 for _ in filter_repo_objects(
            [p.relative_to(self.root).as_posix() for p in self.root.glob("**/*") if p.is_file()],
            allow_patterns=PUSHED, ignore_patterns=NOT_PUSHED,
        ))

    def push_now(self) -> bool:
        """Push whatever changed, now (waits for it). False if the Hub is unreachable."""
        if not self.ensure():
            return False
        try:
            self.scheduler.trigger().result()
        except Exception:  # noqa: BLE001 - reported through `report`
            return False
        return True

    def stop(self) -> None:
        if self.scheduler is not None:
            self.scheduler.stop()
            self.scheduler = None
