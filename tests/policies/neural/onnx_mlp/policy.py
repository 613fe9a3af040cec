"""A trained-policy stand-in: an ONNX graph (`model.onnx`, batch axis over members) beside
this file, run by ONNX Runtime in one batched call for the alive members."""
import os

import numpy as np
import onnxruntime as ort


class Team:
    def __init__(self, team_id, env_config):
        options = ort.SessionOptions()
        options.intra_op_num_threads = 4  # in the sandbox the Arena keeps it at one
        self.session = ort.InferenceSession(os.path.join(os.path.dirname(__file__), "model.onnx"), options)

    def act(self, observations):
        members = sorted(observations)
        features = np.stack([features_of(observations[m]) for m in members])
        (logits,) = self.session.run(None, {"features": features})
        legal = np.stack([observations[m]["ActionTargets"]["Move"]["Direction"] for m in members]).astype(bool)
        choice = np.where(legal, logits, -np.inf).argmax(axis=1)
        return {m: {"Move": {"Direction": int(d)}} for m, d in zip(members, choice)}


def features_of(obs):
    """Counts of each tile material around the agent, and the tick."""
    materials = np.bincount(obs["Tile"][:, 2].astype(np.int64), minlength=16)[:16].astype(np.float32) / 225
    return np.concatenate([materials, [obs["CurrentTick"] / 1024]]).astype(np.float32)
