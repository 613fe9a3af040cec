"""Synthetic match histories from hidden skills, for testing and measuring the ratings.

A population of policies with known ("hidden") skills plays 16-team free-for-alls: each
team's Achievement is drawn from its skill plus noise and rounded to the scoring table's
grain, so ties happen (many teams at 0) the way they do in real matches. Nothing here
runs Neural MMO: this is how the rating engines and the matchmaking are checked against
a truth that real matches never reveal.

`seated_history` adds the luck of the draw: each match is on one of a pool of maps and
deals its teams the spawn points of a real match (four edges, four points along each),
and planted effects (`SeatEffects`) of the spawn side, the point along the edge, the
slot, the side on a given map, and the map's level of Achievement move the results, so
that `arena.luck` can be checked to find them again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import numpy as np

from arena.schema import MatchResult, TaskResult, TeamResult
from arena.scoring import competition_ranks

_EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)

#: Edges of the map and spawn points along each, as in a real 16-team match.
SIDES, POINTS_PER_SIDE = 4, 4


@dataclass(frozen=True)
class Population:
    """Policies and their hidden skills (in Plackett-Luce units: a skill gap of 1 makes
    the better policy win a duel about 73% of the time)."""

    ids: tuple[str, ...]
    skills: np.ndarray

    @classmethod
    def random(cls, size: int, *, seed: int = 0, spread: float = 1.5, prefix: str = "sim/policy") -> Population:
        rng = np.random.default_rng(seed)
        return cls(ids=tuple(f"{prefix}-{i:04d}" for i in range(size)), skills=rng.normal(0.0, spread, size))

    def skill(self, policy_id: str) -> float:
        return float(self.skills[self.ids.index(policy_id)])


def play(
    lineup: Sequence[str],
    skills: Sequence[float],
    *,
    rng: np.random.Generator,
    index: int,
    track: str = "pvp",
    coarse: bool = True,
    map_id: int = 1,
    spawns: Sequence[tuple[int, int]] | None = None,
    level: float = 0.0,
) -> MatchResult:
    """One synthetic match. Performance = skill + Gumbel noise, so that the order of
    performances is exactly a Plackett-Luce draw. `coarse` scores it as real matches look
    (Achievement = 4 x round(max(0, performance + 2)): many ties, many zeros); otherwise
    the score keeps the full order (no ties), where the model is exactly right.

    `skills` may already hold each seat's luck (`seated_history`); `spawns` records each
    slot's (side, index), `level` shifts every team's performance before scoring (a map
    where everyone does better: it moves Achievement, never the order)."""
    performance = np.asarray(skills) + rng.gumbel(size=len(skills))
    if coarse:
        achievement = (4 * np.clip(np.round(performance + 2.0 + level), 0, 21)).astype(int)
    else:
        achievement = np.round((performance + 20.0) * 1000).astype(int)
    ranks = competition_ranks(achievement.tolist())
    teams = tuple(
        TeamResult(
            slot=slot,
            policy_id=policy,
            revision="sim",
            achievement=int(achievement[slot]),
            rank=ranks[slot],
            tasks={task: TaskResult(0, 0) for task in ("travel", "forage", "equipment", "eliminate")},
            alive=0,
            player_kills=0,
            deaths=8,
            spawn_side=-1 if spawns is None else int(spawns[slot][0]),
            spawn_index=-1 if spawns is None else int(spawns[slot][1]),
        )
        for slot, policy in enumerate(lineup)
    )
    return MatchResult(
        match_id=f"sim-{index:07d}",
        seed=index,
        map_id=map_id,
        horizon=1024,
        ticks=1024,
        nmmo_version="sim",
        arena_version="sim",
        started_at=(_EPOCH + timedelta(seconds=index)).isoformat(timespec="seconds"),
        duration_s=0.0,
        teams=teams,
        track=track,
    )


def random_history(
    population: Population, matches: int, *, seed: int = 0, pool: int = 16, coarse: bool = True
) -> list[MatchResult]:
    """`matches` matches of uniformly random pools of `pool` policies."""
    rng = np.random.default_rng(seed)
    history = []
    for index in range(matches):
        chosen = rng.choice(len(population.ids), size=pool, replace=False)
        lineup = [population.ids[i] for i in chosen]
        history.append(play(lineup, population.skills[chosen], rng=rng, index=index, coarse=coarse))
    return history


def random_history_columns(
    population: Population, matches: int, *, seed: int = 0, pool: int = 16, coarse: bool = True
) -> dict[str, np.ndarray]:
    """`random_history` as the history table's columns (`arena.schema.TEAM_COLUMNS`, one
    row per team, in their dtypes), without a Python object per match or row.

    The same matches, row for row, as `rows()` of `random_history(population, matches,
    seed=seed, pool=pool, coarse=coarse)`: the generator is drawn in the same order (a pool,
    then its noise, match after match); everything else is computed on whole arrays. This
    is how the benches build 100,000 to 1,000,000 matches in seconds rather than minutes.
    """
    from arena.schema import TASK_NAMES, TEAM_COLUMNS

    rng = np.random.default_rng(seed)
    size = len(population.ids)
    chosen = np.empty((matches, pool), dtype=np.int64)
    noise = np.empty((matches, pool))
    for row in range(matches):  # ALGO LOGIC: the draws of `random_history`, in its order
        chosen[row] = rng.choice(size, size=pool, replace=False)
        noise[row] = rng.gumbel(size=pool)
    performance = population.skills[chosen] + noise
    if coarse:
        achievement = (4 * np.clip(np.round(performance + 2.0), 0, 21)).astype(int)
    else:
        achievement = np.round((performance + 20.0) * 1000).astype(int)
    # competition ranks per match: 1 + the teams that scored strictly more
    ranks = 1 + (achievement[:, None, :] > achievement[:, :, None]).sum(axis=2)
    n = matches * pool
    index = np.arange(matches)
    match_ids = np.array([f"sim-{i:07d}" for i in index], dtype=object)
    starts = np.array([(_EPOCH + timedelta(seconds=int(i))).isoformat(timespec="seconds") for i in index], dtype=object)
    ids = np.array(population.ids, dtype=object)

    def constant(value, dtype) -> np.ndarray:
        if dtype is object:
            column = np.empty(n, dtype=object)
            column[:] = value  # one shared object, as Arrow's pandas conversion deduplicates them
            return column
        return np.full(n, value, dtype=dtype)

    columns = {
        "schema_version": constant(2, np.int16), "match_id": np.repeat(match_ids, pool),
        "seed": np.repeat(index, pool).astype(np.int64), "map_id": constant(1, np.int32),
        "horizon": constant(1024, np.int32), "ticks": constant(1024, np.int32),
        "nmmo_version": constant("sim", object), "arena_version": constant("sim", object),
        "started_at": np.repeat(starts, pool), "duration_s": constant(0.0, np.float64),
        "track": constant("pvp", object), "stage": constant(0, np.int16), "set_id": constant("", object),
        "set_size": constant(1, np.int16), "set_rotation": constant(0, np.int16),
        "held_out": constant(False, np.bool_), "slot": np.tile(np.arange(pool, dtype=np.int16), matches),
        "policy_id": ids[chosen.ravel()], "revision": constant("sim", object),
        "achievement": achievement.ravel().astype(np.int16), "rank": ranks.ravel().astype(np.int16),
        **{f"{task}_{part}": constant(0, np.int32) for task in TASK_NAMES for part in ("value", "points")},
        "alive": constant(0, np.int16), "player_kills": constant(0, np.int32), "deaths": constant(8, np.int16),
        "fault_counts": constant("{}", object), "faults": constant("[]", object),
        "spawn_side": constant(-1, np.int16), "spawn_index": constant(-1, np.int16),
    }
    return {name: columns[name] for name, _ in TEAM_COLUMNS}


@dataclass(frozen=True)
class SeatEffects:
    """Planted luck, in the same units as the skills (added to a seat's performance).

    Arrays default to no effect; `map_side[m - 1, side]` is side `side` on map `m`, and
    `map_level[m - 1]` shifts every team's performance on map `m` (Achievement only: in a
    ranking every team of the match shares it)."""

    maps: int = 1
    side: np.ndarray = field(default_factory=lambda: np.zeros(SIDES))
    index: np.ndarray = field(default_factory=lambda: np.zeros(POINTS_PER_SIDE))
    slot: np.ndarray = field(default_factory=lambda: np.zeros(SIDES * POINTS_PER_SIDE))
    map_side: np.ndarray | None = None
    map_level: np.ndarray | None = None

    def seat(self, map_id: int, slot: int, side: int, index: int) -> float:
        """The planted luck of one seat."""
        luck = float(self.side[side] + self.index[index] + self.slot[slot])
        if self.map_side is not None:
            luck += float(self.map_side[map_id - 1, side])
        return luck

    def level(self, map_id: int) -> float:
        return 0.0 if self.map_level is None else float(self.map_level[map_id - 1])


def seated_history(
    population: Population,
    matches: int,
    *,
    effects: SeatEffects | None = None,
    seed: int = 0,
    coarse: bool = True,
    track: str = "pvp",
) -> list[MatchResult]:
    """`matches` 16-team matches of random pools, each on a random map of `effects.maps`,
    with the spawn points dealt to the slots at random (as nmmo's seeded shuffle does) and
    each seat's planted luck added to its policy's skill."""
    effects = effects or SeatEffects()
    teams = SIDES * POINTS_PER_SIDE
    points = [(side, index) for side in range(SIDES) for index in range(POINTS_PER_SIDE)]
    rng = np.random.default_rng(seed)
    history = []
    for number in range(matches):
        chosen = rng.choice(len(population.ids), size=teams, replace=len(population.ids) < teams)
        map_id = int(rng.integers(1, effects.maps + 1))
        spawns = [points[k] for k in rng.permutation(teams)]
        strengths = [
            float(population.skills[c]) + effects.seat(map_id, slot, *spawns[slot]) for slot, c in enumerate(chosen)
        ]
        history.append(play([population.ids[c] for c in chosen], strengths, rng=rng, index=number, track=track,
                            coarse=coarse, map_id=map_id, spawns=spawns, level=effects.level(map_id)))
    return history
