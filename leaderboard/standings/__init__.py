"""Everything the leaderboard shows, computed from the history table alone.

`compute()` takes the history's team rows (one per team per match, as stored: one frame,
or the shards' frames one at a time, folded so that a million matches are recomputed within
4 GB), and optionally the previous `Standings`, and returns new `Standings`: ratings in the
three views, per-policy aggregates, PvE figures, and the head to head of every PvP pair with
its Nash average. It is pure: the same rows give the same standings. TrueSkill and Elo are
carried forward from the previous standings when only new matches were added (they are
online, applied in order), and recomputed when the history changed otherwise. The
Plackett-Luce fit with its bootstrap is the expensive part; `refresh_mle=False` reuses the
previous fit (and the previous head to head, also a whole-history computation).

The pages (`leaderboard.pages`) only filter and format these frames, so they stay fast
however long the history grows (`bench/tables_scale.py`).

One concept a module:

- `record`: the `Standings` record and its `Source` (which shards).
- `rows`: the team rows as the standings read them (narrowed, with their players).
- `rated`: the rated PvP results in the rows (one per match).
- `held_out`: held-out maps and the overfitting signal (PvE against held-out PvP).
- `tallies`: the per-policy tables and the sums and counts behind them.
- `matches`: the per-match summaries and each policy's matches.
- `gather`: one pass over batches of rows, into all of the above.
- `fold`: `compute` and `update`, the ratings carried forward or recomputed.
- `fits`: a writer's published Plackett-Luce fit, taken by a restored Space instead of fitting.
"""

from leaderboard.standings.fold import HistoryChangedError, compute, update
from leaderboard.standings.held_out import (
    FAR_FIELD_SHARE,
    FAR_MIN_RANKS,
    OVERFITTING_COLUMNS,
    far_threshold,
    held_out_rows,
    overfitting,
)
from leaderboard.standings.matches import summarize_matches
from leaderboard.standings.rated import pvp_outcomes, rated_table
from leaderboard.standings.record import KEPT_COLUMNS, TRAJECTORY_POINTS, Source, Standings
from leaderboard.standings.rows import POINT_COLUMNS, frames, is_builtin_row, narrow, with_players
from leaderboard.standings.tallies import Tallies

__all__ = [
    "FAR_FIELD_SHARE", "FAR_MIN_RANKS", "KEPT_COLUMNS", "OVERFITTING_COLUMNS", "POINT_COLUMNS", "TRAJECTORY_POINTS",
    "HistoryChangedError", "Source", "Standings", "Tallies", "compute", "far_threshold", "frames", "held_out_rows",
    "is_builtin_row", "narrow", "overfitting", "pvp_outcomes", "rated_table", "summarize_matches", "update",
    "with_players",
]
