"""Elo as in Hugging Face's AI vs. AI: a 16-team result read as pairwise duels."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from arena.ratings.results import Outcome, RatedTable, check_after, last_key, players_of, results_after, seat_arrays
from arena.ratings.scales import ELO_START, anchor_elo
from arena.rules import ANCHORS

#: Elo K per match, shared over the duels of a match: each of the n-1 duels moves a
#: rating by at most K/(n-1), so one 16-team match moves a rating by at most K.
ELO_K = 32.0


@dataclass(frozen=True)
class EloState:
    """Elo ratings after a prefix of the history: a checkpoint to extend with later matches."""

    ratings: Mapping[str, float] = field(default_factory=dict)
    last_key: tuple[str, str] = ("", "")
    matches: int = 0


def elo_ratings(
    history: Sequence[Outcome] | RatedTable,
    *,
    state: EloState | None = None,
    k: float = ELO_K,
    anchors: Mapping[str, float] = ANCHORS,
    compiled: bool = True,
    extends: bool = False,
) -> EloState:
    """Elo after `history`, in order, carried forward from `state` if given.

    A 16-team match is read as its duels (a higher Achievement wins, equal scores draw),
    computed for the whole match at once; anchors are fixed; new players start at 1200.
    If `history` holds matches at or before the checkpoint other than the ones it covers
    (out-of-order arrival), everything is recomputed from scratch. `compiled`: use the
    compiled loop (`arena.kernels`) where numba is installed (equal within 1e-9; the
    numpy loop below is the reference). `extends`: `history` holds only the matches after
    `state` (an incremental update, `leaderboard.standings.update`), each after the
    checkpoint's last one (`ValueError` otherwise).
    """
    from arena import kernels

    state = state or EloState()
    if extends:
        check_after(history, state.last_key)
        new = history
    else:
        new = results_after(history, state.last_key)
        if len(history) - len(new) != state.matches:
            state, new = EloState(), history
    mean_anchor = float(np.mean(list(anchors.values()))) if anchors else 0.0
    fixed = {p: anchor_elo(v, mean_anchor) for p, v in anchors.items()}
    ratings = dict(state.ratings)
    if compiled and kernels.AVAILABLE and new:
        names = sorted(set(players_of(new)) | set(ratings) | set(fixed))
        index = {p: i for i, p in enumerate(names)}
        values = np.array([ratings.get(p, ELO_START) for p in names])
        is_fixed = np.array([p in fixed for p in names], dtype=np.bool_)
        fixed_values = np.array([fixed.get(p, 0.0) for p in names])
        seats, scores, widths = seat_arrays(new, index, by_player=False)
        kernels.elo_history(seats, scores, widths, values, is_fixed, fixed_values, float(k))
        played = np.zeros(len(names), dtype=bool)
        played[seats[seats >= 0]] = True
        for i in np.nonzero(played & ~is_fixed)[0]:
            ratings[names[i]] = float(values[i])
        return EloState(ratings, last_key(new, state.last_key), state.matches + len(new))
    if isinstance(new, RatedTable):
        new = new.outcomes()
    for o in new:
        current = np.array([fixed.get(p, ratings.get(p, ELO_START)) for p in o.players])
        scores = np.array(o.scores)
        n = len(current)
        expected = 1.0 / (1.0 + 10.0 ** ((current[None, :] - current[:, None]) / 400.0))
        actual = np.where(scores[:, None] > scores[None, :], 1.0, np.where(scores[:, None] == scores[None, :], 0.5, 0.0))
        same = np.array(o.players)[:, None] == np.array(o.players)[None, :]  # no duel with oneself
        delta = k / max(n - 1, 1) * np.where(same, 0.0, actual - expected).sum(axis=1)
        for p, d in zip(o.players, delta):
            if p not in fixed:
                ratings[p] = ratings.get(p, ELO_START) + float(d)
    return EloState(ratings, new[-1].key if new else state.last_key, state.matches + len(new))


