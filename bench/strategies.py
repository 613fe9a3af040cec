"""Stage 3's built-in team against stage 2's, head to head.

    python -m bench.strategies [--matches 8] [--workers 2]

Full-size matches of 8 `builtin:elite` (PvE stage 3) against 8 `builtin:coordinated`
(stage 2) teams, slots alternating; reports each side's mean Achievement and points per
task, and the share of matches whose winner (rank 1) is an elite team. The PvE stages
must get harder: stage 3's team should beat stage 2's.
"""

from __future__ import annotations

import argparse
import json
import sys
from statistics import fmean

from arena.schema import TASK_NAMES
from matchmaking.config import MatchConfig
from matchmaking.executor import default_workers, run_matches
from matchmaking.match import MatchSpec
from matchmaking.policy import builtin


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=8)
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--horizon", type=int, default=1024)
    parser.add_argument("--json")
    args = parser.parse_args()
    lineup = tuple(builtin("elite" if slot % 2 == 0 else "coordinated") for slot in range(16))
    specs = [MatchSpec(seed=500 + i, policies=lineup, config=MatchConfig(horizon=args.horizon)) for i in range(args.matches)]
    results = [o.result for o in run_matches(specs, workers=args.workers) if o.result is not None]
    report = {"matches": len(results)}
    for name in ("elite", "coordinated"):
        teams = [t for r in results for t in r.teams if t.policy_id == f"builtin:{name}"]
        report[name] = {
            "mean_achievement": round(fmean(t.achievement for t in teams), 2),
            **{task: round(fmean(t.tasks[task].points for t in teams), 2) for task in TASK_NAMES},
        }
    winners = [r for r in results if any(t.rank == 1 and t.policy_id == "builtin:elite" for t in r.teams)]
    report["elite_wins_share"] = round(len(winners) / len(results), 3)
    report["elite_over_coordinated"] = round(report["elite"]["mean_achievement"] / max(report["coordinated"]["mean_achievement"], 1e-9), 2)
    for name in ("elite", "coordinated"):
        r = report[name]
        print(f"{name:>12}: mean Achievement {r['mean_achievement']:.1f} " + " ".join(f"{t} {r[t]:.1f}" for t in TASK_NAMES))
    print(f"an elite team won {report['elite_wins_share']:.0%} of {len(results)} matches; mean Achievement ratio {report['elite_over_coordinated']}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
