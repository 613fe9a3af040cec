"""The PvE track, played: which matches a revision still owes, and its figures so far.

The rules (opponents per stage, matches per stage, thresholds) are `arena.rules.PVE`;
this module applies them to the history.

`summarize` turns a policy's matches into the paper's figures: Top1Ratio (share of
matches won, ties at the top included), mean Achievement and mean points per task.
`plan` says which PvE matches a revision still has to play, from the history alone, with
seeds fixed per (revision, stage, match): after a restart the same matches are planned
again and the history's exactly-once rule keeps each one once.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from statistics import fmean
from typing import Mapping, Sequence

from arena.rules import PVE
from arena.schema import TASK_NAMES, MatchResult


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


def stage_seed(policy_id: str, revision: str, stage: int, index: int) -> int:
    """The seed of a revision's `index`-th match of `stage`: fixed, so plans are replayable."""
    digest = hashlib.sha256(f"pve:{policy_id}@{revision}:{stage}:{index}".encode()).digest()
    return int.from_bytes(digest[:6], "big")


def stage_results(results: Sequence[MatchResult], policy_id: str, revision: str, stage: int) -> list[MatchResult]:
    """The revision's recorded PvE matches of `stage`."""
    return [
        r
        for r in results
        if r.track == "pve" and r.stage == stage and any(t.policy_id == policy_id and t.revision == revision for t in r.teams)
    ]


@dataclass(frozen=True)
class PvePlan:
    """Where a revision stands in PvE, and what to play next."""

    stage: int
    """The stage being played, or the last one reached when finished."""
    seeds: tuple[int, ...]
    """Seeds of the matches still to play in that stage (empty when PvE is finished)."""
    summaries: Mapping[int, PolicySummary]
    """Per completed stage, the revision's figures."""
    finished: bool


def plan(
    results: Sequence[MatchResult],
    policy_id: str,
    revision: str,
    *,
    matches_per_stage: int = PVE.matches_per_stage,
    next_stage_top1: float = PVE.next_stage_top1,
) -> PvePlan:
    """What PvE matches `policy_id@revision` still has to play, judged from the history."""
    summaries: dict[int, PolicySummary] = {}
    for stage in sorted(PVE.stages):
        played = {r.seed for r in stage_results(results, policy_id, revision, stage)}
        wanted = [stage_seed(policy_id, revision, stage, i) for i in range(matches_per_stage)]
        missing = tuple(seed for seed in wanted if seed not in played)
        if missing:
            return PvePlan(stage=stage, seeds=missing, summaries=summaries, finished=False)
        mine = [r for r in stage_results(results, policy_id, revision, stage) if r.seed in set(wanted)]
        summaries[stage] = summarize(mine, policy_id)
        if summaries[stage].top1_ratio < next_stage_top1 or stage == PVE.last_stage:
            return PvePlan(stage=stage, seeds=(), summaries=summaries, finished=True)
    raise AssertionError("unreachable")


def qualifies(summaries: Mapping[int, PolicySummary], *, threshold: float = PVE.qualify_achievement) -> tuple[bool, str]:
    """The paper's PvP qualification: mean Achievement in stage 1 at least `threshold`."""
    first = summaries.get(1)
    if first is None:
        return False, "PvE stage 1 not finished"
    if first.mean_achievement >= threshold:
        return True, f"qualified: mean Achievement {first.mean_achievement:.1f} in PvE stage 1 (>= {threshold:.0f})"
    return False, f"mean Achievement {first.mean_achievement:.1f} in PvE stage 1, below the {threshold:.0f} that qualifies for PvP"
