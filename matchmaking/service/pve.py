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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean

from arena.errors import InvalidArgumentError
from arena.records import Record
from arena.revision import Revision
from arena.rules import PVE
from arena.schema import TASK_NAMES, MatchResult
from arena.scoring import MAX_ACHIEVEMENT


@dataclass(frozen=True)
class TaskSummary:
    """Mean over matches of one task: points earned and raw value reached."""

    points: float
    value: float


@dataclass(frozen=True)
class PolicySummary(Record):
    """How one policy did over a set of matches."""

    policy_id: str
    revision: str
    matches: int
    wins: int
    top1_ratio: float
    mean_achievement: float
    per_task: Mapping[str, TaskSummary]
    fault_counts: Mapping[str, int] = field(default_factory=dict)


def summarize(results: Sequence[MatchResult], policy_id: str) -> PolicySummary:
    """Top1Ratio, mean Achievement and per-task means of `policy_id` over `results`.

    Each match counts the policy's first team (one team per match in PvE).

    Raises:
        `ValueError`: the policy played none of the matches.
    """
    teams = [result.team(policy_id) for result in results if any(t.policy_id == policy_id for t in result.teams)]
    if not teams:
        raise InvalidArgumentError(f"Policy {policy_id!r} played none of the {len(results)} matches given.")
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


def stage_seed(revision: Revision, stage: int, index: int) -> int:
    """The seed of a revision's `index`-th match of `stage`: fixed, so plans are replayable."""
    digest = hashlib.sha256(f"pve:{revision.policy_id}@{revision.sha}:{stage}:{index}".encode()).digest()
    return int.from_bytes(digest[:6], "big")


def stage_results(results: Sequence[MatchResult], revision: Revision, stage: int) -> list[MatchResult]:
    """The revision's recorded PvE matches of `stage`."""
    return [
        r
        for r in results
        if r.track == "pve" and r.stage == stage
        and any(t.policy_id == revision.policy_id and t.revision == revision.sha for t in r.teams)
    ]


@dataclass(frozen=True)
class StageDecision:
    """What a stage's matches so far settle about its bars, whatever the rest would bring.

    A bar is decided when no result of the matches still to play can change which side of
    it the stage ends on: with `w` wins in `k` of `n` matches, a Top1Ratio bar `b` is passed
    once `w / n >= b` and missed once `(w + n - k) / n < b`; a mean-Achievement bar `q` is
    reached once the sum `S` has `S / n >= q` and missed once `(S + 84 (n - k)) / n < q`
    (84 is the most a match can give). Both bounds only narrow as matches come in, so a
    decision never changes, and the figures over the `k` matches played lie on the same
    side of each bar as the ten would.
    """

    played: int
    of: int
    passes: bool | None
    """Top1Ratio at or above the next-stage bar: True, False, or None while open."""
    qualifies: bool | None = None
    """Stage 1 only: mean Achievement at or above the PvP bar (None while open, or not stage 1)."""
    needs_qualify: bool = False

    @property
    def decided(self) -> bool:
        return self.passes is not None and (not self.needs_qualify or self.qualifies is not None)

    @property
    def early(self) -> bool:
        """Decided before all of the stage's matches were played."""
        return self.decided and self.played < self.of


def decide(results: Sequence[MatchResult], policy_id: str, *, of: int, top1_bar: float,
           qualify_bar: float | None = None) -> StageDecision:
    """Which bars of a stage `results` (that stage's matches of `policy_id`) already decide."""
    teams = [r.team(policy_id) for r in results]
    k, remaining = len(teams), max(0, of - len(teams))
    wins = sum(t.won for t in teams)
    total = sum(t.achievement for t in teams)
    eps = 1e-9
    if k == 0:  # nothing is decided before a match is played, even by a bar of 0
        return StageDecision(played=0, of=of, passes=None, needs_qualify=qualify_bar is not None)
    passes = True if wins / of >= top1_bar - eps else False if (wins + remaining) / of < top1_bar - eps else None
    qualifies = None
    if qualify_bar is not None:
        if total / of >= qualify_bar - eps:
            qualifies = True
        elif (total + MAX_ACHIEVEMENT * remaining) / of < qualify_bar - eps:
            qualifies = False
    return StageDecision(played=k, of=of, passes=passes, qualifies=qualifies, needs_qualify=qualify_bar is not None)


@dataclass(frozen=True)
class PvePlan:
    """Where a revision stands in PvE, and what to play next."""

    stage: int
    """The stage being played, or the last one reached when finished."""
    seeds: tuple[int, ...]
    """Seeds of the matches still to play in that stage (empty when PvE is finished)."""
    summaries: Mapping[int, PolicySummary]
    """Per ended stage (all its matches played, or its bars decided early), its figures."""
    finished: bool
    decisions: Mapping[int, StageDecision] = field(default_factory=dict)
    """Per stage reached, what its matches so far decide."""
    played: int = 0
    """Matches recorded in the stage being played."""

    @property
    def stage1(self) -> StageDecision | None:
        """Stage 1's decision once it is decided (the verdict that qualifies for PvP)."""
        first = self.decisions.get(1)
        return first if first is not None and first.decided else None


def plan(
    results: Sequence[MatchResult],
    revision: Revision,
    *,
    matches_per_stage: int = PVE.matches_per_stage,
    next_stage_top1: float = PVE.next_stage_top1,
    qualify_achievement: float = PVE.qualify_achievement,
) -> PvePlan:
    """What PvE matches `revision` still has to play, judged from the history.

    A stage ends when all its matches are played or as soon as its bars are decided
    (`decide`): stage 1's two bars (the Top1Ratio that opens stage 2, the mean Achievement
    that qualifies for PvP), later stages' Top1Ratio bar.
    """
    policy_id = revision.policy_id
    summaries: dict[int, PolicySummary] = {}
    decisions: dict[int, StageDecision] = {}
    for stage in sorted(PVE.stages):
        wanted = [stage_seed(revision, stage, i) for i in range(matches_per_stage)]
        wanted_set = set(wanted)
        mine = [r for r in stage_results(results, revision, stage) if r.seed in wanted_set]
        decision = decide(mine, policy_id, of=matches_per_stage, top1_bar=next_stage_top1,
                          qualify_bar=qualify_achievement if stage == 1 else None)
        decisions[stage] = decision
        played = {r.seed for r in mine}
        missing = tuple(seed for seed in wanted if seed not in played)
        if missing and not decision.decided:
            return PvePlan(stage=stage, seeds=missing, summaries=summaries, finished=False, decisions=decisions, played=len(mine))
        summaries[stage] = summarize(mine, policy_id)
        if not decision.passes or stage == PVE.last_stage:
            return PvePlan(stage=stage, seeds=(), summaries=summaries, finished=True, decisions=decisions, played=len(mine))
    raise AssertionError("unreachable")


def qualifies(summaries: Mapping[int, PolicySummary], *, threshold: float = PVE.qualify_achievement,
              of: int = PVE.matches_per_stage) -> tuple[bool, str]:
    """The paper's PvP qualification: mean Achievement in stage 1 at least `threshold`,
    decided once the stage-1 matches played settle it (`decide`)."""
    first = summaries.get(1)
    if first is None:
        return False, "PvE stage 1 not finished"
    early = f", decided after {first.matches} of {of} matches" if first.matches < of else ""
    if first.mean_achievement >= threshold:
        return True, f"qualified: mean Achievement {first.mean_achievement:.1f} in PvE stage 1 (>= {threshold:g}{early})"
    return False, (f"mean Achievement {first.mean_achievement:.1f} in PvE stage 1, below the {threshold:g} that qualifies "
                   f"for PvP{early}")
