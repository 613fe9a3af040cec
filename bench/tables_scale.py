"""Server time of the leaderboard's tables with 1,000 policies and 100,000 matches.

    python -m bench.tables_scale [--policies 1000] [--matches 100000]

Builds a synthetic history (as rows, the way the history store returns them, column by column), computes
the standings once (the background refresh; timed separately), then times what a page
request costs: every table the UI serves, each built several times, best kept. Target:
each table within 1 s of server time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import pandas as pd

from arena.simulation import Population, random_history_columns
from leaderboard import tables
from leaderboard.exposure import revision_exposure
from leaderboard.standings import Standings, compute


def best_of(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", type=int, default=1000)
    parser.add_argument("--matches", type=int, default=100_000)
    parser.add_argument("--bootstrap", type=int, default=20)
    parser.add_argument("--json")
    args = parser.parse_args()

    def policy_page(standings: Standings, player: str) -> None:
        """What the Policy tab reads for a policy it has not kept (`leaderboard.tabs.policy`'s
        `measured`): the rows of its matches, its frames and its exposure ledger."""
        rows = standings.teams.around(player)
        tables.policy_frames(standings, player, rows)
        revision_exposure(rows, player)

    population = Population.random(args.policies, seed=0)
    started = time.perf_counter()
    frame = pd.DataFrame(random_history_columns(population, args.matches, seed=1), copy=False)  # = rows(random_history(...))
    build_s = time.perf_counter() - started
    started = time.perf_counter()
    standings = compute(frame, bootstrap=args.bootstrap)
    compute_s = time.perf_counter() - started
    player = standings.teams.chunks[0]["player"].iloc[0]
    timings = {
        "pvp_table": best_of(lambda: tables.pvp_table(standings, hub_url="https://huggingface.co")),
        "pvp_table_search": best_of(lambda: tables.pvp_table(standings, hub_url="https://huggingface.co", search="policy-09")),
        "matches_table": best_of(lambda: tables.matches_table(standings)),
        "matches_table_filtered": best_of(lambda: tables.matches_table(standings, policy="policy-0042", track="pvp")),
        "policy_page": best_of(lambda: policy_page(standings, player)),
    }
    report = {
        "policies": args.policies,
        "matches": args.matches,
        "history_rows": len(frame),
        "standings_compute_s": round(compute_s, 1),
        **{f"{k}_s": round(v, 3) for k, v in timings.items()},
    }
    print(f"{args.matches} matches of {args.policies} policies ({len(frame)} rows; synthetic history built in {build_s:.0f} s)")
    print(f"  standings (background refresh, bootstrap {args.bootstrap}): {compute_s:.1f} s")
    for name, seconds in timings.items():
        print(f"  {name:<24} {seconds * 1000:8.0f} ms   (target < 1000 ms)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
