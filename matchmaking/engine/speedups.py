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
    if lean_event_rows(env):
        bound.append("lean_event_rows")
    if lean_team_messages(env):
        bound.append("lean_team_messages")
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
    """Play `env`'s ticks with nmmo's `Realm.step`, transcribed with its four hottest loops lean.

    What: `Realm.step` (nmmo/core/realm.py) as nmmo wrote it (NPC decisions, players'
    update, action execution by priority, culls, map, fog, exchange, event log, in nmmo's
    order and with nmmo's random draws), except that
    - the NPCs that meander decide by `_meander` (`_npc_actions`: nmmo's `NPC._meander`
      and `get_habitable_dir`, transcribed);
    - a `Move` is executed by the function `_mover` makes (nmmo's `Move.call`, transcribed);
    - the NPCs' post-action update is `_npc_update` (nmmo's `Entity.update`,
      `Status.update`, `History.update` and `NPC.update`, transcribed);
    - the players' is `_player_update` (nmmo's `Player.update`, transcribed, calling a
      skill's own update only where it can harvest something, `_skill_checks`).
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
    from nmmo.entity.player import Player

    npc_actions = _npc_actions(self)
    merged: dict[int, list] = defaultdict(list)
    prioritized(actions, merged)
    prioritized(npc_actions, merged)

    equipment = self.config.EQUIPMENT_SYSTEM_ENABLED
    skills = _skill_checks()
    for player in self.players.entities.values():  # EntityGroup.update
        if type(player).update is Player.update:
            _player_update(player, self, actions, equipment, skills)
        else:
            player.update(self, actions)
    for npc in self.npcs.entities.values():
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
    from nmmo.core.action import Direction, Move, North
    from nmmo.entity.npc import DIRECTIONS, Passive, PassiveAggressive

    habitable = _per_map(realm, "_arena_habitable", realm.map.habitable_tiles.tolist)
    out = {}
    for idx, npc in realm.npcs.entities.items():
        decide = type(npc).decide
        if decide is Passive.decide:
            out[idx] = {Move: {Direction: _meander(npc, habitable, DIRECTIONS, North)}}
        elif decide is PassiveAggressive.decide:
            out[idx] = {Move: {Direction: _meander(npc, habitable, DIRECTIONS, North)}} \
                if npc._has_target() is None else npc._charge_toward(npc.target)
        else:
            out[idx] = npc.decide()
    return out


def _meander(npc: Any, habitable: list[list[int]], directions: Any, north: Any) -> Any:
    """nmmo's `NPC._meander`: the direction of the first habitable neighbour from the
    NPC's next direction (nmmo's `DIRECTIONS` table), else North."""
    r, c = npc.pos
    start = npc._np_random.get_direction()
    for i in range(4):
        r_delta, c_delta, direction = directions[start + i]
        if habitable[r + r_delta][c + c_delta]:
            return direction
    return north


def _per_map(realm: Any, key: str, build: Any) -> Any:
    """`build()`, made at the first tick of each game and kept on the realm: for what depends
    on the map's materials only, which nmmo sets at reset and never changes (harvesting
    changes a tile's `state`, not its `material`)."""
    kept = realm.__dict__.get(key)
    if kept is None or realm.tick == 0:
        kept = realm.__dict__[key] = build()
    return kept


def _entity_update(entity: Any, actions: dict, equipment: bool) -> None:
    """nmmo's `Entity.update` with the `Status.update` and `History.update` it calls, in
    their order (nmmo/entity/entity.py): what every entity does after the actions."""
    entity._pos = None
    history = entity.history
    if history.damage._val == 0:
        entity.attacker = None
        _write(entity.attacker_id, 0)
    if equipment:
        _write(entity.item_level, entity.equipment.total(_level))
    freeze = entity.status.freeze
    if freeze._val > 0:
        _write(freeze, max(-math.inf, freeze._val - 1))
    history.attack = None
    _write(history.damage, 0)
    ent_id = entity.ent_id
    history.actions = actions[ent_id] if ent_id in actions else {}
    time_alive = history.time_alive
    _write(time_alive, min(math.inf, time_alive._val + 1))


def _npc_update(npc: Any, actions: dict, equipment: bool) -> None:
    """nmmo's `NPC.update` (nmmo/entity/npc.py): the entity's update, then a point of health."""
    _entity_update(npc, actions, equipment)
    health = npc.resources.health
    if not health._val > 0:
        return
    _write(health, min(math.inf, health._val + 1))
    npc.last_action = actions


def _player_update(player: Any, realm: Any, actions: dict, equipment: bool, skills: dict[type, tuple]) -> None:
    """nmmo's `Player.update` (nmmo/entity/player.py): the entity's update, the death fog,
    regeneration, food and water (`Resources.update`, nmmo's own), then the skills'
    updates, of which those that can only harvest are called only when their material is
    where they harvest it (`_skill_checks`)."""
    _entity_update(player, actions, equipment)
    config = player.config
    fog = config.DEATH_FOG_ONSET
    if fog is not None and realm.tick >= fog:
        damage = realm.fog_map[player.pos]
        if damage > 0.5:
            player.receive_damage(None, round(damage))
    health = player.resources.health
    if not health._val > 0:
        return
    if config.PLAYER_HEALTH_INCREMENT > 0:
        _write(health, min(math.inf, health._val + config.PLAYER_HEALTH_INCREMENT))
    player.resources.update(player.immortal)
    tiles = realm.map.tiles
    r, c = player.pos
    for skill in player.skills.skills:  # SkillGroup.update
        check = skills.get(type(skill))
        if check is None:
            skill.update()
        elif check[0] == "here":
            if not tiles[r, c].state != check[1]:  # nmmo's `harvest` test, as nmmo writes it
                skill.update()
        elif check[0] == "adjacent":
            matl = check[1]
            if not (tiles[r - 1, c].state != matl and tiles[r + 1, c].state != matl and
                    tiles[r, c - 1].state != matl and tiles[r, c + 1].state != matl):
                skill.update()
        # "nothing": a combat skill, whose update does nothing
    if player._make_mortal_tick is not None and realm.tick >= player._make_mortal_tick:
        player._set_immortal(False)


def _skill_checks() -> dict[type, tuple]:
    """For each of nmmo's skills whose `update` only harvests, where it harvests what:
    ("here", material) for `harvest` (the tile under the player), ("adjacent", material) for
    `harvest_adjacent` (the four neighbours); ("nothing",) for a combat skill (its update is
    `pass`). When that material is not there, nmmo's update changes nothing, so it is not
    called. Water and food (which also deplete) and any other skill are called as nmmo does."""
    from nmmo.lib import material
    from nmmo.systems import skill

    return {
        skill.Fishing: ("adjacent", material.Fish), skill.Herbalism: ("here", material.Herb),
        skill.Prospecting: ("here", material.Ore), skill.Carving: ("here", material.Tree),
        skill.Alchemy: ("here", material.Crystal),
        **{cls: ("nothing",) for cls in (skill.Melee, skill.Range, skill.Mage) if cls.update is skill.CombatSkill.update},
    }


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
    void = _per_map(realm, "_arena_void", lambda: [[tile.material == material.Void for tile in row] for row in tiles])
    size = realm.config.MAP_SIZE
    into_occupied = realm.config.ALLOW_MOVE_INTO_OCCUPIED_TILE
    center_r, center_c = world.center_coord
    border_center = world.dist_border_center
    record = realm.event_log.record
    go_farthest = EventCode.GO_FARTHEST

    def move(entity: Any, direction: Any) -> None:
        if direction is None:
            return
        r, c = entity._pos or entity.pos
        ent_id = entity.ent_id
        history = entity.history
        history.last_pos = (r, c)
        r_delta, c_delta = direction.delta
        r_new, c_new = r + r_delta, c + c_delta
        if not (0 <= r_new < size and 0 <= c_new < size) or impassible[r_new][c_new]:
            return
        tile = tiles[r_new, c_new]
        is_player = entity.is_player
        if is_player and not into_occupied and tile.entities:
            return
        if entity.status.freeze._val > 0:
            return
        entity._pos = (r_new, c_new)  # Entity.set_pos
        _write(entity.row, r_new)
        _write(entity.col, c_new)
        del tiles[r, c].entities[ent_id]  # Tile.remove_entity
        tile.entities[ent_id] = entity  # Tile.add_entity
        progress_to_center = border_center - max(abs(center_r - r_new), abs(center_c - c_new))
        if progress_to_center > history.exploration:
            history.exploration = progress_to_center
            if is_player:
                record(go_farthest, entity, distance=progress_to_center)
        if void[r_new][c_new]:
            entity.receive_damage(None, entity.resources.health.val)

    return move


def lean_event_rows(env: Any) -> bool:
    """Write each event of `env`'s log as one row of nmmo's event table, without the row object.

    What: nmmo's `EventLogger._create_event` (nmmo/lib/event_log.py) makes an `EventState`
    per event, a record and nine `SerializedAttribute`s, to write four cells and return
    it; `record` then writes an event's other cells through it and drops it. Here the
    same row is allocated from the same table and the same cells written, and what is
    returned writes the other cells the same way (`_EventRow`).
    Why: about 12,600 events a stage-1 match (every meal, drink, step farther, hit), each
    a dozen Python objects nobody keeps. Same rows, same values (the event log is
    compared row for row, every tick).

    Bound to this env's event log only; False, binding nothing, on another nmmo version.
    """
    import nmmo
    from nmmo.lib.event_log import EventAttr

    log = getattr(getattr(env, "realm", None), "event_log", None)
    head = [EventAttr.get(name) for name in ("recorded", "ent_id", "tick", "event")]
    if log is None or nmmo.__version__ != TRANSCRIBED_FROM or head != [0, 1, 2, 3] or \
            not callable(getattr(log, "_create_event", None)):
        return False
    table = log.datastore.table("Event")

    def create_event(entity: Any, event_code: int) -> _EventRow:
        row = table.add_row()
        table._data[row, :4] = (1, entity.ent_id, log.realm.tick + 1, event_code)
        return _EventRow(table, row, EventAttr)

    log._create_event = create_event
    return True


class _EventRow:
    """One event's row as `EventLogger.record` writes the rest of it: `row.gold.update(5)`
    writes 5 in the row's `gold` cell, as nmmo's `SerializedAttribute.update` does (an
    event's attributes have no limits: nothing to clamp)."""

    __slots__ = ("_table", "_row", "_columns")

    def __init__(self, table: Any, row: int, columns: dict[str, int]) -> None:
        self._table, self._row, self._columns = table, row, columns

    def __getattr__(self, name: str) -> _EventCell:
        return _EventCell(self._table, self._row, self._columns[name])


class _EventCell:
    """One cell of an event's row: `update(value)` writes it."""

    __slots__ = ("_table", "_row", "_column")

    def __init__(self, table: Any, row: int, column: int) -> None:
        self._table, self._row, self._column = table, row, column

    def update(self, value: Any) -> None:
        self._table._data[self._row, self._column] = value


def lean_team_messages(env: Any) -> bool:
    """Gather each team's message rows (the `Comm` part of every observation) in one pass.

    What: nmmo's `Env._update_comm_obs` (nmmo/core/env.py): each living agent's team
    (its first task's assignees, else the agent alone) gets the rows of the entity table's
    `comm_obs` query of its members, in the team's order, each member's rows by one
    boolean mask over the whole query. Here each id's rows are found once and each team
    takes its members' rows by index, in the same order: the same arrays.
    Why: a mask per member per team, every tick, is 128 scans of the query a tick.
    Checked against nmmo's method on the same env, tick by tick
    (`tests/test_builtin_identity.py`).

    Bound to this env only; False, binding nothing, on another nmmo version.
    """
    import nmmo

    if nmmo.__version__ != TRANSCRIBED_FROM or not callable(getattr(env, "_update_comm_obs", None)) or \
            not isinstance(getattr(env, "_comm_obs", None), dict):
        return False
    env._update_comm_obs = types.MethodType(_update_comm_obs, env)
    return True


def _update_comm_obs(self: Any) -> None:
    """nmmo's `Env._update_comm_obs` (see `lean_team_messages`); `self` is the env."""
    from nmmo.entity.entity import Entity

    if not self.config.COMMUNICATION_SYSTEM_ENABLED:
        return
    comm_obs = Entity.Query.comm_obs(self.realm.datastore)
    rows_of: dict[int, list[int]] = defaultdict(list)
    for row, eid in enumerate(comm_obs[:, Entity.State.attr_name_to_col["id"]].tolist()):
        rows_of[eid].append(row)
    self._comm_obs.clear()
    tasks = self.agent_task_map
    for agent_id in self.realm.players:
        if agent_id not in self._comm_obs:
            team = [agent_id] if agent_id not in tasks else tasks[agent_id][0].assignee
            team_obs = comm_obs[[row for eid in team for row in rows_of.get(eid, ())]]
            for eid in team:
                self._comm_obs[eid] = team_obs
