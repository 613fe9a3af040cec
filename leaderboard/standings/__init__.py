"""Everything the leaderboard shows: the history's matches (as `history.index` folds them)
and their ratings.

`compute()` takes the matches (a `history.index.Folded`, or the history's team rows,
folded on the way) and optionally the previous `Standings`, and returns new `Standings`:
ratings in the three views, the per-policy tables, PvE figures, and the head to head of
every PvP pair with its Nash average. It is pure: the same matches give the same standings.
TrueSkill and Elo are carried forward from the previous standings when only later matches
were added (they are online, applied in order), and recomputed otherwise. The
Plackett-Luce fit with its bootstrap is the expensive part; `refresh_mle=False` reuses the
previous fit (and the previous head to head, also a whole-history computation).

The pages (`leaderboard.pages`) only filter and format these frames, so they stay fast
however long the history grows (`bench/tables_scale.py`).

- `record`: the `Standings` record and its `Source` (which matches).
- `fold`: `compute` and `update`, the ratings carried forward or recomputed.
- `held_out`: the overfitting signal (PvE against held-out PvP).
- `fits`: a writer's published Plackett-Luce fit, taken by a restored Space instead of fitting.
- `online`: TrueSkill, Elo and the trajectories, carried forward (`Online`), and rated while
  a long history is still being read (`RatedAhead`).
"""

from history.index import HistoryChangedError
from leaderboard.standings.fold import compute, update
from leaderboard.standings.held_out import (
    FAR_FIELD_SHARE,
    FAR_MIN_RANKS,
    OVERFITTING_COLUMNS,
    far_threshold,
    overfitting,
)
from leaderboard.standings.online import Online, RatedAhead
from leaderboard.standings.record import TRAJECTORY_POINTS, Source, Standings

__all__ = [
    "FAR_FIELD_SHARE", "FAR_MIN_RANKS", "OVERFITTING_COLUMNS", "TRAJECTORY_POINTS", "HistoryChangedError", "Online", "RatedAhead", "Source",
    "Standings", "compute", "far_threshold", "overfitting", "update",
]
