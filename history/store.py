"""The match history on disk: every played match exactly once, readable while it is written
and while it is compacted.

Layout of the history folder (a Hub dataset repo as it stands; `datasets.load_dataset` and
DuckDB read it directly). `D` is a day, `YYYY/MM/DD` (UTC), so that no folder grows past a
few hundred entries however many years the Arena runs:

    README.md                             dataset card, with the `configs:` block for `datasets`
    data/D/teams-<time>-<tag>.parquet     shards as flushed (day D: when): one row per team per match
    data/D/day-<time>-<tag>.parquet       compacted: every match started on day D, in one shard
    replays/loose/<id[:2]>/<id>.<w>.replay one compact replay per match (arena.replay), until compacted
    replays/D/replays-<time>-<tag>.bundle compacted: the replays of matches started on day D (history.bundle)
    logs/loose/<id[:2]>/<id>.<w>.json.gz  the sandboxed teams' stdout and stderr of a match (arena.logs)
    logs/D/logs-<time>-<tag>.bundle       compacted: the logs of matches started on day D
    submissions/statuses.jsonl            the submissions' status log (history.statuses)
    audits/audits.jsonl                   recorded matches rerun by the Space, and the verdicts (history.audits)
    wal/<match id>.json                   local only: matches recorded but not yet in a shard
    compaction/<time>-<tag>.json          local only: a compaction's journal, until it is complete
    quarantine/                           local only: damaged files moved aside

The layout before compaction existed (`data/teams-*.parquet`, `replays/<id>.replay`,
`logs/<id>.json.gz`, all flat) still reads, and the next compaction moves it into this one.

How a match is recorded exactly once, whatever happens (`HistoryStore`):

1. `record()` writes the match's replay and logs (each to a temporary name, fsync,
   rename), then the match to `wal/<match id>.json` the same way: from then on it is
   durable, and a recorded match always has the replay and logs it was recorded with. A match id already known is refused, so a match played
   twice (a restart replays an interrupted plan) is recorded once.
2. `flush()` writes the WAL's matches into one new shard (temporary name, fsync, rename),
   then deletes those WAL files. A crash between the two leaves matches in both places;
   `recover()` at start-up deletes WAL files whose ids are already in a shard, and
   readers also deduplicate by match id. A crash mid-write leaves only a temporary file,
   which `recover()` removes; the WAL still holds the matches.
3. `compact()` (on a schedule: `history.mirror`) replaces the flushed shards and the loose
   replays and logs by one shard and one bundle of each per day, in this order: it writes
   its journal (what it will write, what that replaces), writes the new files, has them
   published (the Hub mirror commits the new files and deletes the replaced ones in ONE
   commit), deletes the replaced files, then the journal. Every match is in the replaced
   files or the new ones (or both) at every moment. Killed before all new files are
   written, its journal is rolled back (the partial new files deleted); killed after, the
   next `compact()` rolls it forward (publishes again, deletes what is left).
4. `history.mirror.HubMirror` pushes the folder to the Hub dataset.

Reading (`HistoryReader`) needs no lock. The leaderboard reads whole shards only
(`shard_table`): the WAL's matches are not yet in the dataset. `table()`, what the
matchmaker plans from, reads the WAL first
and lists the shards after, so a match that a flush moves from the WAL into a new shard
meanwhile is found in one place or the other; a shard that vanishes under the reader
(compacted away) makes it list again, since compaction writes before it deletes; and
duplicates are dropped. A replay or log is looked for loose first, then in the bundles:
a loose file vanishing under the reader was bundled first. Damaged files (a truncated
shard, a corrupt replay or log file) are moved into `quarantine/`, named in the log and in
`damaged` (the UI's operator line), and everything else loads.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from arena import logs as logs_format
from arena import replay as replay_format
from arena.errors import DamagedFileError
from arena.schema import SCHEMA_VERSION, TEAM_COLUMNS, V1_DEFAULTS, MatchResult, results_from_rows, rows
from history import bundle

log = logging.getLogger(__name__)

#: What a match id may look like where it names a file (runner ids are 20 hex digits):
#: a reader given any other string finds nothing, so no request reaches outside the folders.
MATCH_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")

#: What a shard's name may look like where a caller names it: its path inside `data/`,
#: a plain file name (the flat layout) or in a day folder (`2026/12/01/teams-....parquet`),
#: never anything else. Names sort by day, then in the order the day's shards were written.
SHARD_NAME = re.compile(r"(\d{4}/\d{2}/\d{2}/)?[A-Za-z0-9_-][A-Za-z0-9_.-]*\.parquet")

#: The tag that ended the names of files made before writers (`history.writers`).
_LEGACY_TAG = re.compile(r"[0-9a-f]{8}")

#: A day, as the folders name it and as `started_at` begins.
_DAY = re.compile(r"(\d{4})-(\d{2})-(\d{2})")

#: The Arrow form of the history table (`arena.schema.TEAM_COLUMNS`).
TEAM_SCHEMA = pa.schema([pa.field(name, getattr(pa, kind)()) for name, kind in TEAM_COLUMNS])

#: Bundle indexes a reader keeps in memory (about 32 KB each for 1,000 matches).
INDEX_CACHE = 512

#: At most this many flushed shards go into one compaction (migrating a long flat history
#: takes several, each one commit).
MAX_COMPACTED_SHARDS = 2000

_CARD = """---
license: mit
tags:
- nmmo-arena
- neural-mmo
- multi-agent
configs:
- config_name: default
  data_files:
  - split: train
    path: data/**/*.parquet
---
# NMMO Arena match history

Every match played by the NMMO Arena: one row per team per match (16 rows a match), in
parquet shards under `data/`, one folder a day (`data/YYYY/MM/DD/`): shards as the Arena
flushed them, compacted every few hours into one shard of the matches started that day.
Ratings and tables on the Arena are computed from these rows alone, so anyone can
recompute them. Replays are under `replays/`, team logs (what each sandboxed team printed,
capped at 64 KiB a team and match) under `logs/`: one file a match while recent
(`replays/loose/`), then packed into bundles, one folder a day, each bundle starting with
an index (match id -> offset and length) so that one replay is read by range (see
`history/bundle.py` in the NMMO Arena). Submission statuses are under `submissions/`, and
the Arena's audits (recorded matches played again, and whether they reproduced) in
`audits/audits.jsonl`.

```python
from datasets import load_dataset
teams = load_dataset("REPO_ID", split="train").to_pandas()
```

Columns: see "Match record" in the NMMO Arena's docs/history.md (schema version {version}).
"""


def _write_atomically(path: Path, data: bytes | Callable[[Any], None], *, durable: bool = True) -> None:
    """Write to a hidden temporary file, fsync, rename into place, fsync the folder.
    `data` is the bytes, or a function writing them to the open file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            if callable(data):
                data(f)
            else:
                f.write(data)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    if durable:
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


def day_folder(started_at: str) -> str | None:
    """The folder (`YYYY/MM/DD`) of a day; None if `started_at` does not start with one.

    >>> day_folder("2026-12-01T23:59:59+00:00")
    '2026/12/01'
    """
    found = _DAY.match(started_at or "")
    return "/".join(found.groups()) if found else None


@dataclass(frozen=True)
class FileKind:
    """A kind of per-match file: where it lies loose, and how its bundles are named."""

    folder: str
    suffix: str
    prefix: str

    def loose(self, match_id: str, writer: str | None = None) -> str:
        """Where a match's file lies loose: named by the match, then by the writer that
        recorded it (`history.writers`; none: a folder with one writer)."""
        tag = f".{writer}" if writer else ""
        return f"{self.folder}/loose/{match_id[:2]}/{match_id}{tag}{self.suffix}"

    def flat(self, match_id: str) -> str:
        """Where the layout before bundles kept it."""
        return f"{self.folder}/{match_id}{self.suffix}"


REPLAYS = FileKind("replays", ".replay", "replays")
LOGS = FileKind("logs", ".json.gz", "logs")


@dataclass(frozen=True)
class CompactionPlan:
    """One compaction: the files it writes and the files they replace (paths in the
    history folder, `/`-separated), as its journal records them."""

    name: str
    outputs: tuple[str, ...]
    inputs: tuple[str, ...]
    matches: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "outputs": list(self.outputs), "inputs": list(self.inputs), "matches": self.matches}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompactionPlan:
        return cls(str(data["name"]), tuple(map(str, data["outputs"])), tuple(map(str, data["inputs"])),
                   int(data.get("matches", 0)))


#: Makes a compaction's new files public before the files they replace are deleted (the
#: Hub mirror: one commit). Raises to stop the compaction; the next one finishes it.
Publish = Callable[[CompactionPlan], None]


@dataclass
class CompactionReport:
    """What one `compact()` did."""

    plans: list[CompactionPlan] = field(default_factory=list)
    finished: int = 0
    """Compactions killed earlier that this one completed."""

    @property
    def written(self) -> int:
        return sum(len(p.outputs) for p in self.plans)

    @property
    def replaced(self) -> int:
        return sum(len(p.inputs) for p in self.plans)


class HistoryReader:
    """Read access to a history folder: the team table, match records, replays.

    Args:
        root (`Path`): the history folder.
    """

    def __init__(self, root: Path):
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
        self.remote: Any = None
        """Where replays and logs not in this folder are read from, by range (a
        `history.remote.HubFiles` of the dataset): a Space restored on an empty disk copies
        no replay (`history.restore`). None: this folder only."""

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
    def _walk(folder: Path, suffix: str, *, skip: str | None = None) -> list[Path]:
        """Files ending in `suffix` under `folder` (sorted; hidden files and folders and the
        subfolder `skip` left out)."""
        found: list[Path] = []
        for parent, dirs, files in os.walk(folder):
            dirs[:] = [d for d in dirs if not d.startswith(".") and not (parent == str(folder) and d == skip)]
            found.extend(Path(parent) / f for f in files if f.endswith(suffix) and not f.startswith("."))
        return sorted(found)

    def shards(self) -> list[Path]:
        """Every shard, flat (the layout before day folders) or in a day folder, sorted by name."""
        return sorted(self._walk(self.data, ".parquet"), key=lambda p: p.relative_to(self.data).as_posix())

    def shard_names(self) -> list[str]:
        """The shards' names (paths inside `data/`, as `SHARD_NAME`), sorted."""
        return [p.relative_to(self.data).as_posix() for p in self.shards()]

    def bundles(self, kind: FileKind = REPLAYS) -> list[Path]:
        """The bundles of one kind (replays or logs), newest day first."""
        return sorted(self._walk(self.root / kind.folder, ".bundle", skip="loose"), reverse=True)

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
    def _read_wal(self) -> list[MatchResult]:
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

    def _read_shard(self, shard: Path) -> pa.Table | None:
        """A shard's rows; None if it is damaged (quarantined).

        Raises:
            `FileNotFoundError`: it vanished (flushed shards are compacted away)."""
        try:
            return _upgraded(pq.read_table(shard, schema=TEAM_SCHEMA))
        except FileNotFoundError:
            raise
        except (OSError, pa.ArrowException, ValueError) as exc:
            if not shard.exists():  # vanished while pyarrow read it
                raise FileNotFoundError(shard) from exc
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
                    table = self._read_shard(self.data / name)
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
                    table = self._read_shard(shard)
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

        What the matchmaker plans from: it must see a match as soon as it is recorded. The
        leaderboard reads `shard_table` instead, never the WAL."""
        pending = [row for result in self._read_wal() for row in rows(result)]
        parts = list(self._shard_tables())
        if pending:
            parts.append(pa.Table.from_pylist(pending, schema=TEAM_SCHEMA))
        return _dedupe(pa.concat_tables(parts)) if parts else TEAM_SCHEMA.empty_table()

    def shard_table(self, names: Sequence[str] | None = None) -> pa.Table:
        """The team rows of the shards called `names` (paths inside `data/`, as
        `shard_names()` gives them; None: every shard), one per (match, slot).

        Never the WAL: the rows of whole shards, as they are (or will be) in the Hub
        dataset, so that a table computed from them can be recomputed from the dataset.
        A name with no shard behind it (quarantined, or compacted away meanwhile) reads as
        no rows: a caller holding names should check that they still name the shards
        (`leaderboard.refresher` asks for its names again and rereads when they changed).
        """
        parts = list(self._shard_tables(names))
        return _dedupe(pa.concat_tables(parts)) if parts else TEAM_SCHEMA.empty_table()

    def shard_batches(self, names: Sequence[str] | None = None) -> Iterator[pa.Table]:
        """The rows of `shard_table(names)`, one shard at a time, in the shards' order: a
        million matches are 16 million rows, and a reader that folds them shard by shard
        (`leaderboard.standings.compute`) never holds them twice.

        Each batch holds whole matches (a shard is written whole by `flush`, and compacted
        whole): a match already read from an earlier shard is left out of a later one, as
        `shard_table` keeps the first row of each (match, slot).
        """
        seen: set[str] = set()
        for table in self._shard_tables(names):
            table = _dedupe(table)
            ids = pc.unique(table.column("match_id")).to_pylist()
            repeated = [m for m in ids if m in seen]
            if repeated:
                table = table.filter(pc.invert(pc.is_in(table.column("match_id"), value_set=pa.array(repeated))))
            seen.update(ids)
            if table.num_rows:
                yield table

    def results(self) -> list[MatchResult]:
        """Every recorded match, in the order ratings apply them (start time, then id)."""
        return results_from_rows(self.table().to_pylist())

    # -- per-match files: loose, or in a bundle ----------------------------------------------
    def _loose(self, kind: FileKind, match_id: str) -> Path | None:
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
        first = self._walk(self.root / kind.folder / day, ".bundle") if day else []

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
        path = self._loose(kind, match_id)
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
        return self._loose(REPLAYS, match_id)

    def has_replay(self, match_id: str) -> bool:
        """Whether a replay was recorded for the match (loose or bundled)."""
        return self._loose(REPLAYS, match_id) is not None or self._bundled(REPLAYS, match_id) is not None

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
        return self._loose(LOGS, match_id)

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


class HistoryStore(HistoryReader):
    """The history folder, written: record matches durably, move them into shards, compact.

    Args:
        root (`Path`): the history folder.
        clock (`Callable`, *optional*): seconds since the epoch, now (names and day folders
            of new files; `bench.history_growth` runs a simulated one).
        durable (`bool`): fsync every write (False only where durability is not what is
            measured: the benchmark of the folder's growth).
    """

    def __init__(self, root: Path, *, clock: Callable[[], float] = time.time, durable: bool = True,
                 writer: str | None = None, legacy: bool = True):
        super().__init__(root)
        self.clock = clock
        self.durable = durable
        self.writer = writer
        """The writer whose id the new files carry (`history.writers`); None: a random tag,
        and every file counts as this store's own (one writer, as tests and tools use it)."""
        self.legacy = legacy
        """Files named before writers (a random 8-hex tag) are this store's own to compact."""
        for folder in (self.data, self.wal, self.replays, self.logs_dir):
            folder.mkdir(parents=True, exist_ok=True)
        card = self.root / "README.md"
        if not card.exists() or "path: data/*.parquet\n" in card.read_text():  # the flat layout's card
            _write_atomically(card, _CARD.replace("{version}", str(SCHEMA_VERSION)).encode())
        self._lock = threading.Lock()
        self._compacting = threading.Lock()
        self._sharded: set[str] = set()
        self.recover()

    def _write(self, path: Path, data: bytes | Callable[[Any], None]) -> None:
        _write_atomically(path, data, durable=self.durable)

    def _stamp(self) -> tuple[str, str]:
        """(day folder, a name stamp sorting in the order written, ending in this writer's id)
        for a new file, now."""
        now = datetime.fromtimestamp(self.clock(), timezone.utc)
        return now.strftime("%Y/%m/%d"), f"{now.strftime('%Y%m%dT%H%M%S%f')}-{self.writer or secrets.token_hex(4)}"

    def owns(self, name: str) -> bool:
        """Whether the file called `name` (any path whose last part is a shard's or a
        bundle's name) is this writer's: only those does it push, compact or delete."""
        if self.writer is None:
            return True
        tag = name.rsplit("/", 1)[-1].split(".", 1)[0].rsplit("-", 1)[-1]
        return tag == self.writer or (self.legacy and _LEGACY_TAG.fullmatch(tag) is not None)

    def note_shard(self, path: Path) -> int:
        """Take in a shard another writer made (`history.restore` put it in place): its
        matches count as recorded from now on. Returns how many were new."""
        ids = set(pq.read_table(path, columns=["match_id"]).column("match_id").to_pylist())
        with self._lock:
            new = ids - self._sharded
            self._sharded.update(ids)
        return len(new)

    def recover(self) -> None:
        """Start-up repair after a crash: drop temporary files and WAL entries already
        sharded, and loose files of matches never recorded; roll back compactions killed
        before their files were all written; move damaged shards aside."""
        with self._lock:
            for folder in (self.data, self.wal, self.replays, self.logs_dir, self.journals):
                for parent, _dirs, files in os.walk(folder):
                    for name in files:
                        if name.startswith("."):
                            (Path(parent) / name).unlink(missing_ok=True)
            for path, plan in self.journal_plans():
                if not all((self.root / output).exists() for output in plan.outputs):
                    self._roll_back(path, plan)
            self._sharded = set()
            for shard in self.shards():
                try:
                    ids = pq.read_table(shard, columns=["match_id"]).column("match_id").to_pylist()
                except (OSError, pa.ArrowException, ValueError) as exc:
                    self.quarantine(shard, f"{type(exc).__name__}: {str(exc)[:200]}")
                    continue
                self._sharded.update(ids)
            for entry in self._wal_entries():
                if entry.stem in self._sharded:
                    entry.unlink()
            # a record() killed between a match's replay or logs and its WAL entry left files of
            # a match never recorded: nothing would ever compact them away
            waiting = {entry.stem for entry in self._wal_entries()}
            for kind in (REPLAYS, LOGS):
                for path in self._walk(self.root / kind.folder / "loose", kind.suffix):
                    match_id = path.name.split(".", 1)[0]  # <id>[.<writer>]<suffix>
                    if match_id not in self._sharded and match_id not in waiting:
                        path.unlink(missing_ok=True)

    def knows(self, match_id: str) -> bool:
        return match_id in self._sharded or (self.wal / f"{match_id}.json").exists()

    def record(self, result: MatchResult, *, replay: bytes | None = None, logs: bytes | None = None) -> bool:
        """Make a finished match durable, with its replay and its teams' logs (the bytes of
        `arena.replay` and `arena.logs`). Returns False if it was already recorded."""
        if not MATCH_ID.fullmatch(result.match_id):
            raise ValueError(f"match id {result.match_id!r} cannot name a file: use letters, digits, '-' and '_' (at most 64)")
        with self._lock:
            if self.knows(result.match_id):
                return False
            # replay and logs first: a recorded match always has them
            if replay is not None:
                self._write(self.root / REPLAYS.loose(result.match_id, self.writer), replay)
            if logs is not None:
                self._write(self.root / LOGS.loose(result.match_id, self.writer), logs)
            self._write(self.wal / f"{result.match_id}.json", json.dumps(result.to_dict()).encode())
            return True

    def flush(self) -> Path | None:
        """Move every WAL match into one new shard; returns it (None if the WAL was empty)."""
        with self._lock:
            entries = self._wal_entries()
            results = []
            for entry in entries:
                if entry.stem in self._sharded:
                    continue
                try:
                    results.append(MatchResult.from_dict(json.loads(entry.read_bytes())))
                except (ValueError, KeyError, TypeError) as exc:
                    self.quarantine(entry, f"not a match record: {type(exc).__name__}: {exc}")
            shard = None
            if results:
                table = pa.Table.from_pylist([row for result in results for row in rows(result)], schema=TEAM_SCHEMA)
                # in today's folder; names sort in the order shards were written (microseconds, then a random tag)
                day, stamp = self._stamp()
                shard = self.data / day / f"teams-{stamp}.parquet"
                self._write(shard, _parquet(table))
                self._sharded.update(r.match_id for r in results)
            for entry in entries:
                entry.unlink(missing_ok=True)
            return shard

    # -- compaction ----------------------------------------------------------------------
    def compact(self, *, publish: Publish | None = None, max_shards: int = MAX_COMPACTED_SHARDS) -> CompactionReport:
        """Replace the flushed shards, and the loose replays and logs of their matches, by
        one shard, one replay bundle and one log bundle per day the matches started on
        (each day's earlier compacted shard folded in). Finishes first what a compaction
        killed earlier left (`recover` rolled back what it had not finished writing).

        Matches still in the WAL, and their files, wait for a later compaction. Runs
        beside `record` and `flush` (it touches none of their files); one at a time.

        Args:
            publish (`Publish`, *optional*): makes each compaction's new files public before
                the files they replace are deleted (`history.mirror`: one Hub commit).
            max_shards (`int`): flushed shards compacted at most in one go (each go is one
                plan, one journal and one `publish`); the rest is left for the next go.

        Returns:
            `CompactionReport`: the plans carried out.

        Raises:
            Whatever `publish` raises: the compaction stops there, its journal kept; the
                next `compact` finishes it.
        """
        if max_shards < 1:
            raise ValueError(f"max_shards={max_shards}: compact at least one shard at a time")
        report = CompactionReport()
        with self._compacting:
            for path, plan in self.journal_plans():
                if all((self.root / output).exists() for output in plan.outputs):
                    self._carry_out(path, plan, publish)
                    report.finished += 1
                else:
                    self._roll_back(path, plan)
            while True:
                made = self._plan(max_shards)
                if made is None:
                    return report
                plan, writers = made
                journal = self.journals / f"{plan.name}.json"
                self._write(journal, json.dumps(plan.to_dict()).encode())
                if _HOOK:
                    _hook("journal", plan)
                for output, write in writers.items():
                    self._write(self.root / output, write)
                    if _HOOK:
                        _hook("writing", plan)
                self._carry_out(journal, plan, publish)
                report.plans.append(plan)

    def _carry_out(self, journal: Path, plan: CompactionPlan, publish: Publish | None) -> None:
        """The second half of a compaction whose files are all written: publish them,
        delete what they replace, then the journal."""
        if _HOOK:
            _hook("written", plan)
        if publish is not None:
            publish(plan)
        if _HOOK:
            _hook("published", plan)
        for k, replaced in enumerate(plan.inputs):
            (self.root / replaced).unlink(missing_ok=True)
            if _HOOK and k == len(plan.inputs) // 2:
                _hook("deleting", plan)
        journal.unlink(missing_ok=True)

    def _roll_back(self, journal: Path, plan: CompactionPlan) -> None:
        """Undo a compaction killed before its files were all written: nothing it replaces
        was deleted, nothing it wrote was published."""
        for output in plan.outputs:
            (self.root / output).unlink(missing_ok=True)
        journal.unlink(missing_ok=True)
        log.warning("compaction %s was interrupted before its files were written: rolled back", plan.name)

    def _plan(self, max_shards: int) -> tuple[CompactionPlan, dict[str, Callable[[Any], None]]] | None:
        """The next compaction (its plan, and a writer for each new file); None if no
        flushed shard is left."""
        flushed = [p for p in self.shards() if p.name.startswith("teams-") and self.owns(p.name)][:max_shards]
        tables = []
        inputs: list[Path] = []
        for shard in flushed:
            try:
                table = self._read_shard(shard)
            except FileNotFoundError:
                continue
            if table is not None:
                tables.append(table)
                inputs.append(shard)
        if not inputs:
            return None
        new = _dedupe(pa.concat_tables(tables))
        _, stamp = self._stamp()
        starts = new.column("started_at").to_pylist()
        ids = new.column("match_id").to_pylist()
        by_day: dict[str, list[int]] = {}
        fallback = self._stamp()[0]
        for k, started_at in enumerate(starts):
            by_day.setdefault(day_folder(started_at) or fallback, []).append(k)
        writers: dict[str, Callable[[Any], None]] = {}
        matches = 0
        for day, picked in sorted(by_day.items()):
            rows_of_day = new.take(pa.array(picked))
            day_ids = sorted(set(ids[k] for k in picked))
            matches += len(day_ids)
            earlier = [p for p in self._walk(self.data / day, ".parquet") if p.name.startswith("day-") and self.owns(p.name)]
            parts = [rows_of_day]
            for shard in earlier:
                try:
                    table = self._read_shard(shard)
                except FileNotFoundError:
                    continue
                if table is not None:
                    parts.insert(0, table)
                    inputs.append(shard)
            merged = _dedupe(pa.concat_tables(parts))
            merged = merged.sort_by([("started_at", "ascending"), ("match_id", "ascending"), ("slot", "ascending")])
            writers[f"data/{day}/day-{stamp}.parquet"] = _parquet(merged)
            for kind in (REPLAYS, LOGS):
                loose = {m: path for m in day_ids if (path := self._loose(kind, m)) is not None}
                if loose:
                    writers[f"{kind.folder}/{day}/{kind.prefix}-{stamp}.bundle"] = _bundle_writer(loose)
                    inputs.extend(loose.values())
        plan = CompactionPlan(
            name=stamp,
            outputs=tuple(writers),
            inputs=tuple(dict.fromkeys(p.relative_to(self.root).as_posix() for p in inputs)),
            matches=matches,
        )
        return plan, writers


def _parquet(table: pa.Table) -> Callable[[Any], None]:
    def write(f: Any) -> None:
        pq.write_table(table, f, compression="zstd")
    return write


def _bundle_writer(files: dict[str, Path]) -> Callable[[Any], None]:
    """Writes the bundle of `files` (match id -> loose file), reading them one at a time."""
    def write(f: Any) -> None:
        bundle.write(f, {m: path.stat().st_size for m, path in files.items()}, lambda m: files[m].read_bytes())
    return write


#: Test hook (`NMMO_ARENA_COMPACTION_HOOK=stage`): a compaction that reaches `stage`
#: ("journal": journal written; "writing": its first new file written; "written": all of
#: them; "published"; "deleting": half of what they replace deleted) kills its own
#: process there (SIGKILL), as a crash would.
_HOOK = os.environ.get("NMMO_ARENA_COMPACTION_HOOK", "")


def _hook(stage: str, plan: CompactionPlan) -> None:
    if stage == _HOOK:
        log.warning("NMMO_ARENA_COMPACTION_HOOK=%s: killing this process in compaction %s", stage, plan.name)
        os.kill(os.getpid(), 9)


def _upgraded(table: pa.Table) -> pa.Table:
    """A shard written before schema version 2 read as version 2: the columns it lacks
    (read as nulls) take their defaults (`arena.schema.V1_DEFAULTS`)."""
    for name, default in V1_DEFAULTS.items():
        index = table.schema.get_field_index(name)
        column = table.column(index)
        if column.null_count:
            table = table.set_column(index, name, pc.fill_null(column, pa.scalar(default, column.type)))
    return table


def _dedupe(table: pa.Table) -> pa.Table:
    """Keep the first row of each (match_id, slot)."""
    keys = [f"{m}:{s}" for m, s in zip(table.column("match_id").to_pylist(), table.column("slot").to_pylist())]
    if len(set(keys)) == len(keys):
        return table
    seen: set[str] = set()
    keep = []
    for index, key in enumerate(keys):
        if key not in seen:
            seen.add(key)
            keep.append(index)
    return table.take(pa.array(keep))
