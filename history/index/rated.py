"""The rated results in the history's rows: what every rating engine reads.

Every PvP match is one result, rated on its own: the matches of a duplicate set, recorded
before sets were retired (2026-12-03), too, their `set_id` grouping nothing any more
(docs/history.md, "Match record"). The rows are read as columns (`RatedTable`, built by
`arena.ratings.rated_from_codes`) without a Python object per match or row, since the
ratings rate every PvP match of the history.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from arena.ratings import Outcome, RatedTable, rated_from_codes
from history.index.rows import codes


def pvp_outcomes(rows: pd.DataFrame) -> list[Outcome]:
    """The rated PvP results of the rows, one per match, in rating order (start time, then
    match id), each result's seats in slot order: `rated_table(rows)` as objects."""
    pvp = rows[rows["track"] == "pvp"].sort_values(["started_at", "match_id", "slot"])
    if pvp.empty:
        return []
    keys = list(zip(pvp["started_at"], pvp["match_id"]))
    players = pvp["player"].to_numpy()
    scores = pvp["achievement"].to_numpy()
    boundaries = [0] + [i for i in range(1, len(keys)) if keys[i] != keys[i - 1]] + [len(keys)]
    return [Outcome(keys[a], tuple(players[a:b]), tuple(int(s) for s in scores[a:b]))
            for a, b in zip(boundaries, boundaries[1:])]


def held_out_mask(rows: pd.DataFrame) -> np.ndarray:
    """Per row, whether its match was played on a held-out map (none in a history from before them)."""
    if "held_out" not in rows:
        return np.zeros(len(rows), dtype=bool)
    return rows["held_out"].fillna(False).astype(bool).to_numpy()


def rated_table(rows: pd.DataFrame) -> RatedTable:
    """`pvp_outcomes(rows)` as columns (`arena.ratings.RatedTable`): the same rated results
    in the same order, built from the rows' arrays without a Python object per match or row."""
    keep = rows["track"].to_numpy() == "pvp"
    if not keep.any():
        return RatedTable.empty()
    everything = bool(keep.all())  # the usual case: read the columns in place, copy nothing

    def pick(values: np.ndarray) -> np.ndarray:
        return values if everything else values[keep]

    start_code, start_values = codes(rows["started_at"], sort=True)
    id_code, id_values = codes(rows["match_id"], sort=True)
    player_code, names = codes(rows["player"], sort=True)
    return rated_from_codes(pick(start_code), start_values, pick(id_code), id_values, pick(rows["slot"].to_numpy()),
                            pick(player_code), names, pick(rows["achievement"].to_numpy()))
