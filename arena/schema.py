"""The match record: the one schema every match is written in, and its table form.

A `MatchResult` is what the runner returns, what `python -m matchmaking.evaluate --json`
prints, and, flattened to one row per team (`rows`, `TEAM_COLUMNS`), what the
match-history dataset stores. Its fields, with units and meaning, are listed in docs/history.md ("Match record")
under "Match record". Records are frozen and versioned: a reader checks `schema_version`
before trusting a field.

Every record names its policies by revision (`arena.revision`): `builtin:NAME` for the
Arena's own teams, `local:NAME` for a folder played by the evaluation tool, `owner/name`
at a commit for a Hub repo.

Only the standard library here: the leaderboard reads these records without nmmo, and the
sandboxed team processes import this module too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from arena.errors import DamagedFileError, NotInMatchError
from arena.records import Record
from arena.scoring import Task

#: Bumped whenever a field is added, removed or changes meaning. Version 2 added the
#: spawn point of each team (`spawn_side`, `spawn_index`), duplicate sets (`set_id`,
#: `set_size`, `set_rotation`: written by Arenas before 2026-12-03, when duplicate sets
#: existed; read, never set now) and `held_out`; version 1 records read with their defaults.
SCHEMA_VERSION = 2

#: Versions this code reads (`MatchResult.from_dict`, the history's shards).
READABLE_VERSIONS = (1, 2)

#: Spawn sides, as `TeamResult.spawn_side` numbers them: nmmo's order of the map's edges.
SPAWN_SIDES: tuple[str, ...] = ("north", "east", "south", "west")

class FaultKind(str, Enum):
    """The closed set of ways a team can fail during a match.

    Whatever a policy does wrong maps to one of these; its agents idle for that tick (for
    INIT, CRASH and MEMORY: for the rest of the match) and the match plays on.
    """

    INIT = "INIT"
    """The team could not be built: `policy.py` failed to import or `Team(...)` raised."""
    ERROR = "ERROR"
    """`act()` raised an exception."""
    INVALID = "INVALID"
    """`act()` returned something that is not a valid action dict (wrong type, unknown
    member, action or argument, index out of range)."""
    TIMEOUT = "TIMEOUT"
    """`act()` answered after the step deadline, or not at all."""
    CRASH = "CRASH"
    """The team's process died or exited."""
    MEMORY = "MEMORY"
    """The team's process exceeded its memory limit."""


@dataclass(frozen=True)
class Fault(Record):
    """One failure of a team at one tick."""

    tick: int
    kind: FaultKind
    message: str


@dataclass(frozen=True)
class TaskResult:
    """One task of one team: the raw value measured and the points it earned."""

    value: int
    points: int


@dataclass(frozen=True)
class TeamResult(Record):
    """How one team did in one match."""

    slot: int
    """Team index in the match, 0-15; also its nmmo team id."""
    policy_id: str
    """Who played: `builtin:NAME`, `local:NAME` or a Hub repo id."""
    revision: str
    """Exact version played: a commit sha for Hub repos, a content hash for folders."""
    achievement: int
    """Sum of the four tasks' points, 0-84."""
    rank: int
    """1 is best; teams with equal Achievement share a rank."""
    tasks: Mapping[str, TaskResult]
    """Per task (`travel`, `forage`, `equipment`, `eliminate`): raw value and points."""
    alive: int
    """Members alive at the end of the match."""
    player_kills: int
    """Players of other teams killed by this team's members."""
    deaths: int
    """Members that died during the match."""
    fault_counts: Mapping[str, int] = field(default_factory=dict)
    """Number of faults of each kind (all of them, even past `faults`' cap)."""
    faults: tuple[Fault, ...] = ()
    """The first faults in full (capped by `MatchConfig.max_faults_recorded`)."""
    spawn_side: int = -1
    """Edge of the map the team spawned on: index into `SPAWN_SIDES` (0 north, 1 east,
    2 south, 3 west); -1 when not recorded (schema version 1)."""
    spawn_index: int = -1
    """Which of that edge's spawn points, 0 first in nmmo's clockwise order; -1 when not
    recorded."""

    @property
    def won(self) -> bool:
        """Top of the match (ties at the top included)."""
        return self.rank == 1

    @property
    def total_faults(self) -> int:
        return sum(self.fault_counts.values())


@dataclass(frozen=True)
class MatchResult(Record):
    """One played match: its conditions and every team's result."""

    match_id: str
    """Unique id of the match; derived from its spec, so a replayed spec gets the same id."""
    seed: int
    """Seed of the map choice, spawn order and built-in teams' randomness."""
    map_id: int
    """Map played: 1..256 the published pool (the same id is the same map for the same nmmo
    version), 257 and above the held-out pool of the Space's secret (`matchmaking.engine.maps`)."""
    horizon: int
    """Ticks the match was set to last."""
    ticks: int
    """Ticks actually played (fewer than `horizon` only if every agent died)."""
    nmmo_version: str
    arena_version: str
    started_at: str
    """UTC start time, ISO 8601."""
    duration_s: float
    """Wall time of the match, set-up included."""
    teams: tuple[TeamResult, ...]
    """One per team, in slot order."""
    track: str = "local"
    """Why it was played: `local` (evaluation tool), `pve` or `pvp`."""
    stage: int = 0
    """PvE stage (1-3); 0 outside PvE."""
    set_id: str = ""
    """Empty. Recorded by Arenas before 2026-12-03, when duplicate sets existed (one seed
    played `set_size` times with the seats rotated): the set this match belongs to. Read,
    never set now; such a match is rated on its own, as every match (docs/history.md)."""
    set_size: int = 1
    """1. Before 2026-12-03: matches in the set."""
    set_rotation: int = 0
    """0. Before 2026-12-03: which rotation of the set's seating this match is, 0 to
    `set_size - 1`."""
    held_out: bool = False
    """Whether the map is from the held-out pool (generated from the Space's secret) rather
    than the published one that PvE and the evaluation tool play."""
    schema_version: int = SCHEMA_VERSION

    def team(self, policy_id: str) -> TeamResult:
        """The first team played by `policy_id`."""
        for team in self.teams:
            if team.policy_id == policy_id:
                return team
        raise NotInMatchError(f"Policy {policy_id!r} did not play in match {self.match_id}.")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MatchResult:
        """Read a record of a readable version; an older one reads with the defaults of the
        fields it lacks, as a record of this version.

        Raises:
            `DamagedFileError`: a version this code does not read.
        """
        version = int(data.get("schema_version", 0))
        if version not in READABLE_VERSIONS:
            raise DamagedFileError(
                f"Match record has schema version {version}, this code reads {READABLE_VERSIONS}: "
                "upgrade the project or convert the record."
            )
        return super().from_dict({key: value for key, value in data.items() if key != "schema_version"})

    def outcome(self) -> dict[str, Any]:
        """The record without wall-clock fields: equal for equal seeds and policies."""
        data = self.to_dict()
        for key in ("started_at", "duration_s"):
            data.pop(key)
        return data


#: Names of the tasks in record order, for code that builds columns.
TASK_NAMES: tuple[str, ...] = tuple(task.value for task in Task)


# -- the table form -------------------------------------------------------------------

#: The history table: one row per team per match, match fields repeated on each of a
#: match's rows. (column, Arrow type name); `fault_counts` and `faults` hold JSON.
TEAM_COLUMNS: tuple[tuple[str, str], ...] = (
    ("schema_version", "int16"),
    ("match_id", "string"),
    ("seed", "int64"),
    ("map_id", "int32"),
    ("horizon", "int32"),
    ("ticks", "int32"),
    ("nmmo_version", "string"),
    ("arena_version", "string"),
    ("started_at", "string"),
    ("duration_s", "float64"),
    ("track", "string"),
    ("stage", "int16"),
    ("set_id", "string"),
    ("set_size", "int16"),
    ("set_rotation", "int16"),
    ("held_out", "bool_"),
    ("slot", "int16"),
    ("policy_id", "string"),
    ("revision", "string"),
    ("achievement", "int16"),
    ("rank", "int16"),
    *((f"{task}_{part}", "int32") for task in TASK_NAMES for part in ("value", "points")),
    ("alive", "int16"),
    ("player_kills", "int32"),
    ("deaths", "int16"),
    ("fault_counts", "string"),  # JSON object: kind -> count
    ("faults", "string"),  # JSON list of {tick, kind, message}
    ("spawn_side", "int16"),
    ("spawn_index", "int16"),
)

#: What a version 1 row lacks, and the value it reads as.
V1_DEFAULTS: dict[str, Any] = {
    "set_id": "", "set_size": 1, "set_rotation": 0, "held_out": False, "spawn_side": -1, "spawn_index": -1,
}


def rows(result: MatchResult) -> list[dict[str, Any]]:
    """A match as table rows, one per team (the columns of `TEAM_COLUMNS`)."""
    match = {
        "schema_version": result.schema_version,
        "match_id": result.match_id,
        "seed": result.seed,
        "map_id": result.map_id,
        "horizon": result.horizon,
        "ticks": result.ticks,
        "nmmo_version": result.nmmo_version,
        "arena_version": result.arena_version,
        "started_at": result.started_at,
        "duration_s": result.duration_s,
        "track": result.track,
        "stage": result.stage,
        "set_id": result.set_id,
        "set_size": result.set_size,
        "set_rotation": result.set_rotation,
        "held_out": result.held_out,
    }
    out = []
    for team in result.teams:
        row = dict(match)
        row.update(
            slot=team.slot,
            policy_id=team.policy_id,
            revision=team.revision,
            achievement=team.achievement,
            rank=team.rank,
            alive=team.alive,
            player_kills=team.player_kills,
            deaths=team.deaths,
            fault_counts=json.dumps(dict(team.fault_counts), sort_keys=True),
            faults=json.dumps([f.to_dict() for f in team.faults]),
            spawn_side=team.spawn_side,
            spawn_index=team.spawn_index,
        )
        for task in TASK_NAMES:
            row[f"{task}_value"] = team.tasks[task].value
            row[f"{task}_points"] = team.tasks[task].points
        out.append(row)
    return out


def results_from_rows(records: Iterable[Mapping[str, Any]]) -> list[MatchResult]:
    """Rebuild match records from table rows (any order; duplicates by (match, slot)
    dropped), in the order ratings apply them: start time, then match id."""
    by_match: dict[str, dict[int, Mapping[str, Any]]] = {}
    for row in records:
        by_match.setdefault(row["match_id"], {}).setdefault(int(row["slot"]), row)
    results = []
    for match_id, teams in by_match.items():
        first = next(iter(teams.values()))
        results.append(
            MatchResult(
                match_id=match_id,
                seed=int(first["seed"]),
                map_id=int(first["map_id"]),
                horizon=int(first["horizon"]),
                ticks=int(first["ticks"]),
                nmmo_version=first["nmmo_version"],
                arena_version=first["arena_version"],
                started_at=first["started_at"],
                duration_s=float(first["duration_s"]),
                track=first["track"],
                stage=int(first["stage"]),
                set_id=str(first.get("set_id") or ""),
                set_size=int(first.get("set_size") or 1),
                set_rotation=int(first.get("set_rotation") or 0),
                held_out=bool(first.get("held_out") or False),
                schema_version=int(first["schema_version"]),
                teams=tuple(
                    TeamResult(
                        slot=slot,
                        policy_id=row["policy_id"],
                        revision=row["revision"],
                        achievement=int(row["achievement"]),
                        rank=int(row["rank"]),
                        tasks={t: TaskResult(int(row[f"{t}_value"]), int(row[f"{t}_points"])) for t in TASK_NAMES},
                        alive=int(row["alive"]),
                        player_kills=int(row["player_kills"]),
                        deaths=int(row["deaths"]),
                        fault_counts=json.loads(row["fault_counts"]),
                        faults=tuple(Fault.from_dict(f) for f in json.loads(row["faults"])),
                        spawn_side=int(-1 if row.get("spawn_side") is None else row["spawn_side"]),
                        spawn_index=int(-1 if row.get("spawn_index") is None else row["spawn_index"]),
                    )
                    for slot, row in sorted(teams.items())
                ),
            )
        )
    return sorted(results, key=lambda r: (r.started_at, r.match_id))


#: Fault kinds that mean the team's process could not go on.
SEVERE_FAULTS = frozenset({FaultKind.INIT.value, FaultKind.CRASH.value, FaultKind.MEMORY.value})


def faulty(team: TeamResult, ticks: int, *, max_fault_share: float = 0.1) -> str:
    """Why a team's match counts as faulty (its process died, or it faulted on at least
    `max_fault_share` of the ticks), or "" if it played cleanly enough."""
    severe = [f for f in team.faults if f.kind.value in SEVERE_FAULTS]
    if severe:
        return f"{severe[0].kind.value} at tick {severe[0].tick}: {severe[0].message}"
    if ticks and team.total_faults >= max_fault_share * ticks and team.faults:
        first = team.faults[0]
        return f"{team.total_faults} faults in {ticks} ticks, first {first.kind.value} at tick {first.tick}: {first.message}"
    return ""
