"""The engine's hot paths: work of nmmo's own loop that the Arena skips or does faster.

An Arena match is nmmo 2.x's game, played tick for tick as nmmo's own loop plays it; only
the work whose result nobody reads is left out. Each patch here is bound to one `Env`
instance (an attribute of that env, never nmmo's classes: another env in the process, such
as nmmo's own loop in `bench.match_speed`, stays stock), says what it replaces and why, and
is checked against stock nmmo tick by tick: every entity's row of nmmo's datastore
(positions, health, food, water, gold, levels, equipment), every item's row (inventories)
and the event log, every tick (`python -m bench.match_speed --identity-seeds N`,
`tests/test_builtin_identity.py`).

The built-ins' own decisions are compiled in `matchmaking.teams.compiled_builtins`, which
also skips the gym conversion of their observations.
"""

from __future__ import annotations

import math
import types
from collections import defaultdict
from typing import Any


def speed_up(env: Any) -> list[str]:
    """Bind every speed-up of this module that fits `env`; the names of those bound."""
    bound = []
    if skip_task_rewards(env):
        bound.append("skip_task_rewards")
    if lean_realm_step(env):
        bound.append("lean_realm_step")
    return bound


def skip_task_rewards(env: Any) -> bool:
    """Skip nmmo's per-tick evaluation of the game's tasks (`Env._compute_rewards`) for `env`.

    Why: every tick nmmo copies the whole entity, item and event tables into a `GameState`,
    indexes each of them row by row in Python (`precompute_index`, a fifth of a match: the
    event table grows all match long) and evaluates every team's task (under `TeamBattle`, a
    survival task, `TickGE`) into rewards and infos. The Arena reads neither: a match is
    scored from nmmo's event log (`arena.scoring`). The evaluation only reads the game; what
    it sets is each task's `completed`, which `TeamBattle` reads into `game.winners` and
    `game.history`, which nothing in nmmo's realm consults and the Arena never reads. So no
    event, position, vital or item changes (checked tick by tick, see the module docstring).

    Returns False, changing nothing, if `env` is not the `Env` this was written against.
    """
    if not callable(getattr(env, "_compute_rewards", None)) or not hasattr(env, "_gamestate_generator"):
        return False
    env._compute_rewards = _no_rewards
    return True


def _no_rewards() -> tuple[dict[int, float], dict[int, dict[str, Any]]]:
    """What `env.step` returns as rewards and infos in an Arena match: nothing (never read)."""
    return {}, {}


# -- the realm's step: nmmo's own `Realm.step`, with its two hottest loops transcribed ----
# nmmo 2.1.2 is the version these transcriptions were read from; on any other version the
# Arena plays nmmo's own code unchanged (`speed_up` binds nothing of this section).
TRANSCRIBED_FROM = "2.1.2"


def lean_realm_step(env: Any) -> bool:
    """Play `env`'s ticks with nmmo's `Realm.step`, transcribed with its three hottest loops lean.

    What: `Realm.step` (nmmo/core/realm.py) as nmmo wrote it (NPC decisions, players'
    update, action execution by priority, culls, map, fog, exchange, event log, in nmmo's
    order and with nmmo's random draws), except that
    - the NPCs that meander decide by `_meander` (`_npc_actions`: nmmo's `NPC._meander`
      and `get_habitable_dir`, transcribed);
    - a `Move` is executed by the function `_mover` makes (nmmo's `Move.call`, transcribed);
    - the NPCs' post-action update is `_npc_update` (nmmo's `Entity.update`,
      `Status.update`, `History.update` and `NPC.update`, transcribed).
    Why: in a PvE match of built-ins the 128 NPCs decide and are updated every tick, and
    almost every action is a Move (about 145,000 a match, most of them NPCs'); in nmmo
    each goes through a dozen Python calls (properties, a datastore write three calls
    deep, `Material` metaclass membership, a NumPy scalar read per neighbour) that these
    do in one function. The same draws of the same random streams, the same writes in the
    same order to the same datastore rows: the same game (checked tick by tick).

    Bound to this env's realm instance only; returns False, binding nothing, on another
    nmmo version or if the realm is not as transcribed.
    """
    import nmmo
    from nmmo.datastore.numpy_datastore import NumpyTable

    realm = getattr(env, "realm", None)
    tables = getattr(getattr(realm, "datastore", None), "_tables", {})
    if realm is None or nmmo.__version__ != TRANSCRIBED_FROM or not tables or \
            any(type(t) is not NumpyTable for t in tables.values()):
        return False
    realm.step = types.MethodType(_realm_step, realm)
    return True


def _write(attribute: Any, value: Any) -> None:
    """nmmo's `SerializedAttribute.update`: clamp to the attribute's limits, write the
    datastore cell (`NumpyTable.update`), keep the value."""
    if value > attribute._max:
        value = attribute._max
    elif value < attribute._min:
        value = attribute._min
    record = attribute.datastore_record
    record.table._data[record.id, attribute._column] = value
    attribute._val = value


def _realm_step(self: Any, actions: dict) -> tuple[dict, dict]:
    """nmmo's `Realm.step` (see `lean_realm_step`); `self` is the realm."""
    from nmmo.core.action import Buy, Comm, Move
    from nmmo.core.realm import prioritized
    from nmmo.entity.npc import NPC

    npc_actions = _npc_actions(self)
    merged: dict[int, list] = defaultdict(list)
    prioritized(actions, merged)
    prioritized(npc_actions, merged)

    self.players.update(actions)
    equipment = self.config.EQUIPMENT_SYSTEM_ENABLED
    for npc in self.npcs.entities.values():  # EntityGroup.update
        if type(npc).update is NPC.update:
            _npc_update(npc, npc_actions, equipment)
        else:
            npc.update(self, npc_actions)

    lean_move = _mover(self)
    players, npcs = self.players.entities, self.npcs.entities
    for priority in sorted(merged):
        if priority == Buy.priority:
            self._np_random.shuffle(merged[priority])
        for ent_id, (atn, args) in merged[priority]:
            ent = npcs.get(ent_id) if ent_id < 0 else players.get(ent_id)  # Realm.entity
            if (ent.resources.health._val > 0 and not ent.status.freeze._val > 0) or \
               (ent.is_recon and priority == Comm.priority):
                if atn is Move:
                    lean_move(ent, *args)
                else:
                    atn.call(self, ent, *args)
    dead_players = self.players.cull()
    dead_npcs = self.npcs.cull()

    self.tick += 1
    self.map.step()
    self.update_fog_map()
    self.exchange.step()
    self.event_log.update()
    if self._replay_helper is not None:
        self._replay_helper.update()
    return dead_players, dead_npcs


def _npc_actions(realm: Any) -> dict[int, dict]:
    """nmmo's `NPCManager.actions`: each NPC's `decide()`, in the manager's order, the
    meandering of `Passive` and `PassiveAggressive` NPCs by `_meander` (nmmo's
    `NPC._meander` with `get_habitable_dir`, transcribed: one draw of the NPC's direction
    sequence, as nmmo's). An NPC of any other class decides by its own method."""
    from nmmo.entity.npc import Passive, PassiveAggressive

    habitable = _per_map(realm, "_arena_habitable", realm.map.habitable_tiles.tolist)
    out = {}
    for idx, npc in realm.npcs.entities.items():
        decide = type(npc).decide
        if decide is Passive.decide:
            out[idx] = _meander(npc, habitable)
        elif decide is PassiveAggressive.decide:
            out[idx] = _meander(npc, habitable) if npc._has_target() is None else npc._charge_toward(npc.target)
        else:
            out[idx] = npc.decide()
    return out


def _meander(npc: Any, habitable: list[list[int]]) -> dict:
    """nmmo's `NPC._meander`: the first habitable neighbour from the NPC's next direction."""
    from nmmo.core import action
    from nmmo.entity.npc import DIRECTIONS

    r, c = npc.pos
    start = npc._np_random.get_direction()
    for i in range(4):
        r_delta, c_delta, direction = DIRECTIONS[start + i]
        if habitable[r + r_delta][c + c_delta]:
            return {action.Move: {action.Direction: direction}}
    return {action.Move: {action.Direction: action.North}}


def _per_map(realm: Any, key: str, build: Any) -> Any:
    """`build()`, made at the first tick of each game and kept on the realm: for what depends
    on the map's materials only, which nmmo sets at reset and never changes (harvesting
    changes a tile's `state`, not its `material`)."""
    kept = realm.__dict__.get(key)
    if kept is None or realm.tick == 0:
        kept = realm.__dict__[key] = build()
    return kept


def _npc_update(npc: Any, actions: dict, equipment: bool) -> None:
    """nmmo's `NPC.update` with the `Entity.update`, `Status.update` and `History.update`
    it calls, in their order (nmmo/entity/npc.py, entity.py)."""
    npc._pos = None
    history = npc.history
    if history.damage._val == 0:
        npc.attacker = None
        _write(npc.attacker_id, 0)
    if equipment:
        _write(npc.item_level, npc.equipment.total(_level))
    freeze = npc.status.freeze
    if freeze._val > 0:
        _write(freeze, max(-math.inf, freeze._val - 1))
    history.attack = None
    _write(history.damage, 0)
    ent_id = npc.ent_id
    history.actions = actions[ent_id] if ent_id in actions else {}
    time_alive = history.time_alive
    _write(time_alive, min(math.inf, time_alive._val + 1))
    health = npc.resources.health
    if not health._val > 0:
        return
    _write(health, min(math.inf, health._val + 1))
    npc.last_action = actions


def _level(equipment: Any) -> Any:
    """The getter nmmo's `Entity.update` passes to `equipment.total`."""
    return equipment.level


def _mover(realm: Any) -> Any:
    """nmmo's `Move.call` for this tick of `realm` (nmmo/core/action.py), asserts aside (they
    hold: the caller checked the mover is alive, and positions stay on the map).

    Which tiles are impassible is read once per game (`_per_map`)."""
    from nmmo.lib import material
    from nmmo.lib.event_code import EventCode

    world = realm.map
    tiles = world.tiles
    impassible = _per_map(realm, "_arena_impassible",
                          lambda: [[tile.material in material.Impassible for tile in row] for row in tiles])
    size = realm.config.MAP_SIZE
    into_occupied = realm.config.ALLOW_MOVE_INTO_OCCUPIED_TILE
    center_r, center_c = world.center_coord
    border_center = world.dist_border_center
    record = realm.event_log.record
    go_farthest = EventCode.GO_FARTHEST

    def move(entity: Any, direction: Any) -> None:
        if direction is None:
            return
        r, c = entity.pos
        ent_id = entity.ent_id
        history = entity.history
        history.last_pos = (r, c)
        r_delta, c_delta = direction.delta
        r_new, c_new = r + r_delta, c + c_delta
        if not (0 <= r_new < size and 0 <= c_new < size) or impassible[r_new][c_new]:
            return
        tile = tiles[r_new, c_new]
        is_player = entity.is_player
        if is_player and not into_occupied and len(tile.entities) > 0:
            return
        if entity.status.freeze._val > 0:
            return
        entity._pos = (r_new, c_new)  # Entity.set_pos
        _write(entity.row, r_new)
        _write(entity.col, c_new)
        tiles[r, c].remove_entity(ent_id)
        tile.add_entity(entity)
        progress_to_center = border_center - max(abs(center_r - r_new), abs(center_c - c_new))
        if progress_to_center > history.exploration:
            history.exploration = progress_to_center
            if is_player:
                record(go_farthest, entity, distance=progress_to_center)
        if tile.void:
            entity.receive_damage(None, entity.resources.health.val)

    return move
