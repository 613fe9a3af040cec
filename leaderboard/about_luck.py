"""The About tab's "How much is luck?" section: the latest `arena.luck` report, in words.

Pure formatting of a report the refresher computed in the background
(`StandingsRefresher.luck`); nothing here fits anything.
"""

from __future__ import annotations

from arena.luck import LABELS, SHARE_GROUPS, LuckReport

HEADING = "## How much is luck?"


def luck_markdown(luck: LuckReport | str) -> str:
    """The section: a few lines of figures, or, while there are too few matches with
    spawn points, what is missing (`luck` is then the reason, as a sentence)."""
    if isinstance(luck, str):
        return (f"{HEADING}\nNot measured yet: {luck} The figures appear here once enough full matches with "
                "spawn points are recorded (docs/rules.md, \"Luck\", says how they are computed).")
    spreads = luck.effects.spreads
    shares = luck.achievement.shares

    def sd(group: str) -> str:
        return f"±{spreads[group].sd:.2f}"

    listed = sorted(SHARE_GROUPS, key=lambda g: -shares[g])
    parts = ", ".join(f"{LABELS[g]} {max(shares[g], 0.0):.0%}" for g in listed)
    left_out = f" ({luck.excluded_matches} older ones without spawn points left out)" if luck.excluded_matches else ""
    return f"""{HEADING}
From the latest {luck.matches} full matches{left_out}: {luck.policies} policies, {luck.maps} maps.

- **In the ranking** (rating units, as the MLE column: a gap of 1 wins a duel 73% of the time): spawn side
  {sd('side')}, spawn point along the edge {sd('index')}, slot {sd('slot')}, side on a given map {sd('map_side')};
  the policies spread {sd('policy')}.
- **Of Achievement's variance**: {parts}; unexplained {max(shares['residual'], 0.0):.0%}.

A spread is the typical size of an effect, estimation noise taken out; a map's own richness and the
lobby move every team of a match alike, so they show only in Achievement. PvP ratings do not correct
for the seat: seats are dealt at random, so its luck spreads over a policy's matches. Method: docs/rules.md, "Luck".
"""
