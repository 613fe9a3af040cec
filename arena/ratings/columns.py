"""Rated results built from the history's columns, without a Python object per match or row.

The one builder of `RatedTable`s from the team table's rows: the history's read side
(`history.index.rated`) calls it. Its input is the rows of single PvP
matches as integer codes into sorted distinct values (what `pandas.factorize(sort=True)` or
`numpy.unique(return_inverse=True)` give), so that 16 million rows never become 16 million
strings twice.
"""

from __future__ import annotations

import numpy as np

from arena.ratings.results import RatedTable


def rated_from_codes(start_code: np.ndarray, start_values: np.ndarray, id_code: np.ndarray, id_values: np.ndarray,
                     slot: np.ndarray, player_code: np.ndarray, player_names: np.ndarray,
                     achievement: np.ndarray) -> RatedTable:
    """The matches in the rows as rated results, in rating order (start time, then match id),
    each result's seats in slot order.

    Args:
        start_code, id_code, player_code: per row, the index of its start time, match id and
            player among `start_values`, `id_values` and `player_names` (each sorted).
        slot: per row, its team's slot in the match.
        achievement: per row, its team's score.
    """
    if not len(start_code):
        return RatedTable.empty()
    # ALGO LOGIC: sort by (start, match id, slot) through the sorted codes, then cut at each new key
    order = np.lexsort((np.asarray(slot), id_code, start_code))
    start_code, id_code = start_code[order], id_code[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (start_code[1:] != start_code[:-1]) | (id_code[1:] != id_code[:-1])
    first = np.nonzero(new)[0]
    group = np.cumsum(new) - 1
    widths = np.diff(np.append(first, len(order))).astype(np.int64)
    position = np.arange(len(order)) - first[group]
    # only the players of these results, still in sorted order (a PvE-only player has none)
    present = np.bincount(player_code[player_code >= 0], minlength=len(player_names)) > 0
    renumber = np.append(np.cumsum(present) - 1, -1)
    player_code, names = renumber[player_code], np.asarray(player_names, dtype=object)[present]
    seats = np.full((len(first), int(widths.max())), -1, dtype=np.int64)
    scores = np.zeros(seats.shape)
    seats[group, position] = player_code[order]
    scores[group, position] = np.asarray(achievement)[order]
    return RatedTable(tuple(names), np.asarray(start_values, dtype=object)[start_code[first]],
                      np.asarray(id_values, dtype=object)[id_code[first]], seats, scores, widths)
