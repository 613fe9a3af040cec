"""Gatherer: the strongest example team. Members split the four tasks between them.

- Members 0-2 are scouts: they walk to the far side of the map (Travel the Lands).
- Members 3-7 are gatherers: they stand on ore, trees, crystals and herbs, and beside
  fish, which levels their gathering skills (Forage for Resources) and yields items.
- Everyone eats and drinks when low, equips every item it can wear or hold (Secure an
  Advantage), and attacks the weakest enemy player in reach (Eliminate the Competition).

nmmo 2.x harvests automatically: an agent standing on a resource tile (or next to fish)
gathers it at the start of the tick. Try it:

    python -m matchmaking.evaluate examples/policies/gatherer --matches 4
"""

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
RANGE_STYLE = 1
THIRSTY = HUNGRY = 45
SCOUTS = 3
STAND_ON = {material.Ore.index, material.Tree.index, material.Crystal.index, material.Herb.index}
BESIDE = {material.Fish.index}
WEARABLE = set(range(2, 16))  # armour, weapons, tools and ammunition (2-15); 16-17 are consumables


class Team:
    def __init__(self, team_id: int, env_config: dict):
        size = env_config["team_size"]
        first = team_id * size + 1
        self.teammates = set(range(first, first + size))
        self.map_size = env_config["nmmo"]["MAP_SIZE"]
        self.rng = np.random.default_rng(env_config["seed"])
        self.reset()

    def reset(self) -> None:
        self.heading = {}

    # -- the team's decisions ------------------------------------------------------------
    def act(self, observations: dict) -> dict:
        actions = {}
        for member, obs in observations.items():
            entities = obs["Entity"]
            me = entities[entities[:, ENTITY["id"]] == obs["AgentId"]][0]
            row, col = int(me[ENTITY["row"]]), int(me[ENTITY["col"]])
            if member not in self.heading:
                self.heading[member] = self._away_from_edge(row, col)
            legal = obs["ActionTargets"]["Move"]["Direction"]
            goal = self._survival_goal(obs, me, row, col)
            if goal is None and member >= SCOUTS:
                goal = self._resource_goal(obs, row, col)
            if goal is not None:
                direction = self._toward(legal, row, col, *goal)
            else:
                direction = self._explore(member, legal)
            action = {"Move": {"Direction": direction}}
            item = self._item_to_equip(obs)
            if item is not None:
                action["Use"] = {"InventoryItem": item}
            target = self._target(obs)
            if target is not None:
                action["Attack"] = {"Style": RANGE_STYLE, "Target": target}
            actions[member] = action
        return actions

    # -- where to go ---------------------------------------------------------------------
    def _away_from_edge(self, row, col):
        distances = {SOUTH: row, NORTH: self.map_size - row, EAST: col, WEST: self.map_size - col}
        return min(distances, key=distances.get)

    @staticmethod
    def _nearest(tiles, materials, row, col):
        wanted = tiles[np.isin(tiles[:, TILE["material_id"]], list(materials))]
        if len(wanted) == 0:
            return None
        distance = np.abs(wanted[:, TILE["row"]] - row) + np.abs(wanted[:, TILE["col"]] - col)
        nearest = wanted[np.argmin(distance)]
        return int(nearest[TILE["row"]]), int(nearest[TILE["col"]])

    def _survival_goal(self, obs, me, row, col):
        """(row, col, stand_beside) of water or food when running low."""
        if me[ENTITY["water"]] < THIRSTY:
            spot = self._nearest(obs["Tile"], {material.Water.index}, row, col)
            return None if spot is None else (*spot, True)
        if me[ENTITY["food"]] < HUNGRY:
            spot = self._nearest(obs["Tile"], {material.Foilage.index}, row, col)
            return None if spot is None else (*spot, False)
        return None

    def _resource_goal(self, obs, row, col):
        tiles = obs["Tile"]
        here = tiles[(tiles[:, TILE["row"]] == row) & (tiles[:, TILE["col"]] == col)]
        if len(here) and here[0][TILE["material_id"]] in STAND_ON:
            return row, col, False  # harvesting here
        spot = self._nearest(tiles, STAND_ON, row, col)
        if spot is not None:
            return (*spot, False)
        spot = self._nearest(tiles, BESIDE, row, col)
        return None if spot is None else (*spot, True)

    def _toward(self, legal, row, col, goal_row, goal_col, beside):
        gap = abs(goal_row - row) + abs(goal_col - col)
        if gap == 0 or (beside and gap == 1):
            return STAY
        closer = [d for d, (dr, dc) in STEP.items()
                  if legal[d] and abs(goal_row - row - dr) + abs(goal_col - col - dc) < gap]
        if closer:
            return int(self.rng.choice(closer))
        return self._any_legal(legal)

    def _explore(self, member, legal):
        heading = self.heading[member]
        if legal[heading]:
            return heading
        return self._any_legal(legal)

    def _any_legal(self, legal):
        moves = [d for d in STEP if legal[d]]
        return int(self.rng.choice(moves)) if moves else STAY

    # -- what to hold and whom to hit ----------------------------------------------------
    @staticmethod
    def _item_to_equip(obs):
        """Row of an unequipped item it may equip (the Use mask says what is allowed)."""
        inventory = obs["Inventory"]
        allowed = obs["ActionTargets"]["Use"]["InventoryItem"][: len(inventory)]
        for row in np.flatnonzero(allowed):
            item = inventory[row]
            if item[ITEM["id"]] and item[ITEM["type_id"]] in WEARABLE and not item[ITEM["equipped"]]:
                return int(row)
        return None

    def _target(self, obs):
        entities = obs["Entity"]
        allowed = obs["ActionTargets"]["Attack"]["Target"][: len(entities)]
        ids = entities[:, ENTITY["id"]]
        enemy = (allowed == 1) & (ids > 0) & ~np.isin(ids, list(self.teammates))
        rows = np.flatnonzero(enemy)
        if len(rows) == 0:
            return None
        return int(rows[np.argmin(entities[rows, ENTITY["health"]])])
