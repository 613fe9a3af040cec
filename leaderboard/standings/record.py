"""The standings as a record: `Standings`, what the leaderboard shows, and `Source`, the
matches it was computed from.

The matches are the history index's (`history.index.Folded`: rows, rated results, tallies,
summaries); the standings add the ratings, computed by `compute` and carried forward
(`leaderboard.standings.fold`). The pages only filter and format them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from arena.head_to_head import HeadToHead
from arena.ratings import EloState, MLERating, RatedTable, TrueSkillState
from history.index import Folded, Tallies, TeamRows
from leaderboard.standings.held_out import OVERFITTING_COLUMNS
from leaderboard.standings.online import TRAJECTORY_POINTS, Online, Trajectory

__all__ = ["TRAJECTORY_POINTS", "Source", "Standings"]

@dataclass(frozen=True)
class Source:
    """Which matches standings were computed from: those of a history folder's shards and
    of its write-ahead log, and which of those shards the Hub dataset holds."""

    shards: tuple[str, ...] = ()
    """The shards' names (paths inside `data/`), sorted (by day, then the order written)."""
    unsharded: int = 0
    """Matches recorded here and not yet flushed into a shard (the write-ahead log's)."""
    published: tuple[str, ...] | None = None
    """Of `shards`, those the Hub dataset holds; None where that cannot be told (no Hub
    mirror, or the Hub not reached yet)."""

    @property
    def through(self) -> str:
        """The last shard read: a reader of the dataset stops there (`--through`)."""
        return self.shards[-1] if self.shards else ""

    @property
    def on_hub(self) -> bool:
        """Whether the Hub dataset holds every one of these matches: anyone can recompute
        these standings from it (`examples/recompute_ratings.py --through`)."""
        return self.published is not None and not self.unsharded and len(self.published) == len(self.shards)


@dataclass(frozen=True)
class Standings:
    """What the leaderboard shows: the matches of `source` (`folded`) and their ratings."""

    trueskill: TrueSkillState
    elo: EloState
    mle: Mapping[str, MLERating]
    folded: Folded = field(default_factory=Folded.empty)
    """The matches as the history index folds them: rows, rated results, tallies, summaries."""
    trajectory: Trajectory = field(default_factory=dict)
    """Per player, its last `TRAJECTORY_POINTS` TrueSkill ratings: (start time, mu, sigma)."""
    pvp_players: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Per player: policy id, revision, PvP matches, mean Achievement and per-task points."""
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
    source: Source = field(default_factory=Source)
    """The matches the standings are of."""
    mle_source: Source = field(default_factory=Source)
    """The matches the whole-history columns (Plackett-Luce fit and bootstrap, head to head,
    held-out fit) were computed from: `source`, or fewer between two of their refreshes
    (`leaderboard.refresher`, `mle_every_s`)."""
    mle_writer: str = ""
    """The writer whose published Plackett-Luce fit of `mle_source` the standings show
    (`leaderboard.standings.fits`: a restored Space's first standings); "" when fitted here."""
    fitting: bool = False
    """The whole-history columns are not computed yet (empty), and are being: a Space's first
    standings of a history it has read whole (a restore), shown while the fit and its
    bootstrap run (`leaderboard.refresher`) rather than after them."""

    # what the matches are, as the pages read them
    @property
    def online(self) -> Online:
        """The ratings carried forward to the standings of more matches (`Online.extended`)."""
        return Online(self.trueskill, self.elo, self.trajectory)

    @property
    def teams(self) -> TeamRows:
        """The team rows, their `history.index.KEPT_COLUMNS` with a `player` column, in chunks."""
        return self.folded.teams

    @property
    def match_summary(self) -> pd.DataFrame:
        """Per match, newest first: start, track, stage, map, ticks, winner(s), top score, teams."""
        return self.folded.summary

    @property
    def policy_matches(self) -> Mapping[str, np.ndarray]:
        """Per policy id, the ids of the matches it played."""
        return self.folded.policy_matches

    @property
    def tallies(self) -> Tallies:
        return self.folded.tallies

    @property
    def rated(self) -> RatedTable:
        """The rated PvP results, in rating order: what the ratings rate."""
        return self.folded.rated

    @property
    def held_out_rated(self) -> RatedTable:
        return self.folded.held_out

    @property
    def matches(self) -> int:
        """Matches (every track)."""
        return self.folded.matches

    @property
    def pvp_matches(self) -> int:
        return self.folded.pvp_matches

    @property
    def rated_results(self) -> int:
        """What the ratings rated: one result per PvP match (a duplicate set's matches, from
        before sets were retired, one each too)."""
        return len(self.folded.rated)
