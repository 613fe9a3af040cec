"""Matches per hour on the local pool and on a real Ray cluster of one and two worker nodes.

    python -m bench.ray_scaling [--matches 4] [--rounds 3] [--horizon 1024]

The same full matches (a sandboxed submission from the embedded Hub against PvE stage 1's
15 built-in teams, the same seeds) are played four ways:

1. the local pool (`LocalExecutor`) with 1 worker process, and with 2;
2. Ray (`RayExecutor` through the Ray Client, as `NMMO_ARENA_RAY=ray://...` makes the Space
   do) on one cluster of a head with no CPU and 2 worker nodes of 1 CPU each
   (`matchmaking.service.local_cluster`: separate `ray start` processes, each worker node in its own
   mount and PID namespaces, fetching the submission from the Hub into its own cache and
   generating its own maps): on 1 node (the matches ask for that node's own resource) and
   on both.

The four executors live for the whole run, as the Space's pool and cluster do, and are
warmed first: every timed seed played short (8 ticks) by every worker and every node, so
that process start-up, Ray's shipping of the code, the nodes' fetch of the submission and
the maps are not what is timed. Then `--rounds` rounds, each timing all four ways, the
order reversed every other round: a shared machine's load drifts over minutes, and a ratio
of two runs minutes apart measures the drift as much as the executors. Each figure is the
median over the rounds (matches per hour: the median run; ratios: the median of the
rounds' ratios). Targets: two nodes at least 1.8x one node; Ray within 1.1x of the local
pool with as many workers. Beside them, the machine's own ceiling before and after
(`bench.match_speed.machine_scaling`: two copies of a pure CPU loop on 2 processes against
1): on a shared machine no executor scales past it. The JSON line last holds every figure.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from arena import PROJECT_ROOT
from arena.policies import PolicyRef, builtin
from arena.revision import Revision
from arena.rules import stage_opponents
from arena.schema import FaultKind
from bench.match_speed import machine_scaling
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec, policies_for
from matchmaking.sandbox.host import sandboxed_host
from matchmaking.service.executor import LocalExecutor, RayExecutor
from matchmaking.service.local_cluster import LocalCluster

SUBMISSION = PROJECT_ROOT / "examples" / "policies" / "gatherer"


def warm(executor, specs: list[MatchSpec], workers: int) -> None:
    """Each timed seed played short by each of `workers` (their maps generated, the
    processes and the submission ready)."""
    short = [dataclasses.replace(spec, match_id="", config=dataclasses.replace(spec.config, horizon=8))
             for spec in specs for _ in range(workers)]
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


def play_rounds(args: argparse.Namespace, work: Path, token: str, hub: str,
                specs: Callable[[Path], list[MatchSpec]]) -> tuple[dict[str, list[float]], dict[str, list]]:
    """The four executors started (the cluster: a head and two nodes of 1 CPU) and warmed,
    then timed in `--rounds` rounds; each run's seconds by executor, and each run's
    results (`name/round` -> sorted (seed, outcome))."""
    cluster = LocalCluster(work / "cluster", token=token)
    executors: dict[str, object] = {}
    try:
        cluster.start_head()
        nodes = [cluster.add_worker(cpus=1) for _ in range(2)]
        for workers in (1, 2):
            executors[f"local_{workers}"] = LocalExecutor(workers, host_factory=sandboxed_host)
        # one Ray Client connection: both executors share it (the first initialises Ray)
        executors["ray_1"] = RayExecutor(cluster.client_address, hub=hub, host_factory=sandboxed_host,
                                         resources={nodes[0].name: 0.01})
        executors["ray_2"] = RayExecutor(cluster.client_address, hub=hub, host_factory=sandboxed_host)
        for name, executor in executors.items():
            maps = work / f"maps-{name}"  # the local pools' cache (the nodes keep theirs)
            warm(executor, specs(maps), 2 if name.endswith("2") else 1)
        # the second node's cache too (ray_2 may have warmed the first node only); not
        # closed: closing an executor ends the connection the others share
        warm(RayExecutor(cluster.client_address, hub=hub, host_factory=sandboxed_host,
                         resources={nodes[1].name: 0.01}), specs(work / "maps-node1"), 1)
        seconds: dict[str, list[float]] = {name: [] for name in executors}
        results: dict[str, list] = {}
        for round_ in range(args.rounds):
            names = list(executors) if round_ % 2 == 0 else list(reversed(executors))
            for name in names:
                took, outcomes = timed(executors[name], specs(work / f"maps-{name}"))
                seconds[name].append(took)
                results[f"{name}/{round_}"] = sorted((o.spec.seed, o.result.outcome()) for o in outcomes)
                if name.startswith("ray"):
                    used = {o.node for o in outcomes}
                    expected = {nodes[0].node_id} if name == "ray_1" else {w.node_id for w in nodes}
                    if used != expected:
                        raise RuntimeError(f"{name} played on nodes {used}, not on {expected}")
                print(f"round {round_ + 1}, {name}: {args.matches} matches in {took:.1f} s", flush=True)
    finally:
        for executor in executors.values():
            executor.close()
        cluster.stop()
    return seconds, results


def report(args: argparse.Namespace, seconds: dict[str, list[float]], results: dict[str, list],
           ceilings: tuple[float, float]) -> dict[str, object]:
    """The JSON line's figures, printed in words first, with whether every executor played
    the same games and the targets met."""
    # The same specs give the same games, unless a team's answer came later than its step
    # limit on a loaded machine (a TIMEOUT fault idles it that tick): report, do not hide.
    same = len({json.dumps(r, sort_keys=True) for r in results.values()}) == 1
    timeouts = {name: sum(t["fault_counts"].get(FaultKind.TIMEOUT.value, 0) for _, o in r for t in o["teams"]) for name, r in results.items()}
    print(f"same results on every executor: {same}; TIMEOUT faults per run: {timeouts}", flush=True)

    def ratio(slow: str, fast: str) -> float:  # the median over the rounds of time(slow) / time(fast)
        return round(statistics.median(a / b for a, b in zip(seconds[slow], seconds[fast])), 3)

    per_hour = {name: args.matches / statistics.median(runs) * 3600 for name, runs in seconds.items()}
    figures = {
        "matches": args.matches,
        "rounds": args.rounds,
        "horizon": args.horizon,
        "seconds": seconds,
        "local_1_worker_per_hour": round(per_hour["local_1"], 1),
        "local_2_workers_per_hour": round(per_hour["local_2"], 1),
        "ray_1_node_per_hour": round(per_hour["ray_1"], 1),
        "ray_2_nodes_per_hour": round(per_hour["ray_2"], 1),
        "two_nodes_vs_one": ratio("ray_1", "ray_2"),
        "local_vs_ray_1": ratio("ray_1", "local_1"),
        "local_vs_ray_2": ratio("ray_2", "local_2"),
        "local_2_vs_1": ratio("local_1", "local_2"),
        "machine_scaling_before": round(ceilings[0], 3),
        "machine_scaling_after": round(ceilings[1], 3),
        "same_results": same,
        "timeout_faults": timeouts,
    }
    print(f"two nodes vs one: {figures['two_nodes_vs_one']}x (target >= 1.8: "
          f"{'met' if figures['two_nodes_vs_one'] >= 1.8 else 'MISSED'}); local pool vs Ray: "
          f"{figures['local_vs_ray_1']}x with 1, {figures['local_vs_ray_2']}x with 2 (target <= 1.1: "
          f"{'met' if max(figures['local_vs_ray_1'], figures['local_vs_ray_2']) <= 1.1 else 'MISSED'})")
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=4, help="matches per run (even: two run at once)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the four runs (the figures are medians)")
    parser.add_argument("--horizon", type=int, default=1024)
    args = parser.parse_args()

    from huggingface_hub import HfApi

    from localhub import LocalHub
    from matchmaking.hub.pushing import push_submission

    work = Path(tempfile.mkdtemp(prefix="ray-scaling-"))
    token = secrets.token_hex(16)
    os.environ.update({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token})  # before Ray is imported
    hub = LocalHub(work / "hub", write_token="bench").start()
    try:
        api = HfApi(endpoint=hub.endpoint, token="bench")
        sha = push_submission(api, "bench/gatherer", folder=SUBMISSION, message="bench")
        download = work / "download"
        api.snapshot_download("bench/gatherer", revision=sha, local_dir=download)  # what the Space's validation fetched

        def specs(maps: Path) -> list[MatchSpec]:
            lineup = policies_for(PolicyRef(Revision("bench/gatherer", sha), path=download), [builtin(n) for n in stage_opponents(1)])
            return [MatchSpec(seed=100 + i, policies=lineup, config=MatchConfig(horizon=args.horizon, cache_dir=maps))
                    for i in range(args.matches)]

        ceiling_before = machine_scaling()
        print(f"this machine's 2-process scaling of a pure CPU loop, before: {ceiling_before:.2f}x", flush=True)
        seconds, results = play_rounds(args, work, token, hub.endpoint, specs)
        ceiling_after = machine_scaling()
        print(f"this machine's 2-process scaling of a pure CPU loop, after: {ceiling_after:.2f}x", flush=True)
    finally:
        hub.stop()
    print(json.dumps(report(args, seconds, results, (ceiling_before, ceiling_after))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
