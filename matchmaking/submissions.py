"""Submissions and their statuses: what users see happen to each revision they push.

Every revision moves through::

    queued -> validating -> rejected (reason)
                         -> evaluating -> qualified           (PvE stage 1 passed: plays PvP)
                                       -> evaluated (reason)  (PvE done, below the PvP bar)
    any stage -> error (reason)                               (download failed for good, or
                                                               repeated faults in matches)

A new commit to a repo is a new revision with its own statuses; the older revision keeps
its results in the history (they stay true of that code) but is no longer scheduled, and
the leaderboard shows each repo's latest revision.

The registry is an append-only JSON-lines log of status events: current state is the
last event per revision, the log is the audit trail, and a crash can at worst lose the
line being written (a torn last line is skipped on reading).
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Callable

from huggingface_hub import HfApi

from arena.schema import FaultKind, TeamResult
from matchmaking.discovery import Submission, discover, download, format_problem
from matchmaking.validation import ValidationReport, validate


class Status(str, Enum):
    QUEUED = "queued"
    VALIDATING = "validating"
    REJECTED = "rejected"
    EVALUATING = "evaluating"
    EVALUATED = "evaluated"
    QUALIFIED = "qualified"
    ERROR = "error"


#: Statuses after which a revision is never played again.
FINAL = frozenset({Status.REJECTED, Status.ERROR})


@dataclass(frozen=True)
class StatusEvent:
    """One change of status of one revision."""

    repo_id: str
    revision: str
    status: Status
    reason: str = ""
    at: float = field(default_factory=time.time)
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        data = asdict(self)
        data["status"] = self.status.value
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, line: str) -> "StatusEvent":
        data = json.loads(line)
        return cls(
            repo_id=data["repo_id"],
            revision=data["revision"],
            status=Status(data["status"]),
            reason=data.get("reason", ""),
            at=float(data["at"]),
            details=dict(data.get("details", {})),
        )


@dataclass
class RevisionState:
    """Where one revision stands now, and what is known about it."""

    repo_id: str
    revision: str
    status: Status
    reason: str
    first_seen: float
    updated: float
    details: dict[str, Any] = field(default_factory=dict)
    latest: bool = True
    """Whether this is its repo's newest revision (older ones are no longer played)."""

    @property
    def key(self) -> tuple[str, str]:
        return (self.repo_id, self.revision)


class SubmissionRegistry:
    """Statuses of every revision, kept in an append-only log at `path`."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._states: dict[tuple[str, str], RevisionState] = {}
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    self._apply(StatusEvent.from_json(line))
                except (ValueError, KeyError):
                    continue  # a line torn by a crash mid-write

    def _apply(self, event: StatusEvent) -> None:
        key = (event.repo_id, event.revision)
        state = self._states.get(key)
        if state is None:
            for other in self._states.values():  # a new revision supersedes its repo's older ones
                if other.repo_id == event.repo_id:
                    other.latest = False
            state = self._states[key] = RevisionState(event.repo_id, event.revision, event.status, event.reason, event.at, event.at)
        state.status, state.reason, state.updated = event.status, event.reason, event.at
        state.details.update(event.details)

    def record(self, repo_id: str, revision: str, status: Status, reason: str = "", **details: Any) -> RevisionState:
        """Append a status change (durably) and return the revision's new state."""
        event = StatusEvent(repo_id, revision, status, reason, details=details)
        with self._lock:
            with open(self.path, "a") as f:
                f.write(event.to_json() + "\n")
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
        wanted = set(statuses)
        return sorted(
            (s for s in self.states() if s.status in wanted and (s.latest or not latest_only)),
            key=lambda s: s.first_seen,
        )


def sync(api: HfApi, registry: SubmissionRegistry, *, tag: str) -> list[RevisionState]:
    """Discover tagged repos and queue every revision not seen before. Returns the new ones."""
    new = []
    for submission in discover(api, tag=tag):
        if registry.get(submission.repo_id, submission.revision) is None:
            new.append(
                registry.record(
                    submission.repo_id,
                    submission.revision,
                    Status.QUEUED,
                    "waiting for validation",
                    author=submission.author,
                    team_name=submission.display_name,
                    description=submission.description,
                    last_modified=submission.last_modified,
                    size_mb=round(submission.size_bytes / 2**20, 3),
                    files=[[path, size] for path, size in submission.files],
                )
            )
    return new


def validate_queued(
    api: HfApi,
    registry: SubmissionRegistry,
    *,
    downloads: Path,
    max_mb: float,
    ticks: int = 16,
    validator: Callable[..., ValidationReport] = validate,
) -> list[RevisionState]:
    """Check, download and validate every queued latest revision. Returns their new states.

    A revision whose files break the format or the size limit is rejected without being
    downloaded. A failed download (the Hub unreachable) puts it back in the queue.
    """
    done = []
    for state in registry.with_status(Status.QUEUED):
        registry.record(state.repo_id, state.revision, Status.VALIDATING, "checking files")
        submission = Submission(
            repo_id=state.repo_id,
            revision=state.revision,
            author=state.details.get("author", ""),
            last_modified=state.details.get("last_modified", ""),
            files=tuple((str(path), int(size)) for path, size in state.details.get("files", [])),
        )
        problem = format_problem(submission, max_mb=max_mb)
        if problem:
            done.append(registry.record(state.repo_id, state.revision, Status.REJECTED, problem))
            continue
        try:
            folder = download(api, submission, downloads)
        except Exception as exc:  # noqa: BLE001 - the Hub may be away: try again next round
            done.append(registry.record(state.repo_id, state.revision, Status.QUEUED, f"download failed, will retry: {exc}"))
            continue
        registry.record(state.repo_id, state.revision, Status.VALIDATING, "playing a validation match", path=str(folder))
        report = validator(submission.ref(folder), ticks=ticks)
        status = Status.EVALUATING if report.ok else Status.REJECTED
        done.append(
            registry.record(
                state.repo_id,
                state.revision,
                status,
                report.reason,
                max_step_cpu_ms=round(report.max_step_cpu_ms, 1),
                peak_memory_mb=round(report.peak_memory_mb, 1),
            )
        )
    return done


#: Fault kinds that mean the team's process could not go on.
_SEVERE = frozenset({FaultKind.INIT.value, FaultKind.CRASH.value, FaultKind.MEMORY.value})


def faulty(team: TeamResult, ticks: int, *, max_fault_share: float = 0.1) -> str:
    """Why a team's match counts as faulty (its process died, or it faulted on at least
    `max_fault_share` of the ticks), or "" if it played cleanly enough."""
    severe = [f for f in team.faults if f.kind.value in _SEVERE]
    if severe:
        return f"{severe[0].kind.value} at tick {severe[0].tick}: {severe[0].message}"
    if ticks and team.total_faults >= max_fault_share * ticks and team.faults:
        first = team.faults[0]
        return f"{team.total_faults} faults in {ticks} ticks, first {first.kind.value} at tick {first.tick}: {first.message}"
    return ""

