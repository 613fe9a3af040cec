"""Held-out maps and the overfitting signal: PvE standing against held-out PvP standing.

Matches on held-out maps (maps no participant saw in advance) get a Plackett-Luce fit of
their own; a submission that stands much better in PvE, on the published maps, than on
held-out ones is named "far from the diagonal" (see "Held-out standing and the overfitting
signal" in docs/rules.md).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from arena.ratings import MLERating
from arena.scoring import competition_ranks

#: A policy is named "far from the diagonal" (PvE standing against held-out PvP standing)
#: when its two ranks differ by at least this many places ...
FAR_MIN_RANKS = 3
#: ... or by this share of the policies ranked in both, whichever is more: a fixed count
#: alone would flag ordinary noise in a large field, a share alone would flag a swap of
#: neighbours in a small one (fields under 4 policies never flag anyone).
FAR_FIELD_SHARE = 0.25

OVERFITTING_COLUMNS = ["player", "pve_achievement", "held_out_rating", "pve_rank", "pvp_rank", "gap", "far"]


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
