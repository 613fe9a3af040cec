"""Cost of the match runner against nmmo's own loop, peak memory, and scaling with workers.

    python -m bench.match_speed [--horizon 1024] [--repeats 5] [--seed 1]
        [--identity-seeds 20] [--identity-first-seed 101] [--sandboxed-repeats 3]
        [--long-lived-repeats 3]

1. **Runner vs bare loop.** The same full-size match (PvE stage 1 built-ins, 16x8 agents,
   same map, seed and per-team RNG streams) played twice: by `run_match`, and by a bare
   loop of nmmo's `Env` whose scripted agents run inside `env.step()`, with no contract,
   no checking and no scoring. Both play the identical game (the bench checks it). Since
   the Arena plays its built-ins compiled (`matchmaking.teams.compiled_builtins`, issue
   25), the ratio is the Arena's speed-up over nmmo's own loop: `builtin_speedup`, the
   bare loop's wall time over the runner's (median of the pairs' ratios). Target: at
   least 3.0 (issue 38). (`runner_over_bare`, its inverse, was the runner's overhead
   before.) Stage 1's agents die fast (`alive_at`: agents alive at ticks 50, 256, 1024),
   so the same pairs are played on `long_lived_lineup` too: `builtin_speedup_long_lived`,
   target at least 2.5.
1b. **Identity with nmmo's own loop.** `--identity-seeds` full matches (seeds from
   `--identity-first-seed` on, across the published map pool), each played by nmmo's own
   unpatched loop (`bare_match`) and by the Arena (compiled built-ins, `run_match`), in
   two worker processes: after every tick, every entity's and every item's row of nmmo's
   datastore equal (`state_digest`: positions, health, food, water, levels, equipment,
   inventories), the event logs equal row for row, and each team's task values,
   Achievement and survivors equal, with no fault. `identical_events` is true when every
   match matched.
1c. **A match that seats a sandboxed team** (PvE stage 1, the `--example` team in its
   sandbox, 15 built-ins), in fresh processes, in rotating order, `--sandboxed-repeats`
   times: nmmo's own loop with the example team's `Team` called in the loop's process;
   the runner (`sandboxed_host`); and the runner with nmmo's built-ins as they were
   before (uncompiled, reading rebuilt observations). The runner's overhead once
   built-ins are excluded from both sides: (runner wall - time in the built-in teams) /
   (bare wall - time in nmmo's scripted agents), median over repeats, for the whole match
   (`runner_over_bare_without_builtins`: a worker's first match, its sandbox zygote
   started cold, after the game's set-up) and from the first tick on (`..._loop`: the
   sandbox's start left out). `runner_over_bare_without_builtins_warm`: the whole match in a
   worker whose zygote was started as the Space's workers start it (`start_zygote` when
   the worker starts, `LocalExecutor(prepare=...)`), i.e. every match a worker plays.
   Target: at most 1.03x. `sandboxed_match_over_nmmo`: the runner's whole match over nmmo's
   loop's (median of the rounds' ratios), target at most 0.5. `matches_per_hour_per_core` (after)
   and `matches_per_hour_per_core_before`: 3600 s over the median wall time of one such
   match in one process.
2. **Peak memory** of a process that plays one full match through the runner (RSS high-water
   mark, measured in a fresh process). Target: at most 1 GB.
3. **Matches per hour** with 1 and 2 workers: two copies of the same match on a pool of
   worker processes started (and warmed) before timing. Target: 2 workers at least 1.8x
   the throughput of 1. Beside it, the machine's own ceiling, measured in the same run:
   two copies of a pure CPU-bound Python loop on 2 processes against 1.

Each measurement runs in a fresh process. The two loops run in pairs, the order within a
pair alternating, and the figure is the median over pairs of each pair's ratio: on this
shared machine the same match varies by 10-30% from run to run (the bare loop alone took
15 to 22 s in one run), so the best of a few runs of each side measures luck, while
neighbours in time share the machine's load and their ratio does not. The CPU-time ratio
is printed beside the wall-time ratio. The JSON line last holds every figure.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import resource
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from nmmo.entity.entity import EntityState

from arena.policies import PolicyRef, builtin, local
from arena.replay import ReplayRecorder
from arena.rules import stage_opponents
from arena.scoring import Task, achievement
from matchmaking.engine import game
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.hosting import InProcessTeam, TeamHost, TeamSlot
from matchmaking.engine.match import MatchSpec, policies_for, run_match, team_seed
from matchmaking.engine.progress import TravelTracker, team_progress
from matchmaking.teams.builtin import SCRIPTED_AGENTS, ScriptedTeam
from matchmaking.teams.factory import in_process_host

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "policies" / "explorer"


#: Ticks at which the bare loop counts the agents still alive (a line-up's lifetime).
ALIVE_AT = (50, 256, 1024)


def long_lived_lineup() -> tuple[PolicyRef, ...]:
    """Sixteen `forage` teams: of nmmo's own scripted line-ups the one whose agents live
    longest (seed 1: 55 of 128 alive at tick 50, 24 at 256, 16 at 1024; `combat` 26/11/10,
    `random` 40/1/0, stage 1 41/9/7), so a match of them is most of all the realm's work."""
    return (builtin("forage"),) * 16


def stage1_lineup() -> tuple[PolicyRef, ...]:
    """PvE stage 1 with a Combat team as the 16th: built-ins only, so both loops can play it."""
    return policies_for(builtin("combat"), [builtin(n) for n in stage_opponents(1)])


def _nmmo_env(spec: MatchSpec, *, own_slot: int | None = None) -> Any:
    """nmmo's `Env` for `spec`, reset, its agents nmmo's scripted classes with the runner's
    per-team RNG streams; the agents of `own_slot` (if any) are left to the caller."""
    import nmmo
    from nmmo.core.game_api import TeamBattle
    from nmmo.lib import seeding

    config = spec.config
    map_id = game.map_id_for_seed(spec.seed, config.map_pool)
    nmmo_config = game.nmmo_config(config, map_dir=game.ensure_map(map_id, config))
    classes: list[type] = []
    for slot, ref in enumerate(spec.policies):
        if slot == own_slot:
            classes += [nmmo.Agent] * config.team_size
            continue
        agents = SCRIPTED_AGENTS[ref.builtin_name]
        classes += [agents[m % len(agents)] for m in range(config.team_size)]
    nmmo_config.set("PLAYERS", classes)
    env = nmmo.Env(nmmo_config)
    observations, _ = env.reset(seed=spec.seed, map_id=1, game=TeamBattle(env))
    for team_id, agent_ids in game.team_agent_ids(config).items():
        if team_id == own_slot:
            continue
        rng, _ = seeding.np_random(team_seed(spec.seed, team_id))
        for agent_id in agent_ids:
            env.realm.players[agent_id].agent.set_rng(rng)
    return env, observations


def state_digest(env: Any) -> tuple[str, str]:
    """A digest of the game's state after a tick: every entity's row of nmmo's datastore
    (position, health, food, water, gold, levels, equipment) and every item's row
    (inventories, equipped, listed). Two loops that play the same game agree on it every tick."""
    from nmmo.systems.item import ItemState

    entities = np.ascontiguousarray(EntityState.Query.table(env.realm.datastore))
    items = np.ascontiguousarray(ItemState.Query.table(env.realm.datastore))
    return hashlib.sha1(entities.tobytes()).hexdigest()[:16], hashlib.sha1(items.tobytes()).hexdigest()[:16]


class _Captured:
    """The env of the next match `run_match` builds in this process (for `state_digest`
    after each of its ticks): `game.env_on` wrapped for the length of a `with` block."""

    def __init__(self) -> None:
        self.env: Any = None

    def __enter__(self) -> _Captured:
        self._original = game.env_on

        def env_on(*args: Any, **kwargs: Any) -> Any:
            self.env = self._original(*args, **kwargs)
            return self.env

        game.env_on = env_on  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        game.env_on = self._original  # type: ignore[assignment]


def bare_match(spec: MatchSpec, *, track: bool = False) -> dict[str, object]:
    """Play `spec` (built-ins only) with nmmo's own scripted hook: no runner at all.

    Agents get the same classes and per-team RNG streams as the runner's built-in teams,
    so the game is identical to `run_match(spec)`'s. Returns the wall time, ticks, and
    the event log; with `track`, also each team's raw progress and survivors (measured
    outside the timing's purpose: use it to compare games, not to time them).

    This is nmmo's own, unpatched loop: nmmo's scripted classes as nmmo ships them, never
    the Arena's compiled ones (`matchmaking.teams.compiled_builtins`), which only
    `ScriptedTeam` plays. It is the baseline `builtin_speedup` and the identity check
    compare the Arena with.
    """
    started, cpu_started = time.perf_counter(), time.process_time()
    config = spec.config
    env, _ = _nmmo_env(spec)
    travel = TravelTracker(config.num_agents) if track else None
    states = []
    if travel:
        travel.start(EntityState.Query.table(env.realm.datastore))
    ticks = 0
    living: dict[int, int] = {}
    for tick in range(1, config.horizon + 1):
        env.step({})
        if travel:
            travel.update(EntityState.Query.table(env.realm.datastore))
            states.append(state_digest(env))
        if tick in ALIVE_AT:
            living[tick] = len(env.realm.players)
        ticks = tick
        if not env.realm.players:
            break
    out: dict[str, object] = {
        "seconds": time.perf_counter() - started,
        "cpu_seconds": time.process_time() - cpu_started,
        "ticks": ticks,
        "events": env.realm.event_log.get_data(),
        "living": {t: living.get(t, 0) for t in ALIVE_AT if t <= config.horizon},
    }
    if travel:
        teams = game.team_agent_ids(config)
        out["progress"] = team_progress(out["events"], teams, travel.farthest)
        out["alive"] = {t: sum(a in env.realm.players for a in ids) for t, ids in teams.items()}
        out["states"] = states
    game.dispose_env(env)
    return out


class EventLog(ReplayRecorder):
    """A replay recorder that also keeps the match's whole event log, as nmmo wrote it."""

    events: np.ndarray | None = None

    def finish(self, **kwargs: Any) -> bytes:
        self.events = np.array(kwargs["events"], copy=True)
        return super().finish(**kwargs)


def arena_match(spec: MatchSpec, *, host_factory: Any = in_process_host, track: bool = False) -> dict[str, object]:
    """Play `spec` through the runner (by default `in_process_host`: compiled built-ins
    reading nmmo's own observations); its result and nmmo's event log; with `track`, the
    `state_digest` after every tick (not for timing)."""
    log = EventLog()
    states: list[tuple[str, str]] = []
    with _Captured() as captured:
        started = time.perf_counter()
        progress = (lambda tick: tick and states.append(state_digest(captured.env))) if track else None
        result = run_match(spec, host_factory=host_factory, recorder=log, progress=progress)
    return {"seconds": time.perf_counter() - started, "ticks": result.ticks, "events": log.events, "result": result,
            "states": states}


def compare_with_nmmo(spec: MatchSpec, *, host_factory: Any = in_process_host) -> dict[str, object]:
    """Play `spec` by nmmo's own loop and by the Arena (`host_factory`); say whether the
    games are identical.

    Identical: the same number of ticks, nmmo's event logs equal row for row, and each
    team's task values, Achievement and survivors equal, with no fault in the Arena.
    Returns `identical`, the first `difference` found ("" if none), seed, map and ticks.
    """
    bare = bare_match(spec, track=True)
    arena = arena_match(spec, host_factory=host_factory, track=True)
    result = arena["result"]
    differences = []
    if bare["ticks"] != result.ticks:
        differences.append(f"ticks: nmmo {bare['ticks']}, arena {result.ticks}")
    for tick, (theirs_state, ours_state) in enumerate(zip(bare["states"], arena["states"]), start=1):
        if theirs_state != ours_state:
            table = "entities (positions, vitals, levels)" if theirs_state[0] != ours_state[0] else "items (inventories)"
            differences.append(f"tick {tick}: the {table} differ from nmmo's")
            break
    ours, theirs = np.asarray(arena["events"]), np.asarray(bare["events"])
    if ours.shape != theirs.shape or not np.array_equal(ours, theirs):
        rows = min(len(ours), len(theirs))
        unequal = np.flatnonzero((ours[:rows] != theirs[:rows]).any(axis=1)) if rows and ours.shape[1:] == theirs.shape[1:] else []
        first = int(unequal[0]) if len(unequal) else rows
        differences.append(f"events: {len(theirs)} in nmmo, {len(ours)} in the arena; first different row {first}")
    for team in result.teams:
        progress = bare["progress"][team.slot]
        expected = {task.value: progress.value(task) for task in Task}
        if expected != {k: v.value for k, v in team.tasks.items()}:
            differences.append(f"team {team.slot}: tasks {expected} in nmmo")
        if achievement(progress).total != team.achievement:
            differences.append(f"team {team.slot}: achievement {achievement(progress).total} in nmmo, {team.achievement}")
        if team.alive != bare["alive"][team.slot]:
            differences.append(f"team {team.slot}: {bare['alive'][team.slot]} alive in nmmo, {team.alive}")
        if team.fault_counts:
            differences.append(f"team {team.slot}: faults {team.fault_counts}")
    return {
        "seed": spec.seed,
        "map_id": game.map_id_for_seed(spec.seed, spec.config.map_pool),
        "ticks": result.ticks,
        "events": len(theirs),
        "states_compared": min(len(bare["states"]), len(arena["states"])),
        "identical": not differences,
        "difference": differences[0] if differences else "",
    }


def identity_check(seeds: list[int], *, horizon: int, workers: int = 2) -> list[dict[str, object]]:
    """`compare_with_nmmo` on the stage-1 line-up for every seed, in `workers` processes."""
    specs = [MatchSpec(seed=seed, policies=stage1_lineup(), config=MatchConfig(horizon=horizon)) for seed in seeds]
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(compare_with_nmmo, specs))


# -- a match that seats a sandboxed team ---------------------------------------------------
def sandboxed_lineup(example: Path = EXAMPLE) -> tuple[PolicyRef, ...]:
    """PvE stage 1 as a submission meets it: the example team, then the 15 built-ins."""
    return policies_for(local(example), [builtin(n) for n in stage_opponents(1)])


class _TimedHost:
    """A team host that adds the wall time of its `request` and `answer` to `spent[0]`."""

    def __init__(self, inner: TeamHost, spent: list[float]):
        self.inner, self.spent = inner, spent

    def request(self, tick: int, observations: Any) -> None:
        started = time.perf_counter()
        self.inner.request(tick, observations)
        self.spent[0] += time.perf_counter() - started

    def answer(self) -> Any:
        started = time.perf_counter()
        answer = self.inner.answer()
        self.spent[0] += time.perf_counter() - started
        return answer

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _before_host(ref: PolicyRef, slot: TeamSlot) -> TeamHost:
    """The Arena's built-ins as they played before issue 25: nmmo's classes, uncompiled,
    reading observations rebuilt from the arrays; everything else as `sandboxed_host`."""
    from matchmaking.sandbox.host import sandboxed_host

    if ref.is_builtin and ref.builtin_name in SCRIPTED_AGENTS:
        agents = SCRIPTED_AGENTS[ref.builtin_name]
        return InProcessTeam(lambda tid, cfg: ScriptedTeam(tid, cfg, agents, compiled=False), slot)
    return sandboxed_host(ref, slot)


def _runner_with_sandbox(spec: MatchSpec, *, before: bool = False, warm: bool = False) -> dict[str, object]:
    """The runner on a match seating a sandboxed team; wall time and time in built-ins.
    `warm`: the process's sandbox zygote started and ready before the clock starts, as in a
    Space's match worker (`start_zygote` at the worker's start)."""
    from matchmaking.sandbox.host import sandboxed_host, start_zygote

    if warm and not start_zygote(wait_s=120):
        raise RuntimeError("the sandbox zygote was not ready within 120 s")
    spent = [0.0]
    hosting = _before_host if before else sandboxed_host

    def host(ref: PolicyRef, slot: TeamSlot) -> Any:
        inner = hosting(ref, slot)
        return _TimedHost(inner, spent) if ref.is_builtin else inner

    started = time.perf_counter()
    marks: dict[int, float] = {}

    def progress(tick: int) -> None:  # tick 0: every team is up, the game loop starts
        marks[tick] = time.perf_counter()
        if tick == 0:
            spent[0] = 0.0  # built-ins' time in the loop only (their set-up is the runner's)

    result = run_match(spec, host_factory=host, progress=progress)
    faults = {team.slot: team.fault_counts for team in result.teams if team.fault_counts}
    return {
        "seconds": time.perf_counter() - started,
        "loop_s": marks[result.ticks] - marks[0],
        "builtin_s": spent[0],
        "ticks": result.ticks,
        "faults": faults,
    }


def bare_match_with_team(spec: MatchSpec) -> dict[str, object]:
    """nmmo's own loop for a line-up whose slot 0 is a policy folder: nmmo's scripted agents
    for the built-ins, inside `env.step()`, and the folder's `Team` called in this process
    on the gym observations `env.step` returns (what a researcher's own loop would do).
    Wall time, and the time nmmo's scripted agents took (`_compute_scripted_agent_actions`)."""
    from matchmaking.teams.loading import load_team_class

    started = time.perf_counter()
    config = spec.config
    env, observations = _nmmo_env(spec, own_slot=0)
    spent = [0.0]
    scripted = env._compute_scripted_agent_actions

    def timed_scripted(actions: dict) -> dict:  # timing only: nmmo's own method, called as is
        began = time.perf_counter()
        out = scripted(actions)
        spent[0] += time.perf_counter() - began
        return out

    env._compute_scripted_agent_actions = timed_scripted
    agent_ids = game.team_agent_ids(config)[0]
    team = load_team_class(spec.policies[0].path)(0, game.env_config(config, team_id=0, seed=team_seed(spec.seed, 0)))
    team.reset()
    loop_started = time.perf_counter()
    ticks = 0
    for tick in range(1, config.horizon + 1):
        alive = env.realm.players
        mine = {m: observations[a] for m, a in enumerate(agent_ids) if a in alive}
        answer = team.act(mine) if mine else {}
        observations, *_ = env.step({agent_ids[m]: action for m, action in answer.items()})
        ticks = tick
        if not env.realm.players:
            break
    ended = time.perf_counter()
    game.dispose_env(env)
    return {"seconds": ended - started, "loop_s": ended - loop_started, "builtin_s": spent[0], "ticks": ticks}


def _timed_runner(spec: MatchSpec) -> dict[str, object]:
    started, cpu_started = time.perf_counter(), time.process_time()
    result = run_match(spec, host_factory=in_process_host)
    return {
        "seconds": time.perf_counter() - started,
        "cpu_seconds": time.process_time() - cpu_started,
        "ticks": result.ticks,
        "result": result,
    }


def _in_fresh_process(target, spec: MatchSpec) -> dict[str, object]:
    """Run `target(spec)` in a new process; add its peak RSS (MB)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_measure, (target, spec))


def _measure(target, spec: MatchSpec) -> dict[str, object]:
    out = target(spec)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if "events" in out:
        out["events"] = np.asarray(out["events"]).tolist()
    if "result" in out:
        out["result"] = out["result"].to_dict()
    return out


def _cpu_work(_: int) -> float:
    """A fixed, purely CPU-bound Python workload (no memory traffic to speak of)."""
    started = time.perf_counter()
    total = 0
    for i in range(12_000_000):
        total += i * i % 7
    return time.perf_counter() - started


def machine_scaling() -> float:
    """How much faster this machine runs two copies of a CPU-bound task on two processes
    than one after the other: the ceiling any parallel workload can reach here."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=context) as pool:
        list(pool.map(_warm_up, range(2)))
        started = time.perf_counter()
        list(pool.map(_cpu_work, range(2)))
        parallel = time.perf_counter() - started
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        list(pool.map(_warm_up, range(1)))
        started = time.perf_counter()
        list(pool.map(_cpu_work, range(2)))
        serial = time.perf_counter() - started
    return serial / parallel


def _warm_up(_: int) -> None:
    """Import the engine in a pool worker before timing starts."""
    import matchmaking.engine.match  # noqa: F401

    time.sleep(0.5)  # long enough that every worker takes one warm-up task


def throughput(spec: MatchSpec, *, workers: int, matches: int = 2) -> float:
    """Matches per hour in steady state: `matches` copies of the same game on a warmed pool
    of `workers` processes (equal games, so idle workers measure scaling, not luck)."""
    specs = [replace(spec, match_id=f"bench-{i}") for i in range(matches)]
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_warm_up, range(workers)))
        started = time.perf_counter()
        finished = sum(result.ticks > 0 for result in pool.map(partial(run_match, host_factory=in_process_host), specs))
        return finished * 3600 / (time.perf_counter() - started)


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Runner overhead, peak memory and worker scaling.")
    parser.add_argument("--horizon", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5, help="pairs of runs (odd: the median is a run)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--identity-seeds", type=int, default=20, help="full matches compared with nmmo's own loop (0: none)")
    parser.add_argument("--identity-first-seed", type=int, default=101, help="seeds nobody tuned for: this one and the next ones")
    parser.add_argument("--identity-horizon", type=int, help="ticks of the compared matches (default: --horizon)")
    parser.add_argument("--sandboxed-repeats", type=int, default=3, help="rounds of the match seating a sandboxed team (0: none)")
    parser.add_argument("--long-lived-repeats", type=int, default=3,
                        help="pairs of the long-lived line-up's match (`long_lived_lineup`; 0: none)")
    parser.add_argument("--example", type=Path, default=EXAMPLE, help="the sandboxed team of that match")
    parser.add_argument("--json", help="also write the figures here")
    return parser.parse_args()


def paired_runs(spec: MatchSpec, repeats: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """1. `spec` played by the bare loop and by the runner, each in a fresh process, in
    `repeats` pairs, the order within a pair alternating: (bare runs, runner runs)."""
    bare: list[dict[str, Any]] = []
    runner: list[dict[str, Any]] = []
    for repeat in range(repeats):
        order = [(bare_match, bare), (_timed_runner, runner)]
        for target, bucket in order if repeat % 2 == 0 else reversed(order):
            bucket.append(_in_fresh_process(target, spec))
            last = bucket[-1]
            print(f"  {target.__name__}: {last['seconds']:.1f} s wall, {last['cpu_seconds']:.1f} s CPU, {last['ticks']} ticks", file=sys.stderr)
    return bare, runner


def identity_rows(args: argparse.Namespace) -> list[dict[str, object]]:
    """1b. the same games as nmmo's own loop, on seeds nobody tuned for."""
    seeds = list(range(args.identity_first_seed, args.identity_first_seed + args.identity_seeds))
    compared = identity_check(seeds, horizon=args.identity_horizon or args.horizon) if seeds else []
    for row in compared:
        print(f"  seed {row['seed']} (map {row['map_id']}): {row['ticks']} ticks, {row['events']} events, "
              f"{'identical' if row['identical'] else 'DIFFERENT: ' + str(row['difference'])}", file=sys.stderr)
    return compared


def sandboxed_rounds(spec: MatchSpec, repeats: int) -> dict[str, list[dict[str, Any]]]:
    """1c. a match seating a sandboxed team, by nmmo's loop (`bare`) and the runner (`after`,
    `warm`, and `before` issue 25), each in a fresh process, the order rotating each round."""
    rounds: dict[str, list[dict[str, Any]]] = {"bare": [], "after": [], "warm": [], "before": []}
    targets = [("bare", bare_match_with_team), ("after", _runner_with_sandbox), ("warm", partial(_runner_with_sandbox, warm=True)),
               ("before", partial(_runner_with_sandbox, before=True))]
    for repeat in range(repeats):
        for name, target in targets[repeat % 4:] + targets[: repeat % 4]:
            rounds[name].append(_in_fresh_process(target, spec))
            last = rounds[name][-1]
            print(f"  sandboxed match, {name}: {last['seconds']:.1f} s wall, {last['loop_s']:.1f} s from the first tick, "
                  f"{last['builtin_s']:.1f} s in built-ins, "
                  f"{last['ticks']} ticks", file=sys.stderr)
    return rounds


def runner_figures(args: argparse.Namespace, bare: list[dict[str, Any]], runner: list[dict[str, Any]],
                   scaling: tuple[float, float, float], compared: list[dict[str, object]]) -> dict[str, object]:
    """The figures of 1, 1b, 2 and 3; `scaling`: matches an hour on 1 and 2 workers, and the
    machine's own 2-process scaling."""
    one, two, ceiling = scaling
    median = statistics.median
    return {
        "horizon": args.horizon,
        "ticks": runner[0]["ticks"],
        "same_game": bare[0]["ticks"] == runner[0]["ticks"],
        "pairs": len(runner),
        "bare_loop_s": round(median(b["seconds"] for b in bare), 2),
        "runner_s": round(median(r["seconds"] for r in runner), 2),
        "runner_over_bare": round(median(r["seconds"] / b["seconds"] for b, r in zip(bare, runner)), 3),
        "runner_over_bare_pairs": [round(r["seconds"] / b["seconds"], 3) for b, r in zip(bare, runner)],
        "bare_loop_cpu_s": round(median(b["cpu_seconds"] for b in bare), 2),
        "runner_cpu_s": round(median(r["cpu_seconds"] for r in runner), 2),
        "runner_over_bare_cpu": round(median(r["cpu_seconds"] / b["cpu_seconds"] for b, r in zip(bare, runner)), 3),
        "runner_peak_rss_mb": round(max(r["peak_rss_mb"] for r in runner), 1),
        "bare_peak_rss_mb": round(max(b["peak_rss_mb"] for b in bare), 1),
        "matches_per_hour_1_worker": round(one, 1),
        "matches_per_hour_2_workers": round(two, 1),
        "scaling_2_over_1": round(two / one, 3),
        "machine_scaling_2_over_1": round(ceiling, 3),
        "scaling_over_machine": round((two / one) / ceiling, 3),
        "builtin_speedup": round(median(b["seconds"] / r["seconds"] for b, r in zip(bare, runner)), 3),
        "builtin_speedup_pairs": [round(b["seconds"] / r["seconds"], 3) for b, r in zip(bare, runner)],
        "alive_at": bare[0]["living"],
        "identical_events": bool(compared) and all(row["identical"] for row in compared),
        "identity_matches": len(compared),
        "identity_ticks": sum(int(row["ticks"]) for row in compared),
        "identity_maps": sorted({int(row["map_id"]) for row in compared}),
        "identity_differences": {str(row["seed"]): row["difference"] for row in compared if not row["identical"]},
    }


def sandboxed_figures(rounds: dict[str, list[dict[str, Any]]], example: Path) -> dict[str, object]:
    """The figures of 1c: the runner's overhead without the built-ins (a worker's first
    match, every later one, from the first tick on), matches an hour per core."""
    median = statistics.median

    def without_builtins(runner: str, wall: str = "seconds") -> list[float]:
        return [(r[wall] - r["builtin_s"]) / (b[wall] - b["builtin_s"]) for b, r in zip(rounds["bare"], rounds[runner])]

    excluded, excluded_warm, excluded_loop = without_builtins("after"), without_builtins("warm"), without_builtins("after", "loop_s")
    after_s = median(r["seconds"] for r in rounds["after"])
    before_s = median(r["seconds"] for r in rounds["before"])
    return {
        "sandboxed_example": example.name,
        "sandboxed_bare_s": round(median(r["seconds"] for r in rounds["bare"]), 2),
        "sandboxed_bare_builtin_s": round(median(r["builtin_s"] for r in rounds["bare"]), 2),
        "sandboxed_runner_s": round(after_s, 2),
        "sandboxed_runner_builtin_s": round(median(r["builtin_s"] for r in rounds["after"]), 2),
        "sandboxed_runner_before_s": round(before_s, 2),
        "runner_over_bare_without_builtins": round(median(excluded), 3),
        "runner_over_bare_without_builtins_rounds": [round(x, 3) for x in excluded],
        "runner_over_bare_without_builtins_warm": round(median(excluded_warm), 3),
        "runner_over_bare_without_builtins_warm_rounds": [round(x, 3) for x in excluded_warm],
        "runner_over_bare_without_builtins_loop": round(median(excluded_loop), 3),
        "runner_over_bare_without_builtins_loop_rounds": [round(x, 3) for x in excluded_loop],
        "sandboxed_setup_s": round(median(r["seconds"] - r["loop_s"] for r in rounds["after"]), 2),
        "sandboxed_bare_setup_s": round(median(r["seconds"] - r["loop_s"] for r in rounds["bare"]), 2),
        "sandboxed_faults": [r["faults"] for r in rounds["after"] if r["faults"]],
        "sandboxed_match_over_nmmo": round(median(r["seconds"] / b["seconds"] for b, r in zip(rounds["bare"], rounds["after"])), 3),
        "sandboxed_match_over_nmmo_rounds": [round(r["seconds"] / b["seconds"], 3) for b, r in zip(rounds["bare"], rounds["after"])],
        "matches_per_hour_per_core": round(3600 / after_s, 1),
        "matches_per_hour_per_core_before": round(3600 / before_s, 1),
        "matches_per_hour_per_core_warm": round(3600 / median(r["seconds"] for r in rounds["warm"]), 1),
    }


def print_figures(figures: dict[str, Any], scaling: tuple[float, float, float], *, sandboxed: bool) -> None:
    """The figures in words (the JSON line follows them)."""
    one, two, ceiling = scaling
    print(f"full match ({figures['ticks']} ticks, identical game in both loops: {figures['same_game']})")
    print(f"  bare nmmo loop     {figures['bare_loop_s']:8.2f} s wall {figures['bare_loop_cpu_s']:8.2f} s CPU (median)")
    print(f"  arena runner       {figures['runner_s']:8.2f} s wall {figures['runner_cpu_s']:8.2f} s CPU (median)")
    print(f"  runner / bare      {figures['runner_over_bare']:8.3f}x wall {figures['runner_over_bare_cpu']:7.3f}x CPU, "
          f"median of {figures['pairs']} paired runs {figures['runner_over_bare_pairs']} (built-ins compiled: see builtin_speedup)")
    print(f"  peak RSS, runner   {figures['runner_peak_rss_mb']:8.1f} MB (target <= 1024; bare loop {figures['bare_peak_rss_mb']} MB)")
    print(f"  matches/hour       1 worker {one:.1f}, 2 workers {two:.1f}: {figures['scaling_2_over_1']:.2f}x (target >= 1.8)")
    print(f"  this machine's own 2-process scaling of a pure CPU task: {ceiling:.2f}x; matches reach {figures['scaling_over_machine']:.0%} of it")
    print(f"  builtin_speedup    {figures['builtin_speedup']:8.3f}x (nmmo's loop / the Arena's, pairs {figures['builtin_speedup_pairs']}; "
          f"target >= 3.0; alive at {figures['alive_at']})")
    if "builtin_speedup_long_lived" in figures:
        print(f"  long-lived ({figures['long_lived_lineup']}, alive at {figures['long_lived_alive_at']}): "
              f"{figures['builtin_speedup_long_lived']:.3f}x (pairs {figures['builtin_speedup_long_lived_pairs']}; target >= 2.5)")
    print(f"  identical to nmmo  {figures['identical_events']} ({figures['identity_matches']} matches, {figures['identity_ticks']} ticks, "
          f"{len(figures['identity_maps'])} maps)")
    if sandboxed:
        print(f"  sandboxed {figures['sandboxed_example']} + 15 built-ins: runner {figures['sandboxed_runner_s']} s "
              f"({figures['sandboxed_runner_builtin_s']} s built-ins), nmmo's loop {figures['sandboxed_bare_s']} s "
              f"({figures['sandboxed_bare_builtin_s']} s scripted), before {figures['sandboxed_runner_before_s']} s")
        print(f"  runner / bare without built-ins {figures['runner_over_bare_without_builtins']:.3f}x a worker's first match, "
              f"{figures['runner_over_bare_without_builtins_warm']:.3f}x every later one (warm zygote; target <= 1.03), "
              f"{figures['runner_over_bare_without_builtins_loop']:.3f}x from the first tick (set-up {figures['sandboxed_setup_s']} s "
              f"against {figures['sandboxed_bare_setup_s']} s)")
        print(f"  sandboxed_match_over_nmmo {figures['sandboxed_match_over_nmmo']:.3f}x (the whole match against nmmo's loop "
              f"playing the same teams in process; target <= 0.5)")
        print("  "
              f"matches/hour/core {figures['matches_per_hour_per_core_before']} before, {figures['matches_per_hour_per_core']} after")


def main() -> int:
    args = parse()
    config = MatchConfig(horizon=args.horizon)
    spec = MatchSpec(seed=args.seed, policies=stage1_lineup(), config=config)
    game.ensure_map(game.map_id_for_seed(spec.seed, config.map_pool), config)  # not timed

    bare, runner = paired_runs(spec, args.repeats)
    lived = MatchSpec(seed=args.seed, policies=long_lived_lineup(), config=config)
    lived_bare, lived_runner = paired_runs(lived, args.long_lived_repeats) if args.long_lived_repeats else ([], [])
    scaling = (throughput(spec, workers=1), throughput(spec, workers=2), machine_scaling())
    compared = identity_rows(args)
    sandboxed = MatchSpec(seed=args.seed, policies=sandboxed_lineup(args.example), config=config)
    rounds = sandboxed_rounds(sandboxed, args.sandboxed_repeats)

    figures = runner_figures(args, bare, runner, scaling, compared)
    if lived_runner:
        ratios = [b["seconds"] / r["seconds"] for b, r in zip(lived_bare, lived_runner)]
        figures.update({"builtin_speedup_long_lived": round(statistics.median(ratios), 3),
                        "builtin_speedup_long_lived_pairs": [round(x, 3) for x in ratios],
                        "long_lived_lineup": "16 x forage", "long_lived_alive_at": lived_bare[0]["living"],
                        "long_lived_bare_loop_s": round(statistics.median(b["seconds"] for b in lived_bare), 2),
                        "long_lived_runner_s": round(statistics.median(r["seconds"] for r in lived_runner), 2)})
    if args.sandboxed_repeats:
        figures.update(sandboxed_figures(rounds, args.example))
    print_figures(figures, scaling, sandboxed=bool(args.sandboxed_repeats))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
