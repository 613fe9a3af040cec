"""The standings from the history's matches: the ratings of a `history.index.Folded`.

The matches are folded by the history index (rows, rated results, tallies, summaries);
this is what the leaderboard adds. TrueSkill and Elo are online: carried forward from the
previous standings when the new matches all come after the last one rated, recomputed
when one came earlier (matches end out of their start order). The Plackett-Luce fit with
its bootstrap, the head to head and the held-out fit are whole-history computations, the
expensive part: rerun only when asked (`refresh_mle`), else the previous standings' are kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TypeAlias

import pandas as pd

from arena.head_to_head import HeadToHead, head_to_head
from arena.ratings import MLERating, plackett_luce
from history.index import Folded, HistoryChangedError, fold, pve_stages, pvp_players
from leaderboard.standings.fits import PublishedFit, choose
from leaderboard.standings.held_out import overfitting
from leaderboard.standings.online import Online
from leaderboard.standings.record import Source, Standings

Rows: TypeAlias = "pd.DataFrame | Iterable[pd.DataFrame]"
"""The history's team rows: one frame, or frames of whole matches one after the other
(`history.index.fold` folds them)."""


def compute(
    history: Folded | Rows,
    *,
    previous: Standings | None = None,
    refresh_mle: bool = True,
    bootstrap: int = 200,
    source: Source | None = None,
    fits: Sequence[PublishedFit] = (),
    whole_history: bool = True,
    online: Online | None = None,
) -> Standings:
    """The standings of the history's matches: folded already (`HistoryIndex.refresh().folded`),
    or as rows, folded here. Pure: the same matches give the same standings.

    Args:
        history: the matches.
        previous: standings of fewer of these matches: TrueSkill, Elo and each player's
            trajectory carried forward from them when every new match comes after their
            last rated one; their whole-history columns kept unless `refresh_mle`.
        refresh_mle: fit Plackett-Luce with its bootstrap, the head to head and the held-out
            fit again (always without `previous`).
        bootstrap: the fit's bootstrap resamples.
        source: which matches these are (the PvP tab names them).
        fits: Plackett-Luce fits writers published (`leaderboard.standings.fits`): one of
            these results, or of some of these shards, is taken instead of fitting here (the
            head to head and the held-out fit are still computed), and `mle_source` names
            its shards.
        whole_history: False: without `previous` or a published fit, leave the whole-history
            columns out (`Standings.fitting`), for the caller to compute next with
            `refresh_mle` (what a Space shows first after reading a long history).
        online: TrueSkill, Elo and the trajectories of the first of these matches, rated
            already (`RatedAhead`), carried forward rather than `previous`'s.

    Raises:
        `HistoryChangedError`: rows of one match in more than one frame.
    """
    folded = history if isinstance(history, Folded) else fold([history] if isinstance(history, pd.DataFrame) else history)
    source = source or Source()
    rated = folded.rated
    start = online if online is not None else previous.online if previous is not None else Online()
    online = start.extended(rated)
    stages = pve_stages(folded.tallies.pve)
    standings = Standings(trueskill=online.trueskill, elo=online.elo, mle={}, folded=folded, trajectory=online.trajectory,
                          pvp_players=pvp_players(folded.tallies.pvp), pve_stages=stages, source=source)
    chosen = choose(fits, rated=rated, source=source, bootstrap=bootstrap) if fits else None
    if chosen is not None:
        fit, mle_source = chosen
        return _with_whole_history(standings, bootstrap=bootstrap, fitted=fit.mle, mle_source=mle_source,
                                   mle_writer=fit.writer)
    if previous is None and not whole_history:
        return replace(standings, fitting=True)
    if refresh_mle or previous is None:
        return _with_whole_history(standings, bootstrap=bootstrap, start=previous.mle if previous is not None else None)
    return replace(standings, mle=previous.mle, head_to_head=previous.head_to_head, held_out_mle=previous.held_out_mle,
                   overfitting=overfitting(stages, previous.held_out_mle), mle_source=previous.mle_source,
                   mle_writer=previous.mle_writer, fitting=previous.fitting)


def update(
    previous: Standings,
    new_rows: Rows,
    *,
    refresh_mle: bool = False,
    bootstrap: int = 200,
    source: Source | None = None,
) -> Standings:
    """The standings after `new_rows` (whole matches not in `previous`), folded onto
    `previous`'s matches: equal to `compute` on all the rows (tests/test_standings_update.py).
    The whole-history columns keep `previous`'s unless `refresh_mle`.

    Raises:
        `HistoryChangedError`: the new rows repeat a match already counted.
    """
    try:
        folded = fold([new_rows] if isinstance(new_rows, pd.DataFrame) else new_rows, previous=previous.folded)
    except HistoryChangedError as exc:
        raise HistoryChangedError(f"New rows repeat a match already counted: {exc}") from None
    return compute(folded, previous=previous, refresh_mle=refresh_mle, bootstrap=bootstrap,
                   source=source or previous.source)


def _with_whole_history(standings: Standings, *, bootstrap: int, start: Mapping[str, MLERating] | None = None,
                        fitted: Mapping[str, MLERating] | None = None, mle_source: Source | None = None,
                        mle_writer: str = "") -> Standings:
    """`standings` with the whole-history computations done again: the Plackett-Luce fit
    with its bootstrap (or `fitted`, a published one, warm-started from `start`), the head
    to head, and the held-out fit."""
    history, held_out = standings.rated, standings.held_out_rated
    if fitted is not None:
        mle = dict(fitted)
    else:
        warm = {p: r.rating for p, r in start.items()} if start else None
        mle = plackett_luce(history, bootstrap=bootstrap, start=warm) if len(history) else {}
    pairs: HeadToHead = head_to_head(history)
    held_out_mle = plackett_luce(held_out, bootstrap=0) if len(held_out) else {}
    return replace(standings, mle=mle, head_to_head=pairs, held_out_mle=held_out_mle,
                   overfitting=overfitting(standings.pve_stages, held_out_mle),
                   mle_source=mle_source or standings.source, mle_writer=mle_writer)
