"""Everything the leaderboard shows, computed from the history table alone.

`compute()` takes the history's team rows (one per team per match, as stored: one frame,
or the shards' frames one at a time, folded so that a million matches are recomputed within
4 GB), and optionally the previous `Standings`, and returns new `Standings`: ratings in the
three views, per-policy aggregates, PvE figures, and the head to head of every PvP pair with
its Nash average. It is pure: the same rows give the same standings. TrueSkill and Elo are carried forward from the previous
standings when only new matches were added (they are online, applied in order), and
recomputed when the history changed otherwise. The Plackett-Luce fit with its bootstrap
is the expensive part; `refresh_mle=False` reuses the previous fit (and the previous head
to head, also a whole-history computation).

The pages (`leaderboard.pages`) only filter and format these frames, so they stay fast
however long the history grows (`bench/tables_scale.py`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace

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
from arena.schema import BUILTIN_PREFIX, TASK_NAMES, TEAM_COLUMNS
from arena.scoring import competition_ranks
from leaderboard.team_rows import TeamRows

POINT_COLUMNS = [f"{task}_points" for task in TASK_NAMES]

#: The history's columns the standings keep per team row (`Standings.teams`, with `player`):
#: what the pages, the analytics and the luck report read. The others (seed, versions,
#: durations, task values, faults, ...) stay in the dataset: 16 million rows of the twenty
#: kept take half the memory of all of them. A whole match is `HistoryReader.results()`.
KEPT_COLUMNS = ("match_id", "started_at", "track", "stage", "map_id", "horizon", "held_out", "slot", "policy_id",
                "revision", "achievement", "rank", *POINT_COLUMNS, "spawn_side", "spawn_index", "player")

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
    """What the ratings rated: PvP matches played on their own plus complete duplicate
    sets (each one result); a set not yet complete is not rated."""
    source: Source = field(default_factory=Source)
    """The shards the rows came from."""
    mle_source: Source = field(default_factory=Source)
    """The shards the whole-history columns (Plackett-Luce fit and bootstrap, head to head,
    held-out fit) were computed from: `source`, or earlier shards between two of their
    refreshes (`leaderboard.refresher`, `mle_every_s`)."""
    tallies: Tallies | None = None
    """The sums and counts behind `pvp_players` and `pve_stages` (what `update` merges)."""
    rated: RatedTable = field(default_factory=RatedTable.empty)
    """The rows' rated results (`rated_table`), kept so that the whole-history fits rerun
    without reading every row again; extended by `update`."""
    held_out_rated: RatedTable = field(default_factory=RatedTable.empty)
    """The rated results of the matches on held-out maps."""


def narrow(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows with every string column dictionary-encoded (pandas categoricals: a small
    integer code a row, each distinct string once), the same values: 16 million rows of
    ten string columns take 1.3 GB less. `compute` and `update` take either form."""
    rows = rows.copy(deep=False)
    for column in rows.columns:
        if rows[column].dtype == object:
            rows[column] = rows[column].astype("category")
    return rows


def with_players(rows: pd.DataFrame) -> pd.DataFrame:
    """Add the rated entity of each row: a built-in by name, a submission by repo@revision."""
    rows = rows.copy(deep=False)  # a new column, the caller's frame untouched, no data copied
    if rows.empty:
        rows["player"] = pd.Series(dtype=object)
        return rows
    # per distinct (policy, revision): one string each, shared by its rows (1.6 million rows,
    # a few thousand strings)
    # a categorical column factorises from its codes (no array of strings made)
    policy_code, policies = pd.factorize(_values(rows["policy_id"]), use_na_sentinel=False)
    revision_code, revisions = pd.factorize(_values(rows["revision"]), use_na_sentinel=False)
    policies, revisions = np.asarray(policies, dtype=object), np.asarray(revisions, dtype=object)
    width = max(len(revisions), 1)
    pair_code, pairs = pd.factorize(policy_code.astype(np.int64) * width + revision_code)

    def name(policy, revision):
        if isinstance(policy, str) and policy.startswith(BUILTIN_PREFIX):
            return policy
        if not (isinstance(policy, str) and isinstance(revision, str)):
            return np.nan  # as the string sum of a missing value was
        return f"{policy}@{revision}"

    names = np.array([name(policies[k // width], revisions[k % width]) for k in pairs] + [None], dtype=object)[:-1]
    if isinstance(rows["policy_id"].dtype, pd.CategoricalDtype):  # narrow rows: a narrow player column too
        missing = pd.isna(names)
        distinct, code = np.unique(names[~missing].astype(object), return_inverse=True) if (~missing).any() else ([], [])
        codes = np.full(len(names), -1, dtype=np.int64)
        codes[~missing] = code
        rows["player"] = pd.Categorical.from_codes(codes[pair_code], categories=pd.Index(distinct, dtype=object))
    else:
        rows["player"] = names[pair_code]
    return rows


def _values(column: pd.Series):
    """A column's values for `pd.factorize`: the categorical itself, else a numpy array."""
    return column.array if isinstance(column.dtype, pd.CategoricalDtype) else column.to_numpy(dtype=object)


def _codes(column: pd.Series, *, sort: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """A column's integer codes (-1 where missing) and its distinct values, in sorted order
    if `sort` (as `pd.factorize` gives them). A categorical answers from its own codes,
    renumbered if its categories are not sorted: no array of its strings is made, which at
    16 million rows is 128 MB a column and its hash table."""
    if not isinstance(column.dtype, pd.CategoricalDtype):
        return pd.factorize(column.to_numpy(), sort=sort)
    codes = column.cat.codes.to_numpy()
    values = np.asarray(column.cat.categories, dtype=object)
    if sort and len(values) and not column.cat.categories.is_monotonic_increasing:
        order = np.argsort(values, kind="stable")
        rank = np.empty(len(values) + 1, dtype=np.int64)
        rank[order], rank[-1] = np.arange(len(values)), -1  # code -1 (missing) stays -1
        codes, values = rank[codes], values[order]
    return codes, values


def is_builtin_row(rows: pd.DataFrame) -> np.ndarray:
    """Per row, whether its policy is a built-in (computed once per distinct policy)."""
    code, policies = pd.factorize(_values(rows["policy_id"]))
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
    in_set = _in_sets(rows)
    return RatedTable.concat([_singles_table(rows, in_set), _sets_table(rows[in_set])], sort=True)


def _in_sets(rows: pd.DataFrame) -> np.ndarray:
    """Per row, whether it is a PvP row of a duplicate set (rated as one result per set)."""
    pvp = rows["track"].to_numpy() == "pvp"
    if "set_id" not in rows or not pvp.any():
        return np.zeros(len(rows), dtype=bool)
    set_ids = rows["set_id"].to_numpy(dtype=object)
    return pvp & pd.notna(set_ids) & (set_ids != "")


def _sets_table(rows: pd.DataFrame) -> RatedTable:
    """The complete duplicate sets among `rows` (PvP rows of sets) as rated results."""
    if not len(rows):
        return RatedTable.empty()
    columns = [c for c in ("track", "started_at", "match_id", "slot", "player", "achievement", "set_id", "set_size") if c in rows]
    sets = pvp_outcomes(rows[columns])
    return RatedTable.of(sets) if sets else RatedTable.empty()


def _singles_table(rows: pd.DataFrame, in_set: np.ndarray) -> RatedTable:
    """The PvP matches of `rows` played on their own (not in a duplicate set: `in_set`
    false), as rated results in rating order."""
    keep = (rows["track"].to_numpy() == "pvp") & ~in_set
    if not keep.any():
        return RatedTable.empty()
    everything = bool(keep.all())  # the usual case: read the columns in place, copy nothing

    def pick(values: np.ndarray) -> np.ndarray:
        return values if everything else values[keep]

    # ALGO LOGIC: sort by (start, match id, slot) through sorted codes, then cut at each new key
    start_code, start_values = _codes(rows["started_at"], sort=True)
    id_code, id_values = _codes(rows["match_id"], sort=True)
    start_code, id_code = pick(start_code), pick(id_code)
    order = np.lexsort((pick(rows["slot"].to_numpy()), id_code, start_code))
    start_code, id_code = start_code[order], id_code[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (start_code[1:] != start_code[:-1]) | (id_code[1:] != id_code[:-1])
    first = np.nonzero(new)[0]
    group = np.cumsum(new) - 1
    widths = np.diff(np.append(first, len(order))).astype(np.int64)
    position = np.arange(len(order)) - first[group]
    player_code, names = _codes(rows["player"], sort=True)
    player_code = pick(player_code)
    # only the players of these results, still in sorted order (a PvE-only player has none)
    present = np.bincount(player_code[player_code >= 0], minlength=len(names)) > 0
    renumber = np.append(np.cumsum(present) - 1, -1)
    player_code, names = renumber[player_code], names[present]
    seats = np.full((len(first), int(widths.max())), -1, dtype=np.int64)
    scores = np.zeros(seats.shape)
    seats[group, position] = player_code[order]
    scores[group, position] = pick(rows["achievement"].to_numpy())[order]
    return RatedTable(tuple(names), np.asarray(start_values, dtype=object)[start_code[first]],
                      np.asarray(id_values, dtype=object)[id_code[first]], seats, scores, widths)


def held_out_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of matches played on held-out maps (none in a history from before them)."""
    return rows[_held_out_mask(rows)]


def _held_out_mask(rows: pd.DataFrame) -> np.ndarray:
    """Per row, whether its match was played on a held-out map."""
    if "held_out" not in rows:
        return np.zeros(len(rows), dtype=bool)
    return rows["held_out"].fillna(False).astype(bool).to_numpy()


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


class HistoryChangedError(ValueError):
    """The rows given to `update` are not whole new matches after the previous standings'
    (a match already counted, one started before the last rated one, or a duplicate set):
    compute the standings from all rows with `compute` instead."""


@dataclass(frozen=True)
class Tallies:
    """Sums and counts behind the per-policy tables, kept so that new rows merge into them
    (means are derived: sum / rows). Whole matches only: a match's rows are all in one
    batch, so per-batch distinct match counts add up."""

    pvp: pd.DataFrame
    """Per player: policy_id, revision (of its first row), matches, rows, achievement and
    per-task point sums (PvP rows)."""
    pve: pd.DataFrame
    """Per (player, stage): matches, rows, won, achievement and point sums (PvE rows of
    submissions)."""


_SUMMARY_COLUMNS = ["Match", "Started", "Track", "Stage", "Map", "Ticks", "Winner", "Top score", "Teams"]


def _first_rows(codes: np.ndarray) -> np.ndarray:
    """Per code 0..K-1 (codes numbered in order of first appearance, as `pd.factorize`
    numbers them), the position of its first row."""
    return np.flatnonzero(~pd.Series(codes).duplicated().to_numpy())


def _tally(rows: pd.DataFrame, keep: np.ndarray, keys: list[str]) -> pd.DataFrame:
    """Sums per group of `keys` over the rows where `keep`, in whole-array steps on integer
    codes (no grouping by strings): matches (distinct match ids), rows, won (rank 1),
    achievement and point sums, and the policy_id and revision of each group's first row."""
    names = ["policy_id", "revision", "matches", "rows", "won", "achievement", *POINT_COLUMNS]
    index = np.flatnonzero(keep)
    if not len(index):
        return _empty_tally(names, keys)
    everything = len(index) == len(rows)  # the usual case in a PvP-only history: nothing copied

    def pick(values: np.ndarray) -> np.ndarray:
        return values if everything else values[index]

    columns: list[np.ndarray] = []
    levels: list[np.ndarray] = []
    for key in keys:
        code, values = _codes(rows[key], sort=True)
        columns.append(pick(code))
        levels.append(np.asarray(values, dtype=object) if key == "player" else np.asarray(values))
    valid = np.all([c >= 0 for c in columns], axis=0) if columns else np.zeros(0, bool)
    if not valid.any():
        return _empty_tally(names, keys)
    if not valid.all():
        index, everything = index[valid], False
        columns = [c[valid] for c in columns]
    group = columns[0].astype(np.int64)
    for code, values in zip(columns[1:], levels[1:]):
        group = group * len(values) + code
    group_code, group_values = pd.factorize(group, sort=True)
    del group
    k = len(group_values)
    distinct = pd.unique(pick(_codes(rows["match_id"])[0]).astype(np.int64) * k + group_code)
    first = _first_rows(group_code)
    first = first[np.argsort(group_code[first])]  # per group code (sorted keys): its first row
    data: dict[str, np.ndarray] = {
        "policy_id": rows["policy_id"].iloc[index[first]].to_numpy(),
        "revision": rows["revision"].iloc[index[first]].to_numpy(),
        "matches": np.bincount(distinct % k, minlength=k).astype(np.int64),
        "rows": np.bincount(group_code, minlength=k).astype(np.int64),
        "won": np.bincount(group_code, weights=pick(rows["rank"].to_numpy()) == 1, minlength=k),
    }
    for column in ["achievement", *POINT_COLUMNS]:
        data[column] = np.bincount(group_code, weights=pick(rows[column].to_numpy(dtype=np.float64)), minlength=k)
    key_values = [values[c[first]] for c, values in zip(columns, levels)]
    frame = pd.DataFrame(data)
    frame.index = pd.MultiIndex.from_arrays(key_values, names=keys) if len(keys) > 1 else pd.Index(key_values[0], name=keys[0])
    return frame


def _empty_tally(names: list[str], keys: list[str]) -> pd.DataFrame:
    frame = pd.DataFrame(columns=names)
    frame.index = pd.MultiIndex.from_arrays([[] for _ in keys], names=keys) if len(keys) > 1 else pd.Index([], name=keys[0], dtype=object)
    return frame


def _merge_tally(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """Two batches' tallies as one: sums and counts added, the first row's policy and revision kept."""
    if old.empty:
        return new
    if new.empty:
        return old
    both = pd.concat([old, new])
    sums = both.drop(columns=["policy_id", "revision"]).groupby(level=list(range(both.index.nlevels))).sum()
    first = both[["policy_id", "revision"]][~both.index.duplicated(keep="first")]
    merged = first.join(sums)
    merged.index.names = old.index.names
    return merged.sort_index()


def _pvp_players(tally: pd.DataFrame) -> pd.DataFrame:
    """Per player: policy id, revision, PvP matches, mean Achievement and per-task points."""
    if tally.empty:
        return pd.DataFrame(columns=["policy_id", "revision", "matches", "achievement", *TASK_NAMES],
                            index=pd.Index([], name="player"))
    rows = tally["rows"].to_numpy(dtype=np.float64)
    frame = pd.DataFrame({"policy_id": tally["policy_id"], "revision": tally["revision"],
                          "matches": tally["matches"].astype(np.int64),
                          "achievement": tally["achievement"].to_numpy(dtype=np.float64) / rows,
                          **{task: tally[f"{task}_points"].to_numpy(dtype=np.float64) / rows for task in TASK_NAMES}},
                         index=tally.index)
    return frame


def _pve_stages(tally: pd.DataFrame) -> pd.DataFrame:
    """Per (submission player, PvE stage): matches, Top1Ratio, mean Achievement, task points."""
    columns = ["matches", "top1", "mean", *TASK_NAMES]
    if tally.empty:
        return pd.DataFrame(columns=columns, index=pd.MultiIndex.from_arrays([[], []], names=["player", "stage"]))
    rows = tally["rows"].to_numpy(dtype=np.float64)
    return pd.DataFrame({"matches": tally["matches"].astype(np.int64),
                         "top1": tally["won"].to_numpy(dtype=np.float64) / rows,
                         "mean": tally["achievement"].to_numpy(dtype=np.float64) / rows,
                         **{task: tally[f"{task}_points"].to_numpy(dtype=np.float64) / rows for task in TASK_NAMES}},
                        index=tally.index)


def summarize_matches(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per match, newest first: what the Matches tab lists (ties in start time in
    order of first appearance, so that summaries of later rows append: `update`)."""
    if rows.empty:
        return pd.DataFrame(columns=_SUMMARY_COLUMNS)
    # ALGO LOGIC: one integer code per match (in order of first appearance), every column
    # read at each match's first row, the top score and team count as bincounts
    id_code, id_values = _codes(rows["match_id"])
    starts = np.ones(len(id_code), dtype=bool)
    starts[1:] = id_code[1:] != id_code[:-1]
    runs = np.flatnonzero(starts)
    achievement = rows["achievement"].to_numpy()
    if len(runs) == len(pd.unique(id_code[runs])):
        # each match's rows together, as the store writes them: a match is a run of rows
        code, seen, first = np.cumsum(starts) - 1, id_code[runs], runs
        top = np.maximum.reduceat(achievement, first)
    else:
        code, seen = pd.factorize(id_code)  # renumbered in order of first appearance
        first = _first_rows(code)
        top = pd.Series(achievement).groupby(code).max().to_numpy()
    match_ids = np.asarray(id_values, dtype=object)[seen]
    match_ids[seen < 0] = np.nan  # a missing id: one match of its own, as factorize counted it
    k = len(match_ids)
    slot = rows["slot"]
    teams = np.bincount(code[slot.notna().to_numpy()], minlength=k).astype(np.int64)
    meta = pd.DataFrame({
        "Match": np.asarray(match_ids, dtype=object),
        "Started": rows["started_at"].iloc[first].to_numpy(),
        "Track": rows["track"].iloc[first].to_numpy(),
        "Stage": rows["stage"].iloc[first].to_numpy(),
        "Map": rows["map_id"].iloc[first].to_numpy(),
        "Ticks": rows["ticks"].iloc[first].to_numpy(),
        "Top score": top,
        "Teams": teams,
    })
    winning = rows["rank"].to_numpy() == 1
    won = pd.DataFrame({"code": code[winning], "policy_id": rows["policy_id"][winning].to_numpy()}).drop_duplicates()
    # most matches have one winner: taken as is; ties joined, in row order
    shared = won["code"].duplicated(keep=False).to_numpy()
    codes, policy_ids = won["code"].to_numpy(), won["policy_id"].to_numpy()
    winner = np.full(k, np.nan, dtype=object)
    winner[codes[~shared]] = policy_ids[~shared]
    if shared.any():
        joined: dict[int, list[str]] = {}
        for match, policy in zip(codes[shared].tolist(), policy_ids[shared].tolist()):
            joined.setdefault(match, []).append(policy)
        for match, policies in joined.items():
            winner[match] = ", ".join(policies)
    meta["Winner"] = winner
    meta = meta.iloc[np.argsort(-_sort_rank(meta["Started"].to_numpy()), kind="stable")]
    return meta[_SUMMARY_COLUMNS].reset_index(drop=True)


def _sort_rank(values: np.ndarray) -> np.ndarray:
    """Dense ranks of `values` (ascending), to sort strings descending stably."""
    return pd.factorize(values, sort=True)[0].astype(np.int64)


def _merge_summaries(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """The summary of the rows of every part's matches, from the parts' summaries (each
    newest first, ties in start time in order of first appearance), given in the order of
    their rows: as `summarize_matches` of all the rows would give it."""
    parts = [p for p in parts if len(p)]
    if len(parts) <= 1:
        return parts[0] if parts else pd.DataFrame(columns=_SUMMARY_COLUMNS)
    edges = [(a["Started"].iloc[0], b["Started"].iloc[-1]) for a, b in zip(parts, parts[1:])]  # (a missing start sorts last)
    if all(isinstance(newest, str) and isinstance(oldest, str) and oldest > newest for newest, oldest in edges):
        # the usual case: every part's matches started after the newest of the part before
        return pd.concat(parts[::-1], ignore_index=True)
    # each part newest first already: the stable sort of the parts in row order keeps each
    # part's order among equal start times, as one sort of all the rows would
    both = pd.concat(parts, ignore_index=True)
    order = np.argsort(-_sort_rank(both["Started"].to_numpy()), kind="stable")
    return both.iloc[order].reset_index(drop=True)


def _policy_matches(rows: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per policy id, the ids of the matches it played (in row order)."""
    if not len(rows):
        return {}
    code, policies = _codes(rows["policy_id"], sort=True)
    valid = code >= 0
    match_ids = rows["match_id"].to_numpy()[valid]
    code = code[valid]
    order = np.argsort(code, kind="stable")
    bounds = np.searchsorted(code[order], np.arange(len(policies) + 1))
    ordered = match_ids[order]
    return {p: ordered[bounds[i]:bounds[i + 1]] for i, p in enumerate(policies) if bounds[i + 1] > bounds[i]}


def _tallies(rows: pd.DataFrame) -> Tallies:
    track = rows["track"].to_numpy()
    pvp = _tally(rows, track == "pvp", ["player"])
    pve = _tally(rows, (track == "pve") & ~is_builtin_row(rows), ["player", "stage"])
    return Tallies(pvp, pve)


@dataclass(frozen=True)
class _Gathered:
    """What the standings take from the rows of whole matches, batch by batch."""

    teams: TeamRows
    rated: RatedTable
    held_out: RatedTable
    tallies: Tallies
    summary: pd.DataFrame
    policy_matches: dict[str, np.ndarray]


def _gather(batches: Iterable[pd.DataFrame], *, teams: TeamRows | None = None) -> _Gathered:
    """Fold batches of rows, each of whole matches, into what the standings keep: per batch
    its rated results, tallies, match summaries and per-policy match lists, merged (each
    equal to its computation over all the rows, `tests/test_standings_update.py`), and the
    rows appended to `teams` in chunks. A duplicate set may span batches: its rows wait, and
    are rated once every batch is read.

    Raises:
        `ValueError`: a match's rows are in more than one batch.
    """
    teams = teams if teams is not None else TeamRows()
    singles: list[RatedTable] = []
    held_singles: list[RatedTable] = []
    in_sets: list[pd.DataFrame] = []
    summaries: list[pd.DataFrame] = []
    tallies: Tallies | None = None
    matches: dict[str, list[np.ndarray]] = {}
    for batch in _with_rows(batches):
        rows = with_players(batch)
        in_set = _in_sets(rows)
        singles.append(_singles_table(rows, in_set))
        held = _held_out_mask(rows)
        if held.any():
            held_singles.append(_singles_table(rows[held], in_set[held]))
        if in_set.any():
            in_sets.append(rows[in_set])
        tallies = _merge_tallies(tallies, _tallies(rows))
        summaries.append(summarize_matches(rows))
        for policy, ids in _policy_matches(rows).items():
            matches.setdefault(policy, []).append(ids)
        kept = rows[[c for c in KEPT_COLUMNS if c in rows]]
        teams = teams.append(kept) if len(kept) or teams.chunks else TeamRows((kept,))  # (nothing: still the columns)
    summary = _merge_summaries(summaries)
    if len(summaries) > 1 and not summary["Match"].is_unique:
        repeated = summary["Match"][summary["Match"].duplicated()].iloc[0]
        raise ValueError(f"Match {repeated} has rows in more than one batch: give each match's rows in one batch "
                         "(a shard holds whole matches: `HistoryReader.shard_batches`).")
    sets = pd.concat(in_sets, ignore_index=True) if in_sets else None
    rated = RatedTable.concat([*singles, _sets_table(sets)] if sets is not None else singles, sort=True)
    held_out = RatedTable.concat([*held_singles, _sets_table(held_out_rows(sets))] if sets is not None else held_singles,
                                 sort=True)
    if tallies is None:  # `_with_rows` yields at least one frame
        raise AssertionError("no batch was gathered")
    return _Gathered(teams, rated, held_out, tallies, summary,
                     {p: ids[0] if len(ids) == 1 else np.concatenate(ids) for p, ids in matches.items()})


def _with_rows(batches: Iterable[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """The batches that hold rows; if none does, one empty frame (the first batch, else one
    with the history's columns), so that the standings of no match still have columns."""
    empty: pd.DataFrame | None = None
    found = False
    for batch in batches:
        if len(batch):
            found = True
            yield batch
        elif empty is None:
            empty = batch
    if not found:
        yield empty if empty is not None and len(empty.columns) else _no_rows()


def _no_rows() -> pd.DataFrame:
    """No rows, with the history table's columns (`arena.schema.TEAM_COLUMNS`) and dtypes."""
    dtypes = {"string": object, "bool_": bool}
    return pd.DataFrame({name: np.empty(0, dtype=dtypes.get(kind, kind)) for name, kind in TEAM_COLUMNS})


def _merge_tallies(old: Tallies | None, new: Tallies) -> Tallies:
    """The tallies of two batches of whole matches as one."""
    return new if old is None else Tallies(_merge_tally(old.pvp, new.pvp), _merge_tally(old.pve, new.pve))


def frames(tables: Iterable) -> Iterator[pd.DataFrame]:
    """Arrow tables of history rows (`HistoryReader.shard_batches`) as the frames `compute`
    folds, their strings dictionary-encoded (`narrow`): encoded in Arrow, so that no Python
    string is made per row, only one per distinct value."""
    for table in tables:
        for i, column in enumerate(table.schema):
            if column.type == "string":
                table = table.set_column(i, column.name, table.column(i).dictionary_encode())
        yield narrow(table.to_pandas())


def compute(
    rows: pd.DataFrame | Iterable[pd.DataFrame],
    *,
    previous: Standings | None = None,
    refresh_mle: bool = True,
    bootstrap: int = 200,
    source: Source | None = None,
) -> Standings:
    """Standings from the history rows (see the module docstring): one frame, or frames of
    whole matches one after the other, such as the dataset's shards read one at a time
    (`frames(store.shard_batches(names))`), so that no frame of every row is ever built; the
    same standings either way. `source` says which shards the rows are (the PvP tab names
    them).

    Raises:
        `ValueError`: a match's rows are in more than one of the frames.
    """
    gathered = _gather([rows] if isinstance(rows, pd.DataFrame) else rows)
    history = gathered.rated
    fresh = previous is None or recomputed(previous.trueskill, history)
    trajectory: dict[str, deque] = ({} if fresh or previous is None else
                                    {p: deque(t, maxlen=TRAJECTORY_POINTS) for p, t in previous.trajectory.items()})
    # TrueSkill carried forward (only the matches after the previous standings' last one), or
    # recomputed; each player's latest ratings come back as a trail, not one call per rating
    start = TrueSkillState() if fresh or previous is None else previous.trueskill
    todo = history if fresh else history.take(history.after(start.last_key))
    ts = _extend_trajectory(todo, start, trajectory)
    elo = elo_ratings(history, state=previous.elo if previous is not None else None)
    held_out = gathered.held_out
    if refresh_mle or previous is None:
        mle, pairs, held_out_mle = _whole_history(history, held_out, bootstrap=bootstrap,
                                                  start=previous.mle if previous is not None else None)
        mle_source = source or Source()
    else:
        mle, pairs, held_out_mle = previous.mle, previous.head_to_head, previous.held_out_mle
        mle_source = previous.mle_source
    return _standings(gathered.teams, gathered.tallies, gathered.summary, gathered.policy_matches, ts=ts, elo=elo,
                      mle=mle, pairs=pairs, held_out_mle=held_out_mle, trajectory=trajectory, rated=history,
                      held_out_rated=held_out, source=source, mle_source=mle_source)


def _extend_trajectory(todo: RatedTable, start: TrueSkillState, trajectory: dict[str, deque]) -> TrueSkillState:
    """TrueSkill over `todo` from `start`; each player's new ratings appended to `trajectory`."""
    ts, trail = trueskill_trail(todo, state=start, keep=TRAJECTORY_POINTS)
    started = todo.started
    for player, points in trail.items():
        rows_, mus, sigmas = zip(*points)
        trajectory.setdefault(player, deque(maxlen=TRAJECTORY_POINTS)).extend(
            zip(started[list(rows_)].tolist(), mus, sigmas))
    return ts


def _whole_history(history: RatedTable, held_out: RatedTable, *, bootstrap: int,
                   start: Mapping[str, MLERating] | None = None) -> tuple[Mapping[str, MLERating], HeadToHead, Mapping[str, MLERating]]:
    """The whole-history computations: the Plackett-Luce fit with its bootstrap, the head to
    head, and the held-out fit."""
    warm = {p: r.rating for p, r in start.items()} if start else None
    mle = plackett_luce(history, bootstrap=bootstrap, start=warm) if len(history) else {}
    pairs = head_to_head(history)
    held_out_mle = plackett_luce(held_out, bootstrap=0) if len(held_out) else {}
    return mle, pairs, held_out_mle


def _standings(teams: TeamRows, tallies: Tallies, match_summary, policy_matches, *, ts, elo, mle, pairs, held_out_mle,
               trajectory, rated: RatedTable, held_out_rated: RatedTable, source, mle_source) -> Standings:
    pve_stages = _pve_stages(tallies.pve)
    return Standings(
        pvp_players=_pvp_players(tallies.pvp),
        pve_stages=pve_stages,
        match_summary=match_summary,
        policy_matches=policy_matches,
        teams=teams,
        trueskill=ts,
        elo=elo,
        mle=mle,
        head_to_head=pairs,
        matches=len(match_summary),  # one summary row per match id
        pvp_matches=int((match_summary["Track"] == "pvp").sum()) if len(match_summary) else 0,
        trajectory=trajectory,
        held_out_mle=held_out_mle,
        overfitting=overfitting(pve_stages, held_out_mle),
        rated_results=len(rated),
        source=source or Source(),
        mle_source=mle_source,
        tallies=tallies,
        rated=rated,
        held_out_rated=held_out_rated,
    )


def update(
    previous: Standings,
    new_rows: pd.DataFrame | Iterable[pd.DataFrame],
    *,
    refresh_mle: bool = False,
    bootstrap: int = 200,
    source: Source | None = None,
) -> Standings:
    """The standings after `new_rows` (whole matches after every match of `previous`: one
    frame, or frames of whole matches as `compute` takes them), from the new rows alone:
    TrueSkill and Elo carried forward, per-policy sums and counts merged (means derived),
    match summaries and per-policy match lists appended. Equal to `compute` on all the rows
    (tests/test_standings_update.py).

    The Plackett-Luce fit, its bootstrap, the head to head and the held-out fit keep the
    previous standings' unless `refresh_mle`: they are whole-history computations (the
    refresher reruns them at most every `mle_every_s`).

    Raises:
        `HistoryChangedError`: the new rows hold a match already counted, one started at or
            before the last rated match, or a duplicate set (a set may span batches): call
            `compute` with all the rows.
    """
    batches = [new_rows] if isinstance(new_rows, pd.DataFrame) else list(new_rows)
    if previous.tallies is None:
        raise HistoryChangedError("The previous standings keep no tallies: recompute with compute().")
    source = source or previous.source
    if not any(len(b) for b in batches):
        if not refresh_mle:
            return replace(previous, source=source)
        mle, pairs, held_out_mle = _whole_history(previous.rated, previous.held_out_rated, bootstrap=bootstrap,
                                                  start=previous.mle)
        return replace(previous, source=source, mle=mle, head_to_head=pairs, held_out_mle=held_out_mle,
                       overfitting=overfitting(previous.pve_stages, held_out_mle), mle_source=source)
    if any(_in_sets(b).any() for b in batches if len(b)):
        raise HistoryChangedError("New rows hold a duplicate set (it may span batches): recompute with compute().")
    try:
        new = _gather(batches, teams=previous.teams)
    except ValueError as exc:
        raise HistoryChangedError(f"{exc} Or recompute with compute().") from exc
    if len(previous.match_summary) and pd.Index(previous.match_summary["Match"]).isin(new.summary["Match"]).any():
        raise HistoryChangedError("New rows repeat a match already counted: recompute with compute().")
    history = new.rated
    if len(history) and not history.after(previous.trueskill.last_key).all():
        raise HistoryChangedError("New rows hold a match started before the last rated one: recompute with compute().")
    trajectory = {p: deque(t, maxlen=TRAJECTORY_POINTS) for p, t in previous.trajectory.items()}
    ts = _extend_trajectory(history, previous.trueskill, trajectory) if len(history) else previous.trueskill
    elo = elo_ratings(history, state=previous.elo, extends=True) if len(history) else previous.elo
    rated = RatedTable.concat([previous.rated, history])  # every new result after the last: the order kept
    held_out = RatedTable.concat([previous.held_out_rated, new.held_out])
    tallies = _merge_tallies(previous.tallies, new.tallies)
    policy_matches = dict(previous.policy_matches)
    for policy, ids in new.policy_matches.items():
        policy_matches[policy] = np.concatenate([policy_matches[policy], ids]) if policy in policy_matches else ids
    if refresh_mle:
        mle, pairs, held_out_mle = _whole_history(rated, held_out, bootstrap=bootstrap, start=previous.mle)
        mle_source = source
    else:
        mle, pairs, held_out_mle = previous.mle, previous.head_to_head, previous.held_out_mle
        mle_source = previous.mle_source
    return _standings(new.teams, tallies, _merge_summaries([previous.match_summary, new.summary]), policy_matches,
                      ts=ts, elo=elo, mle=mle, pairs=pairs, held_out_mle=held_out_mle, trajectory=trajectory,
                      rated=rated, held_out_rated=held_out, source=source, mle_source=mle_source)
