"""The standings as a record: `Standings`, what the leaderboard shows, and `Source`, the
shards it was computed from.

Every field is computed by `compute` or carried forward by `update`
(`leaderboard.standings.fold`); the pages only filter and format them. The record also
keeps what an update needs to carry on from the new rows alone: the tallies behind the
means and the rated results.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from arena.errors import ArenaError
from arena.head_to_head import HeadToHead
from arena.ratings import EloState, MLERating, RatedTable, TrueSkillState
from leaderboard.standings.held_out import OVERFITTING_COLUMNS
from leaderboard.standings.rows import POINT_COLUMNS
from leaderboard.standings.tallies import Tallies
from leaderboard.team_rows import TeamRows

#: The history's columns the standings keep per team row (`Standings.teams`, with `player`):
#: what the pages, the analytics and the luck report read. The others (seed, versions,
#: durations, task values, faults, ...) stay in the dataset: 16 million rows of the twenty
#: kept take half the memory of all of them. A whole match is `HistoryReader.results()`.
KEPT_COLUMNS = ("match_id", "started_at", "track", "stage", "map_id", "horizon", "held_out", "slot", "policy_id",
                "revision", "achievement", "rank", *POINT_COLUMNS, "spawn_side", "spawn_index", "player")

#: Ratings kept per player for the "rating over time" plot.
TRAJECTORY_POINTS = 500


@dataclass(frozen=True)
class Source:
    """Which matches standings were computed from: whole shards of the history, never
    the write-ahead log, so the same shards of the dataset give the same table."""

    shards: tuple[str, ...] = ()
    """The shards' names (paths inside `data/`), sorted (by day, then the order written)."""
    published: bool = False
    """True: the shards already pushed to the Hub dataset; False: the local shards (no
    mirror, or the Hub not reached yet)."""

    @property
    def through(self) -> str:
        """The last shard read: a reader of the dataset stops there (`--through`)."""
        return self.shards[-1] if self.shards else ""


@dataclass(frozen=True)
class Standings:
    """What the leaderboard shows, as of `matches` recorded matches (those of `source`)."""

    teams: TeamRows
    """The history's team rows, their `KEPT_COLUMNS` with a `player` column (revision-level
    id), in chunks."""
    trueskill: TrueSkillState
    elo: EloState
    mle: Mapping[str, MLERating]
    matches: int
    """Matches in the rows (every track)."""
    pvp_matches: int
    """PvP matches in the rows."""
    trajectory: Mapping[str, deque[tuple[str, float, float]]] = field(default_factory=dict)
    """Per player, its last TRAJECTORY_POINTS TrueSkill ratings: (start time, mu, sigma)."""
    pvp_players: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Per player: policy id, revision, PvP matches, mean Achievement and per-task points."""
    match_summary: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Per match, newest first: start, track, stage, map, ticks, winner(s), top score, teams."""
    policy_matches: Mapping[str, np.ndarray] = field(default_factory=dict)
    """Per policy id, the ids of the matches it played."""
    pve_stages: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Per (submission player, PvE stage): matches, Top1Ratio, mean Achievement, task points."""
    head_to_head: HeadToHead = field(default_factory=HeadToHead)
    """Every PvP pair's record, the clear cycles and the Nash average (`arena.head_to_head`):
    a whole-history computation, refreshed with the Plackett-Luce fit."""
    held_out_mle: Mapping[str, MLERating] = field(default_factory=dict)
    """Plackett-Luce ratings (point estimates, no bootstrap) from PvP results on held-out
    maps only: the standing on maps no participant saw in advance."""
    overfitting: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=OVERFITTING_COLUMNS))
    """Per submission with both standings (`overfitting`): PvE rank against held-out PvP rank."""
    rated_results: int = 0
    """What the ratings rated: one result per PvP match (a duplicate set's matches, from
    before sets were retired, one each too)."""
    source: Source = field(default_factory=Source)
    """The shards the rows came from."""
    mle_source: Source = field(default_factory=Source)
    """The shards the whole-history columns (Plackett-Luce fit and bootstrap, head to head,
    held-out fit) were computed from: `source`, or earlier shards between two of their
    refreshes (`leaderboard.refresher`, `mle_every_s`)."""
    mle_writer: str = ""
    """The writer whose published Plackett-Luce fit of `mle_source` the standings show
    (`leaderboard.standings.fits`: a restored Space's first standings); "" when fitted here."""
    tallies: Tallies | None = None
    """The sums and counts behind `pvp_players` and `pve_stages` (what `update` merges)."""
    rated: RatedTable = field(default_factory=RatedTable.empty)
    """The rows' rated results (`rated_table`), kept so that the whole-history fits rerun
    without reading every row again; extended by `update`."""
    held_out_rated: RatedTable = field(default_factory=RatedTable.empty)
    """The rated results of the matches on held-out maps."""


class HistoryChangedError(ArenaError, ValueError):
    """The rows given to `update` are not whole new matches after the previous standings'
    (a match already counted, or one started before the last rated one): compute the
    standings from all rows with `compute` instead."""
