"""How often the built-in teams reach each scoring tier, over full matches.

The Forage and Equipment thresholds of `arena.scoring.RULES` are calibrated on this
report: the hard tier should stay rare for nmmo's own scripted teams. It plays `--matches`
full matches of PvE stage 1 (one extra Combat team as the 16th) and prints, per built-in
and task, the distribution of raw values and the share of teams at each tier.

    python -m bench.calibrate_tiers --matches 12 --workers 2 [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict

from arena.policies import builtin
from arena.rules import stage_opponents
from arena.schema import TASK_NAMES, MatchResult
from arena.scoring import RULES, Task
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec, policies_for
from matchmaking.service.executor import default_workers, run_matches


def tier_report(results: list[MatchResult]) -> dict[str, dict[str, dict[str, object]]]:
    """Per built-in and task: raw value counts and the share of teams at each tier."""
    values: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for result in results:
        for team in result.teams:
            for task in TASK_NAMES:
                values[team.policy_id][task].append(team.tasks[task].value)
                values["all"][task].append(team.tasks[task].value)
    report: dict[str, dict[str, dict[str, object]]] = {}
    for policy, tasks in values.items():
        report[policy] = {}
        for task, vals in tasks.items():
            rule = RULES[Task(task)]
            tiers = Counter(rule.tier(v) for v in vals)
            report[policy][task] = {
                "teams": len(vals),
                "values": dict(sorted(Counter(vals).items())),
                "tier_share": {tier: tiers.get(i, 0) / len(vals) for i, tier in enumerate(("none", "easy", "medium", "hard"))},
            }
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=12)
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--json", help="also write the raw report here")
    args = parser.parse_args()

    lineup = policies_for(builtin("combat"), [builtin(n) for n in stage_opponents(1)])
    specs = [MatchSpec(seed=args.seed + i, policies=lineup, config=MatchConfig()) for i in range(args.matches)]
    results = []
    for outcome in run_matches(specs, workers=args.workers):
        if outcome.result is None:
            print(f"match failed: {outcome.error}", file=sys.stderr)
            continue
        results.append(outcome.result)
        print(f"match {len(results)}/{len(specs)} done ({outcome.result.duration_s:.0f} s)", file=sys.stderr)
    report = tier_report(results)
    print(f"{len(results)} full matches, {sum(len(r.teams) for r in results)} team results")
    for policy in sorted(report):
        print(f"\n{policy}")
        for task in TASK_NAMES:
            entry = report[policy][task]
            shares = " ".join(f"{k} {v:5.1%}" for k, v in entry["tier_share"].items())
            print(f"  {task:<10} {shares}   values {entry['values']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"report": report, "matches": [r.to_dict() for r in results]}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
