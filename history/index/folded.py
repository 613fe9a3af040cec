"""The history's rows folded into what its readers take: the team rows, the rated results,
the tallies, the match summaries and each policy's matches (`Folded`).

Each batch of whole matches (a shard of the dataset, the write-ahead log's matches, the
rows given to `leaderboard.standings.compute`) is folded on its own and merged into what
was folded before, so that a million matches are read within 4 GB, no frame of every row
ever built. Pure: the same batches give the same `Folded`, whatever their split
(`tests/test_history_index.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from arena.errors import ArenaError
from arena.ratings import RatedTable
from arena.schema import TEAM_COLUMNS
from history.index import team_rows
from history.index.matches import merge_summaries, policy_matches, summarize_matches
from history.index.rated import held_out_mask, rated_table
from history.index.rows import POINT_COLUMNS, with_players
from history.index.tallies import Tallies, merge_tallies, tallies_of
from history.index.team_rows import TeamRows

#: The history's columns kept per team row (`Folded.teams`, with `player`): what the pages,
#: the analytics and the luck report read. The others (seed, versions, durations, task
#: values, faults, ...) stay in the dataset: 16 million rows of the twenty kept take half
#: the memory of all of them. A whole match is `HistoryReader.results()`.
KEPT_COLUMNS = ("match_id", "started_at", "track", "stage", "map_id", "horizon", "held_out", "slot", "policy_id",
                "revision", "achievement", "rank", *POINT_COLUMNS, "spawn_side", "spawn_index", "player")


class HistoryChangedError(ArenaError, ValueError):
    """Rows folded onto earlier ones are not whole new matches (a match already counted, or
    one split across batches): fold every row again instead."""


@dataclass(frozen=True)
class Folded:
    """The matches of some batches of the history's rows, as every reader takes them."""

    teams: TeamRows
    """The team rows, their `KEPT_COLUMNS` with a `player` column, in chunks."""
    rated: RatedTable
    """The rated PvP results, one per match, in rating order (start time, then match id)."""
    held_out: RatedTable
    """The rated results of the PvP matches on held-out maps."""
    tallies: Tallies
    """The sums and counts behind the per-policy tables."""
    summary: pd.DataFrame
    """One row per match, newest first (`history.index.matches`)."""
    policy_matches: Mapping[str, np.ndarray]
    """Per policy id, the ids of the matches it played (in row order)."""

    @property
    def matches(self) -> int:
        """Matches folded (every track)."""
        return len(self.summary)

    @property
    def pvp_matches(self) -> int:
        return int((self.summary["Track"] == "pvp").sum()) if len(self.summary) else 0

    @classmethod
    def empty(cls) -> Folded:
        return fold(())


def fold(batches: Iterable[pd.DataFrame], *, previous: Folded | None = None, checked: bool = True,
         on_rated: Callable[[RatedTable], None] | None = None) -> Folded:
    """Fold batches of rows, each of whole matches, onto `previous` (nothing if None): per
    batch its rated results, tallies, match summaries and per-policy match lists, merged
    (each equal to its computation over all the rows at once), and the rows of them all
    appended to the team rows in chunks (`TeamRows.extend`: each row copied once).

    Args:
        batches: frames of the history's team rows (plain, or `narrow`), each of whole matches.
        previous: what earlier batches folded into.
        checked: refuse a match whose rows are in two batches (or in `previous` too); a
            caller that already keeps each match once (`HistoryIndex`) skips the check.
        on_rated: called with each batch's rated results as soon as they are folded (a reader
            rates them meanwhile: `HistoryIndex.follow`).

    Raises:
        `HistoryChangedError`: with `checked`, a match's rows are in more than one batch.
    """
    teams = previous.teams if previous is not None else TeamRows()
    rated: list[RatedTable] = [previous.rated] if previous is not None else []
    held_out: list[RatedTable] = [previous.held_out] if previous is not None else []
    summaries: list[pd.DataFrame] = [previous.summary] if previous is not None else []
    tallies: Tallies | None = previous.tallies if previous is not None else None
    matches: dict[str, list[np.ndarray]] = {p: [ids] for p, ids in (previous.policy_matches if previous else {}).items()}
    kept: list[pd.DataFrame] = []
    for batch in _with_rows(batches, first=previous is None):
        rows = with_players(batch)
        batch_rated = rated_table(rows)
        if on_rated is not None:
            on_rated(batch_rated)
        rated.append(batch_rated)
        held = held_out_mask(rows)
        if held.any():
            held_out.append(rated_table(rows[held]))
        tallies = merge_tallies(tallies, tallies_of(rows))
        summaries.append(summarize_matches(rows))
        for policy, ids in policy_matches(rows).items():
            matches.setdefault(policy, []).append(ids)
        frame = rows[[c for c in KEPT_COLUMNS if c in rows]]
        if len(frame) and sum(len(k) for k in kept) + len(frame) > team_rows.MAX_CHUNK_ROWS:
            # a run's worth waiting: appended now, copied once, its parts let go (held to the
            # end, a million matches' rows were held twice as they were appended)
            teams, kept = teams.extend(kept), []
        kept.append(frame)
    teams = teams.extend(kept) if any(len(k) for k in kept) or teams.chunks else TeamRows(tuple(kept[:1]))  # (nothing: still the columns)
    summary = merge_summaries(summaries)
    if checked and len(summaries) > 1 and not summary["Match"].is_unique:
        repeated = summary["Match"][summary["Match"].duplicated()].iloc[0]
        raise HistoryChangedError(f"Match {repeated} has rows in more than one batch: give each match's rows in one batch "
                                  "(a shard holds whole matches).")
    if tallies is None:  # `_with_rows` yields at least one frame when there is nothing before
        raise AssertionError("no batch was folded")
    return Folded(teams, RatedTable.concat(rated, sort=True), RatedTable.concat(held_out, sort=True), tallies, summary,
                  {p: ids[0] if len(ids) == 1 else np.concatenate(ids) for p, ids in matches.items()})


def _with_rows(batches: Iterable[pd.DataFrame], *, first: bool) -> Iterator[pd.DataFrame]:
    """The batches that hold rows; if none does and nothing was folded before (`first`),
    one empty frame (the first batch, else one with the history's columns), so that a fold
    of no match still has columns."""
    empty: pd.DataFrame | None = None
    found = False
    for batch in batches:
        if len(batch):
            found = True
            yield batch
        elif empty is None:
            empty = batch
    if not found and first:
        yield empty if empty is not None and len(empty.columns) else _no_rows()


def _no_rows() -> pd.DataFrame:
    """No rows, with the history table's columns (`arena.schema.TEAM_COLUMNS`) and dtypes."""
    dtypes = {"string": object, "bool_": bool}
    return pd.DataFrame({name: np.empty(0, dtype=dtypes.get(kind, kind)) for name, kind in TEAM_COLUMNS})
