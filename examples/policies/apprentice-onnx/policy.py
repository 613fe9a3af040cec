"""Apprentice (ONNX): the same learned team as `apprentice-torch`, exported to ONNX.

`model.onnx` is the network with its featurization inside the graph (batch axis: the alive
members), so this policy only stacks nmmo's observation arrays and runs one ONNX Runtime
session per tick. It needs no PyTorch. `training/imitate.py` writes the graph; the
project's tests check that it plays the same actions as the PyTorch export. Try it:

    python -m matchmaking.evaluate examples/policies/apprentice-onnx --matches 2
"""

import os

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
ENTITIES, SLOTS = 32, 12  # the rows the network reads (see apprentice-torch/apprentice.py)
E_ID, E_ROW, E_COL = 0, 2, 3


class Team:
    def __init__(self, team_id, env_config):
        self.session = ort.InferenceSession(os.path.join(HERE, "model.onnx"), providers=["CPUExecutionProvider"])
        self.spawn = {}

    def reset(self):
        self.spawn = {}

    def act(self, observations):
        members = sorted(observations)
        if not members:
            return {}
        move, attack, style, use = self.session.run(None, self.inputs(observations, members))
        actions = {}
        for i, m in enumerate(members):
            action = {"Move": {"Direction": int(move[i].argmax())}}
            if attack[i].argmax() < ENTITIES:
                action["Attack"] = {"Style": int(style[i].argmax()), "Target": int(attack[i].argmax())}
            if use[i].argmax() < SLOTS:
                action["Use"] = {"InventoryItem": int(use[i].argmax())}
            actions[m] = action
        return actions

    def inputs(self, observations, members):
        """The graph's inputs: each member's raw arrays, stacked over the alive members."""
        batch = {name: [] for name in ("tile", "entity", "inventory", "agent", "member", "spawn",
                                       "move_mask", "attack_mask", "use_mask")}
        for m in members:
            obs, targets = observations[m], observations[m]["ActionTargets"]
            me = obs["Entity"][obs["Entity"][:, E_ID] == obs["AgentId"]]
            if m not in self.spawn and len(me):
                self.spawn[m] = (int(me[0, E_ROW]), int(me[0, E_COL]))
            batch["tile"].append(obs["Tile"][:, 2])
            batch["entity"].append(obs["Entity"][:ENTITIES])
            batch["inventory"].append(obs["Inventory"][:SLOTS])
            batch["agent"].append((obs["AgentId"], obs["CurrentTick"]))
            batch["member"].append(m)
            batch["spawn"].append(self.spawn.get(m, (0, 0)))
            batch["move_mask"].append(targets["Move"]["Direction"])
            batch["attack_mask"].append(targets["Attack"]["Target"][:ENTITIES])
            batch["use_mask"].append(targets["Use"]["InventoryItem"][:SLOTS])
        types = {"tile": np.int64, "member": np.int64}
        return {name: np.asarray(rows, dtype=types.get(name, np.float32)) for name, rows in batch.items()}
