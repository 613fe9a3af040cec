"""Matches per hour on the local pool and on a real Ray cluster of one and two worker nodes.

    python -m bench.ray_scaling [--matches 4] [--horizon 1024]

The same full matches (a sandboxed submission from the embedded Hub against PvE stage 1's
15 built-in teams, the same seeds) are played four ways, each from cold caches:

1. the local pool (`LocalExecutor`) with 1 worker process, then with 2;
2. Ray (`RayExecutor` through the Ray Client, as `NMMO_ARENA_RAY=ray://...` makes the Space
   do) on a cluster of a head with no CPU and 1 worker node of 1 CPU, then on a fresh
   cluster with 2 such nodes (`matchmaking.local_cluster`: separate `ray start` processes,
   each worker node in its own mount and PID namespaces, fetching the submission from the
   Hub into its own cache and generating its own maps).

Each executor is warmed first, as the Space's long-lived pool and cluster are: one short
match per worker (other seeds), so that process start-up, Ray's shipping of the code and
the nodes' fetch of the submission are not timed. Then each run's wall time is from the
first match sent to the last result back; the timed matches' maps are in no cache yet, so
each way generates the same maps once. Targets: two nodes at least
1.8x one node; Ray within 1.1x of the local pool with as many workers. Beside them, the
machine's own ceiling before and after the runs (`bench.match_speed.machine_scaling`: two
copies of a pure CPU loop on 2 processes against 1): on a shared machine no executor
scales past it. The JSON line last holds every figure.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path

from arena import PROJECT_ROOT
from arena.rules import stage_opponents
from arena.schema import FaultKind
from bench.match_speed import machine_scaling
from matchmaking.config import MatchConfig
from matchmaking.executor import LocalExecutor, RayExecutor
from matchmaking.local_cluster import LocalCluster
from matchmaking.match import MatchSpec, policies_for
from matchmaking.policy import PolicyRef, builtin
from matchmaking.sandbox.host import sandboxed_host

SUBMISSION = PROJECT_ROOT / "examples" / "policies" / "gatherer"


def warm(executor, specs: list[MatchSpec], workers: int) -> None:
    """One short match per worker, on seeds the timed matches do not use."""
    short = [dataclasses.replace(specs[0], seed=900 + i, match_id="",
                                 config=dataclasses.replace(specs[0].config, horizon=8)) for i in range(workers)]
    timed(executor, short)


def timed(executor, specs: list[MatchSpec]) -> tuple[float, list]:
    """Seconds to play `specs` on `executor`, and the outcomes (every one must have a result)."""
    started = time.perf_counter()
    outcomes = list(executor.run(specs))
    seconds = time.perf_counter() - started
    failed = [o.error for o in outcomes if o.error]
    if failed:
        raise RuntimeError(f"{len(failed)} matches failed, first: {failed[0]}")
    return seconds, outcomes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=4, help="matches per run (even: two run at once)")
    parser.add_argument("--horizon", type=int, default=1024)
    args = parser.parse_args()

    from huggingface_hub import HfApi

    from localhub import LocalHub

    work = Path(tempfile.mkdtemp(prefix="ray-scaling-"))
    token = secrets.token_hex(16)
    os.environ.update({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token})  # before Ray is imported
    hub = LocalHub(work / "hub", write_token="bench").start()
    try:
        api = HfApi(endpoint=hub.endpoint, token="bench")
        api.create_repo("bench/gatherer")
        sha = api.upload_folder(repo_id="bench/gatherer", folder_path=SUBMISSION, commit_message="bench").oid
        download = work / "download"
        api.snapshot_download("bench/gatherer", revision=sha, local_dir=download)  # what the Space's validation fetched

        def specs(maps: Path) -> list[MatchSpec]:
            lineup = policies_for(PolicyRef("bench/gatherer", sha, path=download), [builtin(n) for n in stage_opponents(1)])
            return [MatchSpec(seed=100 + i, policies=lineup, config=MatchConfig(horizon=args.horizon, cache_dir=maps))
                    for i in range(args.matches)]

        ceiling_before = machine_scaling()
        print(f"this machine's 2-process scaling of a pure CPU loop, before: {ceiling_before:.2f}x", flush=True)
        seconds: dict[str, float] = {}
        results: dict[str, list] = {}
        for workers in (1, 2):
            name = f"local_{workers}"
            pool = LocalExecutor(workers, host_factory=sandboxed_host)
            try:
                warm(pool, specs(work / f"maps-{name}-warm"), workers)
                seconds[name], outcomes = timed(pool, specs(work / f"maps-{name}"))
            finally:
                pool.close()
            results[name] = sorted((o.spec.seed, o.result.outcome()) for o in outcomes)
            print(f"local pool, {workers} worker(s): {args.matches} matches in {seconds[name]:.1f} s", flush=True)

            name = f"ray_{workers}"
            cluster = LocalCluster(work / f"cluster-{workers}", token=token)
            try:
                cluster.start_head()
                for _ in range(workers):
                    cluster.add_worker(cpus=1)
                ray_executor = RayExecutor(cluster.client_address, hub=hub.endpoint, host_factory=sandboxed_host)
                try:
                    warm(ray_executor, specs(work / f"maps-{name}-warm"), workers)
                    seconds[name], outcomes = timed(ray_executor, specs(work / f"maps-{name}"))
                finally:
                    ray_executor.close()
                nodes = {o.node for o in outcomes}
                if not nodes <= {w.node_id for w in cluster.workers}:
                    raise RuntimeError(f"matches ran outside the worker nodes: {nodes}")
            finally:
                cluster.stop()
            results[name] = sorted((o.spec.seed, o.result.outcome()) for o in outcomes)
            print(f"Ray, {workers} worker node(s) of 1 CPU: {args.matches} matches in {seconds[name]:.1f} s "
                  f"on {len(nodes)} node(s)", flush=True)
        ceiling_after = machine_scaling()
        print(f"this machine's 2-process scaling of a pure CPU loop, after: {ceiling_after:.2f}x", flush=True)
    finally:
        hub.stop()
    # The same specs give the same games, unless a team's answer came later than its step
    # limit on a loaded machine (a TIMEOUT fault idles it that tick): report, do not hide.
    same = len({json.dumps(r, sort_keys=True) for r in results.values()}) == 1
    timeouts = {name: sum(t["fault_counts"].get(FaultKind.TIMEOUT.value, 0) for _, o in r for t in o["teams"]) for name, r in results.items()}
    print(f"same results on every executor: {same}; TIMEOUT faults per run: {timeouts}", flush=True)

    per_hour = {name: args.matches / s * 3600 for name, s in seconds.items()}
    report = {
        "matches": args.matches,
        "horizon": args.horizon,
        "local_1_worker_per_hour": round(per_hour["local_1"], 1),
        "local_2_workers_per_hour": round(per_hour["local_2"], 1),
        "ray_1_node_per_hour": round(per_hour["ray_1"], 1),
        "ray_2_nodes_per_hour": round(per_hour["ray_2"], 1),
        "two_nodes_vs_one": round(per_hour["ray_2"] / per_hour["ray_1"], 3),
        "local_vs_ray_1": round(per_hour["local_1"] / per_hour["ray_1"], 3),
        "local_vs_ray_2": round(per_hour["local_2"] / per_hour["ray_2"], 3),
        "local_2_vs_1": round(per_hour["local_2"] / per_hour["local_1"], 3),
        "machine_scaling_before": round(ceiling_before, 3),
        "machine_scaling_after": round(ceiling_after, 3),
        "same_results": same,
        "timeout_faults": timeouts,
    }
    print(f"two nodes vs one: {report['two_nodes_vs_one']}x (target >= 1.8: "
          f"{'met' if report['two_nodes_vs_one'] >= 1.8 else 'MISSED'}); local pool vs Ray: "
          f"{report['local_vs_ray_1']}x with 1, {report['local_vs_ray_2']}x with 2 (target <= 1.1: "
          f"{'met' if max(report['local_vs_ray_1'], report['local_vs_ray_2']) <= 1.1 else 'MISSED'})")
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
