"""A submitted revision's lifecycle: its statuses, the transitions allowed, what each records.

Every revision moves through::

    queued -> validating -> rejected (reason)      the format, the size or the validation match
                         -> evaluating             validated: plays PvE
                         -> queued                 retried: download failed, took too long,
                                                   or the Space restarted mid-validation
                         -> error (reason)         downloads kept failing
    evaluating -> qualified                        PvE stage 1 decided at or above the PvP bar:
                                                   plays PvP (and its later PvE stages)
               -> evaluated (reason)               PvE stage 1 decided below the PvP bar
                                                   (its later PvE stages still played)
    qualified -> qualified, evaluated -> evaluated a later PvE stage's figures recorded
    evaluating, qualified, evaluated -> error      repeated faults in matches
    rejected -> queued                             only a rejection by the Space's own size
                                                   limit, once that limit has changed
    any of them -> withdrawn                       its repo no longer carries the Arena's tag
                                                   (`python -m matchmaking.submit --withdraw`):
                                                   out of every pool, its history kept

`TRANSITIONS` is that diagram as data; `check_transition` enforces it for every new
event. A new commit to a repo is a new revision with its own lifecycle; the older one
keeps its results (they stay true of that code) but is no longer scheduled.

Events carry typed details (`SubmissionInfo`, `Measurements`, `StageFigures`, the
rejection's `RejectionCause`), so that the matchmaker, the status log and the pages read
the same fields. The log itself (append-only JSON lines) is `history.statuses`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field, replace
from enum import Enum
from typing import Any

from arena.errors import TransitionError
from arena.records import Format, Record
from arena.revision import Revision


class Status(str, Enum):
    QUEUED = "queued"
    VALIDATING = "validating"
    REJECTED = "rejected"
    EVALUATING = "evaluating"
    EVALUATED = "evaluated"
    QUALIFIED = "qualified"
    ERROR = "error"
    WITHDRAWN = "withdrawn"


#: Allowed changes of status (None: a revision not seen before).
_OUT = frozenset({Status.WITHDRAWN})
"""The owner may withdraw a revision from any status (its repo no longer carries the tag)."""

TRANSITIONS: dict[Status | None, frozenset[Status]] = {
    None: frozenset({Status.QUEUED}),
    Status.QUEUED: frozenset({Status.VALIDATING, Status.QUEUED}) | _OUT,
    Status.VALIDATING: frozenset({Status.VALIDATING, Status.QUEUED, Status.EVALUATING, Status.REJECTED, Status.ERROR}) | _OUT,
    Status.EVALUATING: frozenset({Status.QUALIFIED, Status.EVALUATED, Status.ERROR}) | _OUT,
    Status.QUALIFIED: frozenset({Status.QUALIFIED, Status.ERROR}) | _OUT,
    Status.EVALUATED: frozenset({Status.EVALUATED, Status.ERROR}) | _OUT,
    Status.REJECTED: frozenset({Status.QUEUED}) | _OUT,
    Status.ERROR: _OUT,
    Status.WITHDRAWN: frozenset(),
}

#: Statuses after which a revision is never played again.
FINAL = frozenset({Status.REJECTED, Status.ERROR, Status.WITHDRAWN})

#: Statuses of work the Space still owes a revision: resumed after a restart.
IN_FLIGHT = frozenset({Status.QUEUED, Status.VALIDATING, Status.EVALUATING})


#: The statuses of a revision that takes part (PvE or PvP): what an owner's active limit counts.
ACTIVE = frozenset({Status.EVALUATING, Status.QUALIFIED, Status.EVALUATED})


class RejectionCause(str, Enum):
    """Why a revision was rejected, which decides whether it is ever reconsidered."""

    FORMAT = "format"
    """The repo's layout: no `policy.py` at its root."""
    SIZE = "size"
    """Over the Space's size limit: reconsidered when the limit changes."""
    POLICY = "policy"
    """Its team faulted in the validation match."""
    DUPLICATE = "duplicate"
    """It plays exactly as another owner's active revision (`Measurements.play_digest`)."""


@dataclass(frozen=True)
class SubmissionInfo:
    """What discovery saw of a revision on the Hub."""

    author: str = ""
    team_name: str = ""
    description: str = ""
    last_modified: str = ""
    size_mb: float = 0.0
    files: tuple[tuple[str, int], ...] = ()
    """(path, size in bytes) of every file at that commit."""
    content: str = ""
    """A digest of the policy's files (every file but the model card, by its blob id): two
    commits with the same content are the same policy ("" when the Hub gave no blob ids)."""


@dataclass(frozen=True)
class Measurements:
    """What validation measured of a revision's team in its sandbox: the time its `act`
    took per tick (median and 99th percentile, wall clock), the most CPU one tick took,
    and the most memory it used beyond the interpreter and the preloaded frameworks."""

    max_step_cpu_ms: float = 0.0
    peak_memory_mb: float = 0.0
    median_step_ms: float = 0.0
    p99_step_ms: float = 0.0
    play_digest: str | None = None
    """A digest of the team's play in the seeded validation match (its members' positions and
    vitals, tick by tick): two revisions that play alike have the same one. None for a team
    that never moved (idle teams are alike without being copies), and in records written
    before it existed (left out of the line when None)."""

    FORMAT = Format(omit_none=True)


@dataclass(frozen=True)
class StageFigures:
    """A revision's result in one PvE stage."""

    stage: int
    top1_ratio: float
    mean_achievement: float
    matches: int = 0


@dataclass(frozen=True)
class StatusEvent(Record):
    """One change of status of one revision, with whatever it established.

    In the status log (`history.statuses`) the revision is written as `repo_id` and
    `revision`, and the details it does not carry are left out.
    """

    id: Revision
    status: Status
    reason: str = ""
    at: float = field(default_factory=time.time)
    _: KW_ONLY  # the details, in the log's order
    download_path: str | None = None
    failed_attempts: int | None = None
    """Downloads or validations of this revision that failed so far (reset by success)."""
    limit_mb: float | None = None
    """For a SIZE rejection: the size limit it was judged against."""
    submission: SubmissionInfo | None = None
    measurements: Measurements | None = None
    pve: tuple[StageFigures, ...] | None = None
    cause: RejectionCause | None = None

    FORMAT = Format(keys={"id": ("repo_id", "revision")}, omit_none=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StatusEvent:
        """Read an event; also reads the first log format, whose details were one loose dict.

        Raises:
            `KeyError`, `ValueError`, `TypeError`: not an event.
        """
        legacy = dict(data.get("details") or {})
        if not legacy:
            return super().from_dict(data)
        data = dict(data)
        if data.get("submission") is None and any(k in legacy for k in ("author", "team_name", "files")):
            data["submission"] = {k: legacy[k] for k in ("author", "team_name", "description", "last_modified", "size_mb", "files") if k in legacy}
        if data.get("measurements") is None and "peak_memory_mb" in legacy:
            data["measurements"] = {k: legacy[k] for k in ("max_step_cpu_ms", "peak_memory_mb") if k in legacy}
        if data.get("pve") is None and isinstance(legacy.get("pve"), Mapping):
            data["pve"] = [{"stage": int(s), **v} for s, v in legacy["pve"].items()]
        data.setdefault("download_path", legacy.get("path"))
        return super().from_dict(data)


@dataclass(frozen=True)
class RevisionState:
    """Where one revision stands now, and everything its events established."""

    id: Revision
    status: Status
    reason: str
    first_seen: float
    updated: float
    submission: SubmissionInfo = SubmissionInfo()
    download_path: str | None = None
    failed_attempts: int = 0
    measurements: Measurements | None = None
    pve: tuple[StageFigures, ...] = ()
    cause: RejectionCause | None = None
    limit_mb: float | None = None
    latest: bool = True
    """Whether this is its repo's newest revision (older ones are no longer played)."""

    def apply(self, event: StatusEvent) -> RevisionState:
        """The state after `event` (fields an event leaves unset keep their value)."""
        changes: dict[str, Any] = {"status": event.status, "reason": event.reason, "updated": event.at}
        if event.submission is not None:
            changes["submission"] = event.submission
        if event.download_path is not None:
            changes["download_path"] = event.download_path
        if event.failed_attempts is not None:
            changes["failed_attempts"] = event.failed_attempts
        if event.measurements is not None:
            changes["measurements"] = event.measurements
        if event.pve is not None:
            changes["pve"] = event.pve
        changes["cause"] = event.cause if event.status is Status.REJECTED else None
        changes["limit_mb"] = event.limit_mb if event.status is Status.REJECTED else None
        return replace(self, **changes)

    def stale(self, event: StatusEvent) -> bool:
        """Whether `event` would put this revision behind where it stands: back from its
        PvE verdict (qualified or evaluated) or its withdrawal where the lifecycle allows no way back, or PvE
        figures of fewer matches than it holds. Such an event comes from a writer that
        decided from less of the history than the dataset holds (two writers around a change
        of leader): it is not recorded, and a reader that meets one in older data keeps the
        more advanced state. (Earlier lifecycles allowed other changes, which still read.)"""
        if self.status in VERDICTS | {Status.WITHDRAWN} and event.status not in TRANSITIONS[self.status]:
            return True
        return event.pve is not None and bool(self.pve) and pve_progress(event.pve) < pve_progress(self.pve)

    @classmethod
    def first(cls, event: StatusEvent) -> RevisionState:
        """The state a revision's first event creates."""
        return cls(event.id, event.status, "", event.at, event.at).apply(event)


#: A revision's PvE verdicts: from them the lifecycle goes on only to the same or to `error`.
VERDICTS = frozenset({Status.QUALIFIED, Status.EVALUATED})


def pve_progress(figures: tuple[StageFigures, ...]) -> tuple[int, int]:
    """How far PvE figures have got: the latest stage, then the matches played in all stages.

    Example:
        >>> pve_progress((StageFigures(1, 0.5, 30.0, 10), StageFigures(2, 0.2, 21.0, 4)))
        (2, 14)
    """
    return max((f.stage for f in figures), default=0), sum(f.matches for f in figures)


def check_transition(state: RevisionState | None, status: Status) -> None:
    """Refuse a change of status the lifecycle does not allow.

    Raises:
        `TransitionError`: naming the revision, both statuses, and the allowed ones.
    """
    current = None if state is None else state.status
    if status not in TRANSITIONS[current]:
        allowed = ", ".join(sorted(s.value for s in TRANSITIONS[current])) or "none (it is final)"
        name = "a new revision" if state is None else f"{state.id.policy_id}@{state.id.short}"
        raise TransitionError(
            f"{name} cannot go from {current.value if current else 'unseen'} to {status.value}; allowed: {allowed}."
        )
