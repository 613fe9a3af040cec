"""The matchmaker: discover, validate, PvE, PvP, record, push, on a schedule, for ever.

Each step is a method that does one round and returns; `start()` runs them as
APScheduler interval jobs, each with `max_instances=1` (the same job never runs twice at
once) in background threads, while the matches themselves run in worker processes (or
on Ray): a slow match never blocks the UI.

Everything the matchmaker decides is derived from the history and the status log, never
from memory: after a restart (or a kill -9) it picks up where the records say it was
(validations cut short are validated again, PvE plans are resumed). What it needs of the
ratings (uncertainty-first pools) is the pure rating code of `arena.ratings`,
carried forward from a checkpoint as matches arrive rather than recomputed every round.
PvE matches have seeds fixed per (revision, stage, match), so an interrupted plan is
planned again identically and the history keeps each match once. The history is read
through the index the leaderboard shares (`history.index`): each match once, a moment after
it is recorded.

In idle time (no PvE work owed, no match of its own being played) the matchmaker audits
itself: at most once every `NMMO_ARENA_AUDIT_MINUTES` it reruns one recorded match with
the code of `python -m matchmaking.rerun` and appends the verdict to the audit log
(`history.audits`), which the About tab sums up.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Iterable
from contextlib import nullcontext
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from huggingface_hub import HfApi

from arena import ARENA_VERSION
from arena.activity import LiveMatch, QueueEntry
from arena.errors import MatchFailedError, NotReproducibleError
from arena.lifecycle import TRANSITIONS, RevisionState, StageFigures, Status
from arena.policies import PolicyRef, builtin
from arena.ratings import TrueSkillState, extend_trueskill
from arena.revision import Revision, is_builtin
from arena.rules import Pairing, stage_opponents
from arena.schema import MatchResult
from arena.settings import ArenaSettings
from history.audits import Audit, AuditLog, AuditSummary, summarize
from history.incidents import MAX_ATTEMPTS, MESSAGE_CHARS, Cause, Incident, IncidentLog, given_up, incident_log_path
from history.index import HistoryIndex
from history.mirror import HubMirror
from history.statuses import StatusLog
from history.store import HistoryStore
from history.writers import Writers
from matchmaking.engine import game, maps
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec, policies_for
from matchmaking.hub.discovery import download
from matchmaking.hub.health import HubHealth
from matchmaking.sandbox.isolation import IsolationGate
from matchmaking.service import pve, pve_queue
from matchmaking.service.executor import MatchExecutor, MatchOutcome
from matchmaking.service.pairing import make_pool
from matchmaking.service.rerun import HubFetcher, rerun
from matchmaking.service.submissions import OwnerLimits, Validator, sync

log = logging.getLogger(__name__)


class Matchmaker:
    """Runs the Arena's rounds against one Hub, one history and one executor."""

    def __init__(
        self,
        settings: ArenaSettings,
        *,
        api: HfApi,
        store: HistoryStore,
        index: HistoryIndex | None = None,
        statuses: StatusLog,
        executor: MatchExecutor,
        mirror: HubMirror | None = None,
        health: HubHealth | None = None,
        workers: int = 1,
        writers: Writers | None = None,
        isolation: IsolationGate | None = None,
    ):
        self.settings = settings
        self.isolation = isolation
        """Whether submitted code may run here (`matchmaking.isolation`); None: always."""
        self.writers = writers
        """This Space as a writer of the dataset (`history.writers`); None: its only writer."""
        self.leads = writers.leads if writers is not None else (lambda: True)
        """Whether this Space leads the dataset's writers (`history.writers`): discovery,
        validation, PvE and audits are the leader's work alone (two writers never play the
        same owed PvE match); every writer plays PvP."""
        self.api = api
        self.store = store
        self.statuses = statuses
        self.executor = executor
        self.mirror = mirror
        self.health = health
        self.workers = workers
        self.history = index if index is not None else HistoryIndex(store)
        """What the matchmaker reads of the history (`history.index`: in a Space, shared with the tables)."""
        self.versions = (game.NMMO_VERSION, ARENA_VERSION)
        """What is installed: only matches played with these can be audited here."""
        self._trueskill = TrueSkillState()
        """TrueSkill of the PvP results read so far: the rated pairings' sigmas, carried forward."""
        # PvP plays the held-out maps of the Space's key; PvE and validation the published ones
        self._config = MatchConfig(horizon=settings.match_horizon, cache_dir=settings.cache_dir,
                                   map_key=maps.space_key(settings))
        self.validator = Validator(
            api, statuses, settings.submissions_dir, settings.max_submission_mb,
            ticks=settings.validation_ticks, timeout_s=settings.validation_timeout_s,
            attempts=settings.download_attempts, workers=settings.validation_workers, health=health,
            gate=isolation, store=store, limits=OwnerLimits.of(settings),
        )
        self.rng = np.random.default_rng()
        self.scheduler: Any = None
        self.pve_queue: list[pve_queue.PveWork] = []
        """The PvE work owed at the last round (`queue` forecasts from it)."""
        self._in_flight: dict[Revision, list[int]] = {}
        self._stopping = threading.Event()
        self._queue_work: list[pve_queue.PveWork] = []
        self._queue_signature: Any = None
        self._sync_lock = threading.Lock()
        """Held by every discovery (scheduled, or for a webhook's push): one at a time."""
        writer = writers.writer if writers is not None else None
        self.audits = AuditLog(settings.audit_log, writer=writer)
        self.incidents = IncidentLog(incident_log_path(settings.history_dir), writer=writer)
        """Matches lost to the platform (`history.incidents`): never rated, played again."""
        self._playing = 0
        """PvE and PvP batches being played now (the audit waits for none)."""
        self._playing_lock = threading.Lock()
        self._audit_tried = 0.0
        """When the last audit was tried (Unix time), successful or not: a failing one is
        not retried before the next is due."""
        self._unauditable: set[str] = set()
        """Matches whose record cannot be replayed (`NotReproducibleError`: a revision gone
        from the Hub, a held-out map): skipped by later audits until a restart."""
        self._pve_looked = False
        self.discovered = threading.Event()
        """Set once a discovery round has run (found something or not): what happens after
        it is up to webhooks and the next scheduled round."""

    # -- helpers -------------------------------------------------------------------------
    def _ref(self, revision: Revision) -> PolicyRef:
        """The revision's downloaded folder (downloaded again if the disk lost it)."""
        state = self.statuses.get(revision)
        path = Path(state.download_path) if state and state.download_path else None
        if path is None or not (path / "policy.py").is_file():
            path = download(self.api, revision, self.settings.submissions_dir)
        return PolicyRef(revision, path=path)

    def _try_ref(self, revision: Revision) -> PolicyRef | None:
        """`_ref`, or None while the Hub cannot serve a lost download (that revision waits
        for a later round; the others play on)."""
        try:
            return self._ref(revision)
        except Exception as exc:  # noqa: BLE001 - an outage is reported once; anything else is logged
            if self.health is None or not self.health.failed(exc, doing=f"downloading {revision.policy_id}"):
                log.warning("cannot fetch %s@%s to play it: %s", revision.policy_id, revision.short, exc)
            return None

    @property
    def config(self) -> MatchConfig:
        """The rules and limits of the matches it plays now: what submitted teams say is
        withheld while this machine's isolation is in doubt (`IsolationGate.withholds`)."""
        withhold = self.isolation is not None and self.isolation.withholds()
        return dataclasses.replace(self._config, withhold_policy_words=True) if withhold else self._config

    def _may_run(self, ref: PolicyRef | None) -> bool:
        """Whether `ref`'s code may run on this machine (`matchmaking.isolation`)."""
        return ref is not None and (self.isolation is None or ref.is_builtin or self.isolation.may_run(ref.path))

    def _play(self, specs: list[MatchSpec]) -> list[MatchResult]:
        """Play specs not yet in the history, not given up (`history.incidents`), whose
        every team may run here; record each as it finishes. A match lost to the platform is
        recorded as an incident, not as a match, and played again (the same spec, so the
        same match id) until it has had `MAX_ATTEMPTS`."""
        lost = self.incidents.attempts()
        todo = [s for s in specs if not self.store.knows(s.match_id) and not given_up(lost[s.match_id])
                and all(self._may_run(p) for p in s.policies)]
        recorded = []
        with self._playing_lock:
            self._playing += 1
        try:
            while todo:
                again = []
                for outcome in self.executor.run(todo):
                    if (result := self._record(outcome)) is not None:
                        recorded.append(result)
                    elif self._lost(outcome):
                        again.append(outcome.spec)
                todo = again
        finally:
            with self._playing_lock:
                self._playing -= 1
        return recorded

    def _record(self, outcome: MatchOutcome) -> MatchResult | None:
        """Record a finished match in the history (rated from there); None for a lost one."""
        if outcome.result is None:
            return None
        self.store.record(outcome.result, replay=outcome.replay, logs=outcome.logs)
        return outcome.result

    def _lost(self, outcome: MatchOutcome) -> bool:
        """A match the platform lost: appended to the incident log with its cause (nothing
        of it goes into the history, so it is neither rated nor counted as played); returns
        whether it is played again. Lost because the Space is stopping: only logged (a PvE
        match is owed at the next start anyway)."""
        spec = outcome.spec
        if self._stopping.is_set():
            log.info("match %s abandoned: the Space is stopping (%s)", spec.match_id, outcome.error)
            return False
        attempt = self.incidents.attempts()[spec.match_id] + 1
        incident = Incident(
            match_id=spec.match_id, failed_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            track=spec.track, stage=spec.stage, seed=spec.seed,
            submissions=tuple(p.id.player for p in spec.policies if not p.is_builtin),
            cause=outcome.cause or Cause.ENGINE_ERROR,  # an executor that names no cause: the match raised
            message=(outcome.error or "")[:MESSAGE_CHARS], attempt=attempt, max_attempts=MAX_ATTEMPTS,
            replanned=not given_up(attempt), node=outcome.node,
        )
        self.incidents.append(incident)
        log.warning("match %s lost to the platform (%s: %s); %s", spec.match_id, incident.cause.value, outcome.error,
                    incident.line)
        return incident.replanned

    def _check_faults(self, results: Iterable[MatchResult]) -> None:
        """Mark revisions that keep failing in matches as `error`, with the last reason."""
        touched = {Revision(t.policy_id, t.revision) for r in results for t in r.teams if not is_builtin(t.policy_id)}
        if not touched:
            return
        self.history.refresh()
        for revision in sorted(touched):
            state = self.statuses.get(revision)
            if state is None or Status.ERROR not in TRANSITIONS[state.status]:
                continue
            reasons = self.history.faulty_reasons(revision)
            if len(reasons) >= self.settings.error_after_faulty_matches:
                self.statuses.record(
                    revision, Status.ERROR,
                    f"Faulty in {len(reasons)} matches; latest: {reasons[-1]}. Fix it and push a new commit.",
                )

    # -- rounds --------------------------------------------------------------------------
    def sync(self, repo_ids: Iterable[str] | None = None) -> int:
        """Look at the Hub for new revisions (of every tagged repo, or of `repo_ids` only: the
        repos a webhook said were pushed); returns how many were queued (0 while the Hub is
        unreachable: the Hub status says so, and the next round looks again)."""
        if not self.leads():
            return 0
        try:
            with self._sync_lock:
                queued = sync(self.api, self.statuses, tag=self.settings.submission_tag, repo_ids=repo_ids)
        except Exception as exc:  # noqa: BLE001 - classified: an outage is reported once, a bug is raised
            if self.health is None or not self.health.failed(exc, doing="discovery"):
                raise
            return 0
        finally:
            self.discovered.set()
        if self.health is not None:
            self.health.ok()
        return len(queued)

    def validate(self) -> int:
        """Validation rounds until nothing queued can start (see `Validator.round`: each
        revision in its own thread, under its time limit); returns how many were decided."""
        if not self.leads():
            return 0
        return self.validator.run_until_idle()

    def _plans(self) -> list[tuple[RevisionState, pve.PvePlan]]:
        """Every latest revision in PvE (evaluating, or qualified or evaluated with later
        stages to play) with its plan, judged from the history alone."""
        s = self.settings
        self.history.refresh()
        return [
            (state, pve.plan(self.history.pve_results(state.id), state.id, matches_per_stage=s.pve_matches_per_stage,
                             next_stage_top1=s.next_stage_top1, qualify_achievement=s.qualify_achievement))
            for state in self.statuses.with_status(Status.EVALUATING, Status.QUALIFIED, Status.EVALUATED)
        ]

    def _pve_work(self) -> list[tuple[RevisionState, pve.PvePlan]]:
        """The revisions still owed PvE matches, with their plans; records each verdict as it
        becomes known: stage 1 decided -> qualified or evaluated, later stages' figures."""
        s = self.settings
        owed = []
        for state, plan in self._plans():
            stages = tuple(StageFigures(stage, v.top1_ratio, v.mean_achievement, v.matches) for stage, v in sorted(plan.summaries.items()))
            if 1 in plan.summaries and (state.status is Status.EVALUATING or stages != state.pve):
                ok, reason = pve.qualifies(plan.summaries, threshold=s.qualify_achievement, of=s.pve_matches_per_stage)
                status = state.status if state.status is not Status.EVALUATING else Status.QUALIFIED if ok else Status.EVALUATED
                more = "" if plan.finished else f"; PvE stage {plan.stage} being played"
                state = self.statuses.record(state.id, status, reason + more, pve=stages)
            if not plan.finished:
                owed.append((state, plan))
        return owed

    def _work(self, owed: list[tuple[RevisionState, pve.PvePlan]]) -> list[pve_queue.PveWork]:
        seeded = f"{self.settings.seed_owner}/"
        return [pve_queue.PveWork(state.id, plan.stage, plan.seeds, plan.played, state.first_seen,
                                  seeded=state.id.policy_id.startswith(seeded))
                for state, plan in owed if not plan.finished]

    def play_pve(self) -> int:
        """Play the next PvE matches, in `pve_queue`'s order (earliest stage, the Arena's seeded
        submissions last, a first match first, earliest pushed), one per worker; record the
        verdicts they settle."""
        if not self.leads():
            return 0
        budget = self.settings.pve_matches_per_round or self.workers
        work = self._given_up_left_out(self._work(self._pve_work()))
        self.pve_queue = work
        self._pve_looked = True
        specs: list[MatchSpec] = []
        refs: dict[Revision, PolicyRef | None] = {}
        for item, seed in pve_queue.pick(work, budget):
            if item.id not in refs:
                refs[item.id] = self._try_ref(item.id)
            ref = refs[item.id]
            if ref is None or not self._may_run(ref):
                continue
            opponents = [builtin(name) for name in stage_opponents(item.stage)]
            specs.append(MatchSpec(seed=seed, policies=policies_for(ref, opponents), config=self.config, track="pve", stage=item.stage))
        if self.writers is not None:  # never a match another live writer has begun (`Writers.claiming`)
            claimed = self.writers.claimed_elsewhere()
            specs = [spec for spec in specs if spec.match_id not in claimed]
        self._in_flight = {}
        for spec in specs:
            self._in_flight.setdefault(spec.policies[0].id, []).append(spec.seed)
        try:
            with self.writers.claiming(s.match_id for s in specs) if self.writers is not None else nullcontext():
                played = self._play(specs)
        finally:
            self._in_flight = {}
        self._check_faults(played)
        self._pve_work()  # record what these matches decided, now rather than next round
        return len(played)

    def _given_up_left_out(self, work: list[pve_queue.PveWork]) -> list[pve_queue.PveWork]:
        """`work` without the seeds of matches the platform lost `MAX_ATTEMPTS` times: never
        picked again (they would take a worker's turn every round and play nothing), so the
        rest of the queue goes on; the revision's stage stays unfinished, as the About tab's
        incidents say."""
        incidents = self.incidents.read()
        if not incidents:
            return work
        lost = self.incidents.attempts()
        dropped = {(i.submissions[0], i.stage, i.seed) for i in incidents
                   if i.track == "pve" and i.submissions and given_up(lost[i.match_id])}
        return [dataclasses.replace(w, seeds=tuple(s for s in w.seeds
                                                   if (w.id.player, w.stage, s) not in dropped))
                for w in work]

    def live(self) -> list[LiveMatch]:
        """The matches in flight, with their line-ups and ticks (empty if the executor
        reports none)."""
        return self.executor.in_flight()

    def stage1_pending(self) -> bool:
        """Whether any revision still owes stage-1 PvE matches (PvP waits for them)."""
        return any(w.stage == 1 and w.seeds for w in self.pve_queue)

    def queue(self, now: float | None = None) -> dict[Revision, QueueEntry]:
        """Each revision's place in the PvE queue and the forecast of its current stage's end,
        from the measured durations of recent PvE matches."""
        self.history.refresh()
        states = self.statuses.states()
        signature = (self.history.matches, len(states), max((s.updated for s in states), default=0.0))
        if signature != self._queue_signature:  # statuses or history changed: plan again (pure, nothing recorded)
            self._queue_work, self._queue_signature = self._work(self._plans()), signature
        recent = self.history.recent_pve_durations(20)
        match_s = float(np.median(recent)) if recent else None
        busy = []
        if match_s:
            for live in self.live():
                done = live.tick / max(1, live.horizon)
                busy.append((now or time.time()) + match_s * (1 - done))
        return pve_queue.forecast(self._queue_work, workers=self.workers, match_s=match_s, now=now or time.time(),
                                  in_flight=dict(self._in_flight), busy_until=busy,
                                  later_share=0.5 if self.statuses.with_status(Status.QUALIFIED) else 1.0)

    def play_pvp(self) -> int:
        """One round of PvP pools among the qualified revisions (`settings.pairing`: the volume
        guarantee, the least-played first, or the least certain ratings first)."""
        qualified = self.statuses.with_status(Status.QUALIFIED)
        if not qualified or self.stage1_pending():
            return 0
        refs = {s.id.player: s.id for s in qualified}
        if self.isolation is not None and self.isolation.reason():  # only the code that may run here plays
            refs = {p: rev for p, rev in refs.items() if self._may_run(self._try_ref(rev))}
            if not refs:
                return 0
        self.history.refresh()
        counts = self.history.pvp_counts()
        how = Pairing(self.settings.pairing)
        uncertainty = None
        if how.rated:  # TrueSkill sigmas: who is settled (`arena.settling`), who is least certain
            self._trueskill = extend_trueskill(self._trueskill, self.history.rated)
            uncertainty = {p: r.sigma for p, r in self._trueskill.ratings.items()}
        specs: list[MatchSpec] = []
        wanted = self.settings.pvp_matches_per_round or self.workers
        while len(specs) < wanted:
            pool = make_pool(list(refs), counts=counts, rng=self.rng, how=how, uncertainty=uncertainty)
            for p in pool:
                counts[p] = counts.get(p, 0) + 1
            lineup = self._lineup(pool, refs)
            if lineup is None:
                break
            specs.append(MatchSpec(seed=int(self.rng.integers(2**48)), policies=lineup, config=self.config, track="pvp",
                                   held_out=True))
        played = self._play(specs)
        self._check_faults(played)
        return len(played)

    def _lineup(self, players: Iterable[str], refs: dict[str, Revision]) -> tuple[PolicyRef, ...] | None:
        lineup = tuple(builtin(p) if is_builtin(p) else (self._try_ref(refs[p]) if p in refs else None) for p in players)
        return None if None in lineup else lineup  # type: ignore[return-value]

    # -- audit ---------------------------------------------------------------------------
    def idle(self) -> bool:
        """No PvE work owed (as of the last PvE round: none before the first) and no PvE or
        PvP match being played."""
        return self._pve_looked and not any(w.seeds for w in self.pve_queue) and self._playing == 0

    def audit(self, now: float | None = None) -> Audit | None:
        """Rerun one recorded match if an audit is due and the matchmaker is idle, and
        append the verdict to the audit log. Returns it (None: none due, nothing to audit,
        or the rerun failed, which is logged: an audit never stops the matchmaker).

        Due: `NMMO_ARENA_AUDIT_MINUTES` (0: never) after the latest audit, recorded or
        tried. The match: the next of `history.audits.next_to_audit` (not audited yet,
        recorded with the installed versions), rebuilt and compared by `matchmaking.rerun`,
        played by this matchmaker's executor (its sandboxes, its workers).
        """
        minutes = self.settings.audit_minutes
        if not minutes or not self.idle() or not self.leads():
            return None
        now = time.time() if now is None else now
        done = self.audits.read()
        latest = max([self._audit_tried, *(_unix(a.audited_at) for a in done)])
        if now - latest < 60.0 * minutes:
            return None
        skipped = [*(a.match_id for a in done), *self._unauditable]
        self.history.refresh()
        record = self.history.next_to_audit(skipped, self.versions)
        if record is None:
            return None
        self._audit_tried = now
        try:
            report = rerun(record, fetch=HubFetcher(self.api, self.settings.cache_dir / "rerun"), settings=self.settings,
                           play=self._play_one, hub=self.api.endpoint)
        except NotReproducibleError as exc:  # the record's own doing: never the next one to try
            self._unauditable.add(record.match_id)
            log.warning("audit skips match %s: %s", record.match_id, exc)
            return None
        except Exception as exc:  # noqa: BLE001 - an audit that cannot run is logged and tried again later
            log.warning("audit of match %s could not run: %s: %s", record.match_id, type(exc).__name__, exc)
            return None
        audit = Audit(match_id=record.match_id, identical=report.identical, difference=report.difference,
                      audited_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                      nmmo_version=game.NMMO_VERSION, arena_version=ARENA_VERSION, duration_s=report.duration_s,
                      track=record.track)
        self.audits.append(audit)
        if audit.identical:
            log.info("audit: match %s reproduced (%.0f s)", record.match_id, report.duration_s)
        else:
            log.warning("audit: match %s did NOT reproduce: first difference %s", record.match_id, audit.difference)
        return audit

    def _play_one(self, spec: MatchSpec) -> MatchResult:
        """Play one spec on the executor, unrecorded (an audit's rerun)."""
        if not all(self._may_run(p) for p in spec.policies):
            raise MatchFailedError(f"match {spec.match_id} seats code that may not run here: "
                                   f"{self.isolation.reason() if self.isolation else ''}")
        for outcome in self.executor.run([spec]):
            if outcome.result is None:
                raise MatchFailedError(f"the rerun of match {spec.match_id} failed: {outcome.error}")
            return outcome.result
        raise MatchFailedError(f"the executor played nothing for match {spec.match_id}")

    def audit_summary(self) -> AuditSummary:
        """What the audits found, for the About tab."""
        self.history.refresh()
        return summarize(self.audits.read(), other_version=self.history.other_version(self.versions))

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
            ("pve", self._pve_until_idle, s.pve_every_s),
            ("pvp", self.play_pvp, s.pvp_every_s),
            ("flush", self.flush, s.flush_every_s),
            *((("audit", self.audit, s.pvp_every_s),) if s.audit_minutes else ()),  # cheap when not due
        ):
            scheduler.add_job(self._guarded(name, job), "interval", seconds=every, id=name, name=name, next_run_time=_now())
        scheduler.start()
        self.scheduler = scheduler
        return scheduler

    def _pve_until_idle(self) -> None:
        """PvE rounds back to back while they find matches to play: the workers never wait
        for the next tick of the schedule between two batches."""
        while not self._stopping.is_set() and self.play_pve():
            pass

    def wake(self, job: str) -> None:
        """Run a scheduled round now rather than at its next interval (a webhook's push
        wakes `validate`); a round already running picks the new work up itself."""
        if self.scheduler is not None:
            self.scheduler.modify_job(job, next_run_time=_now())

    def stop(self) -> None:
        self._stopping.set()
        if self.scheduler is not None:
            self.scheduler.shutdown(wait=False)
            self.scheduler = None
        self.validator.close()
        self.store.flush()


def _now():
    return datetime.now()


def _unix(stamp: str) -> float:
    """An ISO 8601 time as Unix time (0 for one that does not parse: due at once)."""
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return 0.0
