"""The settling meter: per qualified revision, `settled`, or about how many more matches its
PvP rank needs and how long that will take at the current rate.

What "settled" means and the estimate's formula are `arena.settling`'s (the one definition,
shared with the PvP scheduler and the model cards); this module only feeds it what the
standings know: each revision's TrueSkill sigma and PvP matches, the qualified revisions
(who shares the seats), the pairing rule in force, and the current rate of PvP matches.

The rate is measured, not configured: the wall time the latest `RECENT_PVP` PvP matches of
the history took to start, one after the other, divided by their number. It folds in how
long a match takes and how many play at once, so `T = arena matches left x seconds per PvP
match` (`settling(..., match_s=that, parallel=1)`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from arena.lifecycle import RevisionState, Status
from arena.revision import Revision
from arena.rules import Pairing
from arena.settling import SETTLED_WIDTH, Settling, settling
from leaderboard.standings import Standings

#: The latest PvP matches whose starts give the current rate.
RECENT_PVP = 50


def seconds_per_pvp_match(summary: pd.DataFrame, *, recent: int = RECENT_PVP) -> float | None:
    """Wall seconds between PvP match starts lately: the span of the latest `recent` PvP
    starts over one less than their number; None with fewer than two, or no time between."""
    if not len(summary):
        return None
    pvp = summary.loc[summary["Track"] == "pvp", "Started"].head(recent)  # newest first
    starts = pd.to_datetime(pvp, utc=True, errors="coerce").dropna()
    if len(starts) < 2:
        return None
    span = (starts.max() - starts.min()).total_seconds()
    return span / (len(starts) - 1) if span > 0 else None


def qualified_players(statuses: Iterable[RevisionState]) -> list[str]:
    """The revisions PvP pools are drawn from: each repo's latest, qualified."""
    return [s.id.player for s in statuses if s.latest and s.status is Status.QUALIFIED]


def meter(standings: Standings, statuses: Iterable[RevisionState], *, pairing: Pairing | str,
          seats: int = 16) -> dict[str, Settling]:
    """The meter of every qualified revision (`arena.settling.settling`), from the standings."""
    candidates = qualified_players(statuses)
    if not candidates:
        return {}
    sigmas = {p: r.sigma for p, r in standings.trueskill.ratings.items()}
    counts = {p: int(r.matches) for p, r in standings.trueskill.ratings.items()}
    return settling(sigmas, counts, candidates=candidates, match_s=seconds_per_pvp_match(standings.match_summary),
                    parallel=1, size=seats, how=Pairing(pairing))


def meter_texts(readings: Mapping[str, Settling]) -> dict[str, str]:
    """Per player, what the PvP table's Settling column says."""
    return {p: s.text() for p, s in readings.items()}


def meter_markdown(reading: Settling | None) -> str:
    """The policy page's line: how settled its PvP rank is ("" for a revision that is not
    qualified, such as a built-in anchor or a superseded revision)."""
    if reading is None:
        return ""
    where = (f"its 95% interval is {reading.width:.2f} units wide after {reading.matches} PvP "
             f"match{'es' * (reading.matches != 1)}")
    if reading.settled:
        return f"**PvP rank: settled**: {where} (settled: at most {SETTLED_WIDTH:g})."
    return (f"**PvP rank: {reading.text()}**: {where}; settled at {SETTLED_WIDTH:g} or narrower. It sits in about "
            f"{reading.seat_share:.0%} of the PvP matches until then, so the Arena plays about "
            f"{reading.arena_matches_left:.0f} more.")


def meter_records(readings: Mapping[str, Settling]) -> list[dict[str, Any]]:
    """The meter as `/settling` answers it: one record per qualified revision, the least
    settled first."""
    records = []
    for player, s in sorted(readings.items(), key=lambda item: (item[1].settled, -item[1].width, item[0])):
        revision = Revision.parse(player)
        records.append({
            "policy": revision.policy_id, "revision": revision.sha, "settled": s.settled, "text": s.text(),
            "interval_width": round(s.width, 3), "matches": s.matches, "matches_left": s.matches_left,
            "seat_share": round(s.seat_share, 4), "arena_matches_left": round(s.arena_matches_left, 1),
            "seconds_left": None if s.seconds_left is None or not np.isfinite(s.seconds_left)
            else round(s.seconds_left, 1),
        })
    return records
