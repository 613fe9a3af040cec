"""A trained-policy stand-in: a PyTorch MLP whose state dict (saved with `torch.save`) lies
beside this file. Moves every alive member by one batched forward pass."""
import os

import numpy as np
import torch
from net import Net


class Team:
    def __init__(self, team_id, env_config):
        self.net = Net()
        state = torch.load(os.path.join(os.path.dirname(__file__), "weights.pt"), weights_only=True)
        self.net.load_state_dict(state)
        self.net.eval()

    def act(self, observations):
        members = sorted(observations)
        features = np.stack([features_of(observations[m]) for m in members])
        with torch.no_grad():
            logits = self.net(torch.from_numpy(features))
        legal = np.stack([observations[m]["ActionTargets"]["Move"]["Direction"] for m in members]).astype(bool)
        choice = np.where(legal, logits.numpy(), -np.inf).argmax(axis=1)
        return {m: {"Move": {"Direction": int(d)}} for m, d in zip(members, choice)}


def features_of(obs):
    """Counts of each tile material around the agent, and the tick."""
    materials = np.bincount(obs["Tile"][:, 2].astype(np.int64), minlength=16)[:16].astype(np.float32) / 225
    return np.concatenate([materials, [obs["CurrentTick"] / 1024]]).astype(np.float32)
