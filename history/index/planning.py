"""What planning the next matches reads of the history: each revision's PvE matches and
faulty ones as whole records, PvP matches per player, recent PvE durations, and which match
to audit next.

The matchmaker's decisions need little of a history of millions of matches: only a
revision's own PvE matches (at most a few dozen) and the rare faulty ones become
`MatchResult`s; the rest is counts and a heap. Folded from the same Arrow batches as the
tables (`HistoryIndex`), each match once.
"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arena.revision import BUILTIN_PREFIX, Revision, is_builtin
from arena.schema import MatchResult, faulty, results_from_rows
from history.audits import audit_order

#: The columns planning reads of each match (of its first row: the same in all of them); of
#: every row it reads only `match_id`, `track`, `policy_id`, `revision` and `fault_counts`, in
#: Arrow (a history's 16 million rows made Python strings of every column cost a restart seconds).
MATCH_COLUMNS = ("started_at", "duration_s", "track", "nmmo_version", "arena_version", "match_id")

Versions = tuple[str, str]
"""(nmmo version, Arena version) a match was played with: only the same can rerun it."""


@dataclass
class Planning:
    """The planning figures of the matches folded so far (mutable: `HistoryIndex` owns it,
    under its lock)."""

    pve: dict[Revision, list[MatchResult]] = field(default_factory=dict)
    faulty: dict[Revision, list[tuple[str, str]]] = field(default_factory=dict)
    """Per revision, its faulty matches: (start time and match id as the sort key, reason)."""
    pvp_counts: Counter[str] = field(default_factory=Counter)
    durations: list[tuple[str, float]] = field(default_factory=list)
    """(start time, duration) of PvE matches."""
    audit: dict[Versions, list[tuple[str, str]]] = field(default_factory=dict)
    """Per versions, a heap of (audit order, match id) of the Space's matches played with them."""
    played: Counter[Versions] = field(default_factory=Counter)
    """Matches the Space played (not the evaluation tool's `local` track), per versions."""

    def add(self, table: pa.Table) -> None:
        """Fold the rows of whole matches, none of them folded before."""
        if not table.num_rows:
            return
        match_id, track = table.column("match_id"), table.column("track")
        codes = match_id.combine_chunks().dictionary_encode().indices.to_numpy(zero_copy_only=False)
        first = table.select(MATCH_COLUMNS).take(np.unique(codes, return_index=True)[1])  # a row per match
        columns = {name: first.column(name).to_numpy(zero_copy_only=False) for name in MATCH_COLUMNS}
        kind = columns["track"]
        pve = kind == "pve"
        self.durations.extend(zip(columns["started_at"][pve].tolist(), columns["duration_s"][pve].tolist()))
        played = kind != "local"
        versions = zip(columns["nmmo_version"][played].tolist(), columns["arena_version"][played].tolist())
        for pair, match in zip(versions, columns["match_id"][played].tolist()):
            self.played[pair] += 1
            heapq.heappush(self.audit.setdefault(pair, []), (audit_order(match), match))
        builtin = pc.starts_with(table.column("policy_id"), BUILTIN_PREFIX)
        submitted = pc.invert(builtin)
        faults = pc.and_(submitted, pc.fill_null(pc.not_equal(table.column("fault_counts"), "{}"), True))
        self._add_records(table, _ids(match_id, pc.and_(pc.equal(track, "pve"), submitted)), _ids(match_id, faults))
        pvp = pc.equal(track, "pvp")
        if pc.any(pvp).as_py():
            named = pc.if_else(builtin, table.column("policy_id"),
                               pc.binary_join_element_wise(table.column("policy_id"), table.column("revision"), "@"))
            tally = pc.value_counts(named.filter(pvp))
            self.pvp_counts.update(dict(zip(tally.field("values").to_pylist(), tally.field("counts").to_pylist())))

    def _add_records(self, table: pa.Table, pve: set[str], faults: set[str]) -> None:
        """A revision's own PvE matches, and the matches in which a revision faulted, as records."""
        if not pve | faults:
            return
        picked = table.filter(pc.is_in(table.column("match_id"), value_set=pa.array(sorted(pve | faults), pa.string())))
        for result in results_from_rows(picked.to_pylist()):
            for team in result.teams:
                if is_builtin(team.policy_id):
                    continue
                key = Revision(team.policy_id, team.revision)
                if result.match_id in pve:
                    self.pve.setdefault(key, []).append(result)
                reason = faulty(team, result.ticks) if result.match_id in faults else ""
                if reason:
                    self.faulty.setdefault(key, []).append((f"{result.started_at}\0{result.match_id}", reason))

    def next_to_audit(self, done: set[str], versions: Versions) -> str | None:
        """The id of the first match in the audit order, played with `versions`, not in `done`."""
        heap = self.audit.get(versions, [])
        return next((m for _, m in heapq.nsmallest(len(done) + 1, heap) if m not in done), None)


def _ids(match_id: pa.ChunkedArray, where: pa.ChunkedArray) -> set[str]:
    """The ids of the matches with a row `where` is true."""
    return set(pc.unique(match_id.filter(where)).to_pylist())
