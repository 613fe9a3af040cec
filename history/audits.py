"""The audit log: recorded matches played again, and whether they came out the same.

The matchmaker reruns a few recorded matches in idle time (`Matchmaker.audit`, with the
code of `python -m matchmaking.rerun`) and appends each verdict here, one JSON line per
audit, in `audits/audits-<writer>.jsonl` of the history folder (`history.journal`: one
file per writer of the dataset, read as one log): it is pushed with the dataset, so
anyone can see which matches the Space checked and what it found. The file is only ever
appended to, each line in one `write` of an `O_APPEND` descriptor then fsynced, so a line
is never interleaved with another; a line torn by a crash is skipped when read (and
named in the log), never fatal.

Which match to audit next, and the About tab's "N of N audited matches reproduced", are
pure functions of the history and this log (`next_to_audit`, `summarize`).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.records import Format, Record
from arena.schema import MatchResult
from history.journal import Journal

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Audit(Record):
    """One rerun of one recorded match by the Space, and its verdict."""

    match_id: str
    identical: bool
    """Whether the rerun's record equals the recorded one, wall-clock fields aside."""
    difference: Mapping[str, Any] | None
    """The first difference, `{"path": "teams[3].achievement", "recorded": ..., "rerun": ...}`;
    None when identical."""
    audited_at: str
    """UTC time of the audit, ISO 8601."""
    nmmo_version: str
    arena_version: str
    """Versions the rerun was played with (the record's: other versions are not audited)."""
    duration_s: float
    """Wall time of the rerun, downloads included."""
    track: str = ""
    """The recorded match's track (`pve`, `pvp`)."""

    FORMAT = Format(defaults={"duration_s": 0.0})  # the first audits did not time the rerun


class AuditLog:
    """The audits, in every writer's append-only JSON-lines file beside `path`
    (`audits/audits-<writer>.jsonl`, `history.journal`; the single `audits.jsonl` of the
    layout before writers is read too).

    Args:
        path (`Path`): the log's single-file name (`.../audits/audits.jsonl`).
        writer (`str`, *optional*): this writer's id (None: append to `path` itself).
    """

    def __init__(self, path: Path, *, writer: str | None = None):
        self.path = Path(path)
        self.journal = Journal(self.path, writer=writer, order=lambda a: str(a.get("audited_at", "")))
        self._reported: set[str] = set()

    def append(self, audit: Audit) -> None:
        """Add one audit durably: one write of a whole line, then fsync."""
        self.journal.append(audit.to_dict())

    def read(self) -> list[Audit]:
        """Every audit of every writer, oldest first; damaged lines skipped (each named once in the log)."""
        audits = []
        for record in self.journal.read():
            try:
                audits.append(Audit.from_dict(record))
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                key = json.dumps(record, sort_keys=True)[:200]
                if key not in self._reported:
                    self._reported.add(key)
                    log.warning("audit log %s: a record is damaged (%s: %s); skipped", self.path.parent, type(exc).__name__, exc)
        return audits


def audit_order(match_id: str) -> str:
    """A fixed pseudo-random order of match ids: the sample is spread over the history
    (not only its oldest matches), and the same on every restart."""
    return hashlib.sha256(match_id.encode()).hexdigest()


def auditable(result: MatchResult, *, nmmo_version: str, arena_version: str) -> bool:
    """Whether the Space can rerun `result` as it is installed: recorded with the same nmmo
    and Arena versions, and played by the Space (not the evaluation tool's `local` track)."""
    return result.track != "local" and result.nmmo_version == nmmo_version and result.arena_version == arena_version


def next_to_audit(history: Iterable[MatchResult], audited: Iterable[str], *, nmmo_version: str,
                  arena_version: str) -> MatchResult | None:
    """The next match to rerun: of those not yet audited and auditable, the first in a
    fixed pseudo-random order of match ids; None when every such match has been audited."""
    done = set(audited)
    candidates = [r for r in history if r.match_id not in done and auditable(r, nmmo_version=nmmo_version, arena_version=arena_version)]
    return min(candidates, key=lambda r: audit_order(r.match_id), default=None)


@dataclass(frozen=True)
class AuditSummary:
    """What the audits found, for the About tab."""

    audited: int
    """Matches audited (each counted once: its latest audit)."""
    reproduced: int
    """Of those, the ones whose rerun was identical."""
    failed: tuple[Audit, ...]
    """The latest audit of each match that did not reproduce."""
    other_version: int
    """Recorded matches not audited because they were played with another nmmo or Arena
    version than the one installed."""

    @property
    def line(self) -> str:
        """`3 of 3 audited matches reproduced` (the words stay the same for 1 of 1)."""
        return f"{self.reproduced} of {self.audited} audited matches reproduced"


def other_versions(history: Iterable[MatchResult], *, nmmo_version: str, arena_version: str) -> int:
    """Recorded matches the audit cannot rerun here: played by the Space (not the evaluation
    tool's `local` track) with another nmmo or Arena version than the one installed."""
    return sum(1 for r in history if r.track != "local" and (r.nmmo_version, r.arena_version) != (nmmo_version, arena_version))


def summarize(audits: Iterable[Audit], *, other_version: int) -> AuditSummary:
    """The audits' verdicts, one per match (its latest audit), and how many recorded
    matches are out of the audit's reach because of their versions (`other_versions`)."""
    latest: dict[str, Audit] = {}
    for audit in audits:
        latest[audit.match_id] = audit
    failed = tuple(a for a in latest.values() if not a.identical)
    return AuditSummary(audited=len(latest), reproduced=len(latest) - len(failed), failed=failed, other_version=other_version)
