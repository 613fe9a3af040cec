"""The apprentice: a network that learned to play like the Arena's `elite` team.

Trained by imitation (`training/imitate.py`), it reads a member's raw nmmo observation
arrays and answers Move, Attack and Use. The featurization is part of the network
(`ApprenticeNet.features`), not of the policy: the ONNX export then carries it too, so the
PyTorch and the ONNX submission cannot featurize differently, and a policy only has to
stack the arrays nmmo gives it (`gather`).

What the network sees of a member, all from its own observation:
- the 15x15 tiles around it (material of each) and who stands on them (teammate, enemy
  player, NPC, their health), through a small convolution;
- itself: health, food, water, its eight skill levels, where it is, where it spawned and
  how far it has come, the tick, and which member of the team it is (the elite team gives
  its members roles by index);
- the first `ENTITIES` entities in view and its 12 inventory slots, each scored by a
  pointer head, so that it can pick an attack target and an item to use by row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import nn

#: Entity rows the network considers (nmmo lists the nearest first; 32 covers a full view).
ENTITIES = 32
#: Inventory slots (nmmo 2.1's capacity).
SLOTS = 12
WINDOW = 15
#: Members the network can tell apart by index (the Arena's teams have 8; a smaller team uses the first).
MEMBERS = 8
MATERIALS = 16
ITEM_TYPES = 18
STAY = 4

# Columns of nmmo 2.1's Entity and Inventory tables (EntityState / ItemState).
E_ID, E_ROW, E_COL, E_ITEM_LEVEL, E_HEALTH, E_FOOD, E_WATER = 0, 2, 3, 7, 12, 13, 14
E_SKILLS = (15, 17, 19, 21, 23, 25, 27, 29)  # melee, range, mage, fishing, herbalism, prospecting, carving, alchemy
I_ID, I_TYPE, I_LEVEL, I_QUANTITY, I_EQUIPPED = 0, 1, 3, 5, 14

#: The inputs of `ApprenticeNet.forward`, in order (also the ONNX graph's input names).
INPUTS = ("tile", "entity", "inventory", "agent", "member", "spawn", "move_mask", "attack_mask", "use_mask")
#: Its outputs: logits over 5 directions, ENTITIES targets + none, 3 styles, SLOTS items + none.
OUTPUTS = ("move", "attack", "style", "use")

_MASKED = -1e9


def gather(observations: Mapping[int, Mapping[str, Any]], members: list[int], spawn: dict[int, tuple[int, int]]) -> dict[str, np.ndarray]:
    """Stack the alive members' observation arrays into the network's batched inputs.

    `spawn` keeps each member's first position across ticks (it is updated here).
    """
    rows = []
    for m in members:
        obs = observations[m]
        entity = obs["Entity"]
        me = entity[entity[:, E_ID] == obs["AgentId"]]
        if m not in spawn and len(me):
            spawn[m] = (int(me[0, E_ROW]), int(me[0, E_COL]))
        rows.append((obs, spawn.get(m, (0, 0))))
    targets = [obs["ActionTargets"] for obs, _ in rows]
    return {
        "tile": np.stack([obs["Tile"][:, 2] for obs, _ in rows]).astype(np.int64),
        "entity": np.stack([obs["Entity"][:ENTITIES] for obs, _ in rows]).astype(np.float32),
        "inventory": np.stack([obs["Inventory"][:SLOTS] for obs, _ in rows]).astype(np.float32),
        "agent": np.array([[obs["AgentId"], obs["CurrentTick"]] for obs, _ in rows], dtype=np.float32),
        "member": np.array(members, dtype=np.int64),
        "spawn": np.array([s for _, s in rows], dtype=np.float32),
        "move_mask": np.stack([t["Move"]["Direction"] for t in targets]).astype(np.float32),
        "attack_mask": np.stack([t["Attack"]["Target"][:ENTITIES] for t in targets]).astype(np.float32),
        "use_mask": np.stack([t["Use"]["InventoryItem"][:SLOTS] for t in targets]).astype(np.float32),
    }


def decode(members: list[int], move: np.ndarray, attack: np.ndarray, style: np.ndarray, use: np.ndarray) -> dict:
    """The most likely action of each head, in the team contract's format."""
    actions = {}
    for i, m in enumerate(members):
        action = {"Move": {"Direction": int(move[i].argmax())}}
        target = int(attack[i].argmax())
        if target < ENTITIES:
            action["Attack"] = {"Style": int(style[i].argmax()), "Target": target}
        item = int(use[i].argmax())
        if item < SLOTS:
            action["Use"] = {"InventoryItem": item}
        actions[m] = action
    return actions


def play(net: ApprenticeNet, observations: Mapping[int, Mapping[str, Any]], spawn: dict[int, tuple[int, int]]) -> dict:
    """One tick for the alive members: gather, one batched forward pass, decode."""
    members = sorted(observations)
    if not members:
        return {}
    inputs = gather(observations, members, spawn)
    with torch.no_grad():
        logits = net(*(torch.from_numpy(inputs[name]) for name in INPUTS))
    return decode(members, *(x.numpy() for x in logits))


class ApprenticeNet(nn.Module):
    """Raw observation arrays of a batch of members -> logits of each action head."""

    def __init__(self, team_size: int = 8, map_size: float = 160.0, hidden: int = 256):
        super().__init__()
        # team_size only tells teammates from enemies by agent id; the weights do not depend on it
        self.team_size, self.map_size = team_size, map_size
        self.material = nn.Embedding(MATERIALS, 6)
        self.conv = nn.Sequential(nn.Conv2d(6 + 4, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))  # 15x15 -> 7x7
        self.grid = nn.Sequential(nn.Linear(16 * 7 * 7, hidden), nn.ReLU())
        self.own = nn.Sequential(nn.Linear(20 + MEMBERS, 64), nn.ReLU())
        self.trunk = nn.Sequential(nn.Linear(hidden + 64, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.move = nn.Linear(hidden, 5)
        self.style = nn.Linear(hidden, 3)
        self.entity_key = nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 64))
        self.entity_query, self.no_attack = nn.Linear(hidden, 64), nn.Linear(hidden, 1)
        self.item_key = nn.Sequential(nn.Linear(5 + ITEM_TYPES, 64), nn.ReLU(), nn.Linear(64, 64))
        self.item_query, self.no_use = nn.Linear(hidden, 64), nn.Linear(hidden, 1)

    def features(self, tile, entity, inventory, agent, member, spawn):
        """The featurization: what each head reads of one member's observation."""
        agent_id, tick = agent[:, 0:1], agent[:, 1:2]
        ids = entity[:, :, E_ID]
        present = (ids != 0).float()
        is_self = (ids == agent_id).float()
        me = (is_self.unsqueeze(2) * entity).sum(1)  # [B, 31]: the member's own row
        row, col = me[:, E_ROW:E_ROW + 1], me[:, E_COL:E_COL + 1]
        team = torch.div(agent_id - 1, self.team_size, rounding_mode="floor")
        mate = (torch.div(ids - 1, self.team_size, rounding_mode="floor") == team).float() * (ids > 0).float() * (1 - is_self)
        enemy = (ids > 0).float() * (1 - mate) * (1 - is_self)
        npc = (ids < 0).float()
        dr, dc = entity[:, :, E_ROW] - row, entity[:, :, E_COL] - col
        health = entity[:, :, E_HEALTH] / 100
        combat = torch.maximum(torch.maximum(entity[:, :, E_SKILLS[0]], entity[:, :, E_SKILLS[1]]), entity[:, :, E_SKILLS[2]]) / 10
        entities = torch.stack([present, is_self, mate, enemy, npc, dr / 7, dc / 7, health, combat,
                                entity[:, :, E_SKILLS[0]] / 10, entity[:, :, E_SKILLS[1]] / 10, entity[:, :, E_SKILLS[2]] / 10], 2)

        # who stands where in the 15x15 window, placed by a one-hot product (exports to ONNX as a matmul)
        half = WINDOW // 2
        inside = present * (1 - is_self) * (dr.abs() <= half).float() * (dc.abs() <= half).float()
        cell = ((dr + half) * WINDOW + dc + half).clamp(0, WINDOW * WINDOW - 1)
        place = (cell.unsqueeze(2) == torch.arange(WINDOW * WINDOW, dtype=cell.dtype).view(1, 1, -1)).float() * inside.unsqueeze(2)
        occupants = torch.bmm(place.transpose(1, 2), torch.stack([mate, enemy, npc, health], 2))  # [B, 225, 4]
        grid = torch.cat([self.material(tile.clamp(0, MATERIALS - 1)), occupants], 2)
        grid = grid.transpose(1, 2).reshape(-1, 10, WINDOW, WINDOW)

        skills = torch.stack([me[:, c] for c in E_SKILLS], 1) / 10
        sr, sc = spawn[:, 0:1], spawn[:, 1:2]
        own = torch.cat([me[:, E_HEALTH:E_HEALTH + 1] / 100, me[:, E_FOOD:E_FOOD + 1] / 100, me[:, E_WATER:E_WATER + 1] / 100,
                         skills, me[:, E_ITEM_LEVEL:E_ITEM_LEVEL + 1] / 10, row / self.map_size, col / self.map_size,
                         sr / self.map_size, sc / self.map_size, (row - sr) / 64, (col - sc) / 64, tick / 1024,
                         (row - sr).abs() / 64 + (col - sc).abs() / 64], 1)  # 20 values
        member_onehot = (member.unsqueeze(1) == torch.arange(MEMBERS, dtype=member.dtype).view(1, -1)).float()

        kinds = (inventory[:, :, I_TYPE].unsqueeze(2) == torch.arange(ITEM_TYPES, dtype=inventory.dtype).view(1, 1, -1)).float()
        items = torch.cat([(inventory[:, :, I_ID:I_ID + 1] != 0).float(), inventory[:, :, I_LEVEL:I_LEVEL + 1] / 10,
                           inventory[:, :, I_EQUIPPED:I_EQUIPPED + 1], inventory[:, :, I_QUANTITY:I_QUANTITY + 1] / 10,
                           torch.ones_like(inventory[:, :, :1]), kinds], 2)
        return grid, torch.cat([own, member_onehot], 1), entities, items, mate, present

    def forward(self, tile, entity, inventory, agent, member, spawn, move_mask, attack_mask, use_mask):
        grid, own, entities, items, mate, present = self.features(tile, entity, inventory, agent, member, spawn)
        h = self.trunk(torch.cat([self.grid(self.conv(grid).flatten(1)), self.own(own)], 1))
        move = torch.where(move_mask > 0, self.move(h), torch.full_like(move_mask, _MASKED))
        can_hit = (attack_mask > 0) & (present > 0) & (mate == 0)
        hit = torch.einsum("bkd,bd->bk", self.entity_key(entities), self.entity_query(h))
        attack = torch.cat([torch.where(can_hit, hit, torch.full_like(hit, _MASKED)), self.no_attack(h)], 1)
        can_use = (use_mask > 0) & (items[:, :, 0] > 0)
        pick = torch.einsum("bkd,bd->bk", self.item_key(items), self.item_query(h))
        use = torch.cat([torch.where(can_use, pick, torch.full_like(pick, _MASKED)), self.no_use(h)], 1)
        return move, attack, self.style(h), use
