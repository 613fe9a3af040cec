"""One pass over batches of rows: what the standings take from the history's team rows.

Each batch of whole matches (a shard of the dataset, say) gives its rated results,
tallies, match summaries and per-policy match lists, merged with the batches before it,
and its rows appended to the kept team rows: so that a million matches are read within
4 GB, no frame of every row ever built (`compute`, `update`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from arena.ratings import RatedTable
from arena.schema import TEAM_COLUMNS
from leaderboard.standings.held_out import held_out_mask
from leaderboard.standings.matches import merge_summaries, policy_matches, summarize_matches
from leaderboard.standings.rated import rated_table
from leaderboard.standings.record import KEPT_COLUMNS, HistoryChangedError
from leaderboard.standings.rows import with_players
from leaderboard.standings.tallies import Tallies, merge_tallies, tallies_of
from leaderboard.team_rows import TeamRows


@dataclass(frozen=True)
class Gathered:
    """What the standings take from the rows of whole matches, batch by batch."""

    teams: TeamRows
    rated: RatedTable
    held_out: RatedTable
    tallies: Tallies
    summary: pd.DataFrame
    policy_matches: dict[str, np.ndarray]


def gather(batches: Iterable[pd.DataFrame], *, teams: TeamRows | None = None) -> Gathered:
    """Fold batches of rows, each of whole matches, into what the standings keep: per batch
    its rated results, tallies, match summaries and per-policy match lists, merged (each
    equal to its computation over all the rows, `tests/test_standings_update.py`), and the
    rows appended to `teams` in chunks.

    Raises:
        `ValueError`: a match's rows are in more than one batch.
    """
    teams = teams if teams is not None else TeamRows()
    rated: list[RatedTable] = []
    held_out: list[RatedTable] = []
    summaries: list[pd.DataFrame] = []
    tallies: Tallies | None = None
    matches: dict[str, list[np.ndarray]] = {}
    for batch in _with_rows(batches):
        rows = with_players(batch)
        rated.append(rated_table(rows))
        held = held_out_mask(rows)
        if held.any():
            held_out.append(rated_table(rows[held]))
        tallies = merge_tallies(tallies, tallies_of(rows))
        summaries.append(summarize_matches(rows))
        for policy, ids in policy_matches(rows).items():
            matches.setdefault(policy, []).append(ids)
        kept = rows[[c for c in KEPT_COLUMNS if c in rows]]
        teams = teams.append(kept) if len(kept) or teams.chunks else TeamRows((kept,))  # (nothing: still the columns)
    summary = merge_summaries(summaries)
    if len(summaries) > 1 and not summary["Match"].is_unique:
        repeated = summary["Match"][summary["Match"].duplicated()].iloc[0]
        raise HistoryChangedError(f"Match {repeated} has rows in more than one batch: give each match's rows in one batch "
                         "(a shard holds whole matches: `HistoryReader.shard_batches`).")
    if tallies is None:  # `_with_rows` yields at least one frame
        raise AssertionError("no batch was gathered")
    return Gathered(teams, RatedTable.concat(rated, sort=True), RatedTable.concat(held_out, sort=True), tallies, summary,
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
