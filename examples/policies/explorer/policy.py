"""Explorer: an example NMMO Arena team, complete and runnable.

Every member walks away from its spawn edge toward the far side of the map (Travel the
Lands), stops to eat and drink when it runs low (food and water drain 5 points a tick in
nmmo 2.x: an agent that never eats dies at tick 25), and attacks the weakest enemy
player within reach (Eliminate the Competition).

It shows the whole contract: the constructor, `reset`, `act`, reading nmmo 2.x
observations (`Entity` and `Tile` rows, `ActionTargets` masks) and answering with nmmo's
action dict.

Try it:  python -m matchmaking.evaluate examples/policies/explorer --matches 2 --horizon 256
"""

import numpy as np
from nmmo.core.tile import TileState
from nmmo.entity.entity import EntityState
from nmmo.lib import material

ENTITY = EntityState.State.attr_name_to_col  # column of each Entity attribute
TILE = TileState.State.attr_name_to_col      # Tile rows: absolute row, col, material id
NORTH, SOUTH, EAST, WEST, STAY = range(5)    # indices of Move.Direction
STEP = {NORTH: (-1, 0), SOUTH: (1, 0), EAST: (0, 1), WEST: (0, -1)}
RANGE_STYLE = 1                              # index of Attack.Style (Melee, Range, Mage)
HUNGRY = 40                                  # eat or drink below this (of 100)


class Team:
    def __init__(self, team_id: int, env_config: dict):
        self.team_size = env_config["team_size"]
        # Team t's members are nmmo agents t*team_size+1 ... t*team_size+team_size.
        first = team_id * self.team_size + 1
        self.teammates = set(range(first, first + self.team_size))
        self.map_size = env_config["nmmo"]["MAP_SIZE"]
        self.rng = np.random.default_rng(env_config["seed"])
        self.reset()

    def reset(self) -> None:
        """Called before each match: forget the previous match's headings."""
        self.heading = {}

    def act(self, observations: dict) -> dict:
        actions = {}
        for member, obs in observations.items():
            me = self._me(obs)
            row, col = int(me[ENTITY["row"]]), int(me[ENTITY["col"]])
            if member not in self.heading:
                self.heading[member] = self._away_from_edge(row, col)
            goal = self._resource_goal(obs, me, row, col)
            direction = self._toward(obs, row, col, goal) if goal else self._explore(member, obs)
            action = {"Move": {"Direction": direction}}
            target = self._target(obs)
            if target is not None:
                action["Attack"] = {"Style": RANGE_STYLE, "Target": target}
            actions[member] = action
        return actions

    @staticmethod
    def _me(obs):
        entities = obs["Entity"]
        return entities[entities[:, ENTITY["id"]] == obs["AgentId"]][0]

    def _away_from_edge(self, row, col):
        """Spawn is on an edge: head for the opposite one."""
        distances = {SOUTH: row, NORTH: self.map_size - row, EAST: col, WEST: self.map_size - col}
        return min(distances, key=distances.get)

    @staticmethod
    def _resource_goal(obs, me, row, col):
        """Nearest visible tile to eat on (foliage) or to stand beside (water), if hungry."""
        tiles = obs["Tile"]
        if me[ENTITY["water"]] < HUNGRY:
            wanted = tiles[tiles[:, TILE["material_id"]] == material.Water.index]
        elif me[ENTITY["food"]] < HUNGRY:
            wanted = tiles[tiles[:, TILE["material_id"]] == material.Foilage.index]
        else:
            return None
        if len(wanted) == 0:
            return None
        distance = np.abs(wanted[:, TILE["row"]] - row) + np.abs(wanted[:, TILE["col"]] - col)
        nearest = wanted[np.argmin(distance)]
        return int(nearest[TILE["row"]]), int(nearest[TILE["col"]])

    def _toward(self, obs, row, col, goal):
        """A legal step that brings the agent closer to `goal` (water: stop beside it)."""
        legal = obs["ActionTargets"]["Move"]["Direction"]
        gap = abs(goal[0] - row) + abs(goal[1] - col)
        if gap == 0 or (gap == 1 and not legal[self._direction_to(row, col, goal)]):
            return STAY  # on the food, or next to the water
        closer = [d for d, (dr, dc) in STEP.items()
                  if legal[d] and abs(goal[0] - row - dr) + abs(goal[1] - col - dc) < gap]
        return int(self.rng.choice(closer)) if closer else self._any_legal(legal)

    @staticmethod
    def _direction_to(row, col, goal):
        return next(d for d, (dr, dc) in STEP.items() if (row + dr, col + dc) == goal)

    def _explore(self, member, obs):
        legal = obs["ActionTargets"]["Move"]["Direction"]
        heading = self.heading[member]
        return heading if legal[heading] else self._any_legal(legal)

    def _any_legal(self, legal):
        moves = [d for d in STEP if legal[d]]
        return int(self.rng.choice(moves)) if moves else STAY

    def _target(self, obs):
        """Row of the weakest enemy player the attack mask allows, or None."""
        entities = obs["Entity"]
        allowed = obs["ActionTargets"]["Attack"]["Target"][: len(entities)]
        ids = entities[:, ENTITY["id"]]
        enemy = (allowed == 1) & (ids > 0) & ~np.isin(ids, list(self.teammates))
        rows = np.flatnonzero(enemy)
        if len(rows) == 0:
            return None
        return int(rows[np.argmin(entities[rows, ENTITY["health"]])])
