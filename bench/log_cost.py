"""What capturing a team's output costs: the same match with a sandboxed team that idles
quietly, that floods both its streams, and that faults on every tick.

    python -m bench.log_cost [--horizon 128] [--pairs 4] [--seed 1]

The team in slot 0 is `tests/policies/adversarial/idle`, `.../loud` (a megabyte to stdout
and to stderr every tick) or `tests/policies/raise_every_tick`; the other 15 are the PvE
stage-1 built-ins. Each run is in a fresh process, replays and logs recorded as the Space
records them. The quiet and the flooding match are played in pairs, the order within a
pair alternating; reported: the median of the pairs' ratios of wall time and of the match
process's CPU time (its drain threads included; the team's own process is not) (target: at
most 1.05x: a flood must not slow the match), what the flooding team wrote and what its
log kept, and the replay's size with a fault on every tick (played once).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import time

from arena import PROJECT_ROOT
from arena.policies import local
from bench.match_speed import stage1_lineup
from matchmaking.engine import game
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec
from matchmaking.sandbox.host import sandboxed_host
from matchmaking.service.executor import play_outcome

POLICIES = PROJECT_ROOT / "tests" / "policies"
TEAMS = {"quiet": POLICIES / "adversarial" / "idle", "flood": POLICIES / "adversarial" / "loud",
         "faulty": POLICIES / "raise_every_tick"}


def _timed(spec: MatchSpec) -> dict:
    from arena.logs import read

    wall, cpu = time.perf_counter(), time.process_time()
    outcome = play_outcome(spec, sandboxed_host, True)
    elapsed, cpu = time.perf_counter() - wall, time.process_time() - cpu
    _, logs = read(outcome.logs)
    team = outcome.result.teams[0]
    return {"wall": elapsed, "cpu": cpu, "replay_bytes": len(outcome.replay), "log_file_bytes": len(outcome.logs),
            "written": logs[0].total_bytes, "kept": logs[0].total_bytes - logs[0].dropped_bytes,
            "faults": team.total_faults, "ticks": outcome.result.ticks}


def worst_case_fault_kb() -> float:
    """The compressed size of the most fault events a full match can hold: 16 teams, each
    faulting on every one of 1024 ticks and at start, each message different."""
    import gzip

    faults = [[tick, team, "ERROR", f"RuntimeError: deliberate failure on call {tick} of team {team} (at policy.py:9)"]
              for tick in range(1025) for team in range(16)]
    return len(gzip.compress(json.dumps(faults, separators=(",", ":")).encode(), compresslevel=6)) / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=128)
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json")
    args = parser.parse_args()
    config = MatchConfig(horizon=args.horizon)
    opponents = stage1_lineup()[1:]
    specs = {name: MatchSpec(seed=args.seed, policies=(local(path), *opponents), config=config) for name, path in TEAMS.items()}
    game.ensure_map(game.map_id_for_seed(args.seed, config.map_pool), config)
    runs: dict[str, list[dict]] = {name: [] for name in TEAMS}
    context = multiprocessing.get_context("spawn")
    def play(name: str) -> None:
        with context.Pool(1) as pool:
            runs[name].append(pool.apply(_timed, (specs[name],)))
        print(f"  {name}: {runs[name][-1]['wall']:.1f} s wall, {runs[name][-1]['cpu']:.1f} s CPU", file=sys.stderr)

    for pair in range(args.pairs):
        for name in (("quiet", "flood") if pair % 2 == 0 else ("flood", "quiet")):
            play(name)
    play("faulty")
    wall_ratios = [f["wall"] / q["wall"] for q, f in zip(runs["quiet"], runs["flood"])]
    cpu_ratios = [f["cpu"] / q["cpu"] for q, f in zip(runs["quiet"], runs["flood"])]
    flood, faulty, quiet = runs["flood"][0], runs["faulty"][0], runs["quiet"][0]
    report = {
        "horizon": args.horizon,
        "quiet_s": round(statistics.median(r["wall"] for r in runs["quiet"]), 2),
        "flood_s": round(statistics.median(r["wall"] for r in runs["flood"]), 2),
        "wall_ratios": [round(r, 3) for r in wall_ratios],
        "flood_ratio": round(statistics.median(wall_ratios), 3),
        "cpu_ratio": round(statistics.median(cpu_ratios), 3),
        "flood_written_mb": round(flood["written"] / 2**20, 1),
        "flood_kept_kb": round(flood["kept"] / 1024, 1),
        "flood_faults": flood["faults"],
        "flood_log_file_kb": round(flood["log_file_bytes"] / 1024, 1),
        "quiet_replay_kb": round(quiet["replay_bytes"] / 1024, 1),
        "faulty_faults": faulty["faults"],
        "faulty_replay_kb": round(faulty["replay_bytes"] / 1024, 1),
        "worst_case_faults_kb": round(worst_case_fault_kb(), 1),
    }
    print(
        f"{args.horizon} ticks: quiet {report['quiet_s']} s, flooding {report['flood_s']} s (medians); median of the pairs' "
        f"ratios {report['flood_ratio']}x wall {report['wall_ratios']}, {report['cpu_ratio']}x CPU of the match process "
        f"(target <= 1.05); the flood wrote {report['flood_written_mb']} MB, its log kept {report['flood_kept_kb']} KB "
        f"({report['flood_log_file_kb']} KB on disk), {report['flood_faults']} faults; a fault every tick "
        f"({report['faulty_faults']} faults) makes the replay {report['faulty_replay_kb']} KB against {report['quiet_replay_kb']} KB; "
        f"the most faults a full match can hold (16 x 1025) add {report['worst_case_faults_kb']} KB"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
