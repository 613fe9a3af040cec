"""Reading a history folder without a lock: the team table, shard by shard, and each match's
replay and logs, loose or in a bundle, here or (by range) on the Hub.

Why reading needs no lock, and how it survives a flush or a compaction running beside it,
is in the package's docstring (`history.store`).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from arena import logs as logs_format
from arena import replay as replay_format
from arena.errors import DamagedFileError, VanishedFileError
from arena.schema import MatchResult, results_from_rows, rows
from history import bundle
from history.store.compaction import CompactionPlan
from history.store.layout import (
    INDEX_CACHE,
    LOGS,
    MATCH_ID,
    REPLAYS,
    SHARD_NAME,
    TEAM_SCHEMA,
    FileKind,
    day_folder,
    dedupe,
    upgraded,
)

log = logging.getLogger(__name__)


class RemoteFiles(Protocol):
    """Where a match's replay and logs are read from when this folder lacks them (a Space
    restored on an empty disk copies none): `history.remote.HubFiles`, the dataset by range."""

    def replay(self, match_id: str, *, started_at: str) -> bytes | None: ...

    def logs(self, match_id: str, *, started_at: str) -> bytes | None: ...

    def has(self, kind: FileKind, match_id: str, *, started_at: str) -> bool: ...


class HistoryReader:
    """Read access to a history folder: the team table, match records, replays.

    Args:
        root (`Path`): the history folder.
        remote (`RemoteFiles`, *optional*): where replays and logs not in this folder are read
            from, by range (`history.remote.HubFiles` of the dataset): a Space restored on an
            empty disk copies no replay (`history.restore`). None: this folder only.
    """

    def __init__(self, root: Path, *, remote: RemoteFiles | None = None):
        # The reader rereads a table that only grows. pyarrow's default allocator (mimalloc)
        # keeps every segment it has used, so a Space's memory grew with each reread (about
        # 170 KB a match in `bench.soak`, flat with the system allocator). One allocator per
        # process: the Space's other pyarrow use is this module's too.
        pa.set_memory_pool(pa.system_memory_pool())
        self.root = Path(root)
        self.data = self.root / "data"
        self.wal = self.root / "wal"
        self.replays = self.root / "replays"
        self.logs_dir = self.root / "logs"
        self.journals = self.root / "compaction"
        self.quarantine_dir = self.root / "quarantine"
        self.damaged: list[str] = []
        """One line per damaged file moved aside, for the operator."""
        self._damage_lock = threading.Lock()
        self._indexes: OrderedDict[tuple[str, int], bundle.BundleIndex] = OrderedDict()
        self._index_lock = threading.Lock()
        self.remote = remote

    # -- damage --------------------------------------------------------------------------
    def quarantine(self, path: Path, why: str) -> None:
        """Move a damaged file into `quarantine/`, and say so in the log and in `damaged`."""
        with self._damage_lock:
            if not path.exists():
                return
            self.quarantine_dir.mkdir(parents=True, exist_ok=True)
            stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
            target = self.quarantine_dir / f"{path.relative_to(self.root).as_posix().replace('/', '__')}.{stamp}"
            try:
                shutil.move(str(path), target)
            except OSError as exc:
                why += f" (could not be moved aside: {exc})"
                target = path
            message = (f"history file {path.relative_to(self.root)} is damaged ({why}); moved to "
                       f"{target.relative_to(self.root)}. Restore it from the Hub dataset if it matters.")
            self.damaged.append(message)
            log.error(message)

    # -- listing -------------------------------------------------------------------------
    @staticmethod
    def walk(folder: Path, suffix: str, *, skip: str | None = None) -> list[Path]:
        """Files ending in `suffix` under `folder` (sorted; hidden files and folders and the
        subfolder `skip` left out)."""
        found: list[Path] = []
        for parent, dirs, files in os.walk(folder):
            dirs[:] = [d for d in dirs if not d.startswith(".") and not (parent == str(folder) and d == skip)]
            found.extend(Path(parent) / f for f in files if f.endswith(suffix) and not f.startswith("."))
        return sorted(found)

    def shards(self) -> list[Path]:
        """Every shard, flat (the layout before day folders) or in a day folder, sorted by name."""
        return sorted(self.walk(self.data, ".parquet"), key=lambda p: p.relative_to(self.data).as_posix())

    def shard_names(self) -> list[str]:
        """The shards' names (paths inside `data/`, as `SHARD_NAME`), sorted."""
        return [p.relative_to(self.data).as_posix() for p in self.shards()]

    def bundles(self, kind: FileKind = REPLAYS) -> list[Path]:
        """The bundles of one kind (replays or logs), newest day first."""
        return sorted(self.walk(self.root / kind.folder, ".bundle", skip="loose"), reverse=True)

    def _wal_entries(self) -> list[Path]:
        return sorted(p for p in self.wal.glob("*.json") if not p.name.startswith("."))

    def signature(self) -> tuple[int, int, float]:
        """Changes whenever the history does: for caching what is computed from it."""
        latest = 0.0
        shards, entries = self.shards(), self._wal_entries()
        for path in shards + entries:
            try:
                latest = max(latest, path.stat().st_mtime)
            except FileNotFoundError:  # flushed or compacted away meanwhile
                continue
        return (len(shards), len(entries), latest)

    # -- the table -----------------------------------------------------------------------
    def read_wal(self) -> list[MatchResult]:
        """The matches recorded and not yet flushed into a shard (damaged entries quarantined)."""
        results = []
        for entry in self._wal_entries():
            try:
                data = entry.read_bytes()
            except FileNotFoundError:
                continue  # flushed into a shard meanwhile: listed below
            try:
                results.append(MatchResult.from_dict(json.loads(data)))
            except (ValueError, KeyError, TypeError) as exc:
                if entry.exists():
                    self.quarantine(entry, f"not a match record: {type(exc).__name__}: {exc}")
        return results

    def read_shard(self, shard: Path) -> pa.Table | None:
        """A shard's rows; None if it is damaged (quarantined).

        Raises:
            `FileNotFoundError`: it vanished (flushed shards are compacted away)."""
        try:
            return upgraded(pq.read_table(shard, schema=TEAM_SCHEMA))
        except FileNotFoundError:
            raise
        except (OSError, pa.ArrowException, ValueError) as exc:
            if not shard.exists():  # vanished while pyarrow read it
                raise VanishedFileError(shard) from exc
            self.quarantine(shard, f"{type(exc).__name__}: {str(exc)[:200]}")
            return None

    def _shard_tables(self, names: Sequence[str] | None = None) -> Iterator[pa.Table]:
        """Each shard's rows as stored (duplicates kept), in the shards' order: the shards
        called `names` (a name with no shard behind it, quarantined or compacted away
        meanwhile, reads as no rows), or with `names` None every shard, each match at least
        once: a shard compacted away while it was listed is made up for by listing again
        (compaction writes before it deletes)."""
        if names is not None:
            for name in names:
                if not SHARD_NAME.fullmatch(name):
                    continue
                try:
                    table = self.read_shard(self.data / name)
                except FileNotFoundError:
                    continue
                if table is not None:
                    yield table
            return
        done: set[Path] = set()
        while True:
            vanished = False
            for shard in self.shards():
                if shard in done:
                    continue
                try:
                    table = self.read_shard(shard)
                except FileNotFoundError:
                    vanished = True
                    continue
                done.add(shard)
                if table is not None:
                    yield table
            if not vanished:
                return

    def table(self) -> pa.Table:
        """Every recorded team row (the WAL's, then the shards'), one per (match, slot).

        The whole history at once: for the few readers of every match as records (reruns,
        benchmarks); the Space reads it incrementally, in columns (`history.index`)."""
        pending = [row for result in self.read_wal() for row in rows(result)]
        parts = list(self._shard_tables())
        if pending:
            parts.append(pa.Table.from_pylist(pending, schema=TEAM_SCHEMA))
        return dedupe(pa.concat_tables(parts)) if parts else TEAM_SCHEMA.empty_table()

    def shard_table(self, names: Sequence[str] | None = None) -> pa.Table:
        """The team rows of the shards called `names` (paths inside `data/`, as
        `shard_names()` gives them; None: every shard), one per (match, slot).

        Never the WAL: the rows of whole shards, as they are (or will be) in the Hub
        dataset. A name with no shard behind it (quarantined, or compacted away meanwhile)
        reads as no rows.
        """
        parts = list(self._shard_tables(names))
        return dedupe(pa.concat_tables(parts)) if parts else TEAM_SCHEMA.empty_table()

    def results(self) -> list[MatchResult]:
        """Every recorded match, in the order ratings apply them (start time, then id)."""
        return results_from_rows(self.table().to_pylist())

    # -- per-match files: loose, or in a bundle ----------------------------------------------
    def loose_file(self, kind: FileKind, match_id: str) -> Path | None:
        """The loose file of a match (this layout's, with or without a writer's id, or the
        flat one's), if there is one."""
        if not MATCH_ID.fullmatch(match_id or ""):
            return None
        for relative in (kind.loose(match_id), kind.flat(match_id)):
            path = self.root / relative
            if path.exists():
                return path
        folder = self.root / kind.folder / "loose" / match_id[:2]
        try:
            names = sorted(os.listdir(folder))
        except FileNotFoundError:
            return None
        for name in names:
            if name.startswith(f"{match_id}.") and name.endswith(kind.suffix) and not name.startswith("."):
                return folder / name
        return None

    def _index(self, path: Path) -> bundle.BundleIndex | None:
        """A bundle's index (cached: bundles never change); None if it vanished."""
        try:
            stat = path.stat()
        except FileNotFoundError:
            return None
        key = (str(path), stat.st_size)
        with self._index_lock:
            if key in self._indexes:
                self._indexes.move_to_end(key)
                return self._indexes[key]
        try:
            with path.open("rb") as f:
                index = bundle.read_index(f)
        except FileNotFoundError:
            return None
        except DamagedFileError as exc:
            self.quarantine(path, f"a bundle whose index cannot be read: {exc}")
            return None
        with self._index_lock:
            self._indexes[key] = index
            while len(self._indexes) > INDEX_CACHE:
                self._indexes.popitem(last=False)
        return index

    def _bundled(self, kind: FileKind, match_id: str, started_at: str | None = None) -> tuple[Path, tuple[int, int]] | None:
        """The bundle holding a match's file, and where in it: the bundles of the day the
        match started first (when `started_at` tells it), then all, newest days first."""
        if not MATCH_ID.fullmatch(match_id or ""):
            return None
        day = day_folder(started_at or "")
        first = self.walk(self.root / kind.folder / day, ".bundle") if day else []

        def candidates() -> Iterator[Path]:
            yield from first
            yield from (p for p in self.bundles(kind) if p not in first)  # listed only if needed

        for path in candidates():
            index = self._index(path)
            span = index.span(match_id) if index is not None else None
            if span is not None:
                return path, span
        return None

    def _read_file(self, kind: FileKind, match_id: str, started_at: str | None = None) -> tuple[bytes, Path, bool] | None:
        """A match's file of one kind: (bytes, where, loose or not); None if none is recorded.
        `started_at` (the match's, if the caller knows it) goes straight to its day's bundles."""
        path = self.loose_file(kind, match_id)
        if path is not None:
            try:
                return path.read_bytes(), path, True
            except FileNotFoundError:
                pass  # bundled meanwhile: the bundle was written before the loose file went
        found = self._bundled(kind, match_id, started_at)
        if found is None:
            return self._remote_file(kind, match_id, started_at)
        path, (start, end) = found
        with path.open("rb") as f:
            f.seek(start)
            data = f.read(end - start)
        if len(data) != end - start:
            raise DamagedFileError(f"bundle {path.relative_to(self.root)} is cut short at match {match_id}")
        return data, path, False

    def _remote_file(self, kind: FileKind, match_id: str, started_at: str | None) -> tuple[bytes, Path, bool] | None:
        """A match's file read from the dataset on the Hub (None without `remote`, without
        the match's start, or when the dataset has none either)."""
        if self.remote is None or not started_at:
            return None
        read = self.remote.replay if kind is REPLAYS else self.remote.logs
        try:
            data = read(match_id, started_at=started_at)
        except Exception as exc:  # noqa: BLE001 - the Hub away: the file reads as absent, and the log says why
            log.warning("the %s of match %s could not be read from the Hub dataset: %s: %s", kind.folder[:-1], match_id,
                        type(exc).__name__, exc)
            return None
        return None if data is None else (data, self.root / kind.loose(match_id), False)

    def _checked(self, kind: FileKind, match_id: str, check: Callable[[bytes], Any],
                 started_at: str | None = None) -> tuple[bytes, Any] | None:
        """A recorded file's bytes and what `check` read of them; None if it is absent. A loose
        file `check` refuses with `DamagedFileError` is quarantined; a bundle is left in place
        (it holds other matches' files), the damage named for the operator."""
        found = self._read_file(kind, match_id, started_at)
        if found is None:
            return None
        data, path, loose = found
        try:
            return data, check(data)
        except DamagedFileError as exc:
            if loose:
                self.quarantine(path, str(exc))
            else:
                message = (f"match {match_id}'s entry in history file {path.relative_to(self.root)} is damaged ({exc}); "
                           "the bundle's other entries still read. Restore it from the Hub dataset if it matters.")
                with self._damage_lock:
                    if message not in self.damaged:
                        self.damaged.append(message)
                log.error(message)
            raise

    # -- replays -------------------------------------------------------------------------
    def replay_path(self, match_id: str) -> Path | None:
        """A match's loose replay file, if it has one (not yet compacted into a bundle)."""
        return self.loose_file(REPLAYS, match_id)

    def has_replay(self, match_id: str) -> bool:
        """Whether a replay was recorded for the match (loose or bundled)."""
        return self.loose_file(REPLAYS, match_id) is not None or self._bundled(REPLAYS, match_id) is not None

    def replays_among(self, matches: Iterable[tuple[str, str]]) -> set[str]:
        """The ids of those of `matches` ((match id, started_at) pairs) with a replay recorded,
        here or in the Hub dataset, without reading one: one listing of the loose replays and
        one look at each day's bundle indexes for all of them, where `replay` looks for each
        in turn (the analytics ask it of every match of a restored history, and most have
        none). A bundled replay is looked for in its day's bundles, where compaction puts it;
        a match whose start names no day, everywhere, as `replay` does.

        Raises:
            Whatever the Hub's client raises when the dataset cannot be listed (the Hub away).
        """
        loose = self._loose_ids(REPLAYS)
        found: set[str] = set()
        by_day: dict[str, list[tuple[str, str]]] = {}
        for match_id, started_at in matches:
            day = day_folder(started_at or "")
            if not MATCH_ID.fullmatch(match_id or ""):
                continue
            if match_id in loose:
                found.add(match_id)
            elif day is None:
                if self._bundled(REPLAYS, match_id) is not None or self._remote_has(match_id, started_at):
                    found.add(match_id)
            else:
                by_day.setdefault(day, []).append((match_id, started_at))
        for day, among in by_day.items():
            indexes = [i for i in map(self._index, self.walk(self.root / REPLAYS.folder / day, ".bundle")) if i is not None]
            for match_id, started_at in among:
                if any(match_id in index for index in indexes) or self._remote_has(match_id, started_at):
                    found.add(match_id)
        return found

    def _loose_ids(self, kind: FileKind) -> set[str]:
        """The ids of the matches with a loose file of `kind` (this layout's and the flat one's)."""
        names = [p.name for p in self.walk(self.root / kind.folder / "loose", kind.suffix)]
        try:
            names += [n for n in os.listdir(self.root / kind.folder) if n.endswith(kind.suffix)]
        except FileNotFoundError:
            pass
        return {n.split(".", 1)[0] for n in names}

    def _remote_has(self, match_id: str, started_at: str) -> bool:
        """Whether the Hub dataset holds the match's replay (False without `remote` or without
        the match's start). The Hub away raises: a match must not read as without a replay
        for good because the Hub did not answer."""
        if self.remote is None or not started_at:
            return False
        return self.remote.has(REPLAYS, match_id, started_at=started_at)

    def replay_bytes(self, match_id: str, *, started_at: str | None = None) -> bytes | None:
        """A match's replay bytes as recorded, unchecked (a bystander's read: nothing is
        quarantined); None if none was recorded."""
        found = self._read_file(REPLAYS, match_id, started_at)
        return None if found is None else found[0]

    def replay(self, match_id: str, *, started_at: str | None = None) -> bytes | None:
        """A match's replay bytes, checked; None if none was recorded. With the match's
        `started_at` a bundled replay is found in its day's bundles at once; without it,
        the bundles are looked through, newest days first (indexes cached).

        Raises:
            `DamagedFileError`: the replay cannot be decoded (a loose one is quarantined).
        """
        read = self._checked(REPLAYS, match_id, replay_format.read, started_at)
        return None if read is None else read[0]

    # -- logs ----------------------------------------------------------------------------
    def logs_path(self, match_id: str) -> Path | None:
        """A match's loose logs file, if it has one (not yet compacted into a bundle)."""
        return self.loose_file(LOGS, match_id)

    def logs(self, match_id: str, *, started_at: str | None = None) -> list[logs_format.TeamLog] | None:
        """The logs of a recorded match's sandboxed teams, checked; None if none were
        recorded (built-in teams have none; matches recorded before logs were kept).

        Raises:
            `DamagedFileError`: the file cannot be decoded, or is another match's (a loose
                one is quarantined).
        """
        def check(data: bytes) -> list[logs_format.TeamLog]:
            recorded_id, teams = logs_format.read(data)
            if recorded_id != match_id:
                raise DamagedFileError(f"these match logs belong to match {recorded_id}, not {match_id}")
            return teams

        read = self._checked(LOGS, match_id, check, started_at)
        return None if read is None else read[1]

    # -- compaction journals -------------------------------------------------------------
    def journal_plans(self) -> list[tuple[Path, CompactionPlan]]:
        """Compactions begun and not finished (their journals), oldest first."""
        found = []
        for path in sorted(self.journals.glob("*.json")) if self.journals.is_dir() else []:
            if path.name.startswith("."):
                continue
            try:
                found.append((path, CompactionPlan.from_dict(json.loads(path.read_bytes()))))
            except FileNotFoundError:
                continue
            except (ValueError, KeyError, TypeError) as exc:
                self.quarantine(path, f"not a compaction journal: {type(exc).__name__}: {exc}")
        return found

    def unpublished(self) -> list[str]:
        """Files written by a compaction not yet published (the pusher leaves them alone:
        the compaction's own commit sends them with the deletion of what they replace)."""
        return [output for _, plan in self.journal_plans() for output in plan.outputs]
