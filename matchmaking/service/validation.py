"""Validating a new revision: does it load, act, and keep to the limits, in isolation?

A revision plays a small match in its sandbox (two teams, a few ticks) against a built-in
team. Any fault rejects it, with a reason written for the author: what happened, where,
and what to change. Limits are the Arena's own (`MatchConfig`): the same sandbox, memory
and time per step as in real matches. The match itself comes back with its replay and the
team's log, so that the Space records it (track `validation`) and a rejected author can
watch what happened and read what their code printed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

import numpy as np

from arena.lifecycle import Measurements
from arena.logs import MatchLogs
from arena.policies import PolicyRef, builtin
from arena.replay import ReplayRecorder
from arena.replay import read as read_replay
from arena.schema import Fault, FaultKind, MatchResult
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec, run_match
from matchmaking.sandbox.host import SandboxedTeam, sandboxed_host

#: Seed of every validation match: a revision is judged on the same game as every other.
VALIDATION_SEED = 0


@dataclass(frozen=True)
class ValidationReport:
    """The verdict on one revision."""

    ok: bool
    reason: str
    """Why it was rejected and what to do; for an accepted revision, what was measured."""
    max_step_cpu_ms: float = 0.0
    peak_memory_mb: float = 0.0
    faults: tuple[Fault, ...] = ()
    median_step_ms: float = 0.0
    p99_step_ms: float = 0.0
    match: MatchResult | None = None
    """The validation match (track `validation`), to record with `replay` and `logs`."""
    digest: str = ""
    """`play_digest` of the team's play (kept in `measurements`)."""
    replay: bytes | None = None
    logs: bytes | None = None

    @property
    def measurements(self) -> Measurements:
        """What the status log keeps of it."""
        return Measurements(max_step_cpu_ms=round(self.max_step_cpu_ms, 1), peak_memory_mb=round(self.peak_memory_mb, 1),
                            median_step_ms=round(self.median_step_ms, 2), p99_step_ms=round(self.p99_step_ms, 2),
                            play_digest=self.digest or None)


def explain(fault: Fault, config: MatchConfig) -> str:
    """A fault in words an author can act on."""
    where = f"at tick {fault.tick}" if fault.tick else "while being built"
    advice = {
        FaultKind.INIT: "Check that your files import only what 'Writing a policy' in docs/participants.md lists (vendor a "
        "small pure-Python dependency into your folder) and that Team(team_id, env_config) succeeds; "
        "`python -m matchmaking.evaluate FOLDER` shows the same error locally.",
        FaultKind.ERROR: "Fix the exception; `python -m matchmaking.evaluate FOLDER --matches 1 --horizon 32` reproduces the match locally.",
        FaultKind.INVALID: "act() must return {member index: {action name: {argument name: integer index}}}, e.g. "
        "{0: {\"Move\": {\"Direction\": 2}}}; see 'Writing a policy' in docs/participants.md.",
        FaultKind.TIMEOUT: f"Each tick's answer is due within {config.step_timeout_s * 1000:.0f} ms, and a match allows "
        f"{config.time_bank_s:.0f} s beyond those deadlines in all; make act() faster.",
        FaultKind.CRASH: "The process running your team ended: avoid os._exit, native crashes and subprocesses (the sandbox forbids them).",
        FaultKind.MEMORY: f"A team may use {config.memory_limit_mb} MB beyond the interpreter and the preloaded frameworks; "
        "load smaller weights or keep less state.",
    }[fault.kind]
    return f"{fault.kind.value} {where}: {fault.message}. {advice}"


def too_slow(median_s: float, config: MatchConfig) -> str:
    """Why a team whose act() takes `median_s` a tick would spend its time bank before a
    full match ends (most of its answers then dropped), or "". The median, not the sum: a
    first tick that loads or compiles something is no sign of the ticks to come."""
    overage = max(0.0, median_s - config.step_timeout_s) * config.horizon
    if overage <= config.time_bank_s:
        return ""
    return (f"TIMEOUT: act() took {median_s * 1000:.0f} ms a tick (median), over the {config.step_timeout_s * 1000:.0f} ms "
            f"deadline: over a {config.horizon}-tick match that is about {overage:.0f} s beyond its deadlines, more than "
            f"the {config.time_bank_s:.0f} s time bank a match allows, so most of its answers would be dropped. Make act() "
            "faster (`python -m matchmaking.evaluate FOLDER` reports the time per tick).")


def validate(ref: PolicyRef, *, config: MatchConfig | None = None, ticks: int = 16) -> ValidationReport:
    """Play `ref` for `ticks` ticks in its sandbox beside a built-in team; judge the faults.

    Args:
        ref (`PolicyRef`): the revision, with its downloaded folder.
        config (`MatchConfig`, *optional*): limits (team size and timing) to validate against.
        ticks (`int`): length of the validation match.

    Returns:
        `ValidationReport`: ok, or the first fault explained; with the match, its replay
        and the team's log.
    """
    recorder, logs = ReplayRecorder(), MatchLogs()
    base = config or MatchConfig()
    report, result = _judge(ref, base, ticks, recorder, logs)
    return replace(report, match=result, replay=recorder.data, logs=logs.data,
                   digest=play_digest(recorder.data, base.team_size))


def play_digest(replay_data: bytes | None, team_size: int) -> str:
    """A digest of team 0's play in a recorded match: its members' row, column, health,
    food and water at every tick (`arena.replay`), the same for two teams that play alike
    in the same seeded match; "" for a team that never moved, or without a replay."""
    if not replay_data:
        return ""
    _, arrays = read_replay(replay_data)
    team = np.ascontiguousarray(arrays["players"][:, :team_size, :])
    if not len(team) or (team[:, :, :2] == team[:1, :, :2]).all():
        return ""
    return hashlib.sha256(team.tobytes()).hexdigest()[:32]


def _judge(ref: PolicyRef, base: MatchConfig, ticks: int, recorder: ReplayRecorder, logs: MatchLogs
           ) -> tuple[ValidationReport, MatchResult]:
    """`validate`'s match, recorded into `recorder` and `logs`, and its verdict."""
    small = replace(base, num_teams=2, horizon=ticks)
    hosts: list[SandboxedTeam] = []

    def host(policy: PolicyRef, slot):
        team = sandboxed_host(policy, slot)
        if isinstance(team, SandboxedTeam):
            hosts.append(team)
        return team

    result = run_match(
        MatchSpec(seed=VALIDATION_SEED, policies=(ref, builtin("forage")), config=small, track="validation"),
        host_factory=host, recorder=recorder, logs=logs,
    )
    team = result.teams[0]
    # The time a tick costs is wall-clock time: the process CPU clock inside the sandbox moved
    # in coarse steps here (0.0 ms for most of a 0.4 ms forward pass), and what a match waits
    # for is the answer. The CPU figure stays for the limit it is checked against.
    cpu_ms = max((h.max_step_cpu_s for h in hosts), default=0.0) * 1000
    steps = np.array([s for h in hosts for s in h.step_wall_s]) * 1000
    median, p99 = (float(np.median(steps)), float(np.percentile(steps, 99))) if len(steps) else (0.0, 0.0)
    memory = max((h.peak_memory_mb for h in hosts), default=0.0)
    if team.faults:
        return ValidationReport(False, explain(team.faults[0], base), cpu_ms, memory, team.faults, median, p99), result
    slow = too_slow(median / 1000, base)
    if slow:
        return ValidationReport(False, slow, cpu_ms, memory, (), median, p99), result
    return ValidationReport(
        True,
        f"Played {result.ticks} ticks without a fault: {median:.1f} ms per tick (median; 99th percentile "
        f"{p99:.1f} ms; deadline {base.step_timeout_s * 1000:.0f} ms, time bank {base.time_bank_s:.0f} s a match; most "
        f"CPU in one tick {cpu_ms:.0f} ms), peak memory {memory:.0f} MB beyond the preloaded frameworks (limit "
        f"{base.memory_limit_mb} MB).",
        cpu_ms, memory, (), median, p99,
    ), result
