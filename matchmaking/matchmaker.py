"""The matchmaker: discover, validate, PvE, PvP, record, push, on a schedule, for ever.

Each step is a method that does one round and returns; `start()` runs them as
APScheduler interval jobs, each with `max_instances=1` (the same job never runs twice at
once) in background threads, while the matches themselves run in worker processes (or
on Ray): a slow match never blocks the UI.

Everything the matchmaker decides is derived from the history and the status log, never
from memory: after a restart (or a kill -9) it picks up where the records say it was.
PvE matches have seeds fixed per (revision, stage, match), so an interrupted plan is
planned again identically and the history keeps each match once.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from arena.rules import Pairing, stage_opponents
from arena.schema import MatchResult
from arena.settings import ArenaSettings
from history.store import HistoryStore, HubMirror
from matchmaking import pve
from matchmaking.config import MatchConfig
from matchmaking.discovery import Submission, download
from matchmaking.executor import MatchOutcome
from matchmaking.match import MatchSpec, policies_for
from matchmaking.pairing import make_pool
from matchmaking.policy import PolicyRef, builtin
from matchmaking.submissions import Status, SubmissionRegistry, faulty, sync, validate_queued

log = logging.getLogger(__name__)


@dataclass
class _HistoryCache:
    """The history's match records, reread only when the folder changes."""

    store: HistoryStore
    signature: Any = None
    results: list[MatchResult] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self) -> list[MatchResult]:
        with self.lock:
            signature = self.store.signature()
            if signature != self.signature:
                self.results = self.store.results()
                self.signature = signature
            return self.results


class Matchmaker:
    """Runs the Arena's rounds against one Hub, one history and one executor."""

    def __init__(
        self,
        settings: ArenaSettings,
        *,
        api: Any,
        store: HistoryStore,
        registry: SubmissionRegistry,
        executor: Any,
        mirror: HubMirror | None = None,
        workers: int = 1,
    ):
        self.settings = settings
        self.api = api
        self.store = store
        self.registry = registry
        self.executor = executor
        self.mirror = mirror
        self.workers = workers
        self.history = _HistoryCache(store)
        self.config = MatchConfig(horizon=settings.match_horizon)
        self.rng = np.random.default_rng()
        self.scheduler: Any = None

    # -- helpers -------------------------------------------------------------------------
    def _ref(self, repo_id: str, revision: str) -> PolicyRef:
        """The revision's downloaded folder (downloaded again if the disk lost it)."""
        state = self.registry.get(repo_id, revision)
        path = Path(state.details["path"]) if state and state.details.get("path") else None
        if path is None or not (path / "policy.py").is_file():
            submission = Submission(repo_id=repo_id, revision=revision, author="", last_modified="")
            path = download(self.api, submission, self.settings.submissions_dir)
        return PolicyRef(policy_id=repo_id, revision=revision, path=path)

    def _play(self, specs: list[MatchSpec]) -> list[MatchResult]:
        """Play specs not yet in the history; record each as it finishes."""
        todo = [s for s in specs if not self.store.knows(s.match_id)]
        recorded = []
        for outcome in self.executor.run(todo):
            if not self._record(outcome):
                continue
            recorded.append(outcome.result)
        return recorded

    def _record(self, outcome: MatchOutcome) -> bool:
        if outcome.result is None:
            log.warning("match %s failed: %s", outcome.spec.match_id, outcome.error)
            return False
        self.store.record(outcome.result, replay=outcome.replay)
        return True

    def _check_faults(self, results: Iterable[MatchResult]) -> None:
        """Mark revisions that keep failing in matches as `error`, with the last reason."""
        touched = {(t.policy_id, t.revision) for r in results for t in r.teams if not t.policy_id.startswith("builtin:")}
        if not touched:
            return
        history = self.history.get()
        for repo_id, revision in touched:
            state = self.registry.get(repo_id, revision)
            if state is None or state.status in (Status.ERROR, Status.REJECTED):
                continue
            reasons = [
                reason
                for r in history
                for t in r.teams
                if t.policy_id == repo_id and t.revision == revision and (reason := faulty(t, r.ticks))
            ]
            if len(reasons) >= self.settings.error_after_faulty_matches:
                self.registry.record(
                    repo_id, revision, Status.ERROR,
                    f"Faulty in {len(reasons)} matches; latest: {reasons[-1]}. Fix it and push a new commit.",
                )

    # -- rounds --------------------------------------------------------------------------
    def sync(self) -> int:
        """Look at the Hub for new revisions; returns how many were queued."""
        return len(sync(self.api, self.registry, tag=self.settings.submission_tag))

    def validate(self) -> int:
        """Validate queued revisions; returns how many were decided."""
        return len(
            validate_queued(
                self.api,
                self.registry,
                downloads=self.settings.submissions_dir,
                max_mb=self.settings.max_submission_mb,
                ticks=self.settings.validation_ticks,
            )
        )

    def play_pve(self) -> int:
        """Play the next PvE matches of the revisions being evaluated; update their status."""
        history = self.history.get()
        budget = self.settings.pve_matches_per_round or 2 * self.workers
        specs: list[MatchSpec] = []
        for state in self.registry.with_status(Status.EVALUATING):
            plan = pve.plan(
                history, state.repo_id, state.revision,
                matches_per_stage=self.settings.pve_matches_per_stage,
                next_stage_top1=self.settings.next_stage_top1,
            )
            if plan.finished:
                ok, reason = pve.qualifies(plan.summaries, threshold=self.settings.qualify_achievement)
                stages = {
                    s: {"top1_ratio": v.top1_ratio, "mean_achievement": v.mean_achievement} for s, v in plan.summaries.items()
                }
                self.registry.record(state.repo_id, state.revision, Status.QUALIFIED if ok else Status.EVALUATED, reason, pve=stages)
                continue
            if len(specs) >= budget:
                continue
            ref = self._ref(state.repo_id, state.revision)
            opponents = [builtin(name) for name in stage_opponents(plan.stage)]
            for seed in plan.seeds[: budget - len(specs)]:
                specs.append(MatchSpec(seed=seed, policies=policies_for(ref, opponents), config=self.config, track="pve", stage=plan.stage))
        played = self._play(specs)
        self._check_faults(played)
        return len(played)

    def play_pvp(self) -> int:
        """One round of PvP pools among the qualified revisions."""
        qualified = self.registry.with_status(Status.QUALIFIED)
        if not qualified:
            return 0
        from arena.ratings import outcomes, player_id, trueskill_ratings

        refs = {player_id(s.repo_id, s.revision): (s.repo_id, s.revision) for s in qualified}
        history = self.history.get()
        counts: dict[str, int] = {}
        for r in history:
            if r.track == "pvp":
                for t in r.teams:
                    key = player_id(t.policy_id, t.revision)
                    counts[key] = counts.get(key, 0) + 1
        how = Pairing(self.settings.pairing)
        ratings = uncertainty = None
        if how is not Pairing.RANDOM:
            state = trueskill_ratings(outcomes(history))
            ratings = {p: r.mu for p, r in state.ratings.items()}
            uncertainty = {p: r.sigma for p, r in state.ratings.items()}
        specs = []
        for _ in range(self.settings.pvp_matches_per_round or self.workers):
            pool = make_pool(list(refs), counts=counts, rng=self.rng, how=how, ratings=ratings, uncertainty=uncertainty)
            for p in pool:
                counts[p] = counts.get(p, 0) + 1
            lineup = tuple(builtin(p.split(":", 1)[1]) if p.startswith("builtin:") else self._ref(*refs[p]) for p in pool)
            specs.append(MatchSpec(seed=int(self.rng.integers(2**48)), policies=lineup, config=self.config, track="pvp"))
        played = self._play(specs)
        self._check_faults(played)
        return len(played)

    def flush(self) -> None:
        """Move recorded matches into a shard, and make sure the Hub push is running."""
        self.store.flush()
        if self.mirror is not None:
            self.mirror.ensure()

    # -- schedule ------------------------------------------------------------------------
    def _guarded(self, name: str, job: Any) -> Any:
        def run() -> None:
            try:
                job()
            except Exception:  # noqa: BLE001 - a failed round is logged; the next one comes
                log.exception("%s round failed", name)

        run.__name__ = name
        return run

    def start(self) -> Any:
        """Start the background scheduler (each job at most one instance at a time)."""
        from apscheduler.schedulers.background import BackgroundScheduler

        s = self.settings
        scheduler = BackgroundScheduler(job_defaults={"max_instances": 1, "coalesce": True, "misfire_grace_time": 3600})
        for name, job, every in (
            ("sync", self.sync, s.sync_every_s),
            ("validate", self.validate, s.validate_every_s),
            ("pve", self.play_pve, s.pve_every_s),
            ("pvp", self.play_pvp, s.pvp_every_s),
            ("flush", self.flush, s.flush_every_s),
        ):
            scheduler.add_job(self._guarded(name, job), "interval", seconds=every, id=name, name=name, next_run_time=_now())
        scheduler.start()
        self.scheduler = scheduler
        return scheduler

    def stop(self) -> None:
        if self.scheduler is not None:
            self.scheduler.shutdown(wait=False)
            self.scheduler = None
        self.store.flush()


def _now():
    from datetime import datetime

    return datetime.now()
