"""`HistoryIndex`: the history read once, for every reader, as each match is recorded.

The matchmaker plans from the history (a revision's PvE matches, PvP counts, the next
audit), the leaderboard rates it and shows it, and `evaluate --against top:K` ranks the
field from it. Each reads it the same way, so it is read in one place: shard by shard, each
shard once, in columns (a million matches are 16 million rows), each match counted once by
its id however many files hold it (a WAL entry and the shard it was flushed into; the
shards a compaction replaced and the one that replaces them).

It is incremental: a `refresh` folds only the shards and the write-ahead log's matches it
has not seen, so a match is in every reader's view a moment after `HistoryStore.record`
wrote it, not after the next flush or push. One instance serves a whole Space (the
matchmaker and the leaderboard's refresher): `snapshot()` is an immutable view a reader
keeps while the index moves on. Matches are only ever added: a shard replaced by a
compaction leaves its matches counted (its replacement holds them), and so does one moved
aside as damaged after it was read, until the next start (the operator line names it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from arena.ratings import RatedTable
from arena.revision import Revision
from arena.schema import MatchResult, results_from_rows, rows
from history.index.folded import Folded, fold
from history.index.planning import Planning, Versions
from history.index.rows import frames
from history.store import TEAM_SCHEMA, HistoryReader
from history.store.layout import dedupe

#: Where the index read a match from while it is in the write-ahead log only.
WAL = ""


@dataclass(frozen=True)
class Snapshot:
    """The history as the index had folded it at one moment."""

    folded: Folded
    shards: tuple[str, ...]
    """The shards its matches were read from (names inside `data/`, sorted), those still there."""
    unsharded: int
    """Matches read from the write-ahead log that no shard holds yet (recorded, not flushed)."""
    generation: int
    """Grows by one whenever matches are folded: equal generations, equal matches."""


class HistoryIndex:
    """The history of a folder, folded once and kept current (thread-safe).

    Args:
        store (`HistoryReader`): the history folder.
        ready (`Callable`, *optional*): False while the folder is being restored from the
            dataset (`history.restore`): the index then waits and folds the whole of it at
            once, rather than merging its tables again as each of its shards arrives.
    """

    def __init__(self, store: HistoryReader, *, ready: Callable[[], bool] | None = None):
        self.store = store
        self.ready = ready
        self._lock = threading.Lock()
        self._folded = Folded.empty()
        self._planning = Planning()
        self._where: dict[str, str] = {}
        """Per match counted, the shard it is read from (`WAL` while it is only in the WAL)."""
        self._unsharded: set[str] = set()
        """The matches counted that are only in the WAL."""
        self._shards: set[str] = set()
        """The shards read (those still there)."""
        self._signature: object = None
        self._generation = 0
        self._followers: list[Callable[[RatedTable], None]] = []

    def follow(self, rated: Callable[[RatedTable], None]) -> None:
        """Call `rated` with each batch's rated results as the index folds them, whoever
        refreshes it (in the refreshing thread, under the index's lock: it must return at
        once), until `unfollow`: a reader rates a long history while the rest is read
        (`leaderboard.standings.RatedAhead`)."""
        with self._lock:
            self._followers.append(rated)

    def unfollow(self, rated: Callable[[RatedTable], None]) -> None:
        """Stop calling `rated` (see `follow`)."""
        with self._lock:
            self._followers = [f for f in self._followers if f is not rated]

    def _rated(self, batch: RatedTable) -> None:
        for follower in self._followers:
            follower(batch)

    # -- folding -------------------------------------------------------------------------
    def refresh(self) -> Snapshot:
        """Fold the shards and WAL entries not folded yet, if the folder changed; the snapshot."""
        with self._lock:
            if self.ready is not None and not self.ready():
                return self._snapshot()
            signature = self.store.signature()
            if signature == self._signature:
                return self._snapshot()
            added = 0

            def batches() -> Iterator[pd.DataFrame]:
                # one table at a time, planned and folded before the next is read: a restart's
                # million matches are never in memory as Arrow tables all at once
                nonlocal added
                for table in self._unread():
                    if table.num_rows:
                        self._planning.add(table)
                        added += 1
                        yield from frames([table])

            try:
                folded = fold(batches(), previous=self._folded, checked=False, on_rated=self._rated)
            except BaseException:
                self._forget()  # what was read half-way is read again, whole, next time
                raise
            if added:
                self._folded = folded
                self._generation += 1
            self._signature = signature
            return self._snapshot()

    def _forget(self) -> None:
        """Back to nothing read: the next refresh folds the whole folder again."""
        self._folded, self._planning = Folded.empty(), Planning()
        self._where, self._unsharded, self._shards = {}, set(), set()
        self._signature, self._generation = None, self._generation + 1

    def _unread(self) -> Iterator[pa.Table]:
        """The rows of the matches not counted yet: the new shards', then the WAL's."""
        wal = self.store.read_wal()  # before the shards: a match flushed meanwhile is in one or the other
        for _ in range(3):  # a shard compacted away between the listing and its reading: list again
            names = self.store.shard_names()
            vanished: list[str] = []
            yield from self._new_shards(names, vanished)
            self._shards &= set(names)
            if not vanished:
                break
        waiting = [r for r in wal if r.match_id not in self._where]
        if waiting:
            self._where.update(dict.fromkeys((r.match_id for r in waiting), WAL))
            self._unsharded.update(r.match_id for r in waiting)
            yield pa.Table.from_pylist([row for r in waiting for row in rows(r)], schema=TEAM_SCHEMA)

    def _new_shards(self, names: Iterable[str], vanished: list[str]) -> Iterable[pa.Table]:
        """The rows of each shard not folded yet, without the matches already counted (a
        compaction's shard: counted in the shards it replaced; a flushed shard: in the WAL);
        the names of those gone before they were read appended to `vanished`."""
        for name in names:
            if name in self._shards:
                continue
            try:
                table = self.store.read_shard(self.store.data / name)
            except FileNotFoundError:  # compacted away since it was listed: compaction wrote its replacement first
                vanished.append(name)
                continue
            self._shards.add(name)
            if table is None:  # damaged: quarantined (the operator is told)
                continue
            table = dedupe(table)
            ids = pc.unique(table.column("match_id")).to_pylist()
            seen = [m for m in ids if m in self._where]
            self._where.update(dict.fromkeys(ids, name))  # every match of it is read from here from now on
            if self._unsharded:
                self._unsharded.difference_update(ids)
            if seen:
                table = table.filter(pc.invert(pc.is_in(table.column("match_id"), value_set=pa.array(seen, pa.string()))))
            yield table

    def _snapshot(self) -> Snapshot:
        return Snapshot(self._folded, tuple(sorted(self._shards)), len(self._unsharded), self._generation)

    def snapshot(self) -> Snapshot:
        """The latest snapshot, refreshed first."""
        return self.refresh()

    # -- what the matchmaker asks --------------------------------------------------------
    @property
    def matches(self) -> int:
        """Matches counted (shards and WAL): changes whenever the history grows."""
        return self._folded.matches

    @property
    def rated(self) -> RatedTable:
        """Every PvP result, in rating order."""
        return self._folded.rated

    def pve_results(self, revision: Revision) -> list[MatchResult]:
        """The revision's PvE matches, in the order ratings apply them."""
        with self._lock:
            found = list(self._planning.pve.get(revision, []))
        return sorted(found, key=lambda r: (r.started_at, r.match_id))

    def faulty_reasons(self, revision: Revision) -> list[str]:
        """Why each match the revision faulted in counts as faulty (`arena.schema.faulty`), oldest first."""
        with self._lock:
            found = list(self._planning.faulty.get(revision, []))
        return [reason for _, reason in sorted(found)]

    def pvp_counts(self) -> dict[str, int]:
        """PvP matches played by each player (`Revision.player`)."""
        with self._lock:
            return dict(self._planning.pvp_counts)

    def recent_pve_durations(self, count: int = 20) -> list[float]:
        """The durations of the `count` latest PvE matches (by start) that measured one."""
        with self._lock:
            found = sorted(self._planning.durations)
        return [d for _, d in found if d > 0][-count:]

    def other_version(self, installed: Versions) -> int:
        """Matches the Space recorded with other nmmo or Arena versions than `installed`
        (the audit cannot rerun them here)."""
        with self._lock:
            return sum(self._planning.played.values()) - self._planning.played[installed]

    def next_to_audit(self, done: Iterable[str], installed: Versions) -> MatchResult | None:
        """`history.audits.next_to_audit` over the index: the first match in the audit order,
        played with the `installed` versions, not in `done`, rebuilt from its shard (or the WAL)."""
        with self._lock:
            match_id = self._planning.next_to_audit(set(done), installed)
            shard = self._where.get(match_id) if match_id is not None else None
        return None if match_id is None else self._record(match_id, shard)

    def _record(self, match_id: str, shard: str | None) -> MatchResult | None:
        if shard:
            table = self.store.shard_table([shard])
            picked = table.filter(pc.equal(table.column("match_id"), match_id))
            if picked.num_rows:
                return results_from_rows(picked.to_pylist())[0]
        for result in self.store.read_wal():
            if result.match_id == match_id:
                return result
        table = self.store.table()  # its shard compacted away since: look everywhere (rare)
        picked = table.filter(pc.equal(table.column("match_id"), match_id))
        return results_from_rows(picked.to_pylist())[0] if picked.num_rows else None
