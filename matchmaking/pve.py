"""The PvE track: a submission's team against 15 built-in teams, scored by Top1Ratio.

Stage 1 is the IJCAI 2022 starter kit's mix of nmmo's scripted baselines: 3 Combat,
5 Forage and 7 Random teams. `summarize` turns a policy's matches into the figures the
paper reports: Top1Ratio (share of matches it won, ties at the top included), mean
Achievement and mean points per task.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import fmean
from typing import Mapping, Sequence

from matchmaking.records import TASK_NAMES, MatchResult

#: Built-in opponents of each stage, by name, 15 per stage.
STAGE_OPPONENTS: dict[int, tuple[str, ...]] = {
    1: ("combat",) * 3 + ("forage",) * 5 + ("random",) * 7,
}

#: Matches a revision plays per stage (the paper's 10).
MATCHES_PER_STAGE = 10

#: Mean Achievement in stage 1 that qualifies a revision for PvP (the paper's 25 points).
PVP_QUALIFYING_ACHIEVEMENT = 25.0


def stage_opponents(stage: int) -> tuple[str, ...]:
    """Names of the built-in teams a submission meets in `stage`."""
    if stage not in STAGE_OPPONENTS:
        raise ValueError(f"No PvE stage {stage}; stages are {sorted(STAGE_OPPONENTS)}.")
    return STAGE_OPPONENTS[stage]


@dataclass(frozen=True)
class TaskSummary:
    """Mean over matches of one task: points earned and raw value reached."""

    points: float
    value: float


@dataclass(frozen=True)
class PolicySummary:
    """How one policy did over a set of matches."""

    policy_id: str
    revision: str
    matches: int
    wins: int
    top1_ratio: float
    mean_achievement: float
    per_task: Mapping[str, TaskSummary]
    fault_counts: Mapping[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {
            "policy_id": self.policy_id,
            "revision": self.revision,
            "matches": self.matches,
            "wins": self.wins,
            "top1_ratio": self.top1_ratio,
            "mean_achievement": self.mean_achievement,
            "per_task": {k: {"points": v.points, "value": v.value} for k, v in self.per_task.items()},
            "fault_counts": dict(self.fault_counts),
        }


def summarize(results: Sequence[MatchResult], policy_id: str) -> PolicySummary:
    """Top1Ratio, mean Achievement and per-task means of `policy_id` over `results`.

    Each match counts the policy's first team (one team per match in PvE).

    Raises:
        `ValueError`: the policy played none of the matches.
    """
    teams = [result.team(policy_id) for result in results if any(t.policy_id == policy_id for t in result.teams)]
    if not teams:
        raise ValueError(f"Policy {policy_id!r} played none of the {len(results)} matches given.")
    wins = sum(team.won for team in teams)
    faults: dict[str, int] = {}
    for team in teams:
        for kind, count in team.fault_counts.items():
            faults[kind] = faults.get(kind, 0) + count
    return PolicySummary(
        policy_id=policy_id,
        revision=teams[-1].revision,
        matches=len(teams),
        wins=wins,
        top1_ratio=wins / len(teams),
        mean_achievement=fmean(team.achievement for team in teams),
        per_task={
            task: TaskSummary(
                points=fmean(team.tasks[task].points for team in teams),
                value=fmean(team.tasks[task].value for team in teams),
            )
            for task in TASK_NAMES
        },
        fault_counts=faults,
    )
