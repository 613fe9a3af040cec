"""Catching up with the history dataset on the Hub: the dataset is the Arena's state, and
the data folder only its cache.

A Space's disk is wiped on every restart, and another writer (the other container of a
rebuild, a second Space) may push to the same dataset. So at start, and after every push,
the Space pulls what the dataset holds and its folder does not (`DatasetPull.run`):

- **shards** of every other writer (`data/**/*.parquet`), one at a time, each into its
  place in the folder as a whole file (downloaded beside it, then renamed), its matches
  counted as recorded at once (`HistoryStore.note_shard`): the matchmaker never plays a
  match the dataset already holds, and the standings fold the shards one at a time as
  they always do. Another writer's shard gone from the dataset (that writer compacted it
  into a new one, pulled in the same round) is removed from the folder;
- **journals** of every other writer: status events, audits, model-card publications,
  matches lost to the platform (`history.journal`), heartbeats (`history.writers`) and published rating fits
  (`leaderboard.standings.fits`), whole files, each replaced when the dataset's copy differs;
- the dataset card, if the dataset has one: the Space then never pushes its own over it.

Replays and team logs are not copied: they stay on the Hub and are read by range when
opened (`HistoryReader.remote`, `history.remote.HubFiles`).

What is never pulled is this writer's own files: it alone writes them. Those the dataset
already holds with the same content are marked as pushed (`HistoryPusher.mark_pushed`), so
a restart on a kept disk sends nothing twice.

Everything is read at one commit of the dataset (its head when the pull starts), so a pull
never mixes two states of it. A pull killed midway (kill -9) leaves whole files only (a
download in progress is under `.restore/`, removed at the next start) and the next pull
goes on from there.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from huggingface_hub import HfApi, RepoFile
from huggingface_hub.errors import EntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError

from history.store import HistoryStore
from history.writers import WRITER_ID, Writers

log = logging.getLogger(__name__)

#: Folders of the dataset that are pulled (replays and logs are read by range instead).
PULLED_FOLDERS = ("data", "submissions", "audits", "modelcards", "incidents", "writers", "fits")

#: Where downloads land before they are renamed into place (hidden: nothing reads or pushes it).
STAGING = ".restore"


def git_blob_id(data: bytes) -> str:
    """The id git (and the Hub's tree) gives a file's content."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class PullProgress:
    """How far the current (or last) pull has got, for the operator line and the tables."""

    repo_id: str
    phase: str = "waiting"
    """`waiting` (not started: the Hub not reached yet), `listing`, `shards`, `journals`, `done`."""
    shards_total: int = 0
    shards_done: int = 0
    bytes_total: int = 0
    bytes_done: int = 0
    matches_done: int = 0
    """Matches taken in so far from other writers' shards."""
    started: float = 0.0
    finished: float = 0.0
    error: str = ""

    @property
    def matches_expected(self) -> int:
        """The matches the pull will have taken in, estimated from the bytes read so far
        (exact once every shard is in)."""
        if self.shards_done >= self.shards_total or not self.bytes_done:
            return self.matches_done
        return max(self.matches_done, round(self.matches_done * self.bytes_total / self.bytes_done))

    def line(self) -> str:
        """`restoring 4,100 of about 10,000 matches from owner/name (3 of 7 shards)`."""
        if self.phase == "waiting":
            why = f": {self.error}" if self.error else ""
            return f"restoring from {self.repo_id}: waiting for the Hub{why}"
        if self.phase == "listing":
            return f"restoring from {self.repo_id}: listing the dataset"
        if self.phase == "shards":
            about = "" if self.shards_done >= self.shards_total else "about "
            return (f"restoring {self.matches_done:,} of {about}{self.matches_expected:,} matches from {self.repo_id} "
                    f"({self.shards_done} of {self.shards_total} shards)")
        if self.phase == "journals":
            return f"restoring the status events, audits and publications from {self.repo_id}"
        return f"restored {self.matches_done:,} matches from {self.repo_id} in {self.finished - self.started:.1f} s"


@dataclass
class PullReport:
    """What one pull did."""

    commit: str = ""
    shards: int = 0
    matches: int = 0
    journals: int = 0
    removed: list[str] = field(default_factory=list)
    marked_pushed: list[Path] = field(default_factory=list)


class DatasetPull:
    """Brings the history folder up to the dataset on the Hub, for one writer.

    Args:
        store (`HistoryStore`): the folder (its `writer` names this writer's files).
        api: the Hub client (`HfApi`).
        repo_id (`str`): the dataset.
        writers (`Writers`): this writer's view of the dataset's writers (caught up after the first pull).
        reload (`Iterable[Callable]`): called after journals changed (the status log's and
            the ledger's `reload`).
    """

    def __init__(self, store: HistoryStore, *, api: HfApi, repo_id: str, writers: Writers,
                 reload: Iterable[Callable[[], Any]] = ()):
        self.store = store
        self.api = api
        self.repo_id = repo_id
        self.writers = writers
        self.reload = list(reload)
        self.progress = PullProgress(repo_id)
        self.done = threading.Event()
        """Set once a first pull has completed (the Space may play from then on)."""
        self.foreign: frozenset[str] = frozenset()
        """Other writers' shards (names inside `data/`) the dataset held at the last pull, all in the folder."""
        self._lock = threading.Lock()
        shutil.rmtree(self.store.root / STAGING, ignore_errors=True)  # a pull killed midway

    def restoring(self) -> bool:
        """Whether the first pull is bringing the dataset in now: readers of the folder wait for
        all of it (`HistoryIndex.ready`) rather than fold it again as each shard arrives."""
        return not self.done.is_set() and self.progress.phase in ("listing", "shards", "journals")

    def run(self) -> PullReport:
        """One pull (one at a time). Raises whatever the Hub raised: nothing half-done is left."""
        with self._lock:
            first = not self.done.is_set()
            if first:
                self.progress = PullProgress(self.repo_id, phase="listing", started=time.time())
            try:
                report = self._pull(self.progress if first else PullProgress(self.repo_id))
            except Exception as exc:
                if first:
                    self.progress.phase, self.progress.error = "waiting", f"{type(exc).__name__}: {exc}"[:300]
                raise
            if first:
                self.progress.phase, self.progress.finished = "done", time.time()
                if report.matches or report.journals:
                    log.info("restored %d matches (%d shards) and %d journal files from %s at %s in %.1f s",
                             report.matches, report.shards, report.journals, self.repo_id, report.commit[:12],
                             self.progress.finished - self.progress.started)
            self.writers.caught_up.set()
            self.done.set()
            return report

    # -- the work ------------------------------------------------------------------------
    def _listing(self) -> tuple[str, dict[str, Remote]]:
        """(head commit, {path: what the dataset holds there}) of the pulled folders; an
        empty listing for a dataset that does not exist yet."""
        try:
            sha = self.api.repo_info(self.repo_id, repo_type="dataset").sha
        except (RepositoryNotFoundError, RevisionNotFoundError):
            return "", {}
        if sha is None:
            return "", {}
        files: dict[str, Remote] = {}
        for folder in (*PULLED_FOLDERS, None):
            try:
                entries = self.api.list_repo_tree(self.repo_id, path_in_repo=folder, recursive=folder is not None,
                                                  repo_type="dataset", revision=sha)
                for entry in entries:
                    if isinstance(entry, RepoFile) and (folder is not None or entry.path == "README.md"):
                        lfs = entry.lfs
                        files[entry.path] = Remote(int(entry.size), str(entry.blob_id), lfs.sha256 if lfs else None)
            except EntryNotFoundError:
                continue
        return sha, files

    def _pull(self, progress: PullProgress) -> PullReport:
        root = self.store.root
        sha, hub = self._listing()
        report = PullReport(commit=sha)
        shards = sorted(p for p in hub if p.startswith("data/") and p.endswith(".parquet") and not _hidden(p))
        mine = [p for p in hub if self._own(p)]
        # a shard is never rewritten (compaction writes new names): one of the right size is the one
        wanted = [p for p in shards if not self._own(p) and not _same(root / p, hub[p], content=False)]
        progress.phase, progress.shards_total = "shards", len(wanted)
        progress.bytes_total = sum(hub[p].size for p in wanted)
        for path in wanted:
            target = root / path
            self._download(path, sha, target)
            added = self.store.note_shard(target)
            report.shards += 1
            report.matches += added
            progress.shards_done += 1
            progress.bytes_done += hub[path].size
            progress.matches_done += added
        # another writer's shard gone from the dataset was compacted into one pulled above
        on_hub = set(shards)
        for local in self.store.shard_names():
            relative = f"data/{local}"
            if relative not in on_hub and not self._own(relative) and sha:
                (root / relative).unlink(missing_ok=True)
                report.removed.append(relative)
        self.foreign = frozenset(p[len("data/"):] for p in shards if not self._own(p) and (root / p).exists())
        progress.phase = "journals"
        for path in sorted(p for p in hub if not p.startswith("data/") and not self._own(p) and not _hidden(p)):
            if path.endswith((".jsonl", ".json", ".md")) and not _same(root / path, hub[path]):
                self._download(path, sha, root / path)
                report.journals += 1
        if report.journals:
            for reload in self.reload:
                reload()
        if progress is self.progress:  # the first pull: what a restart on a kept disk need not push again
            report.marked_pushed = [root / p for p in mine if _same(root / p, hub[p])]
            if "README.md" in hub and not self.store.write_card():  # an older Arena's card is replaced, and pushed
                report.marked_pushed.append(root / "README.md")
        return report

    def _own(self, path: str) -> bool:
        """This writer's file (never pulled: it alone writes it)."""
        name = path.rsplit("/", 1)[-1]
        stem = name.split(".", 1)[0]
        if path.startswith("writers/"):
            return stem == self.writers.writer
        if path.startswith("data/"):
            return self.store.owns(path)
        tag = stem.rsplit("-", 1)[-1]
        return WRITER_ID.fullmatch(tag) is not None and tag == self.writers.writer

    def _download(self, path: str, sha: str, target: Path) -> None:
        """One file of the dataset at `sha` into `target`, whole or not at all."""
        staging = self.store.root / STAGING
        staging.mkdir(parents=True, exist_ok=True)
        got = Path(self.api.hf_hub_download(self.repo_id, path, repo_type="dataset", revision=sha, local_dir=staging))
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(got, "rb") as f:
            os.fsync(f.fileno())
        os.replace(got, target)


def _hidden(path: str) -> bool:
    return any(part.startswith(".") for part in path.split("/"))


@dataclass(frozen=True)
class Remote:
    """A file of the dataset as its tree describes it."""

    size: int
    blob_id: str
    lfs_sha256: str | None = None
    """For a file the Hub keeps in large-file storage: its content's sha256 (its blob id is the pointer's)."""


def _same(local: Path, remote: Remote, *, content: bool = True) -> bool:
    """Whether `local` holds what the dataset's file holds: its size, then (`content`) its
    content's hash."""
    try:
        if local.stat().st_size != remote.size:
            return False
        if not content:
            return True
        data = local.read_bytes()
    except FileNotFoundError:
        return False
    if remote.lfs_sha256:
        return hashlib.sha256(data).hexdigest() == remote.lfs_sha256
    return git_blob_id(data) == remote.blob_id
