"""How a match is scored: the IJCAI 2022 Achievement, adapted to Neural MMO 2.x.

Four tasks, three tiers each, worth 4, 10 or 21 points; a team earns only its highest tier
per task, and one member reaching a tier is enough (paper, Table 1). Achievement is the sum
over the four tasks, at most 84. Teams are ranked by Achievement, equal scores sharing a
rank, and a team "wins" (counts toward Top1Ratio) when its rank is 1.

Every threshold lives in `RULES` and nowhere else. Pure functions only: the raw values
come from `matchmaking.engine.progress`, which reads them off the game.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np

#: Points of the easy, medium and hard tier of every task.
TIER_POINTS: tuple[int, int, int] = (4, 10, 21)

#: Highest Achievement a team can reach (the hard tier of all four tasks).
MAX_ACHIEVEMENT: int = 4 * TIER_POINTS[-1]


class Task(str, Enum):
    """The four tasks of the challenge, in the paper's order."""

    TRAVEL = "travel"
    FORAGE = "forage"
    EQUIPMENT = "equipment"
    ELIMINATE = "eliminate"


@dataclass(frozen=True)
class TaskRule:
    """One row of the scoring table: what is measured and where each tier starts."""

    task: Task
    title: str
    measure: str
    thresholds: tuple[int, int, int]
    reason: str

    def points(self, value: float) -> int:
        """Points for a raw value: the highest tier whose threshold it reaches, else 0."""
        earned = 0
        for threshold, points in zip(self.thresholds, TIER_POINTS):
            if value >= threshold:
                earned = points
        return earned

    def tier(self, value: float) -> int:
        """Tier reached: 0 (none), 1 (easy), 2 (medium) or 3 (hard)."""
        return sum(value >= threshold for threshold in self.thresholds)


# ALGO LOGIC: the scoring table. Each reason is repeated in docs/rules.md ("Scoring").
RULES: dict[Task, TaskRule] = {
    Task.TRAVEL: TaskRule(
        task=Task.TRAVEL,
        title="Travel the Lands",
        measure="largest L-infinity distance, in tiles, between a member and its own spawn tile",
        thresholds=(32, 64, 127),
        reason=(
            "As in 1.5. nmmo 2.x's own GO_FARTHEST event measures progress toward the map "
            "centre (at most 64), so the runner tracks the distance from spawn itself; 127 "
            "is a crossing from one edge of the 128x128 map to the opposite edge."
        ),
    ),
    Task.FORAGE: TaskRule(
        task=Task.FORAGE,
        title="Forage for Resources",
        measure=(
            "highest level a member reaches in a gathering skill "
            "(fishing, herbalism, prospecting, carving, alchemy)"
        ),
        thresholds=(3, 5, 8),
        reason=(
            "1.5's skill levels 20/35/50 do not exist in 2.x, where every skill caps at 10. "
            "Calibrated on 12 full matches of the built-in teams (docs/rules.md): 14% of their teams "
            "reach level 3, 6% level 5 and 1% level 8, so the hard tier stays hard."
        ),
    ),
    Task.EQUIPMENT: TaskRule(
        task=Task.EQUIPMENT,
        title="Secure an Advantage",
        measure="highest level of an item (armour, weapon, tool or ammunition) a member equips",
        thresholds=(1, 3, 5),
        reason=(
            "1.5's equipment levels 1/10/20 do not exist in 2.x, where items cap at level 10. "
            "Any equipped item is the easy tier, as in 1.5. In 12 full matches no built-in "
            "team equipped anything above level 1 (96% of Combat teams equipped level 1), so "
            "levels 3 and 5, which need levelled skills and loot from the stronger NPCs of the "
            "map centre, are medium and hard."
        ),
    ),
    Task.ELIMINATE: TaskRule(
        task=Task.ELIMINATE,
        title="Eliminate the Competition",
        measure="players of other teams killed by members (friendly fire does not count)",
        thresholds=(1, 3, 6),
        reason=(
            "As in 1.5. nmmo 2.x allows friendly fire and logs it as a player kill; killing "
            "a teammate must not score, so only kills of other teams' players count."
        ),
    ),
}


@dataclass(frozen=True)
class TeamProgress:
    """Raw values a team reached in a match, one per task, before tiers are applied."""

    travel: int = 0
    forage: int = 0
    equipment: int = 0
    eliminate: int = 0

    def value(self, task: Task) -> int:
        """The raw value for `task`."""
        return getattr(self, task.value)


@dataclass(frozen=True)
class Achievement:
    """A team's score: points per task and their sum."""

    points: Mapping[Task, int]

    @property
    def total(self) -> int:
        """Sum of the four tasks' points (0 to 84)."""
        return sum(self.points.values())


def achievement(progress: TeamProgress) -> Achievement:
    """Score one team's raw progress.

    Example:
        >>> achievement(TeamProgress(travel=64, forage=1, equipment=1, eliminate=6)).total
        35
    """
    return Achievement({task: rule.points(progress.value(task)) for task, rule in RULES.items()})


def competition_ranks(scores: Sequence[float]) -> list[int]:
    """Rank scores highest first; equal scores share the best rank ("1224" ranking).

    The one ranking rule of the Arena: teams in a match, and ratings on a leaderboard
    (a rank is 1 + the number of strictly higher values).

    Example:
        >>> competition_ranks([10, 35, 10, 0])
        [2, 1, 2, 4]
    """
    values = np.asarray(scores, dtype=np.float64)
    higher = len(values) - np.searchsorted(np.sort(values), values, side="right")
    return (1 + higher).tolist()


def top1(ranks: Sequence[int]) -> list[bool]:
    """Whether each team won: rank 1, ties at the top included (the paper's PvE rule)."""
    return [rank == 1 for rank in ranks]


def tier_table() -> list[dict[str, object]]:
    """The scoring table as rows for display: task, measure and the three thresholds."""
    return [
        {
            "task": rule.title,
            "measure": rule.measure,
            f"easy ({TIER_POINTS[0]})": rule.thresholds[0],
            f"medium ({TIER_POINTS[1]})": rule.thresholds[1],
            f"hard ({TIER_POINTS[2]})": rule.thresholds[2],
        }
        for rule in RULES.values()
    ]
