"""Memory over hundreds of matches: do the match workers, and the Space's own process, stay flat?

    python -m bench.soak [--matches 500] [--horizon 64] [--workers 2] [--batch 4]

Plays `--matches` matches through what the Space uses: the persistent `LocalExecutor`
(spawned worker processes), every submitted team in its sandbox (three example policies
and a built-in packaged as a folder, each match a different mix, beside built-in teams),
replays recorded, every match written to a `HistoryStore` and flushed into shards, and
the leaderboard's standings refreshed from the history after every batch, in this process,
as the Space's refresher does.

After each match it reads the resident memory of every worker process (and of this
process). Growth is the largest resident memory over the last 10% of the matches against
the first 10%. A job is stuck when no match finishes for `--stuck-after` seconds while
some are pending; the run then stops and counts them. The JSON line last holds
`rss_mb_first`, `rss_mb_last`, `rss_growth_ratio` (of the workers), `space_rss_mb_first`,
`space_rss_mb_last`, `space_rss_growth_ratio`, `stuck_jobs` and `failed_matches`.
Target: both growth ratios within 1.10, no stuck job.
"""

from __future__ import annotations

import argparse
import json
import math
import queue
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from tqdm import tqdm

from arena import PROJECT_ROOT
from arena.policies import builtin, local
from arena.rules import stage_opponents
from history.store import HistoryStore
from leaderboard.refresher import StandingsRefresher
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec
from matchmaking.sandbox.host import protect_process, sandboxed_host
from matchmaking.service.executor import LocalExecutor

EXAMPLES = PROJECT_ROOT / "examples" / "policies"


def lineups(count: int, staging: Path) -> list[tuple]:
    """Match line-ups that rotate four sandboxed submissions through the first slots."""
    packaged = staging / "builtin-forage"
    packaged.mkdir(parents=True, exist_ok=True)
    (packaged / "policy.py").write_text(
        "from matchmaking.teams.builtin import builtin_factory\n\n_make = builtin_factory('forage')\n\n\n"
        "class Team:\n    def __init__(self, team_id, env_config):\n        self._team = _make(team_id, env_config)\n\n"
        "    def act(self, observations):\n        return self._team.act(observations)\n"
    )
    submitted = [local(EXAMPLES / name) for name in ("explorer", "gatherer", "wanderer")] + [local(packaged)]
    opponents = [builtin(name) for name in stage_opponents(1)]
    out = []
    for i in range(count):
        k = 1 + i % len(submitted)  # one to four sandboxed teams
        chosen = [submitted[(i + j) % len(submitted)] for j in range(k)]
        out.append(tuple(chosen + opponents[: 16 - k]))
    return out


def rss_mb(pid: int) -> float:
    try:
        return psutil.Process(pid).memory_info().rss / 2**20
    except psutil.Error:
        return 0.0


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=500)
    parser.add_argument("--horizon", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=4, help="matches per round, as the matchmaker submits them")
    parser.add_argument("--stuck-after", type=float, default=600.0, help="seconds without a finished match that count as stuck")
    parser.add_argument("--trace", type=Path, help="also write every match's readings to this CSV file")
    args = parser.parse_args(argv)
    if args.matches < 10:
        parser.error("--matches must be at least 10 (growth compares the first and last 10%)")
    return args


@dataclass
class Readings:
    """After each finished match, the largest worker's resident memory and this process's
    (MB); the matches that failed, and those stuck when the run stopped."""

    workers_rss: list[float] = field(default_factory=list)
    space_rss: list[float] = field(default_factory=list)
    failed: int = 0
    stuck: int = 0
    me: psutil.Process = field(default_factory=psutil.Process)

    def read(self, executor: LocalExecutor) -> None:
        self.workers_rss.append(max((rss_mb(pid) for pid in executor.worker_pids()), default=0.0))
        self.space_rss.append(self.me.memory_info().rss / 2**20)


def play_batch(executor: LocalExecutor, batch: list[MatchSpec], store: HistoryStore, readings: Readings, bar: tqdm, *,
               stuck_after: float) -> None:
    """Play `batch` as the matchmaker submits a round, recording each result and reading the
    memory after each match; the matches left count as stuck when none finishes for
    `stuck_after` seconds."""
    outcomes: queue.Queue = queue.Queue()

    def drain() -> None:
        try:
            for outcome in executor.run(batch):
                outcomes.put(outcome)
        except BaseException as exc:  # noqa: BLE001 - the executor itself broke: say so, do not wait
            outcomes.put(exc)
        outcomes.put(None)

    threading.Thread(target=drain, daemon=True).start()
    finished = 0
    while True:
        try:
            outcome = outcomes.get(timeout=stuck_after)
        except queue.Empty:
            readings.stuck = len(batch) - finished
            return
        if outcome is None:
            return
        if isinstance(outcome, BaseException):
            raise outcome
        finished += 1
        if outcome.result is None:
            readings.failed += 1
        else:
            store.record(outcome.result, replay=outcome.replay)
        readings.read(executor)
        bar.update(1)


def report(args: argparse.Namespace, readings: Readings, elapsed: float, recorded: int) -> dict:
    """The JSON line's figures (growth: the last 10% of the matches against the first 10%),
    printed with the verdict in words before it."""
    workers_rss, space_rss = readings.workers_rss, readings.space_rss
    tenth = max(1, math.ceil(len(workers_rss) / 10))

    def growth(series: list[float]) -> tuple[float, float, float]:
        head, tail = max(series[:tenth]), max(series[-tenth:])
        return round(head, 1), round(tail, 1), round(tail / head, 3) if head else float("nan")

    first_mb, last_mb, ratio = growth(workers_rss)
    space_first, space_last, space_ratio = growth(space_rss)
    stuck, failed = readings.stuck, readings.failed
    figures = {
        "matches": len(workers_rss), "horizon": args.horizon, "workers": args.workers, "minutes": round(elapsed / 60, 1),
        "rss_mb_first": first_mb, "rss_mb_last": last_mb, "rss_growth_ratio": ratio,
        "space_rss_mb_first": space_first, "space_rss_mb_last": space_last, "space_rss_growth_ratio": space_ratio,
        "worker_rss_mb_max": round(max(workers_rss), 1), "stuck_jobs": stuck, "failed_matches": failed,
        "recorded": recorded,
    }
    verdict = "met" if max(ratio, space_ratio) <= 1.10 and stuck == 0 else "MISSED"
    print(f"{figures['matches']} matches of {args.horizon} ticks in {figures['minutes']} min on {args.workers} workers: "
          f"largest worker {first_mb} MB over the first 10%, {last_mb} MB over the last 10% ({ratio}x); "
          f"this process {space_first} -> {space_last} MB ({space_ratio}x); {stuck} stuck, {failed} failed; "
          f"target (growth within 1.10x, none stuck) {verdict}")
    return figures


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    protect_process()
    root = Path(tempfile.mkdtemp(prefix="arena-soak-"))
    store = HistoryStore(root / "history")
    refresher = StandingsRefresher(store, bootstrap=5, mle_every_s=0.0)
    executor = LocalExecutor(args.workers, host_factory=sandboxed_host)
    config = MatchConfig(horizon=args.horizon)
    specs = [MatchSpec(seed=10_000 + i, policies=lineup, config=config, track="pve", stage=1)
             for i, lineup in enumerate(lineups(args.matches, root / "policies"))]
    readings = Readings()
    started = time.monotonic()
    with tqdm(total=len(specs), desc="soak", unit="match", file=sys.stderr) as bar:
        for first in range(0, len(specs), args.batch):
            play_batch(executor, specs[first : first + args.batch], store, readings, bar, stuck_after=args.stuck_after)
            if readings.stuck:
                break
            store.flush()
            refresher.refresh()
    executor.close()
    elapsed = time.monotonic() - started
    if args.trace:
        args.trace.write_text("match,worker_rss_mb,space_rss_mb\n" + "".join(
            f"{i},{w:.1f},{s:.1f}\n" for i, (w, s) in enumerate(zip(readings.workers_rss, readings.space_rss))))
    print(json.dumps(report(args, readings, elapsed, len(store.results()))))
    return 0 if readings.stuck == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
