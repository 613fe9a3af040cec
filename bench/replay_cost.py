"""What recording a replay costs: the same full match with and without the recorder.

    python -m bench.replay_cost [--repeats 3] [--seed 1]

Alternates the two runs (fresh processes, best of each) and reports the wall and CPU
time ratio (target: at most 1.03x) and the compressed replay size (target: at most 1 MB).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time

from arena.replay import ReplayRecorder
from bench.match_speed import stage1_lineup
from matchmaking.engine import game
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec, run_match
from matchmaking.teams.factory import in_process_host


def _timed(spec: MatchSpec, record: bool) -> dict[str, float]:
    recorder = ReplayRecorder() if record else None
    wall, cpu = time.perf_counter(), time.process_time()
    run_match(spec, recorder=recorder, host_factory=in_process_host)
    return {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "bytes": len(recorder.data) if recorder else 0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json")
    args = parser.parse_args()
    spec = MatchSpec(seed=args.seed, policies=stage1_lineup(), config=MatchConfig())
    game.ensure_map(game.map_id_for_seed(spec.seed, spec.config.map_pool), spec.config)
    runs: dict[bool, list[dict[str, float]]] = {False: [], True: []}
    context = multiprocessing.get_context("spawn")
    for repeat in range(args.repeats):
        for record in ((False, True) if repeat % 2 == 0 else (True, False)):
            with context.Pool(1) as pool:
                runs[record].append(pool.apply(_timed, (spec, record)))
            print(f"  {'with' if record else 'without'} replay: {runs[record][-1]['wall']:.1f} s", file=sys.stderr)
    best = {k: {m: min(r[m] for r in v) for m in ("wall", "cpu")} for k, v in runs.items()}
    report = {
        "without_s": round(best[False]["wall"], 2),
        "with_s": round(best[True]["wall"], 2),
        "wall_ratio": round(best[True]["wall"] / best[False]["wall"], 3),
        "cpu_ratio": round(best[True]["cpu"] / best[False]["cpu"], 3),
        "replay_kb": round(runs[True][0]["bytes"] / 1024, 1),
    }
    print(
        f"full match: {report['without_s']} s without, {report['with_s']} s with the recorder: {report['wall_ratio']}x wall, "
        f"{report['cpu_ratio']}x CPU (target <= 1.03); replay {report['replay_kb']} KB (target <= 1024)"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
