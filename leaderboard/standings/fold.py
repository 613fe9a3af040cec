"""The standings from the history: `compute` from every row, `update` from the new ones.

Both gather the rows batch by batch (`leaderboard.standings.gather`) and rate what they
gathered. TrueSkill and Elo are online: carried forward from the previous standings when
only new matches were added, recomputed when the history changed otherwise. The
Plackett-Luce fit with its bootstrap, the head to head and the held-out fit are
whole-history computations, the expensive part: rerun only when asked (`refresh_mle`),
else the previous standings' are kept.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from arena.head_to_head import HeadToHead, head_to_head
from arena.ratings import (
    MLERating,
    RatedTable,
    TrueSkillState,
    elo_ratings,
    plackett_luce,
    recomputed,
    trueskill_trail,
)
from leaderboard.standings.fits import PublishedFit, choose
from leaderboard.standings.gather import gather
from leaderboard.standings.held_out import overfitting
from leaderboard.standings.matches import merge_summaries
from leaderboard.standings.record import TRAJECTORY_POINTS, HistoryChangedError, Source, Standings
from leaderboard.standings.tallies import Tallies, merge_tallies, pve_stages, pvp_players
from leaderboard.team_rows import TeamRows


def compute(
    rows: pd.DataFrame | Iterable[pd.DataFrame],
    *,
    previous: Standings | None = None,
    refresh_mle: bool = True,
    bootstrap: int = 200,
    source: Source | None = None,
    fits: Sequence[PublishedFit] = (),
) -> Standings:
    """Standings from the history rows (see the module docstring): one frame, or frames of
    whole matches one after the other, such as the dataset's shards read one at a time
    (`frames(store.shard_batches(names))`), so that no frame of every row is ever built; the
    same standings either way. `source` says which shards the rows are (the PvP tab names
    them).

    `fits`, Plackett-Luce fits writers published (`leaderboard.standings.fits`): one of
    these results, or of some of these shards, is taken instead of fitting here (the head
    to head and the held-out fit are still computed), and `mle_source` names its shards.

    Raises:
        `ValueError`: a match's rows are in more than one of the frames.
    """
    gathered = gather([rows] if isinstance(rows, pd.DataFrame) else rows)
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
    mle_writer = ""
    chosen = choose(fits, rated=history, source=source or Source(), bootstrap=bootstrap) if fits else None
    if chosen is not None:
        fit, mle_source = chosen
        mle, pairs, held_out_mle = _whole_history(history, held_out, bootstrap=bootstrap, fitted=fit.mle)
        mle_writer = fit.writer
    elif refresh_mle or previous is None:
        mle, pairs, held_out_mle = _whole_history(history, held_out, bootstrap=bootstrap,
                                                  start=previous.mle if previous is not None else None)
        mle_source = source or Source()
    else:
        mle, pairs, held_out_mle = previous.mle, previous.head_to_head, previous.held_out_mle
        mle_source, mle_writer = previous.mle_source, previous.mle_writer
    return _standings(gathered.teams, gathered.tallies, gathered.summary, gathered.policy_matches, ts=ts, elo=elo,
                      mle=mle, pairs=pairs, held_out_mle=held_out_mle, trajectory=trajectory, rated=history,
                      held_out_rated=held_out, source=source, mle_source=mle_source, mle_writer=mle_writer)


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
                   start: Mapping[str, MLERating] | None = None, fitted: Mapping[str, MLERating] | None = None,
                   ) -> tuple[Mapping[str, MLERating], HeadToHead, Mapping[str, MLERating]]:
    """The whole-history computations: the Plackett-Luce fit with its bootstrap (or `fitted`,
    a published one), the head to head, and the held-out fit."""
    if fitted is not None:
        mle = dict(fitted)
    else:
        warm = {p: r.rating for p, r in start.items()} if start else None
        mle = plackett_luce(history, bootstrap=bootstrap, start=warm) if len(history) else {}
    pairs = head_to_head(history)
    held_out_mle = plackett_luce(held_out, bootstrap=0) if len(held_out) else {}
    return mle, pairs, held_out_mle


def _standings(teams: TeamRows, tallies: Tallies, match_summary, policy_matches, *, ts, elo, mle, pairs, held_out_mle,
               trajectory, rated: RatedTable, held_out_rated: RatedTable, source, mle_source,
               mle_writer: str = "") -> Standings:
    stages = pve_stages(tallies.pve)
    return Standings(
        pvp_players=pvp_players(tallies.pvp),
        pve_stages=stages,
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
        overfitting=overfitting(stages, held_out_mle),
        rated_results=len(rated),
        source=source or Source(),
        mle_source=mle_source,
        mle_writer=mle_writer,
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
        `HistoryChangedError`: the new rows hold a match already counted, or one started at
            or before the last rated match: call `compute` with all the rows.
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
                       overfitting=overfitting(previous.pve_stages, held_out_mle), mle_source=source, mle_writer="")
    try:
        new = gather(batches, teams=previous.teams)
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
    tallies = merge_tallies(previous.tallies, new.tallies)
    policy_matches = dict(previous.policy_matches)
    for policy, ids in new.policy_matches.items():
        policy_matches[policy] = np.concatenate([policy_matches[policy], ids]) if policy in policy_matches else ids
    if refresh_mle:
        mle, pairs, held_out_mle = _whole_history(rated, held_out, bootstrap=bootstrap, start=previous.mle)
        mle_source = source
    else:
        mle, pairs, held_out_mle = previous.mle, previous.head_to_head, previous.held_out_mle
        mle_source = previous.mle_source
    return _standings(new.teams, tallies, merge_summaries([previous.match_summary, new.summary]), policy_matches,
                      ts=ts, elo=elo, mle=mle, pairs=pairs, held_out_mle=held_out_mle, trajectory=trajectory,
                      rated=rated, held_out_rated=held_out, source=source, mle_source=mle_source,
                      mle_writer="" if refresh_mle else previous.mle_writer)
