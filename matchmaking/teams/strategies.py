"""The Arena's own scripted teams, `coordinated` and `elite`: all four tasks at once.

Stage 3 of PvE is played by them; stage 2 by the learned `apprentice`, a network trained
to imitate `elite` (`training/imitate.py`: the IJCAI organisers' PPO teams are not
available). A team assigns its members roles and pursues every task at once.

- **Scouts** walk from their spawn edge to the opposite one (Travel).
- **Gatherers** stand on resources, each member on its own kind, to level a gathering
  skill (Forage); they equip the tools and ammunition they collect (Equipment).
- **Fighters** keep together, pick one target for the whole team (the enemy player, or
  at stage 3 also a weak NPC, seen by the most fighters, weakest first) and all strike it
  (Eliminate); killing NPCs levels their combat skills and drops armour and weapons.

Everyone drinks and eats before it starves and equips the best item it may hold. Stage 3
adds: more fighters, NPC hunting for loot and levels, healing with potions and rations,
and scouts that detour around obstacles instead of stopping.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from nmmo.core.tile import TileState
from nmmo.entity.entity import EntityState
from nmmo.lib import material
from nmmo.systems.item import ItemState

ENTITY = EntityState.State.attr_name_to_col
TILE = TileState.State.attr_name_to_col
ITEM = ItemState.State.attr_name_to_col
NORTH, SOUTH, EAST, WEST, STAY = range(5)
STEP = {NORTH: (-1, 0), SOUTH: (1, 0), EAST: (0, 1), WEST: (0, -1)}
RESOURCES = [material.Ore.index, material.Tree.index, material.Crystal.index, material.Herb.index]
EQUIPPABLE = set(range(2, 16))  # armour 2-4, weapons 5-7, tools 8-12, ammunition 13-15
CONSUMABLE = {16, 17}  # ration, potion
STYLE_OF_LEVEL = {"melee_level": 0, "range_level": 1, "mage_level": 2}


class CoordinatedTeam:
    """A role-based team of the contract (`__init__(team_id, env_config)`, `act`).

    Args:
        team_id (`int`), env_config (`dict`): as every team receives them.
        stage (`int`): 2 or 3 (see the module docstring).
    """

    def __init__(self, team_id: int, env_config: Mapping[str, Any], *, stage: int = 2):
        size = int(env_config["team_size"])
        first = team_id * size + 1
        self.teammates = set(range(first, first + size))
        self.map_size = int(env_config["nmmo"]["MAP_SIZE"])
        self.seed = int(env_config["seed"])
        self.stage = stage
        scouts, fighters = (2, 2) if stage == 2 else (2, 3)
        self.roles = ["scout"] * scouts + ["fighter"] * fighters + ["gatherer"] * (size - scouts - fighters)
        self.hunger = 45 if stage == 2 else 55
        self.reset()

    def reset(self) -> None:
        self.rng = np.random.default_rng(self.seed)
        self.heading: dict[int, int] = {}

    def act(self, observations: Mapping[int, Mapping[str, Any]]) -> dict[int, dict[str, dict[str, int]]]:
        selves = {m: self._me(obs) for m, obs in observations.items()}
        target_id = self._team_target(observations, selves)
        actions = {}
        for member, obs in observations.items():
            me = selves[member]
            role = self.roles[member] if member < len(self.roles) else "gatherer"
            actions[member] = self._member_action(member, role, obs, me, target_id)
        return actions

    # -- one member ----------------------------------------------------------------------
    def _member_action(self, member: int, role: str, obs: Mapping[str, Any], me: np.ndarray, target_id: int | None):
        row, col = int(me[ENTITY["row"]]), int(me[ENTITY["col"]])
        legal = obs["ActionTargets"]["Move"]["Direction"]
        if member not in self.heading:
            self.heading[member] = self._away_from_edge(row, col)
        goal = self._survival_goal(obs, me, row, col)
        if goal is None and role == "gatherer":
            goal = self._resource_goal(obs, row, col, kind=RESOURCES[member % len(RESOURCES)])
        if goal is None and role == "fighter":
            goal = self._chase(obs, me, row, col, target_id)
        direction = self._toward(legal, row, col, goal) if goal is not None else self._explore(member, legal, scout=role == "scout")
        action: dict[str, dict[str, int]] = {"Move": {"Direction": direction}}
        use = self._item_to_use(obs, me)
        if use is not None:
            action["Use"] = {"InventoryItem": use}
        strike = self._strike(obs, me, target_id, fighter=role == "fighter")
        if strike is not None:
            action["Attack"] = strike
        return action

    @staticmethod
    def _me(obs):
        entities = obs["Entity"]
        return entities[entities[:, ENTITY["id"]] == obs["AgentId"]][0]

    def _away_from_edge(self, row: int, col: int) -> int:
        distances = {SOUTH: row, NORTH: self.map_size - row, EAST: col, WEST: self.map_size - col}
        return min(distances, key=lambda d: distances[d])

    # -- movement ------------------------------------------------------------------------
    @staticmethod
    def _nearest(tiles, materials, row, col):
        wanted = tiles[np.isin(tiles[:, TILE["material_id"]], materials)]
        if len(wanted) == 0:
            return None
        distance = np.abs(wanted[:, TILE["row"]] - row) + np.abs(wanted[:, TILE["col"]] - col)
        nearest = wanted[np.argmin(distance)]
        return int(nearest[TILE["row"]]), int(nearest[TILE["col"]])

    def _survival_goal(self, obs, me, row, col):
        if me[ENTITY["water"]] < self.hunger:
            spot = self._nearest(obs["Tile"], [material.Water.index], row, col)
            return None if spot is None else (*spot, True)
        if me[ENTITY["food"]] < self.hunger:
            spot = self._nearest(obs["Tile"], [material.Foilage.index], row, col)
            return None if spot is None else (*spot, False)
        return None

    def _resource_goal(self, obs, row, col, *, kind: int):
        tiles = obs["Tile"]
        here = tiles[(tiles[:, TILE["row"]] == row) & (tiles[:, TILE["col"]] == col)]
        if len(here) and here[0][TILE["material_id"]] in RESOURCES:
            return row, col, False
        spot = self._nearest(tiles, [kind], row, col) or self._nearest(tiles, RESOURCES, row, col)
        if spot is not None:
            return (*spot, False)
        spot = self._nearest(tiles, [material.Fish.index], row, col)
        return None if spot is None else (*spot, True)

    def _chase(self, obs, me, row, col, target_id):
        """Close in on the team's target, if healthy enough to fight."""
        if target_id is None or me[ENTITY["health"]] < 40:
            return None
        entities = obs["Entity"]
        rows = entities[entities[:, ENTITY["id"]] == target_id]
        if len(rows) == 0:
            return None
        return int(rows[0][ENTITY["row"]]), int(rows[0][ENTITY["col"]]), True

    def _toward(self, legal, row, col, goal):
        goal_row, goal_col, beside = goal
        gap = abs(goal_row - row) + abs(goal_col - col)
        if gap == 0 or (beside and gap == 1):
            return STAY
        closer = [d for d, (dr, dc) in STEP.items() if legal[d] and abs(goal_row - row - dr) + abs(goal_col - col - dc) < gap]
        if closer:
            return int(self.rng.choice(closer))
        return self._any_legal(legal)

    def _explore(self, member, legal, *, scout: bool):
        heading = self.heading[member]
        if legal[heading]:
            return heading
        if scout and self.stage >= 3:  # detour sideways, keep the heading for later
            sideways = [d for d in ((EAST, WEST) if heading in (NORTH, SOUTH) else (NORTH, SOUTH)) if legal[d]]
            if sideways:
                return int(self.rng.choice(sideways))
        return self._any_legal(legal)

    def _any_legal(self, legal):
        moves = [d for d in STEP if legal[d]]
        return int(self.rng.choice(moves)) if moves else STAY

    # -- items ---------------------------------------------------------------------------
    def _item_to_use(self, obs, me):
        """Equip the highest-level unequipped item allowed; at stage 3, heal when hurt."""
        inventory = obs["Inventory"]
        allowed = np.flatnonzero(obs["ActionTargets"]["Use"]["InventoryItem"][: len(inventory)])
        best, best_level = None, -1
        for row in allowed:
            item = inventory[row]
            kind = int(item[ITEM["type_id"]])
            if not item[ITEM["id"]]:
                continue
            if self.stage >= 3 and kind in CONSUMABLE and (me[ENTITY["health"]] < 50 or min(me[ENTITY["food"]], me[ENTITY["water"]]) < 20):
                return int(row)
            if kind in EQUIPPABLE and not item[ITEM["equipped"]] and item[ITEM["level"]] > best_level:
                best, best_level = int(row), int(item[ITEM["level"]])
        return best

    # -- combat --------------------------------------------------------------------------
    def _team_target(self, observations, selves) -> int | None:
        """One target for all fighters: the enemy seen by most fighters, weakest first."""
        votes: dict[int, float] = {}
        for member, obs in observations.items():
            if member >= len(self.roles) or self.roles[member] != "fighter":
                continue
            entities = obs["Entity"]
            ids = entities[:, ENTITY["id"]]
            me = selves[member]
            my_level = max(me[ENTITY["melee_level"]], me[ENTITY["range_level"]], me[ENTITY["mage_level"]])
            for entity in entities[(ids != 0) & ~np.isin(ids, list(self.teammates))]:
                entity_id = int(entity[ENTITY["id"]])
                if entity_id < 0:  # an NPC: only at stage 3, and only a weak one
                    level = max(entity[ENTITY["melee_level"]], entity[ENTITY["range_level"]], entity[ENTITY["mage_level"]])
                    if self.stage < 3 or level > my_level + 1:
                        continue
                votes[entity_id] = votes.get(entity_id, 0.0) + 1.0 - entity[ENTITY["health"]] / 1000.0
        if not votes:
            return None
        return max(votes, key=lambda e: (votes[e], e > 0))

    def _strike(self, obs, me, target_id, *, fighter: bool):
        """Attack the team's target if in reach, else the weakest enemy player in reach."""
        entities = obs["Entity"]
        allowed = obs["ActionTargets"]["Attack"]["Target"][: len(entities)]
        ids = entities[:, ENTITY["id"]]
        in_reach = np.flatnonzero((allowed == 1) & (ids != 0) & ~np.isin(ids, list(self.teammates)))
        if len(in_reach) == 0:
            return None
        chosen = [r for r in in_reach if ids[r] == target_id] if fighter and target_id is not None else []
        if not chosen:
            players = [r for r in in_reach if ids[r] > 0]
            if not players:
                return None
            chosen = [min(players, key=lambda r: entities[r, ENTITY["health"]])]
        style = max(STYLE_OF_LEVEL, key=lambda k: me[ENTITY[k]])
        return {"Style": STYLE_OF_LEVEL[style], "Target": int(chosen[0])}


def coordinated(team_id: int, env_config: Mapping[str, Any]) -> CoordinatedTeam:
    """The stage-2 team."""
    return CoordinatedTeam(team_id, env_config, stage=2)


def elite(team_id: int, env_config: Mapping[str, Any]) -> CoordinatedTeam:
    """The stage-3 team."""
    return CoordinatedTeam(team_id, env_config, stage=3)
