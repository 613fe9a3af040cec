"""Idles, then tries to allocate 4 GB at tick 3 (and touches it), then carries on."""
import numpy as np


class Team:
    def __init__(self, team_id, env_config):
        pass

    def act(self, observations):
        if next(iter(observations.values()))["CurrentTick"] == 2:
            hog = np.ones(4 * 2**30 // 8)
            hog.sum()
        return {}
