"""Neural MMO set-up for an Arena match: its nmmo config, its map, its environment.

Everything here that touches nmmo's configuration is in this module, so that the runner,
the built-in teams and the sandbox all build the same game. Matches are nmmo 2.x's
`Medium` config with `AllGameSystems` (128x128 playable map, 128 NPCs) under the
`TeamBattle` game, which spawns each team together on one of the map's edges.

Maps are generated once per map id and cached: nmmo would otherwise regenerate every map
each time an `Env` is built (about 0.3 s each, and into the working directory).
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import nmmo
import numpy as np
from nmmo.core.config import AllGameSystems, Medium
from nmmo.core.game_api import TeamBattle
from nmmo.core.terrain import MapGenerator, Save
from nmmo.lib.team_helper import spawn_team_together

from arena import ARENA_VERSION
from arena.errors import InvalidArgumentError
from matchmaking.engine import speedups
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.contract import ActionSpace
from matchmaking.engine.observations import ObservationLayout

NMMO_VERSION: str = nmmo.__version__

# Distinguishes the map-choice stream from the other streams drawn from a match seed.
_MAP_STREAM = 0x6D6170  # "map"


class ArenaNmmoConfig(Medium, AllGameSystems):
    """nmmo's Medium config with every game system: the IJCAI-sized free-for-all."""


def nmmo_config(match: MatchConfig, *, map_dir: Path | None = None) -> ArenaNmmoConfig:
    """A fresh nmmo config for a match (nmmo's `Env` keeps a reference and freezes it).

    Args:
        match (`MatchConfig`): teams, sizes and horizon.
        map_dir (`Path`, *optional*): folder holding `map1/` from `ensure_map`; the env
            then loads that map instead of generating maps.
    """
    config = ArenaNmmoConfig()
    config.set("PLAYER_N", match.num_agents)
    config.set("TEAMS", team_agent_ids(match))
    config.set("HORIZON", match.horizon)
    # Agents are driven by the runner, never by nmmo's own scripted hook inside env.step().
    config.set("PLAYERS", [nmmo.Agent])
    if map_dir is not None:
        config.set("PATH_MAPS", str(map_dir))
        config.set("MAP_N", 1)
        config.set("MAP_FORCE_GENERATION", False)
    return config


def team_agent_ids(match: MatchConfig) -> dict[int, list[int]]:
    """nmmo agent ids of each team: team `t`'s member `m` is agent `t * team_size + m + 1`."""
    size = match.team_size
    return {team: list(range(team * size + 1, (team + 1) * size + 1)) for team in range(match.num_teams)}


def map_id_for_seed(seed: int, map_pool: int) -> int:
    """The map a seed plays on, 1..`map_pool`: same seed, same map."""
    state = np.random.SeedSequence([seed, _MAP_STREAM]).generate_state(1)[0]
    return 1 + int(state) % map_pool


def ensure_map(map_id: int, match: MatchConfig) -> Path:
    """Generate map `map_id` of the published pool once; return the folder nmmo loads it from.

    The map depends only on its id, the pool size and the nmmo version (the held-out pool
    is `matchmaking.engine.maps`'s). Concurrent workers may generate the same map: see `save_map`.
    """
    if not 1 <= map_id <= match.map_pool:
        raise InvalidArgumentError(f"`map_id` must be between 1 and {match.map_pool}, got {map_id}.")
    folder = match.maps_dir / f"nmmo-{NMMO_VERSION}-pool{match.map_pool}" / str(map_id)
    if map_saved(folder):
        return folder
    config = ArenaNmmoConfig()
    config.set("MAP_N", match.map_pool)  # nmmo varies terrain scale across the pool
    terrain, tiles = MapGenerator(config).generate_map(map_id - 1, np.random.default_rng(map_id))
    return save_map(folder, terrain, tiles)


def map_saved(folder: Path) -> bool:
    """Whether `folder` holds a complete map written by `save_map`."""
    return (folder / "map1" / "map.npy").is_file() and (folder / "map1" / "fractal.npy").is_file()


def save_map(folder: Path, terrain: np.ndarray, tiles: np.ndarray) -> Path:
    """Write a generated map where nmmo loads it (`folder/map1/`); returns `folder`.

    Each writer writes a private folder and renames it into place, so a reader never sees
    half a map; a writer that loses the race drops its copy (the maps are identical).
    """
    staging = folder.parent / f".{folder.name}.{uuid.uuid4().hex}"
    (staging / "map1").mkdir(parents=True)
    Save.as_numpy(tiles, str(staging / "map1"))
    Save.fractal(terrain, str(staging / "map1"))
    try:
        os.rename(staging, folder)
    except OSError:  # another worker won the race: its map is identical
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def make_env(match: MatchConfig, map_id: int) -> nmmo.Env:
    """A new nmmo environment for a match on published map `map_id` (not yet reset)."""
    return env_on(match, ensure_map(map_id, match))


def env_on(match: MatchConfig, map_dir: Path) -> nmmo.Env:
    """A new nmmo environment for a match on the map saved in `map_dir` (not yet reset),
    without the work of nmmo's loop whose result the Arena never reads (`speedups`)."""
    env = nmmo.Env(nmmo_config(match, map_dir=map_dir))
    speedups.speed_up(env)
    return env


def dispose_env(env: nmmo.Env) -> None:
    """Free a finished match's game now, in a worker that plays match after match.

    nmmo keeps its map's tiles in a NumPy object array, and every tile refers back to the
    realm. NumPy object arrays are invisible to Python's cycle collector, so that cycle
    (the realm, map, datastore, entities: about 40 MB a match) is never collected: a
    worker grew by that much per match without end. Emptying the array breaks the cycle.
    """
    realm = getattr(env, "realm", None)
    tiles = getattr(getattr(realm, "map", None), "tiles", None)
    if isinstance(tiles, np.ndarray) and tiles.dtype == object:
        tiles.fill(None)


def reset_env(env: nmmo.Env, seed: int) -> dict[int, dict[str, Any]]:
    """Reset for a team battle: the seed fixes spawn sides and NPCs. Returns observations."""
    observations, _ = env.reset(seed=seed, map_id=1, game=TeamBattle(env))
    return observations


def spawn_points(env: nmmo.Env, teams: dict[int, list[int]]) -> dict[int, tuple[int, int]]:
    """Where each team spawned, as (side, index): side 0-3 in `arena.schema.SPAWN_SIDES`
    order, index the spawn point along that edge in nmmo's clockwise order.

    `TeamBattle` places the teams on nmmo's evenly spaced edge points
    (`spawn_team_together`) in an order its seed shuffles; this reads back which point
    each team got, from its members' positions right after reset. A team whose members
    are not on a spawn point (none alive) gets (-1, -1).
    """
    config = env.config
    points = spawn_team_together(config, len(teams))
    per_side = len(points) // 4
    where = {tuple(point[0]): k for k, point in enumerate(points)}
    out = {}
    for team, agents in teams.items():
        entity = next((env.realm.players[a] for a in agents if a in env.realm.players), None)
        k = where.get(tuple(int(v) for v in entity.pos)) if entity is not None else None
        out[team] = (-1, -1) if k is None else (k // per_side, k % per_side)
    return out


def share_observation_arrays(env: nmmo.Env, agent_id: int, layout: ObservationLayout, views: list[np.ndarray]) -> bool:
    """Make the env write an agent's observation arrays straight into `views` (no copy).

    nmmo keeps one set of arrays per agent (`Observation.gym_obs.values` and
    `action_targets.values`) and overwrites them in place every tick; putting views of a
    sandbox's shared block in their place turns the per-tick copy into nothing. Returns
    False, changing nothing, if nmmo's internals are not as expected: the caller then
    keeps copying.
    """
    try:
        observation = env.obs[agent_id]
        values = observation.gym_obs.values
        targets = observation.action_targets.values
    except (AttributeError, KeyError):
        return False
    swaps = []
    for field, view in zip(layout.fields, views):
        if not field.shape:
            continue  # scalars travel in the control message's copy
        if field.path[0] == "ActionTargets" and len(field.path) == 3:
            holder, key = targets.get(field.path[1]), field.path[2]
        elif len(field.path) == 1:
            holder, key = values, field.path[0]
        else:
            return False
        current = None if holder is None else holder.get(key)
        if not isinstance(current, np.ndarray) or current.shape != view.shape or current.dtype != view.dtype:
            return False
        swaps.append((holder, key, current, view))
    for holder, key, current, view in swaps:
        view[...] = current
        holder[key] = view
    return True


def action_space(env: nmmo.Env) -> ActionSpace:
    """Action name -> argument name -> number of choices, read from the env's own space.

    Calls the function under nmmo's `lru_cache` directly: the cache lives on the `Env`
    class, and an entry keyed by this env would keep it (and its whole game) alive for
    the rest of the process.
    """
    space = type(env).action_space.__wrapped__(env, env.possible_agents[0])
    return {name: {arg: int(sub.n) for arg, sub in args.items()} for name, args in space.items()}


def env_config(match: MatchConfig, *, team_id: int, seed: int) -> dict[str, Any]:
    """The `env_config` dict a team receives: plain data, safe to send to another process.

    Keys: `team_id`, `num_teams`, `team_size`, `horizon`, `seed` (derive your own RNG
    from it for reproducible matches), `nmmo_version`, `arena_version`, and `nmmo`: every
    scalar setting of the nmmo config (e.g. `PLAYER_VISION_RADIUS`, `MAP_SIZE`).
    """
    scalars = (bool, int, float, str, type(None))
    settings = {k: v for k, v in nmmo_config(match).original.items() if isinstance(v, scalars)}
    return {
        "team_id": team_id,
        "num_teams": match.num_teams,
        "team_size": match.team_size,
        "horizon": match.horizon,
        "seed": seed,
        "nmmo_version": NMMO_VERSION,
        "arena_version": ARENA_VERSION,
        "nmmo": settings,
    }
