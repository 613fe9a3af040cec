"""A newcomer's policy, written from docs/participants.md alone (the benchmarks push it, a
policy no other entry plays like): each member walks to the
nearest food (Foilage) when hungry, to water when thirsty, and otherwise wanders outward."""

import numpy as np

FOILAGE, WATER = 4, 1          # Tile material_id
ID, ROW, COL, FOOD, DRINK = 0, 2, 3, 13, 14   # Entity columns
NORTH, SOUTH, EAST, WEST, STAY = 0, 1, 2, 3, 4


class Team:
    def __init__(self, team_id, env_config):
        self.rng = np.random.default_rng(env_config["seed"])
        self.heading = {}

    def act(self, observations):
        actions = {}
        for member, ob in observations.items():
            me = ob["Entity"][ob["Entity"][:, ID] == ob["AgentId"]]
            if not len(me):
                continue
            row, col, food, water = me[0, ROW], me[0, COL], me[0, FOOD], me[0, DRINK]
            want = WATER if water < food else FOILAGE
            tiles = ob["Tile"]
            targets = tiles[tiles[:, 2] == want]
            if (min(food, water) < 60) and len(targets):
                dist = np.abs(targets[:, 0] - row) + np.abs(targets[:, 1] - col)
                t = targets[np.argmin(dist)]
                dr, dc = int(t[0]) - int(row), int(t[1]) - int(col)
                if abs(dr) + abs(dc) <= (1 if want == WATER else 0):
                    direction = STAY
                elif abs(dr) >= abs(dc):
                    direction = SOUTH if dr > 0 else NORTH
                else:
                    direction = EAST if dc > 0 else WEST
            else:
                if member not in self.heading or self.rng.random() < 0.05:
                    self.heading[member] = int(self.rng.integers(0, 4))
                direction = self.heading[member]
            actions[member] = {"Move": {"Direction": direction}}
        return actions
