"""The matches themselves: one summary row per match (the Matches tab), and per policy the
ids of the matches it played.

Both are built per batch of whole matches and merged (`merge_summaries`, the lists
concatenated), so that the index folds the history one shard at a time and appends only
the new matches.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from history.index.rows import codes, first_rows

_SUMMARY_COLUMNS = ["Match", "Started", "Track", "Stage", "Map", "Ticks", "Winner", "Top score", "Teams"]


def summarize_matches(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per match, newest first: what the Matches tab lists (ties in start time in
    order of first appearance, so that summaries of later rows append: `update`)."""
    if rows.empty:
        return pd.DataFrame(columns=_SUMMARY_COLUMNS)
    # ALGO LOGIC: one integer code per match (in order of first appearance), every column
    # read at each match's first row, the top score and team count as bincounts
    id_code, id_values = codes(rows["match_id"])
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
        first = first_rows(code)
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
    won_codes, policy_ids = won["code"].to_numpy(), won["policy_id"].to_numpy()
    winner = np.full(k, np.nan, dtype=object)
    winner[won_codes[~shared]] = policy_ids[~shared]
    if shared.any():
        joined: dict[int, list[str]] = {}
        for match, policy in zip(won_codes[shared].tolist(), policy_ids[shared].tolist()):
            joined.setdefault(match, []).append(policy)
        for match, policies in joined.items():
            winner[match] = ", ".join(policies)
    meta["Winner"] = winner
    meta = meta.iloc[np.argsort(-_sort_rank(meta["Started"].to_numpy()), kind="stable")]
    return meta[_SUMMARY_COLUMNS].reset_index(drop=True)


def _sort_rank(values: np.ndarray) -> np.ndarray:
    """Dense ranks of `values` (ascending), to sort strings descending stably."""
    return pd.factorize(values, sort=True)[0].astype(np.int64)


def merge_summaries(parts: list[pd.DataFrame]) -> pd.DataFrame:
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


def policy_matches(rows: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per policy id, the ids of the matches it played (in row order)."""
    if not len(rows):
        return {}
    code, policies = codes(rows["policy_id"], sort=True)
    valid = code >= 0
    match_ids = rows["match_id"].to_numpy()[valid]
    code = code[valid]
    order = np.argsort(code, kind="stable")
    bounds = np.searchsorted(code[order], np.arange(len(policies) + 1))
    ordered = match_ids[order]
    return {p: ordered[bounds[i]:bounds[i + 1]] for i, p in enumerate(policies) if bounds[i + 1] > bounds[i]}
