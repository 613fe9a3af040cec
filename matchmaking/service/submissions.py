"""Submissions, from the Hub to a verdict: discovery rounds and validation rounds.

`sync` queues every revision the Hub shows that the status log has not seen. `Validator`
takes queued revisions through their checks, download and validation match, each in a
worker thread under a time limit, so that one slow download holds nobody else; it also
resumes what a restart interrupted and reconsiders rejections the Space itself caused.
Its decisions are derived from the status log on every round, never from memory: after a
kill -9 the next round picks up where the records stand. The lifecycle itself (statuses
and allowed transitions) is `arena.lifecycle`; the log is `history.statuses`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from huggingface_hub import HfApi

from arena.lifecycle import ACTIVE, RejectionCause, RevisionState, Status
from arena.policies import PolicyRef
from arena.revision import Revision, is_builtin, owner_of
from arena.settings import ArenaSettings
from history.statuses import StatusLog
from history.store import HistoryStore
from matchmaking.engine.config import MatchConfig
from matchmaking.hub.discovery import (
    CARD_FILE,
    discover,
    discover_repo,
    download,
    format_problem,
    kept_active,
    size_problem,
)
from matchmaking.hub.health import HubHealth, answered, describe
from matchmaking.sandbox.isolation import IsolationGate
from matchmaking.service.validation import ValidationReport, validate

log = logging.getLogger(__name__)


def sync(api: HfApi, statuses: StatusLog, *, tag: str, repo_ids: Iterable[str] | None = None) -> list[RevisionState]:
    """Discover tagged repos (every one, or only `repo_ids`, the repos a webhook named) and
    queue every revision not seen before; withdraw the latest revision of a repo that no
    longer carries the tag (or is gone). Returns the new ones."""
    if repo_ids is None:
        found = discover(api, tag=tag)
        looked_at = {state.id.policy_id for state in statuses.states() if state.latest} | {s.id.policy_id for s in found}
    else:
        looked_at = set(repo_ids)
        found = [s for repo_id in sorted(looked_at) if (s := discover_repo(api, repo_id, tag=tag)) is not None]
    _withdraw_untagged(api, statuses, tag=tag, repos=looked_at - {s.id.policy_id for s in found})
    new = []
    for submission in found:
        if statuses.get(submission.id) is not None:
            continue
        latest = next((s for s in statuses.states() if s.id.policy_id == submission.id.policy_id and s.latest), None)
        if (latest is not None and latest.status is not Status.WITHDRAWN and submission.content
                and latest.submission.content == submission.content):
            # only the model card changed (the owner merged the Arena's results pull request, or
            # edited the description): the same policy keeps its revision, its results and its place
            (log.info if repo_ids is not None else log.debug)(
                "%s@%s changes only %s: still the policy of %s", submission.id.policy_id, submission.id.short, CARD_FILE,
                latest.id.short)
            continue
        new.append(statuses.record(submission.id, Status.QUEUED, "waiting for validation",
                                   submission=submission.info()))
    return new


def _withdraw_untagged(api: HfApi, statuses: StatusLog, *, tag: str, repos: Iterable[str]) -> None:
    """Withdraw the latest revision of each of `repos` that the Hub confirms no longer
    carries `tag` (or holds no more): out of every pool and queue, its history kept. Asked
    of the repo itself, one at a time: a listing that came back short never withdraws."""
    for repo_id in sorted(repos):
        if is_builtin(repo_id):
            continue
        latest = next((s for s in statuses.states() if s.id.policy_id == repo_id and s.latest), None)
        if latest is None or latest.status is Status.WITHDRAWN or discover_repo(api, repo_id, tag=tag) is not None:
            continue
        statuses.record(latest.id, Status.WITHDRAWN,
                        f"Withdrawn: the repo no longer carries the tag {tag!r}. Its matches stay in the history; push "
                        "a commit with the tag to take part again.")
        log.info("%s@%s withdrawn: its repo no longer carries the tag %r", repo_id, latest.id.short, tag)


@dataclass
class _Running:
    """One validation in a worker thread."""

    future: Future
    started: float
    abandoned: bool = False
    """Cut off by the time limit: its result, whenever it comes, is dropped."""


@dataclass(frozen=True)
class OwnerLimits:
    """What one owner may have going (`ArenaSettings.owner_active`, `owner_daily`): Kaggle
    tracks 2 agents and takes 5 a day, AI Arena keeps 4 active. 0: no limit. Owners in
    `exempt` (the Arena's seeded submissions; the operator's choice) have none."""

    active: int = 0
    daily: int = 0
    exempt: frozenset[str] = frozenset()

    @classmethod
    def of(cls, settings: ArenaSettings) -> OwnerLimits:
        named = {o.strip() for o in settings.owner_exempt.split(",") if o.strip()}
        return cls(settings.owner_active, settings.owner_daily, frozenset({settings.seed_owner, *named}))

    def waits(self, state: RevisionState, states: Iterable[RevisionState], now: float) -> str:
        """Why `state` (queued) must wait for its owner's daily limit, and until when; "" if it need not."""
        who = owner_of(state.id.policy_id)
        if not self.daily or who in self.exempt:
            return ""
        taken = sorted(s.first_seen for s in states if owner_of(s.id.policy_id) == who and s.status is not Status.QUEUED
                       and s.first_seen >= now - DAY_S)
        if len(taken) < self.daily:
            return ""
        opens = datetime.fromtimestamp(taken[-self.daily] + DAY_S, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        return (f"waiting: {who} has had {len(taken)} new revisions validated in the last 24 hours, the limit of "
                f"{self.daily} a day per owner (NMMO_ARENA_OWNER_DAILY); the next slot opens at {opens}.")

    def over(self, revision: Revision, states: Iterable[RevisionState]) -> list[RevisionState]:
        """The owner's active revisions (`revision`'s among them, recorded as taking part) if
        they are more than `active`; [] if within the limit."""
        who = owner_of(revision.policy_id)
        if not self.active or who in self.exempt:
            return []
        mine = [s for s in states if owner_of(s.id.policy_id) == who and s.status in ACTIVE and s.latest]
        return mine if len(mine) > self.active else []

    def retired(self, revision: Revision, states: Iterable[RevisionState], *, kept: Iterable[str] = ()
                ) -> list[RevisionState]:
        """The owner's active revisions to retire now that `revision` takes part: beyond
        `active`, those of repos not `kept` (their cards' choice: `discovery.kept_active`) first, then
        the oldest seen, so the newest stay by default."""
        keep = set(kept)
        mine = sorted(self.over(revision, states), key=lambda s: (s.id.policy_id in keep, s.first_seen, s.id))
        return mine[: max(0, len(mine) - self.active)]


#: Seconds in the daily limit's window.
DAY_S = 86_400.0


@dataclass
class Validator:
    """The validation rounds of one Space.

    Args:
        api (`HfApi`): the Hub the revisions come from.
        statuses (`StatusLog`): the lifecycle's records.
        downloads (`Path`): where revisions are downloaded.
        max_mb (`float`): the size limit.
        ticks (`int`): length of the validation match.
        timeout_s (`float`): time one revision's download and validation may take.
        attempts (`int`): failures (downloads the Hub refused, or time limits hit) after
            which a revision ends in `error`. Failures with the Hub unreachable do not
            count: they are the Space's trouble, not the revision's.
        workers (`int`): revisions validated at the same time.
        health (`HubHealth`, *optional*): told of every download's outcome.
        validator: the validation itself (a test can slow it down).
        gate (`IsolationGate`, *optional*): whether a downloaded revision's code may run on
            this machine; one that may not waits in the queue with the gate's reason, and is
            not tried again until the Space restarts (the self-test runs once per start).
        store (`HistoryStore`, *optional*): where each validation match is recorded, with its
            replay and the team's log, before its verdict (a rejected author's evidence).
        limits (`OwnerLimits`): what one owner may have going: past its daily limit a
            revision waits, queued; one more active than allowed retires the owner's oldest.
    """

    api: HfApi
    statuses: StatusLog
    downloads: Path
    max_mb: float
    ticks: int = 16
    timeout_s: float = 300.0
    attempts: int = 5
    workers: int = 2
    health: HubHealth | None = None
    validator: Callable[..., ValidationReport] = validate
    gate: IsolationGate | None = None
    store: HistoryStore | None = None
    limits: OwnerLimits = OwnerLimits()
    retry_after_s: float = 15.0
    """Wait before the first retry of a failed revision; doubles with each failure (at most 10 minutes)."""
    _running: dict[Revision, _Running] = field(default_factory=dict, init=False, repr=False)
    _pool: ThreadPoolExecutor | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _held: set[Revision] = field(default_factory=set, init=False, repr=False)
    """Revisions waiting because their code may not run here (see `gate`)."""

    # -- a round -------------------------------------------------------------------------
    def round(self) -> int:
        """Collect finished validations, cut off slow ones, resume interrupted ones,
        reconsider limit rejections, and start queued ones. Returns how many were decided."""
        decided = self._collect()
        self._cut_off_slow()
        self._resume_interrupted()
        self._reconsider_size_rejections()
        self._start_queued()
        return decided

    def run_until_idle(self, timeout_s: float | None = None) -> int:
        """Rounds until no revision is queued or being validated (or `timeout_s` passes).
        Returns how many were decided."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        decided = self.round()
        while any(not r.abandoned for r in self._running.values()) or self._startable():
            if deadline is not None and time.monotonic() > deadline:
                break
            time.sleep(0.05)
            decided += self.round()
        return decided

    def close(self, *, wait: bool = False) -> None:
        """Stop starting validations; `wait` for the running ones (abandoned ones included)."""
        if self._pool is not None:
            self._pool.shutdown(wait=wait, cancel_futures=True)
            self._pool = None

    # -- steps ---------------------------------------------------------------------------
    def _collect(self) -> int:
        decided = 0
        for revision, running in list(self._running.items()):
            if not running.future.done():
                continue
            del self._running[revision]
            if running.abandoned:
                continue  # its attempt was already counted when it was cut off
            try:
                running.future.result()
            except Exception:  # noqa: BLE001 - a bug in the validation itself must not stall the queue
                log.exception("validating %s failed", revision)
                state = self.statuses.get(revision)
                if state is not None and state.status is Status.VALIDATING:
                    self._failed(state, "the Arena failed while validating it (our bug, not yours)", counts=True)
            state = self.statuses.get(revision)
            decided += state is not None and state.status is not Status.QUEUED
        return decided

    def _cut_off_slow(self) -> None:
        now = time.monotonic()
        for revision, running in self._running.items():
            if running.abandoned or now - running.started <= self.timeout_s:
                continue
            with self._lock:
                running.abandoned = True
                state = self.statuses.get(revision)
                if state is not None and state.status is Status.VALIDATING:
                    self._failed(state, f"downloading and validating it took longer than {self.timeout_s:.0f} s", counts=True)

    def _resume_interrupted(self) -> None:
        for state in self.statuses.with_status(Status.VALIDATING, latest_only=False):
            if state.id not in self._running:
                self.statuses.record(state.id, Status.QUEUED, "its validation was interrupted (the Space restarted); validating again")

    def _reconsider_size_rejections(self) -> None:
        for state in self.statuses.with_status(Status.REJECTED):
            if state.cause is RejectionCause.SIZE and state.limit_mb != self.max_mb and not size_problem(state.submission.files, self.max_mb):
                self.statuses.record(state.id, Status.QUEUED,
                                     f"the size limit changed from {state.limit_mb:g} MB to {self.max_mb:g} MB: validating again")

    def _retry_at(self, state: RevisionState) -> float:
        """When a queued revision may start: at once, or after a wait that doubles with
        each counted failure; while the Hub is unreachable, every revision waits."""
        if state.failed_attempts:
            return state.updated + min(600.0, self.retry_after_s * 2 ** (state.failed_attempts - 1))
        if self.health is not None and self.health.reachable is False:
            return state.updated + 4 * self.retry_after_s
        return 0.0

    def _startable(self) -> list[RevisionState]:
        """The queued revisions that may start now, owners in turn: every owner's earliest
        before any owner's second (one owner's flood delays another's by one validation),
        then the owner with fewer waiting, then the earliest seen."""
        now = time.time()
        states = self.statuses.states()
        ready = []
        for s in self.statuses.with_status(Status.QUEUED):
            if s.id in self._running or s.id in self._held or now < self._retry_at(s):
                continue
            wait = self.limits.waits(s, states, now)
            if not wait:
                ready.append(s)
            elif s.reason != wait:  # said once, not every round
                self.statuses.record(s.id, Status.QUEUED, wait)
        mine: dict[str, list[RevisionState]] = {}
        for state in sorted(ready, key=lambda s: (s.first_seen, s.id)):
            mine.setdefault(owner_of(state.id.policy_id) or state.id.policy_id, []).append(state)
        turn = {s.id: (rank, len(queue)) for queue in mine.values() for rank, s in enumerate(queue)}
        return sorted(ready, key=lambda s: (*turn[s.id], s.first_seen, s.id))

    def _start_queued(self) -> None:
        free = self.workers - sum(not r.abandoned for r in self._running.values())
        for state in self._startable()[: max(0, free)]:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="validate")
            self.statuses.record(state.id, Status.VALIDATING, "checking files")
            self._running[state.id] = _Running(self._pool.submit(self._validate, state), time.monotonic())

    # -- one revision, in a worker thread ------------------------------------------------
    def _validate(self, state: RevisionState) -> None:
        key = state.id
        files = state.submission.files
        problem = format_problem(files)
        if problem:
            self._decide(key, Status.REJECTED, problem, cause=RejectionCause.FORMAT)
            return
        problem = size_problem(files, self.max_mb)
        if problem:
            self._decide(key, Status.REJECTED, problem, cause=RejectionCause.SIZE, limit_mb=self.max_mb)
            return
        try:
            folder = download(self.api, key, self.downloads)
        except Exception as exc:  # noqa: BLE001 - the Hub's trouble or the revision's: decided below
            unreachable = self.health.failed(exc, doing="download") if self.health else not answered(exc)
            with self._lock:
                current = self.statuses.get(key)
                if current is not None and not self._abandoned(key):
                    self._failed(current, f"downloading it failed: {describe(exc)}", counts=not unreachable)
            return
        if self.health is not None:
            self.health.ok()
        if self.gate is not None and not self.gate.may_run(folder):
            self._held.add(key)
            self._decide(key, Status.QUEUED, self.gate.reason(), download_path=str(folder))
            return
        if not self._decide(key, Status.VALIDATING, "playing a validation match", download_path=str(folder)):
            return
        withhold = self.gate is not None and self.gate.withholds()  # what it says, if isolation is in doubt: the operator's
        report = self.validator(PolicyRef(key, path=folder), ticks=self.ticks,
                                config=MatchConfig(withhold_policy_words=withhold))
        if self.store is not None and report.match is not None and not self._abandoned(key):
            self.store.record(report.match, replay=report.replay, logs=report.logs)  # once: its id is its spec's
        with self._lock:  # the clone check and the verdict at once: of two copies validated together, one passes
            if self._abandoned(key):
                return
            original = clone_of(key, report.measurements.play_digest, self.statuses.states()) if report.ok else None
            if original is not None:
                self.statuses.record(key, Status.REJECTED, duplicate_reason(original), measurements=report.measurements,
                                     failed_attempts=0, cause=RejectionCause.DUPLICATE)
            else:
                self.statuses.record(key, Status.EVALUATING if report.ok else Status.REJECTED, report.reason,
                                     measurements=report.measurements, failed_attempts=0,
                                     cause=None if report.ok else RejectionCause.POLICY)
                if report.ok:
                    self._retire(key)

    def _retire(self, key: Revision) -> None:
        """Past its owner's active limit now that `key` takes part: retire the revisions the
        owner's cards do not keep, the oldest first (`OwnerLimits.retired`)."""
        states = self.statuses.states()
        over = self.limits.over(key, states)
        if not over:
            return
        kept = set()
        for state in over:  # a card the Hub cannot show now keeps its revision: no one retired by an outage
            try:
                if kept_active(self.api, state.id.policy_id):
                    kept.add(state.id.policy_id)
            except Exception as exc:  # noqa: BLE001 - see above
                log.warning("cannot read the card of %s (%s): kept active for now", state.id.policy_id, exc)
                kept.add(state.id.policy_id)
        who = owner_of(key.policy_id)
        for old in self.limits.retired(key, states, kept=kept):
            why = (f"the cards of {who}'s other repos keep them (nmmo_arena: {{keep: true}}: {', '.join(sorted(kept))})"
                   if kept else f"newer revisions of {who} take part")
            self.statuses.record(old.id, Status.WITHDRAWN, (
                f"retired: {why}, and an owner has at most {self.limits.active} revisions taking part at once "
                "(NMMO_ARENA_OWNER_ACTIVE); its matches and figures stay. Push a new commit to it to take part again, "
                "or keep it with nmmo_arena: {keep: true} in its card's metadata."))

    def _abandoned(self, key: Revision) -> bool:
        running = self._running.get(key)
        return running is not None and running.abandoned

    def _decide(self, key: Revision, status: Status, reason: str, **details: Any) -> bool:
        """Record a step of a validation unless the time limit cut it off meanwhile."""
        with self._lock:
            if self._abandoned(key):
                return False
            self.statuses.record(key, status, reason, **details)
            return True

    def _failed(self, state: RevisionState, why: str, *, counts: bool) -> None:
        """A failed attempt: back in the queue, or `error` once it failed `attempts` times."""
        failures = state.failed_attempts + (1 if counts else 0)
        if counts and failures >= self.attempts:
            self.statuses.record(state.id, Status.ERROR, f"{why}. Failed {failures} times, so it will not be retried: "
                                 "check that the repo and its files download (`hf download REPO --revision SHA`), "
                                 "then push a new commit.", failed_attempts=failures)
        elif counts:
            self.statuses.record(state.id, Status.QUEUED, f"{why}; will retry (attempt {failures} of {self.attempts} failed)",
                                 failed_attempts=failures)
        else:
            self.statuses.record(state.id, Status.QUEUED, f"{why}; the Hub is unreachable, will retry when it answers",
                                 failed_attempts=failures)


def clone_of(revision: Revision, digest: str | None, states: Iterable[RevisionState]) -> Revision | None:
    """The active revision of another owner that plays exactly as `revision` did in the
    seeded validation match (the same `play_digest`), the earliest seen; None if none. An
    owner may replace its own: its own revisions never count."""
    if not digest:
        return None
    same = [s for s in states if s.status in ACTIVE and s.latest and owner_of(s.id.policy_id) != owner_of(revision.policy_id)
            and s.measurements is not None and s.measurements.play_digest == digest]
    return min(same, key=lambda s: (s.first_seen, s.id)).id if same else None


def duplicate_reason(original: Revision) -> str:
    """Why a clone of `original` is refused, and what to do."""
    return (f"DUPLICATE: it plays exactly as {original.policy_id}@{original.short}, another owner's entry: the same "
            "moves, tick for tick, in the seeded validation match. A copy of an entry is not a new entry (near-clones "
            "inflate one policy's best rank). Change how it plays and push a new commit; if the other repo copied "
            "yours, tell the Space's operator.")


def validate_queued(api: HfApi, statuses: StatusLog, *, downloads: Path, max_mb: float, ticks: int = 16,
                    validator: Callable[..., ValidationReport] = validate,
                    limits: OwnerLimits = OwnerLimits()) -> list[RevisionState]:
    """Validate every queued revision now and wait for the verdicts (scripts and tests).
    Returns the revisions' new states."""
    queued = [s.id for s in statuses.with_status(Status.QUEUED)]
    runner = Validator(api, statuses, downloads, max_mb, ticks=ticks, validator=validator, limits=limits)
    try:
        runner.run_until_idle()
    finally:
        runner.close()
    return [state for key in queued if (state := statuses.get(key)) is not None]


