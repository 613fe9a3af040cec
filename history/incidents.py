"""The incident log: matches lost to the platform, never rated, and whether they were played again.

A match the platform loses (its worker process died, the match process ran out of memory,
the engine raised, a Ray node was lost or could not play it) produces no result: nothing of
it is recorded in the history, so it is never rated and never counted as played. What
happened to it is appended here instead, one JSON line per lost attempt, in
`incidents/incidents-<writer>.jsonl` of the history folder (`history.journal`: one file per
writer of the dataset, read as one log), pushed with the dataset and restored from it, so
the About tab lists the latest incidents with their causes on any writer after any restart.

These are the platform's failures, kept apart from the teams' own: a policy that crashes,
times out or answers nonsense has a fault recorded in its match (`arena.schema.FaultKind`,
`fault_counts`), and that match is rated, since the team lost it itself.

The replanning rule, written once (`MAX_ATTEMPTS`): a lost match is played again, the same
spec (seed, line-up, rules: the same match id), until it has been tried `MAX_ATTEMPTS`
times in all, counted from this log (so across rounds, restarts and writers); then it is
given up, and the record says so (`replanned` false). A match that always kills its worker
therefore costs three attempts, never a loop. A match abandoned because the Space is
stopping is no incident: PvE owes it again at the next start.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from arena.records import Format, Record
from history.journal import Journal

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1

#: Attempts a lost match gets in all (the first included): one platform hiccup (a node
#: restarting, a worker killed by a neighbour's memory) is ridden out, a match that breaks
#: its worker every time stops after three.
MAX_ATTEMPTS = 3

#: A record keeps the first characters of the failure's message (a traceback is in the log).
MESSAGE_CHARS = 500


class Cause(str, Enum):
    """Why the platform lost a match: a closed set (`Incident.cause`)."""

    WORKER_DIED = "worker-died"
    """The worker process playing it died (killed, or crashed), or it was lost with the
    process pool another worker's death broke."""
    OUT_OF_MEMORY = "out-of-memory"
    """The match process ran out of memory (`MemoryError`, the kernel's or Ray's OOM kill)."""
    ENGINE_ERROR = "engine-error"
    """An exception inside the match: the engine, the game, the hosting of its teams."""
    NODE_LOST = "node-lost"
    """The Ray node (or its worker) playing it died, and Ray's retries ran out."""
    NODE_REFUSED = "node-refused"
    """A Ray node could not play it: its isolation self-test refused submitted code, or it
    could not fetch a submission."""

    @property
    def meaning(self) -> str:
        """The cause in words, for the About tab."""
        return _MEANINGS[self]


_MEANINGS = {
    Cause.WORKER_DIED: "the worker process playing it died",
    Cause.OUT_OF_MEMORY: "the match process ran out of memory",
    Cause.ENGINE_ERROR: "an error inside the engine",
    Cause.NODE_LOST: "the cluster node playing it was lost",
    Cause.NODE_REFUSED: "a cluster node could not play it",
}


@dataclass(frozen=True)
class Incident(Record):
    """One attempt at a match that the platform lost (the match, unrated, not recorded)."""

    match_id: str
    failed_at: str
    """UTC time the loss was noticed, ISO 8601."""
    track: str
    """`pve` or `pvp`."""
    stage: int
    """PvE stage 1-3, else 0."""
    seed: int
    """The match's seed: with the line-up and the rules, it is the match (the same id when
    played again)."""
    submissions: tuple[str, ...]
    """The submissions it seated (`repo@revision`), built-in teams left out."""
    cause: Cause
    message: str
    """What the executor said, cut to `MESSAGE_CHARS`."""
    attempt: int
    """Which attempt this was: 1 for the first time the match was played."""
    max_attempts: int
    """The attempts the match gets in all (`MAX_ATTEMPTS` when it was recorded)."""
    replanned: bool
    """Whether it is played again: false once it has had `max_attempts` (given up)."""
    node: str = ""
    """The Ray node that lost it ("" on this machine)."""
    schema_version: int = SCHEMA_VERSION

    #: What a record lacking a field reads as (the match, its cause and when are always there).
    FORMAT = Format(defaults={"track": "", "stage": 0, "seed": 0, "submissions": (), "message": "", "attempt": 1,
                              "max_attempts": MAX_ATTEMPTS, "replanned": False})

    @property
    def line(self) -> str:
        """`played again (attempt 1 of 3)` or `given up after 3 attempts`."""
        if self.replanned:
            return f"played again (attempt {self.attempt} of {self.max_attempts})"
        return f"given up after {self.attempt} attempts"


def incident_log_path(history_dir: Path) -> Path:
    """The log's single-file name in a history folder (each writer appends to
    `incidents/incidents-<writer>.jsonl` beside it)."""
    return Path(history_dir) / "incidents" / "incidents.jsonl"


class IncidentLog:
    """The incidents, in every writer's append-only JSON-lines file beside `path`
    (`history.journal`).

    Args:
        path (`Path`): the log's single-file name (`incident_log_path(history_dir)`).
        writer (`str`, *optional*): this writer's id (None: append to `path` itself).
    """

    def __init__(self, path: Path, *, writer: str | None = None):
        self.path = Path(path)
        self.journal = Journal(self.path, writer=writer, order=lambda r: str(r.get("failed_at", "")))
        self._reported: set[str] = set()
        self._cache: tuple[Any, list[Incident]] = ((), [])

    def append(self, incident: Incident) -> None:
        """Add one incident durably: one write of a whole line, then fsync."""
        self.journal.append(incident.to_dict())

    def read(self) -> list[Incident]:
        """Every incident of every writer, oldest first; damaged records skipped (each named
        once in the log). Read again only when a file changed."""
        signature = self.journal.signature()
        if signature and signature == self._cache[0]:
            return list(self._cache[1])
        incidents = []
        for record in self.journal.read():
            try:
                incidents.append(Incident.from_dict(record))
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                key = json.dumps(record, sort_keys=True)[:200]
                if key not in self._reported:
                    self._reported.add(key)
                    log.warning("incident log %s: a record is damaged (%s: %s); skipped", self.path.parent,
                                type(exc).__name__, exc)
        self._cache = (signature, incidents)
        return list(incidents)

    def attempts(self) -> Counter[str]:
        """Lost attempts per match id, every writer's."""
        return attempts(self.read())


def attempts(incidents: Iterable[Incident]) -> Counter[str]:
    """Lost attempts per match id (each incident is one)."""
    return Counter(i.match_id for i in incidents)


def given_up(lost: int) -> bool:
    """Whether a match with `lost` attempts lost to the platform is played no more."""
    return lost >= MAX_ATTEMPTS


def latest(incidents: Iterable[Incident], n: int = 20) -> list[Incident]:
    """The `n` latest incidents, newest first (for the About tab)."""
    return sorted(incidents, key=lambda i: i.failed_at, reverse=True)[:n]
