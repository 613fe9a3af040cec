"""Everything the leaderboard shows, computed from the history table alone.

`compute()` takes the history's team rows (one per team per match, as stored), the
submission statuses, and optionally the previous `Standings`, and returns new `Standings`:
ratings in the three views, per-policy aggregates, PvE figures, and the head to head of
every PvP pair with its Nash average. It is pure: the same rows
give the same standings. TrueSkill and Elo are carried forward from the previous
standings when only new matches were added (they are online, applied in order), and
recomputed when the history changed otherwise. The Plackett-Luce fit with its bootstrap
is the expensive part; `refresh_mle=False` reuses the previous fit (and the previous head
to head, also a whole-history computation).

The pages (`leaderboard.pages`) only filter and format these frames, so they stay fast
however long the history grows (`bench/tables_scale.py`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
import pandas as pd

from arena.head_to_head import HeadToHead, head_to_head
from arena.ratings import (
    EloState,
    MLERating,
    Outcome,
    Played,
    RatedTable,
    TrueSkillState,
    elo_ratings,
    plackett_luce,
    rated,
    recomputed,
    trueskill_trail,
)
from arena.schema import BUILTIN_PREFIX, TASK_NAMES
from arena.scoring import competition_ranks

POINT_COLUMNS = [f"{task}_points" for task in TASK_NAMES]

#: Ratings kept per player for the "rating over time" plot.
TRAJECTORY_POINTS = 500

#: A policy is named "far from the diagonal" (PvE standing against held-out PvP standing)
#: when its two ranks differ by at least this many places ...
FAR_MIN_RANKS = 3
#: ... or by this share of the policies ranked in both, whichever is more: a fixed count
#: alone would flag ordinary noise in a large field, a share alone would flag a swap of
#: neighbours in a small one (fields under 4 policies never flag anyone).
FAR_FIELD_SHARE = 0.25

OVERFITTING_COLUMNS = ["player", "pve_achievement", "held_out_rating", "pve_rank", "pvp_rank", "gap", "far"]


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
    head_to_head: HeadToHead = field(default_factory=HeadToHead)
    """Every PvP pair's record, the clear cycles and the Nash average (`arena.head_to_head`):
    a whole-history computation, refreshed with the Plackett-Luce fit."""
    held_out_mle: Mapping[str, MLERating] = field(default_factory=dict)
    """Plackett-Luce ratings (point estimates, no bootstrap) from PvP results on held-out
    maps only: the standing on maps no participant saw in advance."""
    overfitting: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=OVERFITTING_COLUMNS))
    """Per submission with both standings (`overfitting`): PvE rank against held-out PvP rank."""
    rated_results: int = 0
    """What the ratings rated: PvP matches played on their own plus complete duplicate
    sets (each one result); a set not yet complete is not rated."""
    source: Source = field(default_factory=Source)
    """The shards the rows came from."""


def with_players(rows: pd.DataFrame) -> pd.DataFrame:
    """Add the rated entity of each row: a built-in by name, a submission by repo@revision."""
    rows = rows.copy(deep=False)  # a new column, the caller's frame untouched, no data copied
    if rows.empty:
        rows["player"] = pd.Series(dtype=object)
        return rows
    # per distinct (policy, revision): one string each, shared by its rows (1.6 million rows,
    # a few thousand strings)
    policy_code, policies = pd.factorize(rows["policy_id"].to_numpy(dtype=object), use_na_sentinel=False)
    revision_code, revisions = pd.factorize(rows["revision"].to_numpy(dtype=object), use_na_sentinel=False)
    width = max(len(revisions), 1)
    pair_code, pairs = pd.factorize(policy_code.astype(np.int64) * width + revision_code)

    def name(policy, revision):
        if isinstance(policy, str) and policy.startswith(BUILTIN_PREFIX):
            return policy
        if not (isinstance(policy, str) and isinstance(revision, str)):
            return np.nan  # as the string sum of a missing value was
        return f"{policy}@{revision}"

    names = np.array([name(policies[k // width], revisions[k % width]) for k in pairs] + [None], dtype=object)[:-1]
    rows["player"] = names[pair_code]
    return rows


def is_builtin_row(rows: pd.DataFrame) -> np.ndarray:
    """Per row, whether its policy is a built-in (computed once per distinct policy)."""
    code, policies = pd.factorize(rows["policy_id"].to_numpy(dtype=object))
    return np.array([str(p).startswith(BUILTIN_PREFIX) for p in policies], dtype=bool)[code] if len(rows) else np.zeros(0, bool)


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


def rated_table(rows: pd.DataFrame) -> RatedTable:
    """`pvp_outcomes(rows)` as columns (`arena.ratings.RatedTable`): the same rated results
    in the same order, built from the rows' arrays without a Python object per match or row
    (a duplicate set, rare, still goes through `arena.ratings.rated`)."""
    pvp_mask = rows["track"].to_numpy() == "pvp"
    empty = RatedTable((), np.empty(0, dtype=object), np.empty(0, dtype=object), np.zeros((0, 1), dtype=np.int64),
                       np.zeros((0, 1)), np.zeros(0, dtype=np.int64))
    if not pvp_mask.any():
        return empty
    columns = [c for c in ("track", "started_at", "match_id", "slot", "player", "achievement", "set_id", "set_size") if c in rows]
    every = bool(pvp_mask.all())  # the usual case: read the columns in place, copy nothing
    in_set = rows["set_id"].fillna("").to_numpy(dtype=object) != "" if "set_id" in rows else np.zeros(len(rows), dtype=bool)
    in_set &= pvp_mask
    keep = pvp_mask & ~in_set
    single = {c: rows[c].to_numpy() if every and not in_set.any() else rows[c].to_numpy()[keep]
              for c in ("started_at", "match_id", "slot", "player", "achievement")}
    parts = []
    if len(single["match_id"]):
        # ALGO LOGIC: sort by (start, match id, slot) through sorted codes, then cut at each new key
        start_code, start_values = pd.factorize(single["started_at"].astype(object, copy=False), sort=True)
        id_code, id_values = pd.factorize(single["match_id"].astype(object, copy=False), sort=True)
        order = np.lexsort((single["slot"], id_code, start_code))
        start_code, id_code = start_code[order], id_code[order]
        new = np.ones(len(order), dtype=bool)
        new[1:] = (start_code[1:] != start_code[:-1]) | (id_code[1:] != id_code[:-1])
        first = np.nonzero(new)[0]
        group = np.cumsum(new) - 1
        widths = np.diff(np.append(first, len(order))).astype(np.int64)
        position = np.arange(len(order)) - first[group]
        player_code, names = pd.factorize(single["player"].astype(object, copy=False)[order], sort=True)
        seats = np.full((len(first), int(widths.max())), -1, dtype=np.int64)
        scores = np.zeros(seats.shape)
        seats[group, position] = player_code
        scores[group, position] = single["achievement"][order]
        parts.append(RatedTable(tuple(names), np.asarray(start_values, dtype=object)[start_code[first]],
                                np.asarray(id_values, dtype=object)[id_code[first]], seats, scores, widths))
    if in_set.any():
        sets = pvp_outcomes(rows.loc[in_set, columns])
        if sets:
            parts.append(RatedTable.of(sets))
    if not parts:
        return empty
    if len(parts) == 1:
        return parts[0]
    # singles and sets together, in rating order (start, id)
    names = tuple(sorted(set(parts[0].names) | set(parts[1].names)))
    index = {p: i for i, p in enumerate(names)}
    width = max(t.seats.shape[1] for t in parts)
    seats, scores = [], []
    for t in parts:
        remap = np.array([index[p] for p in t.names] + [-1], dtype=np.int64)
        pad = width - t.seats.shape[1]
        seats.append(np.pad(remap[t.seats], ((0, 0), (0, pad)), constant_values=-1))
        scores.append(np.pad(t.scores, ((0, 0), (0, pad))))
    started = np.concatenate([t.started for t in parts])
    ids = np.concatenate([t.ids for t in parts])
    order = np.lexsort((pd.factorize(ids, sort=True)[0], pd.factorize(started, sort=True)[0]))
    return RatedTable(names, started[order], ids[order], np.concatenate(seats)[order], np.concatenate(scores)[order],
                      np.concatenate([t.widths for t in parts])[order])


def held_out_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of matches played on held-out maps (none in a history from before them)."""
    if "held_out" not in rows:
        return rows.iloc[0:0]
    return rows[rows["held_out"].fillna(False).astype(bool)]


def far_threshold(field_size: int) -> int:
    """Rank difference from which a policy is far from the diagonal, in a field of
    `field_size` policies ranked both in PvE and in PvP.

    Example:
        >>> far_threshold(8), far_threshold(20)
        (3, 5)
    """
    return max(FAR_MIN_RANKS, int(np.ceil(FAR_FIELD_SHARE * field_size)))


def overfitting(pve_stages: pd.DataFrame, held_out: Mapping[str, MLERating]) -> pd.DataFrame:
    """PvE standing against held-out PvP standing, per submission that has both.

    The PvE standing is the rank by mean Achievement in PvE stage 1 (every submission
    plays stage 1, against the same built-in teams, on the published maps); the PvP standing
    the rank by held-out Plackett-Luce rating. Both rank among the policies that have both
    (competition ranks: ties share the better one), so that the two are comparable; built-ins
    have no PvE standing and are left out. `gap` is PvP rank minus PvE rank: positive when
    the policy stands better in PvE than on held-out maps (the overfitting direction);
    `far` when `|gap| >= far_threshold(field)`.
    """
    if pve_stages.empty or not held_out:
        return pd.DataFrame(columns=OVERFITTING_COLUMNS)
    stage1 = pve_stages.xs(1, level="stage")["mean"] if 1 in pve_stages.index.get_level_values("stage") else pd.Series(dtype=float)
    both = sorted(p for p in stage1.index if p in held_out and not held_out[p].anchor)
    if not both:
        return pd.DataFrame(columns=OVERFITTING_COLUMNS)
    pve_scores = [float(stage1[p]) for p in both]
    ratings = [held_out[p].rating for p in both]
    pve_rank, pvp_rank = competition_ranks(pve_scores), competition_ranks(ratings)
    gaps = [b - a for a, b in zip(pve_rank, pvp_rank)]
    limit = far_threshold(len(both))
    frame = pd.DataFrame({"player": both, "pve_achievement": pve_scores, "held_out_rating": ratings, "pve_rank": pve_rank,
                          "pvp_rank": pvp_rank, "gap": gaps, "far": [abs(g) >= limit for g in gaps]})
    return frame.sort_values(["pvp_rank", "player"]).reset_index(drop=True)


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
    won = rows.loc[rows["rank"].to_numpy() == 1, ["match_id", "policy_id"]].drop_duplicates()
    # most matches have one winner: taken as is; ties joined, in row order as before
    shared = won["match_id"].duplicated(keep=False).to_numpy()
    match_ids, policy_ids = won["match_id"].to_numpy(), won["policy_id"].to_numpy()
    winners = pd.Series(policy_ids[~shared], index=match_ids[~shared], dtype=object)
    if shared.any():
        joined: dict[str, list[str]] = {}
        for match, policy in zip(match_ids[shared].tolist(), policy_ids[shared].tolist()):
            joined.setdefault(match, []).append(policy)
        winners = pd.concat([winners, pd.Series({m: ", ".join(p) for m, p in joined.items()}, dtype=object)])
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
    history = rated_table(rows)
    fresh = previous is None or recomputed(previous.trueskill, history)
    trajectory: dict[str, deque] = {} if fresh else {p: deque(t, maxlen=TRAJECTORY_POINTS) for p, t in previous.trajectory.items()}
    # TrueSkill carried forward (only the matches after the previous standings' last one), or
    # recomputed; each player's latest ratings come back as a trail, not one call per rating
    start = TrueSkillState() if fresh else previous.trueskill
    todo = history if fresh else history.take(history.after(start.last_key))
    ts, trail = trueskill_trail(todo, state=start, keep=TRAJECTORY_POINTS)
    started = todo.started
    for player, points in trail.items():
        rows_, mus, sigmas = zip(*points)
        trajectory.setdefault(player, deque(maxlen=TRAJECTORY_POINTS)).extend(
            zip(started[list(rows_)].tolist(), mus, sigmas))
    elo = elo_ratings(history, state=previous.elo if previous is not None else None)
    if refresh_mle or previous is None:
        mle = plackett_luce(history, bootstrap=bootstrap) if len(history) else {}
        pairs = head_to_head(history)
        held_out = rated_table(held_out_rows(rows))
        held_out_mle = plackett_luce(held_out, bootstrap=0) if len(held_out) else {}
    else:
        mle, pairs, held_out_mle = previous.mle, previous.head_to_head, previous.held_out_mle
    # only the columns each table needs: a boolean filter copies every column it keeps
    points = [f"{task}_points" for task in TASK_NAMES]
    track = rows["track"].to_numpy()
    is_pvp = track == "pvp"
    pvp = rows if is_pvp.all() else rows.loc[is_pvp, ["player", "policy_id", "revision", "match_id", "achievement", *points]]
    pvp_players = pvp.groupby("player").agg(
        policy_id=("policy_id", "first"),
        revision=("revision", "first"),
        matches=("match_id", "nunique"),
        achievement=("achievement", "mean"),
        **{task: (f"{task}_points", "mean") for task in TASK_NAMES},
    )
    pve = rows.loc[(track == "pve") & ~is_builtin_row(rows), ["player", "stage", "match_id", "rank", "achievement", *points]]
    pve_stages = pve.assign(won=pve["rank"] == 1).groupby(["player", "stage"]).agg(
        matches=("match_id", "nunique"),
        top1=("won", "mean"),
        mean=("achievement", "mean"),
        **{task: (f"{task}_points", "mean") for task in TASK_NAMES},
    )
    match_summary = summarize_matches(rows)
    return Standings(
        pvp_players=pvp_players,
        pve_stages=pve_stages,
        match_summary=match_summary,
        policy_matches={p: g.to_numpy() for p, g in rows.groupby("policy_id")["match_id"]} if len(rows) else {},
        teams=rows,
        trueskill=ts,
        elo=elo,
        mle=mle,
        head_to_head=pairs,
        matches=len(match_summary),  # one summary row per match id
        pvp_matches=int(pvp["match_id"].nunique()) if len(pvp) else 0,
        trajectory=trajectory,
        held_out_mle=held_out_mle,
        overfitting=overfitting(pve_stages, held_out_mle),
        rated_results=len(history),
        source=source or Source(),
    )
