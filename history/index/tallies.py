"""The per-policy tables (PvP players, PvE stages) and the sums and counts behind them.

The tables hold means; the index keeps the sums and counts (`Tallies`) instead, so that
the tallies of new rows merge into the old ones (`merge_tallies`) and the means are derived
again: a new match is read alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from arena.schema import TASK_NAMES
from history.index.rows import POINT_COLUMNS, codes, first_rows, is_builtin_row


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


def tallies_of(rows: pd.DataFrame) -> Tallies:
    """The tallies of the rows (with their players): PvP per player, PvE per submission
    player and stage."""
    track = rows["track"].to_numpy()
    pvp = _tally(rows, track == "pvp", ["player"])
    pve = _tally(rows, (track == "pve") & ~is_builtin_row(rows), ["player", "stage"])
    return Tallies(pvp, pve)


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
        code, values = codes(rows[key], sort=True)
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
    distinct = pd.unique(pick(codes(rows["match_id"])[0]).astype(np.int64) * k + group_code)
    first = first_rows(group_code)
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


def merge_tallies(old: Tallies | None, new: Tallies) -> Tallies:
    """The tallies of two batches of whole matches as one."""
    return new if old is None else Tallies(_merge_tally(old.pvp, new.pvp), _merge_tally(old.pve, new.pve))


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


def pvp_players(tally: pd.DataFrame) -> pd.DataFrame:
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


def pve_stages(tally: pd.DataFrame) -> pd.DataFrame:
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
