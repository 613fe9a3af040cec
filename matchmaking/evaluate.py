"""Evaluate a policy locally against the PvE stage-1 teams, as the IJCAI starter kit did.

Usage::

    python -m matchmaking.evaluate TARGET [--matches N] [--horizon T] [--seed S]
                                          [--workers W] [--json]

TARGET is a folder holding `policy.py` or `builtin:NAME`. Each match puts TARGET's team
against 3 Combat, 5 Forage and 7 Random teams, a folder's team isolated in its own sandboxed
process exactly as on the Arena (`matchmaking.sandbox.host`); match `i` uses seed `S + i`, so a run is
reproducible. The report gives Top1Ratio, mean Achievement and mean points per task;
`--json` prints one JSON object on stdout instead (progress stays on stderr), with every
match's full record.

Before a folder's team runs, the isolation self-test (`matchmaking.isolation`) checks this
machine's sandbox. This is the participant's own code on their own machine, so the default
is `NMMO_ARENA_ISOLATION=warn`: stderr names each missing mechanism and the run goes on;
with `strict` it refuses (exit code 3).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from tqdm import tqdm

from arena.errors import ArenaError, InvalidArgumentError
from arena.policies import PolicyRef, builtin, parse_target
from arena.rules import PVE, stage_opponents
from arena.schema import TASK_NAMES, MatchResult
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec, policies_for
from matchmaking.sandbox import isolation
from matchmaking.sandbox.host import protect_process, sandboxed_host
from matchmaking.service.executor import default_workers, run_matches
from matchmaking.service.pve import PolicySummary, summarize


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m matchmaking.evaluate",
        description="Play a policy against the PvE stage-1 built-in teams and report its Achievement.",
    )
    parser.add_argument("target", help="a folder holding policy.py, or builtin:NAME")
    parser.add_argument("--matches", type=int, default=10, help="matches to play (default 10, as PvE)")
    parser.add_argument("--horizon", type=int, default=1024, help="ticks per match (default 1024)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first match; match i uses seed+i")
    parser.add_argument("--workers", type=int, default=default_workers(), help="parallel worker processes")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    return parser


def evaluation_specs(target: PolicyRef, *, matches: int, horizon: int, seed: int) -> list[MatchSpec]:
    """The stage-1 matches of an evaluation run."""
    opponents = [builtin(name) for name in stage_opponents(1)]
    config = MatchConfig(horizon=horizon)
    return [
        MatchSpec(seed=seed + i, policies=policies_for(target, opponents), config=config, track="local", stage=1)
        for i in range(matches)
    ]


def format_report(summary: PolicySummary, results: Sequence[MatchResult], failures: Sequence[str]) -> str:
    """The human-readable report."""
    lines = [
        f"Policy        {summary.policy_id} (revision {summary.revision[:12]})",
        f"Matches       {summary.matches} against PvE stage 1 ({PVE.describe(1)})",
        f"Top1Ratio     {summary.top1_ratio:.2f} ({summary.wins} won)",
        f"Achievement   {summary.mean_achievement:.1f} mean of 84",
        "",
        f"{'task':<11}{'points':>8}{'raw value':>11}",
    ]
    for task in TASK_NAMES:
        per = summary.per_task[task]
        lines.append(f"{task:<11}{per.points:>8.1f}{per.value:>11.1f}")
    lines.append("")
    lines.append(f"{'match':<22}{'seed':>6}{'map':>5}{'rank':>6}{'score':>7}  faults")
    for result in results:
        team = result.team(summary.policy_id)
        faults = ", ".join(f"{k} x{v}" for k, v in sorted(team.fault_counts.items())) or "-"
        lines.append(f"{result.match_id:<22}{result.seed:>6}{result.map_id:>5}{team.rank:>6}{team.achievement:>7}  {faults}")
        if team.faults:
            first = team.faults[0]
            lines.append(f"{'':<22}first fault at tick {first.tick}: {first.kind.value}: {first.message}")
    for failure in failures:
        lines.append(f"match failed: {failure}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.matches < 1:
            raise InvalidArgumentError(f"--matches must be at least 1, got {args.matches}.")
        if args.workers < 1:
            raise InvalidArgumentError(f"--workers must be at least 1, got {args.workers}.")
        target = parse_target(args.target)
        specs = evaluation_specs(target, matches=args.matches, horizon=args.horizon, seed=args.seed)
    except (ArenaError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    if not target.is_builtin:
        try:
            mode = isolation.mode_from_env(isolation.WARN)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        report = isolation.check(mode)
        for mechanism in report.mechanisms():
            if not mechanism.held:
                print(f"warning: {mechanism.name} isolation is missing on this machine: {mechanism.why}", file=sys.stderr)
        if report.refuses:
            print(f"error: {report.line()} {isolation.ADVICE}", file=sys.stderr)
            return 3

    protect_process()
    results: list[MatchResult] = []
    failures: list[str] = []
    with tqdm(total=len(specs), desc=f"{target.policy_id} vs PvE stage 1", unit="match", file=sys.stderr) as bar:
        for outcome in run_matches(specs, workers=args.workers, host_factory=sandboxed_host):
            if outcome.result is not None:
                results.append(outcome.result)
            else:
                failures.append(f"seed {outcome.spec.seed}: {outcome.error}")
            bar.update(1)
    results.sort(key=lambda r: r.seed)
    if not results:
        print("error: every match failed:\n" + "\n".join(failures), file=sys.stderr)
        return 1

    summary = summarize(results, target.policy_id)
    if args.json:
        payload = summary.to_dict() | {
            "matches": [r.to_dict() for r in results],
            "failed_matches": failures,
        }
        payload["match_count"] = summary.matches
        json.dump(payload, sys.stdout)
        sys.stdout.write("\n")
    else:
        print(format_report(summary, results, failures))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
