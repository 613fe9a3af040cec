"""A Space restarted on an empty disk: how soon its tables are back, and that it loses and
replays nothing.

    python -m bench.restart --matches 10000 --json

On a Hub served as its own process (`python -m localhub`, standing in for huggingface.co):

1. **The writer.** Space A (`matchmaking.service.space.Arena`, its data folder, a fixed map
   secret) discovers, validates and plays the PvE of one example policy and a PvP round
   (real matches, 16 ticks: `--real 0` skips them), and holds a synthetic history of N
   matches (`arena.simulation.random_history_columns`, 1,000 policies) in its own day shards
   of `--shard-matches` matches, as compaction leaves them. It pushes everything and
   stops cleanly. Its tables (PvE and PvP, as the pages show them) are the reference.
2. **The restart.** Space B starts with the same settings on an empty data folder and
   restores its state from the dataset before it plays.
   B's tables are computed from its folder as its pages compute them, every 0.2 s from its
   start. Then B runs its scheduled rounds for `--run-s` seconds (the real part only).

Printed, the JSON last:

- `restore_s`: seconds from B's start until its tables equal A's;
- `matches_restored`: matches B took in from the dataset;
- `tables_identical`: whether they became equal (within `--timeout-s`);
- `replayed_matches`: matches B handed its executor that the dataset already held;
- `status_events_lost`: A's status events B does not know.

Targets (issue 21): `restore_s` at most 60 s at 10,000 matches and at most 300 s at
1,000,000 (shards only: `--real 0`); no replayed match; no lost event.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from arena import PROJECT_ROOT
from arena.settings import ArenaSettings
from arena.simulation import Population, random_history_columns
from bench.ratings_recompute import write_history
from history.index import HistoryIndex, narrow
from history.statuses import StatusLog
from history.store import HistoryReader
from leaderboard import tables
from leaderboard.refresher import StandingsRefresher
from leaderboard.standings.fits import fit_path
from localhub.process import HubProcess
from matchmaking.hub.pushing import push_submission, submission_card

TARGETS = {10_000: 60.0, 1_000_000: 300.0}
TOKEN = "bench-restart-token"
EXAMPLE = PROJECT_ROOT / "examples" / "policies" / "gatherer"


def say(text: str) -> None:
    print(text, flush=True)


def settings(data: Path, endpoint: str, **changes: Any) -> ArenaSettings:
    values: dict[str, Any] = dict(
        data_dir=data, hub_endpoint=endpoint, seed_examples=False, match_horizon=16, workers=2, pve_matches_per_stage=2,
        qualify_achievement=0.0, next_stage_top1=1.0, audit_minutes=0, model_cards=False,
        map_secret="bench-restart-map-secret", sync_every_s=2, validate_every_s=2, pve_every_s=1, pvp_every_s=2,
        flush_every_s=2)
    values.update(changes)
    return ArenaSettings(**values)


def the_tables(arena: Any, refresher: StandingsRefresher) -> tuple[pd.DataFrame, pd.DataFrame]:
    standings = refresher.refresh()
    return (tables.pve_table(standings, arena.statuses.states(), hub_url="http://hub"),
            tables.pvp_table(standings, hub_url="http://hub"))


def same(a: tuple[pd.DataFrame, pd.DataFrame], b: tuple[pd.DataFrame, pd.DataFrame]) -> bool:
    return all(x.equals(y) for x, y in zip(a, b))


def push_example(api: Any, repo_id: str) -> None:
    push_submission(api, repo_id, folder=EXAMPLE, card=submission_card("nmmo-arena", "Bench"))


@dataclass
class Written:
    """What the writer left in the dataset, and its tables (the reference)."""

    reference: tuple[pd.DataFrame, pd.DataFrame]
    events: set[str]
    match_ids: set[str]
    shards: int


def write(root: Path, endpoint: str, args: argparse.Namespace) -> Written:
    """Space A: real matches (`--real`), then N synthetic ones in day shards; pushed, its
    tables computed as its refresher computes them (and its fit published), then stopped."""
    from huggingface_hub import HfApi

    from matchmaking.service.space import Arena

    a = Arena.start(settings(root / "a", endpoint), schedule=False)
    try:
        if args.real:
            push_example(HfApi(endpoint=endpoint, token=TOKEN), "bench/gatherer")
            m = a.matchmaker
            m.sync()
            m.validate()
            while m.play_pve():
                pass
            m.play_pvp()
            m.flush()
        started = time.perf_counter()
        frame = narrow(pd.DataFrame(random_history_columns(Population.random(1000, seed=0), args.matches, seed=1),
                                    copy=False))
        shards = write_history(frame, a.store.root, shard_matches=args.shard_matches, writer=a.writers.writer)
        del frame
        say(f"writer {a.writers.writer}: {args.matches:,} synthetic matches in {shards} day shards "
            f"({time.perf_counter() - started:.1f} s)")
        started = time.perf_counter()
        if not a.mirror.push_now():
            raise RuntimeError("the writer's push failed")
        say(f"pushed to {endpoint} in {time.perf_counter() - started:.1f} s")
        # as app.py: the writer's refresher publishes its fit, pushed with its last push
        refresher = StandingsRefresher(a.index, statuses=a.statuses.states, hub_url="http://hub", bootstrap=args.bootstrap,
                                       published=a.mirror.published,
                                       publish_fit=(fit_path(a.store.root, a.writers.writer), a.writers.writer))
        started = time.perf_counter()
        reference = the_tables(a, refresher)
        say(f"the writer's tables: {len(reference[0])} PvE rows, {len(reference[1])} PvP rows "
            f"({time.perf_counter() - started:.1f} s)")
        return Written(reference, {json.dumps(e, sort_keys=True) for e in a.statuses.journal.read()},
                       set(a.store.table().column("match_id").to_pylist()), shards)
    finally:
        a.stop()


def restart(root: Path, endpoint: str, args: argparse.Namespace, written: Written) -> dict[str, Any]:
    """Space B on an empty disk: the seconds until its tables equal A's, then its rounds for
    `--run-s` (the real part), counting the matches it plays that the dataset held."""
    from matchmaking.service.space import Arena

    handed: list[str] = []
    holder: dict[str, Any] = {}
    started = time.perf_counter()
    # B restores before it plays (schedule=False: its rounds start below, once the tables are
    # compared, so that its first new matches are not in them); the bench watches B's folder,
    # from which B's own pages compute the same tables
    opener = threading.Thread(target=lambda: holder.update(b=Arena.start(settings(root / "b", endpoint), schedule=False)),
                              daemon=True)
    opener.start()
    history = root / "b" / "history"
    while not (history / "data").is_dir():
        time.sleep(0.05)
    watcher = StatusLog(history / "submissions" / "statuses.jsonl")
    # as a Space's index: it waits for B's restore, then reads all of it at once
    index = HistoryIndex(HistoryReader(history), ready=lambda: "b" in holder)
    refresher = StandingsRefresher(index, statuses=lambda: (watcher.reload(), watcher.states())[1],
                                   hub_url="http://hub", bootstrap=args.bootstrap)
    identical = False
    restore_s = float("nan")
    while time.perf_counter() - started < args.timeout_s:
        now = (tables.pve_table(refresher.refresh(), refresher.statuses(), hub_url="http://hub"),
               tables.pvp_table(refresher.standings(), hub_url="http://hub"))
        if same(now, written.reference):
            identical, restore_s = True, time.perf_counter() - started
            break
        time.sleep(0.2)
    opener.join()
    b = holder["b"]
    try:
        run = b.matchmaker.executor.run

        def counted(specs: Any) -> Any:
            specs = list(specs)
            handed.extend(s.match_id for s in specs)
            return run(specs)

        b.matchmaker.executor.run = counted
        say(b.pull.progress.line())
        if args.real:
            b.matchmaker.start()
            time.sleep(args.run_s)
        events_b = {json.dumps(e, sort_keys=True) for e in b.statuses.journal.read()}
        return {
            "matches": len(written.match_ids),
            "shards": written.shards,
            "restore_s": round(restore_s, 2),
            "matches_restored": b.pull.progress.matches_done,
            "tables_identical": identical,
            "replayed_matches": len(set(handed) & written.match_ids),
            "status_events_lost": len(written.events - events_b),
            "matches_played_after": len(set(handed) - written.match_ids),
            "published_fit_used": bool(refresher.standings().mle_writer),
        }
    finally:
        b.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=10_000, help="synthetic matches in the history (N)")
    parser.add_argument("--shard-matches", type=int, default=6000, help="matches per day shard (as compaction leaves them)")
    parser.add_argument("--real", type=int, default=1, help="1: the writer also plays real PvE and PvP first (0: shards only)")
    parser.add_argument("--run-s", type=float, default=20.0, help="seconds B runs its rounds after the restore (with --real 1)")
    parser.add_argument("--bootstrap", type=int, default=200, help="Plackett-Luce resamples of the tables (the Space's 200)")
    parser.add_argument("--timeout-s", type=float, default=1800.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ["HF_TOKEN"] = TOKEN  # the Spaces' own token, as a Space secret gives it
    logging.getLogger("apscheduler").setLevel(logging.ERROR)  # a skipped round is no news
    with tempfile.TemporaryDirectory(prefix="bench-restart-") as tmp:
        root = Path(tmp)
        hub = HubProcess(root / "hub", token=TOKEN)
        try:
            written = write(root, hub.endpoint, args)
            report = restart(root, hub.endpoint, args, written)
        finally:
            hub.stop()
    target = TARGETS.get(args.matches)
    if target is not None:
        report["restore_target_s"] = target
        report["met"] = bool(report["tables_identical"] and report["restore_s"] <= target
                             and report["replayed_matches"] == 0 and report["status_events_lost"] == 0)
    for key, value in report.items():
        say(f"{key}: {value}")
    if args.json:
        print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
