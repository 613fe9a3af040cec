"""The match runner: one Neural MMO free-for-all between team policies, scored.

`run_match(spec)` builds the map and environment from the spec's seed, starts one host per
team, then for every tick gives each team its alive members' observations, checks the
answers against the action space and steps the game. At the end it reads each team's
progress, scores it (`arena.scoring`) and returns a `MatchResult`. Optionally it records
the replay (`arena.replay`, every fault an event on its timeline) and the sandboxed
teams' logs (`arena.logs`). The same spec
gives the same result: the seed fixes the map, spawn order, NPCs and built-in teams'
randomness.

Team failures never end a match (see `matchmaking.engine.hosting`); only a failure of the game
engine itself raises `MatchFailedError`.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np
from nmmo.entity.entity import EntityState
from nmmo.lib.event_code import EventCode
from nmmo.lib.event_log import EventAttr

from arena import ARENA_VERSION
from arena.errors import MatchFailedError, MatchSetupError
from arena.logs import MatchLogs
from arena.policies import PolicyRef
from arena.replay import ReplayRecorder
from arena.schema import Fault, FaultKind, MatchResult, TaskResult, TeamResult
from arena.scoring import RULES, TeamProgress, achievement, competition_ranks
from arena.untrusted import withheld_fault, withheld_log
from matchmaking.engine import game, maps
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.contract import ActionSpace, check_actions
from matchmaking.engine.hosting import TeamHost, TeamSlot
from matchmaking.engine.observations import ObservationLayout
from matchmaking.engine.progress import TravelTracker, team_progress

#: Builds the host of one team: `(policy, slot) -> TeamHost`.
HostFactory = Callable[[PolicyRef, TeamSlot], TeamHost]

_ENTITY_COLUMNS = EntityState.State.attr_name_to_col

# Distinguishes the per-team seed stream from the other streams drawn from a match seed.
_TEAM_STREAM = 0x7465616D  # "team"


@dataclass(frozen=True)
class MatchSpec:
    """Everything that determines a match's outcome.

    Attributes:
        seed (`int`): non-negative; fixes map, spawn order, NPCs and built-in randomness.
        policies (`tuple[PolicyRef, ...]`): who plays each slot, `config.num_teams` of them.
        config (`MatchConfig`): rules and limits.
        track (`str`): why it is played: `local`, `pve` or `pvp`.
        stage (`int`): PvE stage, 0 outside PvE.
        set_id (`str`), set_size (`int`), set_rotation (`int`): empty, 1 and 0; otherwise
            the duplicate set of a match recorded before sets were retired (2026-12-03),
            so that its rerun derives the match id it was recorded with.
        held_out (`bool`): play the held-out map pool (PvP; needs `config.map_key`)
            rather than the published one (`matchmaking.engine.maps`).
        match_id (`str`, *optional*): defaults to a hash of everything above.
    """

    seed: int
    policies: tuple[PolicyRef, ...]
    config: MatchConfig = field(default_factory=MatchConfig)
    track: str = "local"
    stage: int = 0
    set_id: str = ""
    set_size: int = 1
    set_rotation: int = 0
    held_out: bool = False
    match_id: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise MatchSetupError(f"`seed` must be a non-negative integer, got {self.seed!r}.")
        if len(self.policies) != self.config.num_teams:
            raise MatchSetupError(
                f"A match needs one policy per team: {self.config.num_teams} expected, "
                f"{len(self.policies)} given."
            )
        maps.check_key(self.held_out, self.config.map_key)
        if not self.match_id:
            object.__setattr__(self, "match_id", self._derived_id())

    def _derived_id(self) -> str:
        c = self.config
        key = {
            "seed": self.seed,
            "policies": [(p.policy_id, p.id.sha) for p in self.policies],
            "rules": [c.num_teams, c.team_size, c.horizon, c.map_pool],
            "track": self.track,
            "stage": self.stage,
        }
        if self.set_id:  # matches outside sets keep the ids they had before sets existed
            key["set"] = [self.set_id, self.set_size, self.set_rotation]
        if self.held_out:  # likewise matches on the published pool
            key["held_out"] = True
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]


def team_seed(match_seed: int, team_id: int) -> int:
    """The seed a team receives in `env_config["seed"]`: independent across slots."""
    return int(np.random.SeedSequence([match_seed, team_id, _TEAM_STREAM]).generate_state(1)[0])


class _FaultLog:
    """Per team: every fault counted by kind, the first ones kept in full, and every one
    handed to the replay's timeline (`recorder`); the words of the `withheld` teams'
    faults go to the operator alone (`arena.untrusted`)."""

    def __init__(self, num_teams: int, keep: int, recorder: ReplayRecorder | None = None,
                 withheld: frozenset[int] = frozenset(), where: str = ""):
        self.keep = keep
        self.recorder = recorder
        self.withheld = withheld
        self.where = where
        self.counts: list[dict[str, int]] = [{} for _ in range(num_teams)]
        self.kept: list[list[Fault]] = [[] for _ in range(num_teams)]

    def add(self, team: int, fault: Fault) -> None:
        if team in self.withheld:
            fault = withheld_fault(fault, where=f"{self.where}, team {team}")
        self.counts[team][fault.kind.value] = self.counts[team].get(fault.kind.value, 0) + 1
        if len(self.kept[team]) < self.keep:
            self.kept[team].append(fault)
        if self.recorder is not None:
            self.recorder.fault(team, fault)


def run_match(
    spec: MatchSpec,
    *,
    host_factory: HostFactory,
    recorder: ReplayRecorder | None = None,
    logs: MatchLogs | None = None,
    progress: Callable[[int], None] | None = None,
) -> MatchResult:
    """Play one match to its horizon (or until every agent is dead) and score it.

    Args:
        spec (`MatchSpec`): seed, policies and rules.
        host_factory (`HostFactory`): how each team is hosted, a choice the engine leaves to
            its caller: `matchmaking.teams.factory.in_process_host` (the Arena's own teams,
            trusted local runs) or `matchmaking.sandbox.host.sandboxed_host` (a sandbox for
            every submitted team). A factory with a `prepare()` attribute has it called
            before the game's set-up when a submission is seated (the sandbox starts its
            zygote there).
        recorder (`ReplayRecorder`, *optional*): records the match's replay, its faults
            included (its `data` holds the bytes afterwards).
        logs (`MatchLogs`, *optional*): collects what each sandboxed team wrote to stdout
            and stderr (its `data` holds the bytes afterwards; None if no team was
            sandboxed: teams in the match process have no logs).
        progress (`Callable[[int], None]`, *optional*): called with 0 once the teams are up,
            then with every tick played (`matchmaking.service.live`).

    Returns:
        `MatchResult`: the record of the match, faults included.

    Raises:
        `MatchFailedError`: the game engine itself failed.

    Example:
        >>> from arena.policies import builtin
        >>> from matchmaking.teams.factory import in_process_host
        >>> spec = MatchSpec(seed=1, policies=(builtin("forage"),) * 16, config=MatchConfig(horizon=8))
        >>> run_match(spec, host_factory=in_process_host).ticks
        8
    """
    config = spec.config
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    started = time.perf_counter()
    map_id, map_dir = maps.spec_map(spec.seed, spec.held_out, config.map_key, config)
    teams = game.team_agent_ids(config)
    withheld = frozenset(t for t, ref in enumerate(spec.policies) if config.withhold_policy_words and not ref.is_builtin)
    faults = _FaultLog(config.num_teams, config.max_faults_recorded, recorder, withheld, where=f"match {spec.match_id}")
    hosts: list[TeamHost] = []  # filled as they are made: every one made is closed
    env = None
    prepare = getattr(host_factory, "prepare", None)
    if callable(prepare) and not all(ref.is_builtin for ref in spec.policies):
        prepare()  # e.g. the sandbox's zygote imports beside the game's set-up, not after it
    try:
        # TRY NOT TO MODIFY: set-up order fixes what the seed determines
        env = game.env_on(config, map_dir)
        observations, space, spawns = _set_up(spec, env, teams, host_factory, hosts)
        _start_teams(hosts, env, teams, faults)
        ticks, travel = _play(env, observations, _Seats(hosts, teams, space, faults, config), recorder, progress)
        for team_id, host in enumerate(hosts):  # a late answer's error is the team's, even after its last tick
            owed = host.settle(ticks)
            if owed is not None:
                faults.add(team_id, owed)
        reached, alive_at_end = _final_standing(env, spec, teams, travel, recorder)
    except Exception as exc:  # only engine failures reach here: team failures are faults
        raise MatchFailedError(f"Match {spec.match_id} (seed {spec.seed}) failed in the game engine: {exc!r}") from exc
    finally:
        for host in hosts:
            host.close()
        if env is not None:
            game.dispose_env(env)
    if logs is not None:
        _keep_logs(hosts, logs, spec.match_id, withheld)
    results = _team_results(spec, reached, alive_at_end, faults, spawns)
    return MatchResult(
        match_id=spec.match_id,
        seed=spec.seed,
        map_id=map_id,
        horizon=config.horizon,
        ticks=ticks,
        nmmo_version=game.NMMO_VERSION,
        arena_version=ARENA_VERSION,
        started_at=started_at,
        duration_s=round(time.perf_counter() - started, 3),
        teams=results,
        track=spec.track,
        stage=spec.stage,
        set_id=spec.set_id,
        set_size=spec.set_size,
        set_rotation=spec.set_rotation,
        held_out=spec.held_out,
    )


# -- the stages of `run_match`, in order -----------------------------------------------
def _set_up(spec: MatchSpec, env: Any, teams: dict[int, list[int]], host_factory: HostFactory,
            hosts: list[TeamHost]) -> tuple[dict[int, dict[str, Any]], ActionSpace, dict[int, tuple[int, int]]]:
    """The game reset to the spec's seed, and a host made for every team, appended to `hosts`
    one at a time (the caller closes every host made, even if a later one fails). Returns
    the first observations, the action space and where each team spawned."""
    # TRY NOT TO MODIFY: set-up order fixes what the seed determines
    config = spec.config
    observations = game.reset_env(env, spec.seed)
    space = game.action_space(env)
    layout = ObservationLayout.from_observation(next(iter(observations.values())), config.team_size)
    spawns = game.spawn_points(env, teams)
    for team_id, ref in enumerate(spec.policies):
        env_config = game.env_config(config, team_id=team_id, seed=team_seed(spec.seed, team_id))
        hosts.append(host_factory(ref, TeamSlot(team_id, env_config, config, layout)))
    return observations, space, spawns


def _start_teams(hosts: list[TeamHost], env: Any, teams: dict[int, list[int]], faults: _FaultLog) -> None:
    """Build every team: all launched at once (sandboxes import in parallel), then each
    awaited, its INIT fault recorded, and bound to its observations."""
    for host in hosts:
        host.launch()
    for team_id, host in enumerate(hosts):
        fault = host.start()
        if fault is not None:
            faults.add(team_id, fault)
        host.bind_observations(env, teams[team_id])


@dataclass(frozen=True)
class _Seats:
    """Who sits at the table, and what each tick checks their answers against."""

    hosts: list[TeamHost]
    teams: dict[int, list[int]]
    space: ActionSpace
    faults: _FaultLog
    config: MatchConfig


def _play(env: Any, observations: dict[int, dict[str, Any]], seats: _Seats, recorder: ReplayRecorder | None,
          progress: Callable[[int], None] | None) -> tuple[int, TravelTracker]:
    """The game loop, to the horizon or until every agent is dead: each tick, every team is
    asked and the game stepped on the answers. Returns the ticks played and how far each
    agent travelled."""
    config = seats.config
    travel = TravelTracker(config.num_agents)
    entities = EntityState.Query.table(env.realm.datastore)
    travel.start(entities)
    if recorder is not None:
        recorder.start(tiles=env.tile_map[:, :, 2], entities=entities, columns=_ENTITY_COLUMNS, num_agents=config.num_agents)

    # ALGO LOGIC: the game loop
    ticks = 0
    if progress is not None:
        progress(0)
    for tick in range(1, config.horizon + 1):
        observations, *_ = env.step(_ask_teams(tick, env.realm.players, observations, seats))
        entities = EntityState.Query.table(env.realm.datastore)
        travel.update(entities)
        if recorder is not None:
            recorder.tick(entities)
        ticks = tick
        if progress is not None:
            progress(tick)
        if not env.realm.players:
            break
    return ticks, travel


def _ask_teams(tick: int, alive: Mapping[int, Any], observations: dict[int, dict[str, Any]],
               seats: _Seats) -> dict[int, dict[str, dict[str, int]]]:
    """One tick's actions, by agent: every team with members `alive` is handed their
    observations, then every answer is collected and checked; a fault idles the team."""
    teams, config = seats.teams, seats.config
    asked: dict[int, frozenset[int]] = {}
    for team_id, host in enumerate(seats.hosts):  # every team thinks at once ...
        team_obs = {m: observations[a] for m, a in enumerate(teams[team_id]) if a in alive}
        if team_obs:
            host.request(tick, team_obs)
            asked[team_id] = frozenset(team_obs)
    actions: dict[int, dict[str, dict[str, int]]] = {}
    for team_id, members in asked.items():  # ... then answers are collected
        answer = seats.hosts[team_id].answer()
        if answer.fault is not None:
            seats.faults.add(team_id, answer.fault)
            continue
        checked = check_actions(answer.actions, alive_members=members, team_size=config.team_size, space=seats.space)
        if checked.problems:
            seats.faults.add(team_id, Fault(tick, FaultKind.INVALID, checked.summary()[: config.fault_message_chars]))
        for member, action in checked.actions.items():
            actions[teams[team_id][member]] = action
    return actions


def _final_standing(env: Any, spec: MatchSpec, teams: dict[int, list[int]], travel: TravelTracker,
                    recorder: ReplayRecorder | None) -> tuple[dict[int, TeamProgress], dict[int, int]]:
    """What each team reached (from the game's events) and how many of its members are
    alive at the end; the replay finished with the events."""
    events = env.realm.event_log.get_data()
    reached = team_progress(events, teams, travel.farthest, base_level=env.config.PROGRESSION_BASE_LEVEL)
    if recorder is not None:
        recorder.finish(
            match_id=spec.match_id,
            events=events,
            event_columns=EventAttr,
            event_codes={name: getattr(EventCode, name) for name in ("SCORE_HIT", "PLAYER_KILL", "LEVEL_UP", "EQUIP_ITEM")},
            teams=teams,
            policies=[ref.label for ref in spec.policies],
        )
    alive_at_end = {team_id: sum(a in env.realm.players for a in agent_ids) for team_id, agent_ids in teams.items()}
    return reached, alive_at_end


def _keep_logs(hosts: list[TeamHost], logs: MatchLogs, match_id: str, withheld: frozenset[int]) -> None:
    """Every team's stdout and stderr into `logs` (teams in the match process have none;
    the `withheld` teams' words go to the operator alone)."""
    for team_id, host in enumerate(hosts):
        team_log = host.output_log()
        if team_log is not None:
            logs.add(withheld_log(team_log, where=f"match {match_id}") if team_id in withheld else team_log)
    logs.finish(match_id=match_id)


def _team_results(spec: MatchSpec, reached: dict[int, TeamProgress], alive_at_end: dict[int, int], faults: _FaultLog,
                  spawns: dict[int, tuple[int, int]]) -> tuple[TeamResult, ...]:
    """Every team's record: its score and rank (`arena.scoring`), its faults, where it spawned."""
    # ALGO LOGIC: score and rank
    slots = range(spec.config.num_teams)
    scores = {team_id: achievement(reached[team_id]) for team_id in slots}
    ranks = competition_ranks([scores[t].total for t in slots])
    results = []
    for team_id, ref in enumerate(spec.policies):
        score = scores[team_id]
        results.append(
            TeamResult(
                slot=team_id,
                policy_id=ref.policy_id,
                revision=ref.id.sha,
                achievement=score.total,
                rank=ranks[team_id],
                tasks={
                    task.value: TaskResult(value=reached[team_id].value(task), points=score.points[task])
                    for task in RULES
                },
                alive=alive_at_end[team_id],
                player_kills=reached[team_id].eliminate,
                deaths=spec.config.team_size - alive_at_end[team_id],
                fault_counts=faults.counts[team_id],
                faults=tuple(faults.kept[team_id]),
                spawn_side=spawns[team_id][0],
                spawn_index=spawns[team_id][1],
            )
        )
    return tuple(results)


def policies_for(target: PolicyRef, opponents: Sequence[PolicyRef], *, slot: int = 0) -> tuple[PolicyRef, ...]:
    """A match line-up: `target` at `slot`, the opponents in order around it."""
    lineup = list(opponents)
    lineup.insert(slot, target)
    return tuple(lineup)
