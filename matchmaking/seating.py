"""Where each team of a line-up sits: duplicate sets rotate the seats of one seed.

In a 16-team free-for-all the spawn point moves a team's result: some edges are nearer
water, food or the centre on a given map. Duplicate bridge and poker remove that luck by
dealing the same cards to every side; a duplicate set does the same here. One seed (one
map, one set of NPCs, one shuffle of spawn points) is played once per map edge, and
between matches every team moves one edge clockwise to the same spawn point of the next
edge. Over the set each team spawns once on every edge, at the same place along it, and
the set is rated as one result (`arena.ratings.outcomes`).

nmmo assigns spawn points to team slots from the seed, so the rotation is computed from
the seed's layout (`matchmaking.game.spawn_layout`); this module is the pure part.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TypeVar, cast

T = TypeVar("T")

#: Edges of the map: a full set plays one match per edge.
SIDES = 4


class SeatingError(ValueError):
    """A line-up cannot be rotated over the spawn layout it was given."""


def rotations(lineup: Sequence[T], layout: Sequence[tuple[int, int]], *, count: int = SIDES) -> list[list[T]]:
    """The line-ups of a duplicate set, rotation 0 (`lineup` itself) first.

    Args:
        lineup (`Sequence[T]`): who sits in each slot in the first match.
        layout (`Sequence[tuple[int, int]]`): per slot, the (side, index) its team spawns
            at for this seed (`matchmaking.game.spawn_layout`).
        count (`int`): rotations to return, 1 to `SIDES`.

    Returns:
        `list[list[T]]`: in rotation r, whoever sat at (side, index) in rotation 0 sits at
        ((side + r) mod 4, index).

    Raises:
        `SeatingError`: the layout does not cover every (side, index) of its edges once
            (the number of teams is not a multiple of 4, or a slot has no spawn point).
    """
    if len(lineup) != len(layout):
        raise SeatingError(f"The line-up has {len(lineup)} teams but the layout {len(layout)} slots.")
    if not 1 <= count <= SIDES:
        raise SeatingError(f"`count` must be between 1 and {SIDES}, got {count}.")
    slot_at = {tuple(point): slot for slot, point in enumerate(layout)}
    per_side = len(layout) // SIDES
    expected = {(side, index) for side in range(SIDES) for index in range(per_side)}
    if len(slot_at) != len(layout) or set(slot_at) != expected:
        raise SeatingError(
            f"Seats can be rotated only when every edge has the same spawn points, each taken once: "
            f"{len(layout)} teams over {SIDES} edges gave {sorted(set(map(tuple, layout)))}. "
            "Play duplicate sets with a number of teams that is a multiple of 4."
        )
    out = []
    for r in range(count):
        seated: list[T | None] = [None] * len(lineup)
        for slot, (side, index) in enumerate(layout):
            seated[slot_at[((side + r) % SIDES, index)]] = lineup[slot]
        out.append(cast("list[T]", seated))  # every slot is filled: the layout is a permutation
    return out


def set_id(seed: int, players: Sequence[str], size: int) -> str:
    """The id of a duplicate set: its seed, its first line-up and its size."""
    key = json.dumps({"seed": seed, "players": list(players), "size": size})
    return "set-" + hashlib.sha256(key.encode()).hexdigest()[:16]
