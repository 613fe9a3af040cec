"""The history's one read side: every match folded once into what each reader takes.

`HistoryIndex` reads a history folder shard by shard and the write-ahead log's matches
as they are recorded, each match counted once, and keeps, in columns:

- `Folded` (`folded`): the team rows (`team_rows.TeamRows`, strings dictionary-encoded by
  `rows`), the rated PvP results (`rated`), the per-policy sums and counts (`tallies`), one
  summary row per match and each policy's matches (`matches`): what the leaderboard rates
  and shows, and what `evaluate --against top:K` ranks;
- `Planning` (`planning`): each revision's PvE and faulty matches as records, PvP matches
  per player, PvE durations and the audit order: what the matchmaker plans from.

`fold` is the same fold as a pure function of rows (the standings of any rows, the
benchmarks). The ratings are not here: they are the leaderboard's (`leaderboard.standings`),
computed from a `Folded`.
"""

from history.index.folded import KEPT_COLUMNS, Folded, HistoryChangedError, fold
from history.index.index import HistoryIndex, Snapshot
from history.index.rated import held_out_mask, pvp_outcomes, rated_table
from history.index.rows import POINT_COLUMNS, frames, is_builtin_row, narrow, with_players
from history.index.tallies import Tallies, pve_stages, pvp_players
from history.index.team_rows import TeamRows, plain_values

__all__ = [
    "KEPT_COLUMNS", "POINT_COLUMNS", "Folded", "HistoryChangedError", "HistoryIndex", "Snapshot", "Tallies", "TeamRows",
    "fold", "frames", "held_out_mask", "is_builtin_row", "narrow", "pve_stages", "pvp_outcomes", "pvp_players",
    "plain_values", "rated_table", "with_players",
]
