"""The submissions' status log: every status event of every revision, append-only, on disk.

The log is the state: a revision's current state is its events applied in order
(`arena.lifecycle.RevisionState.apply`), and the log is also the audit trail shown on the
Submissions tab and pushed with the history dataset. Every writer of the dataset (a Space,
and during a rebuild its successor) appends only to its own file,
`submissions/statuses-<writer>.jsonl` (`history.journal`); the state is the union of every
writer's events in time order, the single `statuses.jsonl` of the layout before writers
included. `reload()` takes in what other writers' files brought (`history.restore` pulls
them from the Hub).

Damage is contained. A line of this writer's own file that does not parse (the last one
torn by a crash mid-write, or any other) is set apart into `statuses.damaged.jsonl`
beside the log, removed from the file, named in the log output and listed by `damaged`
(the UI's operator line shows it); the file is always left ending with a newline, so a new
event is never glued to a torn one. A damaged line in another writer's file is skipped and
named the same way (that file is not this writer's to repair).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from arena.files import write_atomically
from arena.lifecycle import RevisionState, Status, StatusEvent, check_transition
from arena.revision import Revision
from history.journal import Journal

log = logging.getLogger(__name__)


class StatusLog:
    """Statuses of every revision, from every writer's JSON-lines file beside `path`.

    Args:
        path (`Path`): the log's single-file name (`.../submissions/statuses.jsonl`).
        writer (`str`, *optional*): this writer's id: its events go to
            `statuses-<writer>.jsonl` (None: to `path` itself).
    """

    def __init__(self, path: Path, *, writer: str | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.journal = Journal(self.path, writer=writer, order=lambda e: float(e.get("at", 0.0)))
        self.own = self.journal.own
        self.damaged_path = self.path.with_name(self.path.stem + ".damaged.jsonl")
        self._lock = threading.Lock()
        self._states: dict[Revision, RevisionState] = {}
        self._signature: tuple = ()
        self.damaged: list[str] = []
        """One description per damaged line set apart or skipped when the log was read."""
        self._repair_own()
        self.reload()

    def _repair_own(self) -> None:
        """Set this writer's damaged lines apart, once, before anything is appended."""
        if not self.own.exists():
            return
        raw = self.own.read_bytes()
        good: list[bytes] = []
        bad: list[tuple[int, bytes, str]] = []
        for number, line in enumerate(raw.split(b"\n"), start=1):
            if not line.strip():
                continue
            try:
                StatusEvent.from_dict(json.loads(line))
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                bad.append((number, line, f"{type(exc).__name__}: {exc}"))
                continue
            good.append(line)
        if bad or (raw and not raw.endswith(b"\n")):
            self._set_apart(good, bad)

    def reload(self) -> bool:
        """Read every writer's events again if any file changed; True if they had."""
        with self._lock:
            signature = self.journal.signature()
            if signature == self._signature:
                return False
            states: dict[Revision, RevisionState] = {}
            for record in self.journal.read():
                try:
                    event = StatusEvent.from_dict(record)
                except (ValueError, KeyError, TypeError, AttributeError) as exc:
                    message = f"status log {self.path.parent}: an event that does not read ({type(exc).__name__}: {exc}) was skipped"
                    if message not in self.damaged:
                        self.damaged.append(message)
                        log.warning(message)
                    continue
                _apply(states, event)
            for message in self.journal.damaged:
                if message not in self.damaged:
                    self.damaged.append(message)
            self._states = states
            self._signature = signature
            return True

    def _set_apart(self, good: list[bytes], bad: list[tuple[int, bytes, str]]) -> None:
        """Keep the damaged lines beside the log, and rewrite the log without them."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with open(self.damaged_path, "a") as f:
            for number, line, why in bad:
                f.write(json.dumps({"set_apart_at": stamp, "line": number, "error": why,
                                    "text": line.decode(errors="replace")}) + "\n")
            f.flush()
            os.fsync(f.fileno())
        write_atomically(self.own, b"".join(line + b"\n" for line in good))
        for number, _, why in bad:
            message = f"status log {self.own}: line {number} is damaged ({why}); set apart in {self.damaged_path.name}"
            self.damaged.append(message)
            log.warning(message)

    def record(self, revision: Revision, status: Status, reason: str = "", **details: Any) -> RevisionState:
        """Append a status change (durably) and return the revision's new state.

        `details` are `StatusEvent` fields (`submission`, `measurements`, `cause`, ...).

        Raises:
            `TransitionError`: the lifecycle does not allow this change.
        """
        event = StatusEvent(revision, status, reason, **details)
        self.reload()  # another writer's events pulled since count for the transition
        with self._lock:
            current = self._states.get(revision)
            check_transition(current, status)
            if current is not None and current.stale(event):
                log.info("%s %s not recorded: its PvE figures are behind what the dataset holds (%s)",
                         revision.label, status.value, current.reason)
                return current
            self.journal.append(event.to_dict())
            _apply(self._states, event)
            self._signature = self.journal.signature()
            return self._states[revision]

    def get(self, revision: Revision) -> RevisionState | None:
        return self._states.get(revision)

    def states(self) -> list[RevisionState]:
        """Every revision, newest first."""
        with self._lock:
            return sorted(self._states.values(), key=lambda s: s.first_seen, reverse=True)

    def with_status(self, *statuses: Status, latest_only: bool = True) -> list[RevisionState]:
        """Revisions in any of `statuses`, oldest first (each repo's latest only, by default)."""
        wanted = set(statuses)
        return sorted(
            (s for s in self.states() if s.status in wanted and (s.latest or not latest_only)),
            key=lambda s: s.first_seen,
        )


def _apply(states: dict[Revision, RevisionState], event: StatusEvent) -> None:
    key = event.id
    state = states.get(key)
    if state is not None and state.stale(event):  # another writer's, decided from less of the history
        return
    if state is None:
        for other_key, other in states.items():  # a new revision supersedes its repo's older ones
            if other.id.policy_id == event.id.policy_id and other.latest:
                states[other_key] = replace(other, latest=False)
        states[key] = RevisionState.first(event)
    else:
        states[key] = state.apply(event)
