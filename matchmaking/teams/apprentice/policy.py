"""Apprentice (PyTorch): the Arena's learned team, imitating the scripted `elite` team.

A complete submission: `apprentice.py` holds the network, the featurization it carries and
`play` (stack the alive members' observation arrays, one batched forward pass, decode);
`weights.pt` is the state dict that `training/imitate.py` trained (`torch.save`), loaded
from this folder whatever the working directory. Try it:

    python -m matchmaking.evaluate examples/policies/apprentice-torch --matches 2
"""

import os

import torch
from apprentice import ApprenticeNet, play

HERE = os.path.dirname(os.path.abspath(__file__))


class Team:
    def __init__(self, team_id, env_config):
        self.net = ApprenticeNet(team_size=int(env_config["team_size"]))
        self.net.load_state_dict(torch.load(os.path.join(HERE, "weights.pt"), weights_only=True))
        self.net.eval()
        self.spawn = {}

    def reset(self):
        self.spawn = {}

    def act(self, observations):
        return play(self.net, observations, self.spawn)
