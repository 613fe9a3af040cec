"""At tick 3 builds a 1.6 GB tensor (as a model far too large for the limit would)."""
import torch


class Team:
    def __init__(self, team_id, env_config):
        self.weights = None

    def act(self, observations):
        if next(iter(observations.values()))["CurrentTick"] == 2:
            self.weights = torch.ones(400_000_000)
        return {}
