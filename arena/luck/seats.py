"""The seats of the history's matches, as the luck measures read them: who sat where, on
which map, with what result; and the groups the measures report."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from arena.revision import player_id
from arena.schema import rows

#: The effect groups of the ranking model, in report order.
EFFECT_GROUPS: tuple[str, ...] = ("side", "index", "slot", "map_side")

#: The groups of the Achievement decomposition, in report order (then `residual`).
SHARE_GROUPS: tuple[str, ...] = ("policy", "map", "side", "index", "slot", "lobby", "map_side")

#: Names for people, in `summary()`.
LABELS: Mapping[str, str] = {
    "policy": "policy", "map": "map", "side": "spawn side", "index": "point along the edge", "slot": "slot",
    "lobby": "lobby", "map_side": "side on the map", "residual": "unexplained",
}

#: Fewest usable matches for a report.
MIN_MATCHES = 10




@dataclass(frozen=True)
class Seats:
    """The usable team rows as arrays, one entry per team per match (a "seat")."""

    match: np.ndarray
    """Match number 0..matches-1 of each seat; a match's seats are contiguous."""
    player: np.ndarray
    """Index into `players`."""
    side: np.ndarray
    index: np.ndarray
    slot: np.ndarray
    map: np.ndarray
    """Index into `maps`."""
    achievement: np.ndarray
    players: tuple[str, ...]
    maps: tuple[tuple[bool, int], ...]
    """(held out, map id) of each map: held-out maps are numbered apart from published ones."""
    excluded_matches: int = 0
    """Matches left out because a team had no spawn point recorded."""

    @property
    def matches(self) -> int:
        return int(self.match[-1]) + 1 if len(self.match) else 0


def seats(
    history: Any,
    *,
    tracks: Sequence[str] | None = None,
    horizon: int | None = None,
    latest: int | None = None,
) -> Seats:
    """The usable seats of a history.

    Args:
        history: the team rows (a pandas frame with the columns of `arena.schema.TEAM_COLUMNS`,
            as `leaderboard.standings` holds them), or `MatchResult`s.
        tracks (`Sequence[str]`, *optional*): only matches of these tracks (default: all).
        horizon (`int`, *optional*): only matches set to this many ticks (default: all).
        latest (`int`, *optional*): only the latest this many usable matches (default: all).

    Returns:
        `Seats`: matches ordered by (start time, match id), slots in order.
    """
    col = _history_columns(history)
    n = len(col.get("match_id", ()))
    if n == 0:
        return _empty()
    keep = np.ones(n, dtype=bool)
    if tracks is not None:
        keep &= np.isin(col["track"].astype(str), list(tracks))
    if horizon is not None:
        keep &= col["horizon"].astype(np.int64) == horizon
    ids, slots, starts = col["match_id"].astype(str), col["slot"].astype(np.int64), col["started_at"].astype(str)
    seen: set[tuple[str, int]] = set()
    for i in np.flatnonzero(keep):  # the first row of each (match, slot), as the history keeps
        if (ids[i], slots[i]) in seen:
            keep[i] = False
        seen.add((ids[i], slots[i]))
    order = np.flatnonzero(keep)
    order = order[np.lexsort((slots[order], ids[order], starts[order]))]
    side, index = _known(col.get("spawn_side"), n)[order], _known(col.get("spawn_index"), n)[order]
    ids = ids[order]
    bad = set(ids[(side < 0) | (index < 0)].tolist())
    _, inverse, counts = np.unique(ids, return_inverse=True, return_counts=True)
    usable = ~np.isin(ids, list(bad)) & (counts[inverse] >= 2)
    order, ids = order[usable], ids[usable]
    if latest is not None:
        distinct = list(dict.fromkeys(ids.tolist()))
        kept = set(distinct[-latest:]) if latest > 0 else set()
        order, ids = order[np.isin(ids, list(kept))], ids[np.isin(ids, list(kept))]
    if len(order) == 0:
        return _empty(excluded=len(bad))
    if "player" in col:
        names = col["player"].astype(str)[order]
    else:
        names = np.array([player_id(str(p), str(r)) for p, r in zip(col["policy_id"][order], col["revision"][order])])
    held = (_truthy(col["held_out"]) if "held_out" in col else np.zeros(n, dtype=bool))[order]
    map_keys = list(zip(held.tolist(), col["map_id"].astype(np.int64)[order].tolist()))
    maps = tuple(sorted(set(map_keys)))
    map_at = {m: i for i, m in enumerate(maps)}
    players, player = np.unique(names, return_inverse=True)
    match = np.cumsum(np.r_[0, ids[1:] != ids[:-1]])
    return Seats(
        match=match.astype(np.int64),
        player=player.astype(np.int64),
        side=_known(col.get("spawn_side"), n)[order],
        index=_known(col.get("spawn_index"), n)[order],
        slot=slots[order],
        map=np.array([map_at[m] for m in map_keys], dtype=np.int64),
        achievement=col["achievement"].astype(float)[order],
        players=tuple(str(p) for p in players),
        maps=maps,
        excluded_matches=len(bad),
    )


def _history_columns(history: Any) -> dict[str, np.ndarray]:
    """The history as columns: a frame's (anything with `columns` and `[name]`, such as
    the pandas frame the leaderboard holds; `arena` does not import pandas) or the rows of
    `MatchResult`s."""
    if hasattr(history, "columns"):
        return {str(c): np.asarray(history[c]) for c in history.columns}
    table = [row for result in history for row in rows(result)]
    return {c: np.array([r[c] for r in table]) for c in (table[0] if table else {})}


def _known(values: Any, n: int) -> np.ndarray:
    """A spawn column as integers, -1 where it is missing (version 1 rows)."""
    if values is None:
        return np.full(n, -1, dtype=np.int64)
    out = np.array([-1 if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in values], dtype=np.float64)
    return out.astype(np.int64)


def _truthy(values: np.ndarray) -> np.ndarray:
    return np.array([bool(v) and not (isinstance(v, float) and math.isnan(v)) for v in values], dtype=bool)


def _empty(excluded: int = 0) -> Seats:
    nothing = np.zeros(0, dtype=np.int64)
    return Seats(nothing, nothing, nothing, nothing, nothing, nothing, np.zeros(0), (), (), excluded)

