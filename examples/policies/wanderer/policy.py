"""Wanderer: the weakest example team. Every member takes a random legal step each tick
and does nothing else: it never eats or drinks, so it starves by tick 25.

It is here as a floor for the leaderboard and as the shortest complete policy."""

import numpy as np


class Team:
    def __init__(self, team_id: int, env_config: dict):
        self.rng = np.random.default_rng(env_config["seed"])

    def act(self, observations: dict) -> dict:
        actions = {}
        for member, obs in observations.items():
            legal = np.flatnonzero(obs["ActionTargets"]["Move"]["Direction"][:4])
            if len(legal):
                actions[member] = {"Move": {"Direction": int(self.rng.choice(legal))}}
        return actions
