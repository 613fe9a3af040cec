"""The match history: every played match, exactly once, as a Hub dataset others can load.

Layout of the history folder (a Hub dataset repo as it stands; `datasets.load_dataset` and
DuckDB read it directly):

    README.md                       dataset card, with the `configs:` block for `datasets`
    data/teams-<time>-<id>.parquet  append-only shards: one row per team per match (TEAM_SCHEMA)
    replays/<match id>.replay       one compact replay per match (see arena.replay)
    submissions/statuses.jsonl      the submissions' status log (matchmaking.submissions)
    wal/<match id>.json             local only: matches recorded but not yet in a shard

How a match is recorded exactly once, whatever happens:

1. `record()` writes the match to `wal/<match id>.json` (temporary name, fsync, rename):
   from then on it is durable. A match id already known is refused, so a match played
   twice (a restart replays an interrupted plan) is recorded once.
2. `flush()` writes the WAL's matches into one new shard (temporary name, fsync, rename),
   then deletes those WAL files. A crash between the two leaves matches in both places;
   `recover()` at start-up deletes WAL files whose ids are already in a shard, and
   readers also deduplicate by match id. A crash mid-write leaves only a temporary file,
   which `recover()` removes; the WAL still holds the matches.
3. `HubMirror` pushes the folder (shards, replays, statuses, card) to the Hub dataset with
   `huggingface_hub.CommitScheduler`: one commit per interval, never one per match. While
   the Hub is unreachable nothing is lost: files stay on disk and the next push sends them.

Shards are never rewritten or deleted, as `CommitScheduler` requires.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import tempfile
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from arena.schema import SCHEMA_VERSION, TEAM_COLUMNS, MatchResult, results_from_rows, rows

log = logging.getLogger(__name__)

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
submission statuses under `submissions/`.

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


class HistoryStore:
    """The history folder: record matches durably, compact them into shards, read them back."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.data = self.root / "data"
        self.wal = self.root / "wal"
        self.replays = self.root / "replays"
        for folder in (self.data, self.wal, self.replays):
            folder.mkdir(parents=True, exist_ok=True)
        card = self.root / "README.md"
        if not card.exists():
            _write_atomically(card, _CARD.replace("{version}", str(SCHEMA_VERSION)).encode())
        self._lock = threading.Lock()
        self._sharded: set[str] = set()
        self.recover()

    # -- writing -------------------------------------------------------------------------
    def recover(self) -> None:
        """Start-up repair after a crash: drop temporary files and WAL entries already sharded."""
        with self._lock:
            for folder in (self.data, self.wal, self.replays):
                for leftover in folder.glob(".*"):
                    leftover.unlink(missing_ok=True)
            self._sharded = set()
            for shard in self.shards():
                self._sharded.update(pq.read_table(shard, columns=["match_id"]).column("match_id").to_pylist())
            for entry in self.wal.glob("*.json"):
                if entry.stem in self._sharded:
                    entry.unlink()

    def knows(self, match_id: str) -> bool:
        return match_id in self._sharded or (self.wal / f"{match_id}.json").exists()

    def record(self, result: MatchResult, *, replay: bytes | None = None) -> bool:
        """Make a finished match durable. Returns False if it was already recorded."""
        with self._lock:
            if self.knows(result.match_id):
                return False
            if replay is not None:  # the replay first: a recorded match always has its replay
                _write_atomically(self.replays / f"{result.match_id}.replay", replay)
            _write_atomically(self.wal / f"{result.match_id}.json", json.dumps(result.to_dict()).encode())
            return True

    def flush(self) -> Path | None:
        """Move every WAL match into one new shard; returns it (None if the WAL was empty)."""
        with self._lock:
            entries = sorted(self.wal.glob("*.json"))
            results = []
            for entry in entries:
                if entry.stem not in self._sharded:
                    results.append(MatchResult.from_dict(json.loads(entry.read_bytes())))
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

    # -- reading -------------------------------------------------------------------------
    def shards(self) -> list[Path]:
        return sorted(p for p in self.data.glob("*.parquet") if not p.name.startswith("."))

    def signature(self) -> tuple[int, int, float]:
        """Changes whenever the history does: for caching what is computed from it."""
        shards = self.shards()
        wal = list(self.wal.glob("*.json"))
        latest = max([p.stat().st_mtime for p in shards + wal], default=0.0)
        return (len(shards), len(wal), latest)

    def table(self) -> pa.Table:
        """Every recorded team row (shards, then the WAL), one per (match, slot)."""
        parts = [pq.read_table(shard, schema=TEAM_SCHEMA) for shard in self.shards()]
        pending = []
        for entry in sorted(self.wal.glob("*.json")):
            try:
                result = MatchResult.from_dict(json.loads(entry.read_bytes()))
            except (ValueError, KeyError):
                continue  # being replaced right now
            if result.match_id not in self._sharded:
                pending.extend(rows(result))
        if pending:
            parts.append(pa.Table.from_pylist(pending, schema=TEAM_SCHEMA))
        if not parts:
            return TEAM_SCHEMA.empty_table()
        table = pa.concat_tables(parts)
        return _dedupe(table)

    def results(self) -> list[MatchResult]:
        """Every recorded match, in the order ratings apply them (start time, then id)."""
        return results_from_rows(self.table().to_pylist())

    def replay_path(self, match_id: str) -> Path | None:
        path = self.replays / f"{match_id}.replay"
        return path if path.exists() else None


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


class HubMirror:
    """Pushes the history folder to its Hub dataset, every few minutes, in one commit each.

    `CommitScheduler` does the pushing (and retries a failed push at the next interval);
    this class only starts it once the Hub can be reached, since creating it contacts the
    Hub. Call `ensure()` periodically: it is cheap once started.
    """

    def __init__(self, store: HistoryStore, *, api: Any, repo_id: str, every_minutes: float = 5.0):
        self.store = store
        self.api = api
        self.repo_id = repo_id
        self.every_minutes = every_minutes
        self.scheduler: Any = None
        self.last_error = ""

    def ensure(self) -> bool:
        """Start the scheduler if it is not running; False while the Hub is unreachable."""
        if self.scheduler is not None:
            return True
        from huggingface_hub import CommitScheduler

        try:
            self.scheduler = CommitScheduler(
                repo_id=self.repo_id,
                repo_type="dataset",
                folder_path=self.store.root,
                every=self.every_minutes,
                allow_patterns=["README.md", "data/*.parquet", "replays/*.replay", "submissions/*.jsonl"],
                ignore_patterns=["**/.*", ".*", "wal/**"],
                hf_api=self.api,
            )
        except Exception as exc:  # noqa: BLE001 - the Hub is away: try again at the next call
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.warning("history push not started, Hub unreachable: %s", self.last_error)
            return False
        self.last_error = ""
        return True

    def push_now(self) -> bool:
        """Push whatever changed, now (waits for it). False if the Hub is unreachable."""
        if not self.ensure():
            return False
        try:
            self.scheduler.trigger().result()
        except Exception as exc:  # noqa: BLE001
            self.last_error = f"{type(exc).__name__}: {exc}"
            return False
        return True

    def stop(self) -> None:
        if self.scheduler is not None:
            self.scheduler.stop()
            self.scheduler = None
