"""Test policy: walks (keeps a heading, turns when blocked), raises once at tick 5
(CurrentTick 4), and carries on."""

import numpy as np


class Team:
    def __init__(self, team_id, env_config):
        self.rng = np.random.default_rng(env_config["seed"])
        self.heading = {}

    def act(self, observations):
        tick = next(iter(observations.values()))["CurrentTick"]
        if tick == 4:
            raise ValueError("deliberate failure at tick 5")
        return {member: {"Move": {"Direction": self._walk(member, obs)}} for member, obs in observations.items()}

    def _walk(self, member, obs):
        legal = obs["ActionTargets"]["Move"]["Direction"]
        heading = self.heading.get(member, 0)
        if not legal[heading]:
            options = [d for d in range(4) if legal[d]]
            heading = int(self.rng.choice(options)) if options else 4
        self.heading[member] = heading
        return heading
