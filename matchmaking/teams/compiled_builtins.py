"""nmmo's scripted baselines at compiled speed, deciding exactly what they decide in nmmo.

Why: on a CPU-basic Space a match is compute-bound, and about 45% of nmmo's own loop is
its scripted agents thinking in pure Python (issue 25): mostly the path searches of
`scripted/move.py` (`aStar`, `forageDijkstra`, each asking `ob.tile()` and `inSight()`
hundreds of times per agent and tick), then `attack.closestTarget`, which parses every
visible entity into a namespace to keep one.

What, in two parts, both used only by the Arena's `ScriptedTeam`
(`matchmaking.teams.builtin`):

1. **The same algorithms, step for step, compiled.** `a_star` and `forage_dijkstra` are
   nmmo's `move.aStar` and `move.forageDijkstra` compiled with numba
   (`arena.kernels.compiler`), on the observation's window of tile materials. They visit
   nodes in nmmo's order: the same neighbour order, the same FIFO queue, the same heap
   order (priority, then row, then column, as Python compares `(priority, (row, col))`
   tuples), the same cut-off and the same tie-breaks, so they return the same step; the
   RNG is drawn exactly where nmmo draws it (`move.towards`, still nmmo's, in Python).
   `closest_target` is `attack.closestTarget` on the entity table at once (the first row
   at the smallest non-zero Chebyshev distance, as nmmo's strict `<` keeps the first).
   `compiled_class(cls)` is a subclass of nmmo's class whose `forage`, `explore`,
   `evade` and `scan_agents` are nmmo's own `Scripted` methods, rebound (with nmmo's own
   `move.explore`, `move.evade` and `move.pathfind`) to a namespace in which these
   replace the pure-Python searches. nmmo's code stays the code that runs; only the
   searches it calls are swapped, so a change upstream is picked up, and caught by the
   identity test if it changes what the searches must compute.
2. **nmmo's own observations, read directly** (`direct_observations`): in the match's
   process a built-in team reads the `Observation` objects nmmo's loop hands its own
   scripted agents, and their gym conversion, which nobody reads, is skipped.

Why this is contained here, and not a patch of `scripted.move` or of nmmo's classes: the
change stays inside the classes the Arena's built-ins are made of and the observations of
their agents, so nmmo's own loop (`bench.match_speed.bare_match`, the baseline every
speed is measured against) and anything else in the process keep running nmmo's
unpatched code. The identity of the two is checked, event for event, by
`tests/test_builtin_identity.py` (a few seeds, short matches) and by
`python -m bench.match_speed` (20 seeds, full matches).

A search the kernels cannot take exactly (an observation whose tile window is not the
full vision square) falls back to nmmo's own function.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
from nmmo.core.tile import TileState
from nmmo.entity.entity import EntityState
from nmmo.lib import material
from scripted import attack, baselines, move

from arena.kernels.compiler import jit

_MATERIAL = TileState.State.attr_name_to_col["material_id"]
_ENTITY = EntityState.State.attr_name_to_col

#: Where nmmo's searches may step: `move.aStar` and `move.forageDijkstra` skip a tile whose
#: material is not `Habitable` (aStar also skips `Impassible`, a subset of the rest).
_WALKABLE = np.zeros(256, dtype=np.bool_)
_WALKABLE[sorted(material.Habitable.indices - material.Impassible.indices)] = True
_HABITABLE = np.zeros(256, dtype=np.bool_)
_HABITABLE[sorted(material.Habitable.indices)] = True

#: The neighbours of a tile in the order nmmo visits them (`nmmo.lib.astar.adjacentPos`):
#: up, left, down, right. The order breaks ties between equally good steps.
NEIGHBOUR_ROWS = np.array([-1, 0, 1, 0], dtype=np.int64)
NEIGHBOUR_COLS = np.array([0, -1, 0, 1], dtype=np.int64)


# ALGO LOGIC: nmmo's `move.aStar`, on a (2v+1)^2 window of materials -----------------------
@jit()
def _a_star(materials, walkable, vision, goal_r, goal_c, cutoff, dr, dc):  # pragma: no cover - compiled
    side = 2 * vision + 1
    cells = side * side
    if goal_r == 0 and goal_c == 0:
        return 0, 0
    cost = np.full(cells, -1, dtype=np.int64)  # -1: not in `cost`
    back = np.full(cells, -1, dtype=np.int64)  # -1: not in `backtrace`
    heap = np.empty(4 * cutoff + 8, dtype=np.int64)  # keys: priority, then row, then column
    start = vision * side + vision
    cost[start] = 0
    heap[0] = start  # (0, start)
    size = 1
    closest = start
    closest_h = abs(goal_r) + abs(goal_c)
    closest_cost = closest_h
    while size > 0:
        cutoff -= 1
        if cutoff <= 0:
            break
        # heappop
        top = heap[0]
        size -= 1
        if size > 0:
            last = heap[size]
            i = 0
            while True:
                child = 2 * i + 1
                if child >= size:
                    break
                if child + 1 < size and heap[child + 1] < heap[child]:
                    child += 1
                if heap[child] < last:
                    heap[i] = heap[child]
                    i = child
                else:
                    break
            heap[i] = last
        cur = top % cells
        cur_r = cur // side - vision
        cur_c = cur % side - vision
        if cur_r == goal_r and cur_c == goal_c:
            break
        for k in range(4):
            nr = cur_r + dr[k]
            nc = cur_c + dc[k]
            if nr < -vision or nr > vision or nc < -vision or nc > vision:
                continue
            nxt = (nr + vision) * side + nc + vision
            if not walkable[materials[nxt]]:
                continue
            new_cost = cost[cur] + 1
            if cost[nxt] < 0 or new_cost < cost[nxt]:
                cost[nxt] = new_cost
                heuristic = abs(goal_r - nr) + abs(goal_c - nc)
                priority = new_cost + heuristic
                if heuristic < closest_h or (heuristic == closest_h and priority < closest_cost):
                    closest = nxt
                    closest_h = heuristic
                    closest_cost = priority
                # heappush
                key = priority * cells + nxt
                i = size
                size += 1
                while i > 0:
                    parent = (i - 1) // 2
                    if key < heap[parent]:
                        heap[i] = heap[parent]
                        i = parent
                    else:
                        break
                heap[i] = key
                back[nxt] = cur
    goal = closest
    while back[goal] >= 0 and back[goal] != start:
        goal = back[goal]
    return goal // side - vision, goal % side - vision


# ALGO LOGIC: nmmo's `move.forageDijkstra` (a breadth-first search), same window --------------
@jit()
def _forage(materials, habitable, vision, food, water, food_max, water_max, foilage, water_index, cutoff, dr, dc):  # pragma: no cover - compiled
    side = 2 * vision + 1
    cells = side * side
    start = vision * side + vision
    back = np.full(cells, -1, dtype=np.int64)  # -1: not in `backtrace` (start holds itself)
    food_at = np.zeros(cells, dtype=np.int64)
    water_at = np.zeros(cells, dtype=np.int64)
    queue = np.empty(cells, dtype=np.int64)
    back[start] = start
    food_at[start] = food
    water_at[start] = water
    queue[0] = start
    head, tail = 0, 1
    best = -1000
    goal = start
    while head < tail:
        cutoff -= 1
        if cutoff <= 0:
            break
        cur = queue[head]
        head += 1
        cur_r = cur // side - vision
        cur_c = cur % side - vision
        for k in range(4):
            nr = cur_r + dr[k]
            nc = cur_c + dc[k]
            if nr < -vision or nr > vision or nc < -vision or nc > vision:
                continue
            nxt = (nr + vision) * side + nc + vision
            if back[nxt] >= 0:
                continue
            matl = materials[nxt]
            if not habitable[matl]:
                continue
            f = max(0, food_at[cur] - 1)
            w = max(0, water_at[cur] - 1)
            if matl == foilage:
                f = min(f + food_max // 2, food_max)
            for j in range(4):
                pr = nr + dr[j]
                pc = nc + dc[j]
                if pr < -vision or pr > vision or pc < -vision or pc > vision:
                    continue
                if materials[(pr + vision) * side + pc + vision] == water_index:
                    w = min(w + water_max // 2, water_max)
                    break
            food_at[nxt] = f
            water_at[nxt] = w
            total = min(f, w)
            if total > best or (total == best and max(f, w) > max(food_at[goal], water_at[goal])):
                best = total
                goal = nxt
            queue[tail] = nxt
            tail += 1
            back[nxt] = cur
    while back[goal] >= 0 and back[goal] != start:
        goal = back[goal]
    return goal // side - vision, goal % side - vision


def _materials(config: Any, ob: Any) -> tuple[np.ndarray, int] | None:
    """The observation's tile materials in row-major window order, and the vision radius;
    None when the window is not the full vision square the kernels index."""
    vision = int(config.PLAYER_VISION_RADIUS)
    tiles = ob.tiles
    if tiles is None or tiles.ndim != 2 or tiles.shape[0] != (2 * vision + 1) ** 2:
        return None
    return np.ascontiguousarray(tiles[:, _MATERIAL], dtype=np.int64), vision


def a_star(config: Any, ob: Any, actions: Any, rr: int, cc: int, cutoff: int = 100) -> tuple[int, int]:
    """`scripted.move.aStar`, compiled: the first step toward (rr, cc), relative to the agent."""
    window = _materials(config, ob)
    if window is None:
        return move.aStar(config, ob, actions, rr, cc, cutoff=cutoff)
    materials, vision = window
    r, c = _a_star(materials, _WALKABLE, vision, int(rr), int(cc), int(cutoff), NEIGHBOUR_ROWS, NEIGHBOUR_COLS)
    return int(r), int(c)


def forage_dijkstra(config: Any, ob: Any, actions: Any, food_max: int, water_max: int, np_random: Any, cutoff: int = 100) -> None:
    """`scripted.move.forageDijkstra`, compiled: a step toward the best food and water."""
    window = _materials(config, ob)
    if window is None:
        move.forageDijkstra(config, ob, actions, food_max, water_max, np_random, cutoff=cutoff)
        return
    materials, vision = window
    agent = ob.agent
    r, c = _forage(
        materials, _HABITABLE, vision, int(agent.food), int(agent.water), int(food_max), int(water_max),
        material.Foilage.index, material.Water.index, int(cutoff), NEIGHBOUR_ROWS, NEIGHBOUR_COLS,
    )
    # nmmo traces a goal left at the start to None: `towards` then draws a random direction,
    # exactly as it does for (0, 0)
    direction = move.towards((int(r), int(c)), np_random)
    actions[move.action.Move] = {move.action.Direction: direction}


def closest_target(config: Any, ob: Any) -> tuple[Any, Any]:
    """`scripted.attack.closestTarget` on the entity table at once: the first entity (other
    than the agent) at the smallest non-zero Chebyshev distance, parsed as nmmo parses it."""
    values = ob.entities.values
    agent = ob.agent
    if values is None or len(values) == 0:
        return None, None
    ids = values[:, _ENTITY["id"]]
    dist = np.maximum(
        np.abs(values[:, _ENTITY["row"]].astype(np.int64) - int(agent.row)),
        np.abs(values[:, _ENTITY["col"]].astype(np.int64) - int(agent.col)),
    )
    candidates = np.flatnonzero((ids != agent.id) & (dist != 0))
    if len(candidates) == 0:
        return None, None
    first = candidates[np.argmin(dist[candidates])]
    return EntityState.parse_array(values[first]), int(dist[first])


# The built-ins read nmmo's own observations, and nobody reads their gym copies ---------------
class _SkippedGymObservation(dict):
    """What `env.step` returns for an agent of a bound built-in team instead of its gym
    observation: the team reads nmmo's `Observation` itself (`direct_observations`)."""


def direct_observations(env: Any, agent_ids: list[int]) -> list[Any] | None:
    """nmmo's own `Observation` of each agent in `agent_ids`, the objects nmmo's loop hands
    its scripted agents; their gym conversion is skipped from now on.

    Why: a built-in team in the match's process needs neither the gym arrays nor the
    action-target masks `Observation.to_gym` fills for every agent every tick (nmmo's
    `_validate_actions` reads the `Observation`, not them), and rebuilding an `Observation`
    from the arrays is work nmmo already did. So each of these agents' `to_gym` (an
    instance attribute, on this env's observations only: other agents, other envs and
    nmmo's class are untouched) returns an empty mapping, and the team reads the
    `Observation` nmmo updated, exactly as in nmmo's own loop.

    Returns None, changing nothing, when nmmo's internals are not as expected (the team
    then keeps reading the observations it is given).
    """
    observations = getattr(env, "obs", None)
    if not isinstance(observations, dict) or not all(a in observations for a in agent_ids):
        return None
    bound = [observations[a] for a in agent_ids]
    if not all(callable(getattr(ob, "to_gym", None)) and hasattr(ob, "tiles") for ob in bound):
        return None
    for agent_id, ob in zip(agent_ids, bound):
        skipped = _SkippedGymObservation(AgentId=agent_id)
        ob.to_gym = lambda skipped=skipped: skipped
    return bound


# nmmo's own functions, rebound so that the searches they call are the compiled ones -------
def _rebind(function: Callable[..., Any], namespace: dict[str, Any]) -> Callable[..., Any]:
    """`function`'s own code, its global names looked up in `namespace` instead."""
    rebound = types.FunctionType(function.__code__, namespace, function.__name__, function.__defaults__, function.__closure__)
    rebound.__kwdefaults__ = function.__kwdefaults__
    rebound.__doc__ = function.__doc__
    return rebound


@cache
def _compiled_move() -> types.SimpleNamespace:
    """`scripted.move` with `aStar` and `forageDijkstra` compiled; `explore`, `evade` and
    `pathfind` are nmmo's own, calling them."""
    namespace = dict(vars(move))
    namespace["aStar"] = a_star
    namespace["forageDijkstra"] = forage_dijkstra
    for name in ("pathfind", "explore", "evade"):
        namespace[name] = _rebind(getattr(move, name), namespace)
    return types.SimpleNamespace(**{k: v for k, v in namespace.items() if not k.startswith("__")})


@cache
def _compiled_attack() -> types.SimpleNamespace:
    namespace = {k: v for k, v in vars(attack).items() if not k.startswith("__")}
    namespace["closestTarget"] = closest_target
    return types.SimpleNamespace(**namespace)


@cache
def _baselines_namespace() -> dict[str, Any]:
    """`scripted.baselines`' globals with `move` and `attack` compiled."""
    namespace = dict(vars(baselines))
    namespace["move"] = _compiled_move()
    namespace["attack"] = _compiled_attack()
    return namespace


#: nmmo's `Scripted` methods that reach the searches (through `move.*` and `attack.*`).
_REBOUND_METHODS = ("forage", "explore", "evade", "scan_agents")


def compiled_class(cls: type[baselines.Scripted]) -> type[baselines.Scripted]:
    """nmmo's scripted agent class `cls` with its path searches and scans compiled.

    A subclass of `cls` (same name) whose `forage`, `explore`, `evade` and `scan_agents`
    are nmmo's own `Scripted` methods, rebound to the compiled searches. Everything else is
    `cls`'s: the decisions are the same, tick for tick.
    """
    if cls not in _CLASSES:
        _CLASSES[cls] = _compiled_class(cls)
    return _CLASSES[cls]


_CLASSES: dict[type, type] = {}


def _compiled_class(cls: type[baselines.Scripted]) -> type[baselines.Scripted]:
    namespace = _baselines_namespace()
    methods: dict[str, Any] = {}
    for name in _REBOUND_METHODS:
        owner = next(k for k in cls.__mro__ if name in vars(k))
        if owner is not baselines.Scripted:  # overridden downstream: leave it be
            continue
        methods[name] = _rebind(vars(owner)[name], namespace)
    methods["__module__"] = __name__
    methods["__qualname__"] = cls.__qualname__
    return type(cls.__name__, (cls,), methods)


def _warm_up() -> None:
    """Compile (or load from numba's cache) both searches now, at import: a first call
    inside a team's `act` would spend seconds of its per-tick budget compiling, and the
    sandbox's zygote imports this module before it confines the teams it forks."""
    materials = np.full((2 * 1 + 1) ** 2, material.Grass.index, dtype=np.int64)
    _a_star(materials, _WALKABLE, 1, 1, 1, 10, NEIGHBOUR_ROWS, NEIGHBOUR_COLS)
    _forage(materials, _HABITABLE, 1, 5, 5, 10, 10, material.Foilage.index, material.Water.index, 10, NEIGHBOUR_ROWS, NEIGHBOUR_COLS)


_warm_up()
