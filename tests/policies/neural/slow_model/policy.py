"""At tick 3 runs a forward pass that takes about 1 s of CPU (the limit is 600 ms)."""
import time

import torch


class Team:
    def __init__(self, team_id, env_config):
        self.layer = torch.nn.Linear(1024, 1024)

    def act(self, observations):
        if next(iter(observations.values()))["CurrentTick"] == 2:
            x = torch.rand(256, 1024)
            start = time.process_time()
            with torch.no_grad():
                while time.process_time() - start < 1.0:
                    x = torch.tanh(self.layer(x))
        return {}
