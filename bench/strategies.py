"""Two teams head to head: does a PvE stage get harder than the one before it?

    python -m bench.strategies [--a builtin:elite] [--b builtin:coordinated] [--matches 8] [--workers 2]

Full-size matches of 8 teams of A against 8 of B, slots alternating; reports each side's
mean Achievement and points per task, and the share of matches whose winner (rank 1) is
one of A's teams. By default A is stage 3's `elite` and B stage 2's `coordinated`: stage 3's
team should beat stage 2's. `--a examples/policies/apprentice-torch` puts the learned
team against stage 2's scripted one (a folder plays in its sandbox).
"""

from __future__ import annotations

import argparse
import json
import sys
from statistics import fmean

from arena.policies import parse_target
from arena.schema import TASK_NAMES
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec
from matchmaking.sandbox.host import sandboxed_host
from matchmaking.service.executor import default_workers, run_matches


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", default="builtin:elite", help="a folder holding policy.py, or builtin:NAME")
    parser.add_argument("--b", default="builtin:coordinated")
    parser.add_argument("--matches", type=int, default=8)
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--horizon", type=int, default=1024)
    parser.add_argument("--json")
    args = parser.parse_args()
    a, b = parse_target(args.a), parse_target(args.b)
    lineup = tuple(a if slot % 2 == 0 else b for slot in range(16))
    specs = [MatchSpec(seed=500 + i, policies=lineup, config=MatchConfig(horizon=args.horizon)) for i in range(args.matches)]
    results = [o.result for o in run_matches(specs, workers=args.workers, host_factory=sandboxed_host) if o.result is not None]
    report = {"matches": len(results), "a": a.policy_id, "b": b.policy_id}
    for side, ref in (("a", a), ("b", b)):
        teams = [t for r in results for t in r.teams if t.policy_id == ref.policy_id]
        report[side + "_teams"] = {
            "mean_achievement": round(fmean(t.achievement for t in teams), 2),
            **{task: round(fmean(t.tasks[task].points for t in teams), 2) for task in TASK_NAMES},
            "faults": sum(sum(t.fault_counts.values()) for t in teams),
        }
    winners = [r for r in results if any(t.rank == 1 and t.policy_id == a.policy_id for t in r.teams)]
    report["a_wins_share"] = round(len(winners) / len(results), 3)
    report["a_over_b"] = round(report["a_teams"]["mean_achievement"] / max(report["b_teams"]["mean_achievement"], 1e-9), 2)
    for side, ref in (("a", a), ("b", b)):
        r = report[side + "_teams"]
        print(f"{ref.policy_id:>36}: mean Achievement {r['mean_achievement']:.1f} " + " ".join(f"{t} {r[t]:.1f}" for t in TASK_NAMES))
    print(f"a team of {a.policy_id} won {report['a_wins_share']:.0%} of {len(results)} matches; mean Achievement ratio {report['a_over_b']}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
