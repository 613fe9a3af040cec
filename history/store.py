"""The match history on disk: every played match exactly once, readable while it is written.

Layout of the history folder (a Hub dataset repo as it stands; `datasets.load_dataset` and
DuckDB read it directly):

    README.md                       dataset card, with the `configs:` block for `datasets`
    data/teams-<time>-<id>.parquet  append-only shards: one row per team per match (arena.schema)
    replays/<match id>.replay       one compact replay per match (arena.replay)
    logs/<match id>.json.gz         the sandboxed teams' stdout and stderr of a match (arena.logs)
    submissions/statuses.jsonl      the submissions' status log (history.statuses)
    audits/audits.jsonl             recorded matches rerun by the Space, and the verdicts (history.audits)
    wal/<match id>.json             local only: matches recorded but not yet in a shard
    quarantine/                     local only: damaged files moved aside

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
3. `history.mirror.HubMirror` pushes the folder to the Hub dataset.

Reading (`HistoryReader`) needs no lock. The leaderboard reads whole shards only
(`shard_table`): the WAL's matches are not yet in the dataset. `table()`, what the
matchmaker plans from, reads the WAL first
and lists the shards after, so a match that a flush moves from the WAL into a new shard
meanwhile is found in one place or the other (entries vanishing under the reader are
skipped), and duplicates are dropped. Damaged files (a truncated shard, a corrupt replay
or log file) are moved into `quarantine/`, named in the log and in `damaged` (the UI's operator line),
and everything else loads.
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
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from arena import logs as logs_format
from arena import replay as replay_format
from arena.errors import DamagedFileError
from arena.schema import SCHEMA_VERSION, TEAM_COLUMNS, V1_DEFAULTS, MatchResult, results_from_rows, rows

log = logging.getLogger(__name__)

#: What a match id may look like where it names a file (runner ids are 20 hex digits):
#: a reader given any other string finds nothing, so no request reaches outside the folders.
MATCH_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")

#: What a shard's file name may look like where a caller names it: a plain file name in
#: `data/` (`HistoryStore.flush` writes `teams-<time>-<id>.parquet`, names sorting in the
#: order shards were written), never a path.
SHARD_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*\.parquet")

#: The Arrow form of the history table (`arena.schema.TEAM_COLUMNS`).
TEAM_SCHEMA = pa.schema([pa.field(name, getattr(pa, kind)()) for name, kind in TEAM_COLUMNS])

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
    path: data/*.parquet
---
# NMMO Arena match history

Every match played by the NMMO Arena: one row per team per match (16 rows a match), in
append-only parquet shards under `data/`. Ratings and tables on the Arena are computed
from these rows alone, so anyone can recompute them. Replays are under `replays/`,
team logs (what each sandboxed team printed, capped at 64 KiB a team and match) under
`logs/`, submission statuses under `submissions/`, and the Arena's audits (recorded
matches played again, and whether they reproduced) in `audits/audits.jsonl`.

```python
from datasets import load_dataset
teams = load_dataset("REPO_ID", split="train").to_pandas()
```

Columns: see "Match record" in the NMMO Arena README (schema version {version}).
"""


def _write_atomically(path: Path, data: bytes) -> None:
    """Write to a hidden temporary file, fsync, rename into place, fsync the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


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
        self.quarantine_dir = self.root / "quarantine"
        self.damaged: list[str] = []
        """One line per damaged file moved aside, for the operator."""
        self._damage_lock = threading.Lock()

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

    # -- the table -----------------------------------------------------------------------
    def shards(self) -> list[Path]:
        return sorted(p for p in self.data.glob("*.parquet") if not p.name.startswith("."))

    def _wal_entries(self) -> list[Path]:
        return sorted(p for p in self.wal.glob("*.json") if not p.name.startswith("."))

    def signature(self) -> tuple[int, int, float]:
        """Changes whenever the history does: for caching what is computed from it."""
        latest = 0.0
        files = self.shards() + self._wal_entries()
        for path in files:
            try:
                latest = max(latest, path.stat().st_mtime)
            except FileNotFoundError:  # flushed away meanwhile
                continue
        return (len(self.shards()), len(self._wal_entries()), latest)

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
        try:
            return _upgraded(pq.read_table(shard, schema=TEAM_SCHEMA))
        except FileNotFoundError:
            return None
        except (OSError, pa.ArrowException, ValueError) as exc:
            self.quarantine(shard, f"{type(exc).__name__}: {str(exc)[:200]}")
            return None

    def table(self) -> pa.Table:
        """Every recorded team row (the WAL's, then the shards'), one per (match, slot).

        What the matchmaker plans from: it must see a match as soon as it is recorded. The
        leaderboard reads `shard_table` instead, never the WAL."""
        pending = [row for result in self._read_wal() for row in rows(result)]
        parts = self._shard_parts(self.shards())
        if pending:
            parts.append(pa.Table.from_pylist(pending, schema=TEAM_SCHEMA))
        return _dedupe(pa.concat_tables(parts)) if parts else TEAM_SCHEMA.empty_table()

    def shard_table(self, names: Sequence[str] | None = None) -> pa.Table:
        """The team rows of the shards called `names` (file names in `data/`, as
        `teams-<time>-<id>.parquet`; None: every shard), one per (match, slot).

        Never the WAL: the rows of whole shards, as they are (or will be) in the Hub
        dataset, so that a table computed from them can be recomputed from the dataset.
        A name with no shard behind it (quarantined meanwhile) reads as no rows.
        """
        if names is None:
            paths = self.shards()
        else:
            paths = [self.data / name for name in names if SHARD_NAME.fullmatch(name)]
        parts = self._shard_parts(paths)
        return _dedupe(pa.concat_tables(parts)) if parts else TEAM_SCHEMA.empty_table()

    def _shard_parts(self, paths: Sequence[Path]) -> list[pa.Table]:
        return [t for t in (self._read_shard(shard) for shard in paths) if t is not None]

    def results(self) -> list[MatchResult]:
        """Every recorded match, in the order ratings apply them (start time, then id)."""
        return results_from_rows(self.table().to_pylist())

    # -- replays -------------------------------------------------------------------------
    def replay_path(self, match_id: str) -> Path | None:
        if not MATCH_ID.fullmatch(match_id or ""):
            return None
        path = self.replays / f"{match_id}.replay"
        return path if path.exists() else None

    def replay(self, match_id: str) -> bytes | None:
        """A match's replay bytes, checked; None if none was recorded.

        Raises:
            `DamagedFileError`: the replay cannot be decoded (it is quarantined).
        """
        read = self._checked(self.replay_path(match_id), replay_format.read)
        return None if read is None else read[0]

    def _checked(self, path: Path | None, check: Callable[[bytes], Any]) -> tuple[bytes, Any] | None:
        """A recorded file's bytes and what `check` read of them; None if it is absent (or
        vanished meanwhile). A file `check` refuses with `DamagedFileError` is quarantined."""
        if path is None:
            return None
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            return data, check(data)
        except DamagedFileError as exc:
            self.quarantine(path, str(exc))
            raise

    # -- logs ----------------------------------------------------------------------------
    def logs_path(self, match_id: str) -> Path | None:
        if not MATCH_ID.fullmatch(match_id or ""):
            return None
        path = self.logs_dir / f"{match_id}.json.gz"
        return path if path.exists() else None

    def logs(self, match_id: str) -> list[logs_format.TeamLog] | None:
        """The logs of a recorded match's sandboxed teams, checked; None if none were
        recorded (built-in teams have none; matches recorded before logs were kept).

        Raises:
            `DamagedFileError`: the file cannot be decoded, or is another match's (it is
                quarantined).
        """
        def check(data: bytes) -> list[logs_format.TeamLog]:
            recorded_id, teams = logs_format.read(data)
            if recorded_id != match_id:
                raise DamagedFileError(f"these match logs belong to match {recorded_id}, not {match_id}")
            return teams

        read = self._checked(self.logs_path(match_id), check)
        return None if read is None else read[1]


class HistoryStore(HistoryReader):
    """The history folder, written: record matches durably, move them into shards."""

    def __init__(self, root: Path):
        super().__init__(root)
        for folder in (self.data, self.wal, self.replays, self.logs_dir):
            folder.mkdir(parents=True, exist_ok=True)
        card = self.root / "README.md"
        if not card.exists():
            _write_atomically(card, _CARD.replace("{version}", str(SCHEMA_VERSION)).encode())
        self._lock = threading.Lock()
        self._sharded: set[str] = set()
        self.recover()

    def recover(self) -> None:
        """Start-up repair after a crash: drop temporary files and WAL entries already
        sharded; move damaged shards aside."""
        with self._lock:
            for folder in (self.data, self.wal, self.replays, self.logs_dir):
                for leftover in folder.glob(".*"):
                    leftover.unlink(missing_ok=True)
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
                _write_atomically(self.replays / f"{result.match_id}.replay", replay)
            if logs is not None:
                _write_atomically(self.logs_dir / f"{result.match_id}.json.gz", logs)
            _write_atomically(self.wal / f"{result.match_id}.json", json.dumps(result.to_dict()).encode())
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
                # names sort in the order shards were written (microseconds, then a random tag)
                stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f")
                shard = self.data / f"teams-{stamp}-{secrets.token_hex(4)}.parquet"
                sink = pa.BufferOutputStream()
                pq.write_table(table, sink, compression="zstd")
                _write_atomically(shard, sink.getvalue().to_pybytes())
                self._sharded.update(r.match_id for r in results)
            for entry in entries:
                entry.unlink(missing_ok=True)
            return shard


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
