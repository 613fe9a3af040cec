"""The submissions' status log: every status event of every revision, append-only, on disk.

The log is the state: a revision's current state is its events applied in order
(`arena.lifecycle.RevisionState.apply`), and the log is also the audit trail shown on the
Submissions tab and pushed with the history dataset (`submissions/statuses.jsonl`).

Damage is contained. A line that does not parse (the last one torn by a crash mid-write,
or any other) is set apart into `statuses.damaged.jsonl` beside the log, removed from the
log, named in the log output and listed by `damaged` (the UI's operator line shows it);
the file is always left ending with a newline, so a new event is never glued to a torn one.
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

from arena.lifecycle import RevisionState, Status, StatusEvent, check_transition

log = logging.getLogger(__name__)


class StatusLog:
    """Statuses of every revision, kept in an append-only JSON-lines file at `path`."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.damaged_path = self.path.with_name(self.path.stem + ".damaged.jsonl")
        self._lock = threading.Lock()
        self._states: dict[tuple[str, str], RevisionState] = {}
        self.damaged: list[str] = []
        """One description per damaged line set apart when the log was read."""
        self._load()

    def _load(self) -> None:
        if not self.path.exists():
            return
        raw = self.path.read_bytes()
        good: list[bytes] = []
        bad: list[tuple[int, bytes, str]] = []
        for number, line in enumerate(raw.split(b"\n"), start=1):
            if not line.strip():
                continue
            try:
                event = StatusEvent.from_dict(json.loads(line))
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                bad.append((number, line, f"{type(exc).__name__}: {exc}"))
                continue
            self._apply(event)
            good.append(line)
        if bad or (raw and not raw.endswith(b"\n")):
            self._set_apart(good, bad)

    def _set_apart(self, good: list[bytes], bad: list[tuple[int, bytes, str]]) -> None:
        """Keep the damaged lines beside the log, and rewrite the log without them."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with open(self.damaged_path, "a") as f:
            for number, line, why in bad:
                f.write(json.dumps({"set_apart_at": stamp, "line": number, "error": why,
                                    "text": line.decode(errors="replace")}) + "\n")
            f.flush()
            os.fsync(f.fileno())
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        with open(tmp, "wb") as f:
            f.write(b"".join(line + b"\n" for line in good))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        for number, _, why in bad:
            message = f"status log {self.path}: line {number} is damaged ({why}); set apart in {self.damaged_path.name}"
            self.damaged.append(message)
            log.warning(message)

    def _apply(self, event: StatusEvent) -> None:
        key = (event.repo_id, event.revision)
        state = self._states.get(key)
        if state is None:
            for other_key, other in self._states.items():  # a new revision supersedes its repo's older ones
                if other.repo_id == event.repo_id and other.latest:
                    self._states[other_key] = replace(other, latest=False)
            self._states[key] = RevisionState.first(event)
        else:
            self._states[key] = state.apply(event)

    def record(self, repo_id: str, revision: str, status: Status, reason: str = "", **details: Any) -> RevisionState:
        """Append a status change (durably) and return the revision's new state.

        `details` are `StatusEvent` fields (`submission`, `measurements`, `cause`, ...).

        Raises:
            `TransitionError`: the lifecycle does not allow this change.
        """
        event = StatusEvent(repo_id, revision, status, reason, **details)
        with self._lock:
            check_transition(self._states.get((repo_id, revision)), status)
            with open(self.path, "a") as f:
                f.write(json.dumps(event.to_dict(), sort_keys=True) + "\n")
                f.flush()
                os.fsync(f.fileno())
            self._apply(event)
            return self._states[(repo_id, revision)]

    def get(self, repo_id: str, revision: str) -> RevisionState | None:
        return self._states.get((repo_id, revision))

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
