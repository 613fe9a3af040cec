"""What the matchmaker reads of the history, folded a shard at a time.

The matchmaker's decisions need little of the history: each revision's PvE matches (its
plan), the faulty matches of a revision, how many PvP matches each player has played (the
pools), the durations of recent PvE matches (the queue's forecast), the next match to audit,
and, for uncertainty-first pools, TrueSkill. A history of months holds millions of PvP
matches, so the index reads it as the leaderboard does: columns, one shard at a time, each
shard once. Only a revision's own PvE matches (at most a few dozen) and the rare faulty ones
become `MatchResult`s.

Matches still in the write-ahead log (recorded, not flushed into a shard) are read on every
`refresh`, as the matchmaker must see a match as soon as it is recorded; a match later
flushed, or compacted into another shard, is counted once (by its id).
"""

from __future__ import annotations

import heapq
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from arena.errors import InvalidArgumentError
from arena.ratings import RatedTable, TrueSkillState, extend_trueskill, rated_from_codes
from arena.revision import BUILTIN_PREFIX, Revision, is_builtin
from arena.schema import MatchResult, results_from_rows, rows
from history.audits import audit_order
from history.store import TEAM_SCHEMA, HistoryReader
from matchmaking.service.submissions import faulty

#: PvE durations kept for the queue's forecast.
RECENT_DURATIONS = 200

#: The columns the index reads of each shard (the rest is read only for matches rebuilt).
COLUMNS = ("match_id", "started_at", "duration_s", "track", "nmmo_version", "arena_version", "slot", "policy_id",
           "revision", "achievement", "fault_counts")


@dataclass
class _Layer:
    """What one part of the history (the shards folded so far, or the WAL) holds."""

    pve: dict[Revision, list[MatchResult]] = field(default_factory=dict)
    faulty: dict[Revision, list[tuple[str, str]]] = field(default_factory=dict)
    """Per revision, its faulty matches: (start time and match id as the sort key, reason)."""
    pvp_counts: Counter[str] = field(default_factory=Counter)
    durations: list[tuple[str, float]] = field(default_factory=list)
    """(start time, duration) of PvE matches."""
    audit: list[tuple[str, str]] = field(default_factory=list)
    """Heap of (audit order, match id) of the matches the Space can rerun."""
    other_version: int = 0
    rated: list[RatedTable] = field(default_factory=list)
    matches: int = 0


class HistoryIndex:
    """The matchmaker's view of the history: incremental, thread-safe, rebuilt from the
    folder alone (a restart reads the shards once, then only new ones).

    Args:
        store: the history folder.
        nmmo_version, arena_version: what is installed (a match played with others cannot be
            audited here).
        rated: keep the PvP results as columns for `trueskill` (uncertainty-first pools).
    """

    def __init__(self, store: HistoryReader, *, nmmo_version: str, arena_version: str, rated: bool = False):
        self.store = store
        self.versions = (nmmo_version, arena_version)
        self.rated = rated
        self._lock = threading.Lock()
        self._base = _Layer()
        self._pending = _Layer()
        self._counted: set[str] = set()
        self._folded: set[str] = set()
        self._where: dict[str, str] = {}
        """Shard of each auditable match (to rebuild the one picked)."""
        self._signature: object = None
        self._trueskill = TrueSkillState()
        self._trueskill_matches = -1

    # -- folding -------------------------------------------------------------------------
    def refresh(self) -> None:
        """Fold the shards not folded yet, and read the WAL again, if the folder changed."""
        with self._lock:
            signature = self.store.signature()
            if signature == self._signature:
                return
            wal = self.store.read_wal()  # before the shards: a match flushed meanwhile is in one or the other
            names = self.store.shard_names()
            new = [n for n in names if n not in self._folded]
            for name, batch in zip(new, self._batches(new)):
                self._fold(batch, self._base, shard=name)
                self._folded.add(name)
            self._folded &= set(names)
            pending = _Layer()
            wal = [r for r in wal if r.match_id not in self._counted]
            if wal:
                table = pa.Table.from_pylist([row for r in wal for row in rows(r)], schema=TEAM_SCHEMA)
                self._fold(table, pending, shard=None, count=False)
            self._pending = pending
            self._signature = signature

    def _batches(self, names: list[str]) -> Iterable[pa.Table]:
        for name in names:  # one shard at a time, each batch named by its shard
            yield self.store.shard_table([name])

    def _fold(self, table: pa.Table, layer: _Layer, *, shard: str | None, count: bool = True) -> None:
        if not table.num_rows:
            return
        present = set(pc.unique(table.column("match_id")).to_pylist())
        seen = present & self._counted
        if seen:  # a compaction's shard: its matches were counted in the shards it replaced
            if shard is not None:
                self._where.update((m, shard) for m in seen if m in self._where)
            table = table.filter(pc.invert(pc.is_in(table.column("match_id"), value_set=pa.array(sorted(seen), pa.string()))))
            if not table.num_rows:
                return
        columns = {name: table.column(name).to_numpy(zero_copy_only=False) for name in COLUMNS}
        match_id, track = columns["match_id"], columns["track"]
        first = np.unique(match_id, return_index=True)[1]
        layer.matches += len(first)
        if count:
            self._counted.update(match_id[first].tolist())
        # per match (its first row): PvE durations, and what the audit may rerun
        kind = track[first]
        pve_first = first[kind == "pve"]
        layer.durations.extend(zip(columns["started_at"][pve_first].tolist(), columns["duration_s"][pve_first].tolist()))
        installed = (columns["nmmo_version"][first] == self.versions[0]) & (columns["arena_version"][first] == self.versions[1])
        played = kind != "local"
        layer.other_version += int((played & ~installed).sum())
        auditable = match_id[first[played & installed]].tolist()
        layer.audit.extend((audit_order(m), m) for m in auditable)
        heapq.heapify(layer.audit)
        if shard is not None:
            self._where.update(dict.fromkeys(auditable, shard))
        # per row: the Arena's own teams, and the rated name of each team (`Revision.player`)
        builtin = pc.starts_with(table.column("policy_id"), BUILTIN_PREFIX)
        submitted = ~builtin.to_numpy(zero_copy_only=False)
        # a revision's own PvE matches, and the matches in which a revision faulted: as records
        pve = set(match_id[(track == "pve") & submitted].tolist())
        faults = set(match_id[submitted & (columns["fault_counts"] != "{}")].tolist())
        if pve | faults:
            picked = table.filter(pc.is_in(table.column("match_id"), value_set=pa.array(sorted(pve | faults), pa.string())))
            for result in results_from_rows(picked.to_pylist()):
                for team in result.teams:
                    if is_builtin(team.policy_id):
                        continue
                    key = Revision(team.policy_id, team.revision)
                    if result.match_id in pve:
                        layer.pve.setdefault(key, []).append(result)
                    reason = faulty(team, result.ticks) if result.match_id in faults else ""
                    if reason:
                        layer.faulty.setdefault(key, []).append((f"{result.started_at}\0{result.match_id}", reason))
        pvp = track == "pvp"
        if pvp.any():
            named = pc.if_else(builtin, table.column("policy_id"),
                               pc.binary_join_element_wise(table.column("policy_id"), table.column("revision"), "@"))
            players = named.filter(pa.array(pvp))
            tally = pc.value_counts(players)
            layer.pvp_counts.update(dict(zip(tally.field("values").to_pylist(), tally.field("counts").to_pylist())))
            if self.rated:
                layer.rated.append(self._rated(columns, pvp, players.to_numpy(zero_copy_only=False)))

    @staticmethod
    def _rated(columns: Mapping[str, np.ndarray], pvp: np.ndarray, players: np.ndarray) -> RatedTable:
        # pandas' hash-based factorize, not np.unique: sorting the object arrays of a shard's
        # strings took 4x as long, and a restart reads every shard of the history this way
        start_code, started = pd.factorize(columns["started_at"][pvp], sort=True)
        id_code, ids = pd.factorize(columns["match_id"][pvp], sort=True)
        player_code, names = pd.factorize(players, sort=True)
        return rated_from_codes(start_code, np.asarray(started, dtype=object), id_code, np.asarray(ids, dtype=object),
                                columns["slot"][pvp], player_code, np.asarray(names, dtype=object), columns["achievement"][pvp])

    # -- what the matchmaker asks --------------------------------------------------------
    @property
    def matches(self) -> int:
        """Matches counted (shards and WAL): changes whenever the history grows."""
        return self._base.matches + self._pending.matches

    def pve_results(self, revision: Revision) -> list[MatchResult]:
        """The revision's PvE matches, in the order ratings apply them."""
        found = self._base.pve.get(revision, []) + self._pending.pve.get(revision, [])
        return sorted(found, key=lambda r: (r.started_at, r.match_id))

    def faulty_reasons(self, revision: Revision) -> list[str]:
        """Why each match the revision faulted in counts as faulty (`submissions.faulty`), oldest first."""
        found = self._base.faulty.get(revision, []) + self._pending.faulty.get(revision, [])
        return [reason for _, reason in sorted(found)]

    def pvp_counts(self) -> dict[str, int]:
        """PvP matches played by each player (`Revision.player`)."""
        return dict(self._base.pvp_counts + self._pending.pvp_counts)

    def recent_pve_durations(self, count: int = 20) -> list[float]:
        """The durations of the `count` latest PvE matches (by start) that measured one."""
        found = sorted(self._base.durations + self._pending.durations)
        return [d for _, d in found if d > 0][-count:]

    def other_version(self) -> int:
        """Matches recorded with another nmmo or Arena version (the audit cannot rerun them)."""
        return self._base.other_version + self._pending.other_version

    def next_to_audit(self, done: Iterable[str]) -> MatchResult | None:
        """`history.audits.next_to_audit` over the index: the first match in the audit order
        not in `done`, rebuilt from its shard (or the WAL)."""
        skip = set(done)
        best = min((entry for layer in (self._base, self._pending) for entry in _unskipped(layer.audit, skip)), default=None)
        return None if best is None else self._record(best[1])

    def _record(self, match_id: str) -> MatchResult | None:
        shard = self._where.get(match_id)
        if shard is not None:
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

    def trueskill(self) -> TrueSkillState:
        """TrueSkill of every PvP match, carried forward from the last call's checkpoint."""
        if not self.rated:
            raise InvalidArgumentError("this index keeps no PvP results: build it with rated=True")
        table = RatedTable.concat([*self._base.rated, *self._pending.rated], sort=True)
        self._trueskill = extend_trueskill(self._trueskill, table)
        return self._trueskill


def _unskipped(heap: list[tuple[str, str]], skip: set[str]) -> Iterable[tuple[str, str]]:
    """The heap's entries in order, those in `skip` left out (a copy: the heap stays whole)."""
    return (entry for entry in heapq.nsmallest(len(skip) + 1, heap) if entry[1] not in skip)
