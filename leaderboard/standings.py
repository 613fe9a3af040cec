"""Everything the leaderboard shows, computed from the history table alone.

`compute()` takes the history's team rows (one per team per match, as stored), the
submission statuses, and optionally the previous `Standings`, and returns new `Standings`:
ratings in the three views, per-policy aggregates, PvE figures. It is pure: the same rows
give the same standings. TrueSkill and Elo are carried forward from the previous
standings when only new matches were added (they are online, applied in order), and
recomputed when the history changed otherwise. The Plackett-Luce fit with its bootstrap
is the expensive part; `refresh_mle=False` reuses the previous fit.

The pages (`leaderboard.pages`) only filter and format these frames, so they stay fast
however long the history grows (`bench/tables_scale.py`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
import pandas as pd

from arena.ratings import (
    EloState,
    MLERating,
    Outcome,
    Played,
    TrueSkillState,
    elo_ratings,
    extend_trueskill,
    plackett_luce,
    rated,
    recomputed,
)
from arena.schema import BUILTIN_PREFIX, TASK_NAMES

POINT_COLUMNS = [f"{task}_points" for task in TASK_NAMES]

#: Ratings kept per player for the "rating over time" plot.
TRAJECTORY_POINTS = 500


@dataclass(frozen=True)
class Source:
    """Which matches standings were computed from: whole shards of the history, never
    the write-ahead log, so the same shards of the dataset give the same table."""

    shards: tuple[str, ...] = ()
    """The shards' file names (`teams-<time>-<id>.parquet`), sorted (the order written)."""
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

    teams: pd.DataFrame
    """The history's team rows, with a `player` column (revision-level id)."""
    trueskill: TrueSkillState
    elo: EloState
    mle: Mapping[str, MLERating]
    matches: int
    """Matches in the rows (every track)."""
    pvp_matches: int
    """PvP matches in the rows."""
    trajectory: Mapping[str, "deque[tuple[str, float, float]]"] = field(default_factory=dict)
    """Per player, its last TRAJECTORY_POINTS TrueSkill ratings: (start time, mu, sigma)."""
    pvp_players: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Per player: policy id, revision, PvP matches, mean Achievement and per-task points."""
    match_summary: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Per match, newest first: start, track, stage, map, ticks, winner(s), top score, teams."""
    policy_matches: Mapping[str, np.ndarray] = field(default_factory=dict)
    """Per policy id, the ids of the matches it played."""
    pve_stages: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Per (submission player, PvE stage): matches, Top1Ratio, mean Achievement, task points."""
    rated_results: int = 0
    """What the ratings rated: PvP matches played on their own plus complete duplicate
    sets (each one result); a set not yet complete is not rated."""
    source: Source = field(default_factory=Source)
    """The shards the rows came from."""


def with_players(rows: pd.DataFrame) -> pd.DataFrame:
    """Add the rated entity of each row: a built-in by name, a submission by repo@revision."""
    rows = rows.copy()
    builtin = rows["policy_id"].str.startswith(BUILTIN_PREFIX)
    rows["player"] = np.where(builtin, rows["policy_id"], rows["policy_id"] + "@" + rows["revision"])
    return rows


def pvp_outcomes(rows: pd.DataFrame) -> list[Outcome]:
    """The rated PvP results of the rows (matches and complete duplicate sets), in rating
    order (`arena.ratings.rated`)."""
    pvp = rows[rows["track"] == "pvp"].sort_values(["started_at", "match_id", "slot"])
    if pvp.empty:
        return []
    keys = list(zip(pvp["started_at"], pvp["match_id"]))
    players = pvp["player"].to_numpy()
    scores = pvp["achievement"].to_numpy()
    set_ids = pvp["set_id"].to_numpy() if "set_id" in pvp else np.full(len(pvp), "")
    set_sizes = pvp["set_size"].to_numpy() if "set_size" in pvp else np.ones(len(pvp), dtype=int)
    boundaries = [0] + [i for i in range(1, len(keys)) if keys[i] != keys[i - 1]] + [len(keys)]
    return rated(
        Played(keys[a][0], keys[a][1], str(set_ids[a] or ""), int(set_sizes[a] or 1),
               tuple(players[a:b]), tuple(int(s) for s in scores[a:b]))
        for a, b in zip(boundaries, boundaries[1:])
    )


def summarize_matches(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per match, newest first: what the Matches tab lists."""
    columns = ["Match", "Started", "Track", "Stage", "Map", "Ticks", "Winner", "Top score", "Teams"]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    meta = rows.groupby("match_id", sort=False).agg(
        Started=("started_at", "first"),
        Track=("track", "first"),
        Stage=("stage", "first"),
        Map=("map_id", "first"),
        Ticks=("ticks", "first"),
        top=("achievement", "max"),
        Teams=("slot", "count"),
    )
    winners = rows[rows["rank"] == 1].drop_duplicates(["match_id", "policy_id"]).groupby("match_id")["policy_id"].agg(", ".join)
    meta["Winner"] = winners
    meta = meta.rename(columns={"top": "Top score"}).sort_values("Started", ascending=False)
    meta.insert(0, "Match", meta.index)
    return meta[columns].reset_index(drop=True)


def compute(
    rows: pd.DataFrame,
    *,
    previous: Standings | None = None,
    refresh_mle: bool = True,
    bootstrap: int = 200,
    source: Source | None = None,
) -> Standings:
    """Standings from the history rows (see the module docstring); `source` says which
    shards the rows are (the PvP tab names them)."""
    rows = with_players(rows)
    history = pvp_outcomes(rows)
    fresh = previous is None or recomputed(previous.trueskill, history)
    trajectory: dict[str, deque] = {} if fresh else {p: deque(t, maxlen=TRAJECTORY_POINTS) for p, t in previous.trajectory.items()}

    def observe(outcome: Outcome, player: str, rating) -> None:
        trajectory.setdefault(player, deque(maxlen=TRAJECTORY_POINTS)).append((outcome.key[0], rating.mu, rating.sigma))

    ts = extend_trueskill(previous.trueskill if previous is not None else TrueSkillState(), history, observe=observe)
    elo = elo_ratings(history, state=previous.elo if previous is not None else None)
    if refresh_mle or previous is None:
        mle = plackett_luce(history, bootstrap=bootstrap) if history else {}
    else:
        mle = previous.mle
    pvp = rows[rows["track"] == "pvp"]
    pvp_players = pvp.groupby("player").agg(
        policy_id=("policy_id", "first"),
        revision=("revision", "first"),
        matches=("match_id", "nunique"),
        achievement=("achievement", "mean"),
        **{task: (f"{task}_points", "mean") for task in TASK_NAMES},
    )
    pve = rows[(rows["track"] == "pve") & ~rows["policy_id"].str.startswith(BUILTIN_PREFIX)]
    pve_stages = pve.assign(won=pve["rank"] == 1).groupby(["player", "stage"]).agg(
        matches=("match_id", "nunique"),
        top1=("won", "mean"),
        mean=("achievement", "mean"),
        **{task: (f"{task}_points", "mean") for task in TASK_NAMES},
    )
    return Standings(
        pvp_players=pvp_players,
        pve_stages=pve_stages,
        match_summary=summarize_matches(rows),
        policy_matches={p: g.to_numpy() for p, g in rows.groupby("policy_id")["match_id"]} if len(rows) else {},
        teams=rows,
        trueskill=ts,
        elo=elo,
        mle=mle,
        matches=int(rows["match_id"].nunique()) if len(rows) else 0,
        pvp_matches=int(pvp["match_id"].nunique()) if len(pvp) else 0,
        trajectory=trajectory,
        rated_results=len(history),
        source=source or Source(),
    )
