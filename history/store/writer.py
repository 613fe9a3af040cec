"""Writing a history folder: record a match durably, move recorded matches into a shard,
compact shards and loose files into one shard and one bundle a day.

Why every match ends up recorded exactly once, whatever crash happens, is in the package's
docstring (`history.store`, points 1 to 3).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from arena.errors import InvalidArgumentError
from arena.files import write_atomically
from arena.schema import SCHEMA_VERSION, MatchResult, rows
from history.store.compaction import CompactionPlan, CompactionReport, Publish, StageHook, bundle_writer
from history.store.layout import (
    DATASET_CARD,
    EVAL_YAML,
    LEGACY_TAG,
    LOGS,
    MATCH_ID,
    MAX_COMPACTED_SHARDS,
    REPLAYS,
    TEAM_SCHEMA,
    day_folder,
    dedupe,
    parquet_writer,
)
from history.store.reader import HistoryReader, RemoteFiles

log = logging.getLogger(__name__)

#: A loose replay or log younger than this is not yet an orphan: `record()` writes a match's
#: files a moment before its WAL entry.
ORPHAN_AGE_S = 60.0


class HistoryStore(HistoryReader):
    """The history folder, written: record matches durably, move them into shards, compact.

    Args:
        root (`Path`): the history folder.
        clock (`Callable`, *optional*): seconds since the epoch, now (names and day folders
            of new files; `bench.history_growth` runs a simulated one).
        durable (`bool`): fsync every write (False only where durability is not what is
            measured: the benchmark of the folder's growth).
        on_stage (`StageHook`, *optional*): told each stage a compaction reaches (the
            crash tests kill the process there).
    """

    def __init__(self, root: Path, *, clock: Callable[[], float] = time.time, durable: bool = True,
                 writer: str | None = None, legacy: bool = True, on_stage: StageHook | None = None,
                 remote: RemoteFiles | None = None):
        super().__init__(root, remote=remote)
        self.clock = clock
        self.durable = durable
        self.on_stage = on_stage
        self.writer = writer
        """The writer whose id the new files carry (`history.writers`); None: a random tag,
        and every file counts as this store's own (one writer, as tests and tools use it)."""
        self.legacy = legacy
        """Files named before writers (a random 8-hex tag) are this store's own to compact."""
        for folder in (self.data, self.wal, self.replays, self.logs_dir):
            folder.mkdir(parents=True, exist_ok=True)
        self.write_card()
        self._lock = threading.Lock()
        self._compacting = threading.Lock()
        self._sharded: dict[str, bool] = {}
        """Every match a shard holds, and whether one of this writer's own shards does."""
        self._opened = time.time()
        """When this store opened its folder: no `record()` of it wrote a file older than that."""
        self.recover()

    def write_card(self) -> bool:
        """Write the dataset card and the benchmark declaration (`eval.yaml`) where the
        folder has none, or an older Arena's: a card without today's configs (the flat
        layout's, or one from before the configs per track) is the Arena's to replace.
        Whether the card was written (a card pulled from the dataset then is to be pushed)."""
        card = self.root / "README.md"
        text = card.read_text() if card.exists() else ""
        flat = "path: data/*.parquet\n" in text  # the flat layout's card
        if not text or flat or ("# NMMO Arena match history" in text and "config_name: statuses\n" not in text):
            write_atomically(card, DATASET_CARD.replace("{version}", str(SCHEMA_VERSION)).encode())
            written = True
        else:
            written = False
        declaration = self.root / "eval.yaml"
        if not declaration.exists() or declaration.read_text() != EVAL_YAML:
            write_atomically(declaration, EVAL_YAML.encode())
        return written

    def _write(self, path: Path, data: bytes | Callable[[Any], None]) -> None:
        write_atomically(path, data, durable=self.durable)

    def stamp(self, *, after: float = 0.0) -> tuple[str, str]:
        """(day folder, a name stamp sorting in the order written, ending in this writer's id)
        for a new file, now (or a microsecond after `after`, if now is not later)."""
        now = datetime.fromtimestamp(max(self.clock(), after + 1e-6), timezone.utc)
        return now.strftime("%Y/%m/%d"), f"{now.strftime('%Y%m%dT%H%M%S%f')}-{self.writer or secrets.token_hex(4)}"

    def owns(self, name: str) -> bool:
        """Whether the file called `name` (any path whose last part is a shard's or a
        bundle's name) is this writer's: only those does it push, compact or delete."""
        if self.writer is None:
            return True
        tag = name.rsplit("/", 1)[-1].split(".", 1)[0].rsplit("-", 1)[-1]
        return tag == self.writer or (self.legacy and LEGACY_TAG.fullmatch(tag) is not None)

    def note_shard(self, path: Path) -> int:
        """Take in a shard another writer made (`history.restore` put it in place): its
        matches count as recorded from now on. Returns how many were new."""
        ids = set(pq.read_table(path, columns=["match_id"]).column("match_id").to_pylist())
        own = self.owns(path.name)
        with self._lock:
            new = [m for m in ids if m not in self._sharded]
            for match_id in ids:
                self._sharded[match_id] = own or self._sharded.get(match_id, False)
        return len(new)

    def recover(self) -> None:
        """Start-up repair after a crash: drop temporary files and WAL entries already
        sharded (by this writer before the crash, or by another writer meanwhile); roll back
        compactions killed before their files were all written; move damaged shards aside.
        Loose files of matches this writer's shards and WAL do not hold wait for the next
        compaction (`orphans`): they may be in the dataset already, and its commit deletes
        them there too."""
        with self._lock:
            for folder in (self.data, self.wal, self.replays, self.logs_dir, self.journals):
                for parent, _dirs, files in os.walk(folder):
                    for name in files:
                        if name.startswith("."):
                            (Path(parent) / name).unlink(missing_ok=True)
            for path, plan in self.journal_plans():
                if not all((self.root / output).exists() for output in plan.outputs):
                    self._roll_back(path, plan)
            self._sharded = {}
            for shard in self.shards():
                try:
                    ids = pc.unique(pq.read_table(shard, columns=["match_id"]).column("match_id")).to_pylist()
                except (OSError, pa.ArrowException, ValueError) as exc:
                    self.quarantine(shard, f"{type(exc).__name__}: {str(exc)[:200]}")
                    continue
                own = self.owns(shard.name)
                for match_id in ids:
                    self._sharded[match_id] = own or self._sharded.get(match_id, False)
            for entry in self._wal_entries():
                if entry.stem in self._sharded:
                    entry.unlink()

    def orphans(self, *, older_than_s: float = ORPHAN_AGE_S) -> list[Path]:
        """This writer's loose replays and logs of matches that neither its shards nor its WAL
        hold: a copy of a match another writer recorded first (dropped when it arrived,
        `reconcile`), or of one a killed `record()` never finished. Never pushed
        (`history.mirror`), and deleted, here and in the dataset, by the next compaction.
        Only files older than `older_than_s`, or than this store's opening (a killed process
        left them): a `record()` under way writes a match's files a moment before its WAL entry."""
        now = time.time()
        with self._lock:
            waiting = {entry.stem for entry in self._wal_entries()}
            found = []
            for kind in (REPLAYS, LOGS):
                for path in self.walk(self.root / kind.folder / "loose", kind.suffix):
                    match_id, _, writer = path.name[: -len(kind.suffix)].partition(".")  # <id>[.<writer>]<suffix>
                    own = writer == self.writer if writer else (self.writer is None or self.legacy)
                    if not own or self._sharded.get(match_id) or match_id in waiting:
                        continue
                    try:
                        written = path.stat().st_mtime
                        if now - written >= older_than_s or written < self._opened:
                            found.append(path)
                    except FileNotFoundError:
                        continue
            return found

    def reconcile(self, pushed: Iterable[str]) -> int:
        """Drop this writer's copies of matches another writer's shards hold, from its shards
        the dataset does not hold yet (`pushed`: the names of those it does) and from its
        WAL: so that its next push sends no match the dataset already has. A writer restarted
        on its own disk does this after its first pull and before its first push. The
        copies' loose replays and logs become `orphans`. Returns how many were dropped."""
        pushed = set(pushed)
        dropped = 0
        with self._lock:
            for entry in self._wal_entries():
                if self._sharded.get(entry.stem) is False:  # another writer's shard holds it
                    entry.unlink(missing_ok=True)
                    dropped += 1
            shards = self.shards()
            if all(self.owns(shard.name) for shard in shards):  # no other writer's: nothing it holds twice
                shards = []
            unpushed = {}
            for shard in shards:
                if self.owns(shard.name) and shard.relative_to(self.data).as_posix() not in pushed:
                    table = self.read_shard(shard)
                    if table is not None:
                        unpushed[shard] = table
            mine = {m for table in unpushed.values() for m in table.column("match_id").to_pylist()}
            elsewhere = self._in_foreign_shards(mine) if mine else set()
            for shard, table in unpushed.items():
                if not elsewhere & set(table.column("match_id").to_pylist()):
                    continue
                kept = table.filter(pc.invert(pc.is_in(table.column("match_id"), value_set=pa.array(sorted(elsewhere)))))
                if kept.num_rows:  # a new name, later than the shard's own: it is never the shard it replaces
                    day, stamp = self.stamp(after=_written_at(shard.name))
                    self._write(self.data / day / f"teams-{stamp}.parquet", parquet_writer(kept))
                shard.unlink()
                gone = set(table.column("match_id").to_pylist()) & elsewhere
                for match_id in gone:  # only the other writer's shard holds it now
                    self._sharded[match_id] = False
                dropped += len(gone)
        if dropped:
            log.info("dropped %d matches another writer recorded first (their replays and logs go at the next compaction)",
                     dropped)
        return dropped

    def _in_foreign_shards(self, ids: set[str]) -> set[str]:
        """Those of `ids` that another writer's shards hold."""
        found: set[str] = set()
        for shard in self.shards():
            if not self.owns(shard.name):
                try:
                    found |= ids & set(pq.read_table(shard, columns=["match_id"]).column("match_id").to_pylist())
                except (FileNotFoundError, OSError, pa.ArrowException):
                    continue
        return found

    def waiting(self) -> list[str]:
        """The ids of the matches recorded and not yet flushed into a shard (the WAL's)."""
        return [entry.stem for entry in self._wal_entries()]

    def knows(self, match_id: str) -> bool:
        return match_id in self._sharded or (self.wal / f"{match_id}.json").exists()

    def record(self, result: MatchResult, *, replay: bytes | None = None, logs: bytes | None = None) -> bool:
        """Make a finished match durable, with its replay and its teams' logs (the bytes of
        `arena.replay` and `arena.logs`). Returns False if it was already recorded."""
        if not MATCH_ID.fullmatch(result.match_id):
            raise InvalidArgumentError(f"match id {result.match_id!r} cannot name a file: use letters, digits, '-' and '_' (at most 64)")
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
                day, stamp = self.stamp()
                shard = self.data / day / f"teams-{stamp}.parquet"
                self._write(shard, parquet_writer(table))
                self._sharded.update(dict.fromkeys((r.match_id for r in results), True))
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
            raise InvalidArgumentError(f"max_shards={max_shards}: compact at least one shard at a time")
        report = CompactionReport()
        with self._compacting:
            for path, plan in self.journal_plans():
                if all((self.root / output).exists() for output in plan.outputs):
                    self._carry_out(path, plan, publish)
                    report.finished += 1
                else:
                    self._roll_back(path, plan)
            orphans = self.orphans()  # deleted with the first plan, once
            while True:
                made = self._plan(max_shards, orphans)
                orphans = []
                if made is None:
                    return report
                plan, writers = made
                journal = self.journals / f"{plan.name}.json"
                self._write(journal, json.dumps(plan.to_dict()).encode())
                if self.on_stage:
                    self.on_stage("journal", plan)
                for output, write in writers.items():
                    self._write(self.root / output, write)
                    if self.on_stage:
                        self.on_stage("writing", plan)
                self._carry_out(journal, plan, publish)
                report.plans.append(plan)

    def _carry_out(self, journal: Path, plan: CompactionPlan, publish: Publish | None) -> None:
        """The second half of a compaction whose files are all written: publish them,
        delete what they replace, then the journal."""
        if self.on_stage:
            self.on_stage("written", plan)
        if publish is not None:
            publish(plan)
        if self.on_stage:
            self.on_stage("published", plan)
        for k, replaced in enumerate(plan.inputs):
            (self.root / replaced).unlink(missing_ok=True)
            if self.on_stage and k == len(plan.inputs) // 2:
                self.on_stage("deleting", plan)
        journal.unlink(missing_ok=True)

    def _roll_back(self, journal: Path, plan: CompactionPlan) -> None:
        """Undo a compaction killed before its files were all written: nothing it replaces
        was deleted, nothing it wrote was published."""
        for output in plan.outputs:
            (self.root / output).unlink(missing_ok=True)
        journal.unlink(missing_ok=True)
        log.warning("compaction %s was interrupted before its files were written: rolled back", plan.name)

    def _plan(self, max_shards: int, orphans: list[Path]) -> tuple[CompactionPlan, dict[str, Callable[[Any], None]]] | None:
        """The next compaction (its plan, and a writer for each new file), the `orphans`
        deleted with it; None if no flushed shard and no orphan is left."""
        flushed = [p for p in self.shards() if p.name.startswith("teams-") and self.owns(p.name)][:max_shards]
        tables = []
        inputs: list[Path] = []
        for shard in flushed:
            try:
                table = self.read_shard(shard)
            except FileNotFoundError:
                continue
            if table is not None:
                tables.append(table)
                inputs.append(shard)
        if not inputs:
            if not orphans:
                return None
            return CompactionPlan(name=self.stamp()[1], outputs=(),
                                  inputs=tuple(p.relative_to(self.root).as_posix() for p in orphans)), {}
        new = dedupe(pa.concat_tables(tables))
        _, stamp = self.stamp()
        starts = new.column("started_at").to_pylist()
        ids = new.column("match_id").to_pylist()
        by_day: dict[str, list[int]] = {}
        fallback = self.stamp()[0]
        for k, started_at in enumerate(starts):
            by_day.setdefault(day_folder(started_at) or fallback, []).append(k)
        writers: dict[str, Callable[[Any], None]] = {}
        matches = 0
        for day, picked in sorted(by_day.items()):
            rows_of_day = new.take(pa.array(picked))
            day_ids = sorted(set(ids[k] for k in picked))
            matches += len(day_ids)
            earlier = [p for p in self.walk(self.data / day, ".parquet") if p.name.startswith("day-") and self.owns(p.name)]
            parts = [rows_of_day]
            for shard in earlier:
                try:
                    table = self.read_shard(shard)
                except FileNotFoundError:
                    continue
                if table is not None:
                    parts.insert(0, table)
                    inputs.append(shard)
            merged = dedupe(pa.concat_tables(parts))
            merged = merged.sort_by([("started_at", "ascending"), ("match_id", "ascending"), ("slot", "ascending")])
            writers[f"data/{day}/day-{stamp}.parquet"] = parquet_writer(merged)
            for kind in (REPLAYS, LOGS):
                loose = {m: path for m in day_ids if (path := self.loose_file(kind, m)) is not None}
                if loose:
                    writers[f"{kind.folder}/{day}/{kind.prefix}-{stamp}.bundle"] = bundle_writer(loose)
                    inputs.extend(loose.values())
        plan = CompactionPlan(
            name=stamp,
            outputs=tuple(writers),
            inputs=tuple(dict.fromkeys(p.relative_to(self.root).as_posix() for p in [*inputs, *orphans])),
            matches=matches,
        )
        return plan, writers


def _written_at(name: str) -> float:
    """When a shard named `teams-<YYYYmmddTHHMMSSffffff>-<tag>.parquet` was written (0 for another name)."""
    try:
        return datetime.strptime(name.split("-")[1], "%Y%m%dT%H%M%S%f").replace(tzinfo=timezone.utc).timestamp()
    except (IndexError, ValueError):
        return 0.0
