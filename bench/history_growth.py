"""How the history dataset grows over days of play, and whether it stays within the Hub's limits.

    python -m bench.history_growth --days N [--rate 250] [--compact-minutes 240] [--root DIR]

Simulates N days at `--rate` matches an hour through the real `HistoryStore` (record,
flush every `--flush-s`, compaction every `--compact-minutes`, as the Space's pusher runs
it) on a simulated clock: synthetic matches (`arena.simulation.play`, 4 teams each: the
rows' count does not change the files' count), small synthetic replays (a valid
`arena.replay` file of a few ticks) and team logs, no real games, fsync off (durability is
not what is measured). Counted, as the Hub dataset would hold them (`history.mirror.PUSHED`):

- `files`: the dataset's files at the end;
- `max_entries_per_folder`: the most entries (files and subfolders) of any folder, at
  any moment measured (before and after every compaction of the full-rate days, before
  the first compaction of every later day, and at the end);
- `replay_first_frame_s`: the slowest of opening replays as the viewer does (match id and
  start, `HistoryReader.replay(id, started_at=...)`) with a fresh reader (cold index
  cache) and decoding their first frame: the oldest match, one of every 30th day, the
  latest bundled and one still loose; `replay_first_frame_by_id_s` the same by id alone
  (the bundles looked through, newest first); and through the Hub's HTTP API
  (`replay_first_frame_hub_s`: the latest day's folder pushed to the embedded Hub, read
  by range with `history.remote.HubFiles`).

Baseline, counted in the same run: the layout before compaction (one replay and one log
file per match in flat `replays/` and `logs/`, a shard every 40 s of play in flat `data/`).
Targets at N = 365: under 10,000 files, under 1,000 entries per folder, first frame under
1 s. Prints human lines, then one JSON line with those keys.

A day at the full rate costs about a minute here (the store's real record, flush and
compaction: JSON of every record, a parquet write per flush), so N = 365 at the full rate
would take hours. The first `--full-days` (1) run at `--rate`, flushing every `--flush-s`
(40 s: what `make run` measured); the later days are time-lapsed: `--later-rate` matches
an hour (2), flushed every `--later-flush-s` (1 h), through the same code and the same
compaction schedule. The files left do not depend on that rate: every compaction writes
at most one shard and one bundle of each kind per day its matches started on, whatever
their number; the busiest folders (the day's flushed shards, `replays/loose/`) are at
their fullest in the full-rate days. By id alone the oldest match is the slowest (the
reader looks through the bundles newest first); the time-lapsed days' bundles are smaller
than full ones, so the bench also times reading full-size indexes (the first day's) as
many times as there are bundles, and reports the larger figure.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from arena import logs as logs_format
from arena import replay as replay_format
from arena.simulation import Population, play
from history.mirror import NOT_PUSHED, PUSHED
from history.store import HistoryReader, HistoryStore

EPOCH = datetime(2026, 12, 1, tzinfo=timezone.utc)

#: The layout before compaction flushed a shard about every 40 s of play (59 shards for 109 matches).
BASELINE_FLUSH_S = 40.0


def synthetic_replay(match_id: str, *, ticks: int = 4, agents: int = 8) -> bytes:
    """A small valid replay (`arena.replay`, version 2) whose map marks the match."""
    seed = int(hashlib.sha256(match_id.encode()).hexdigest()[:8], 16)
    rng = np.random.default_rng(seed)
    arrays = {
        "map": rng.integers(0, 6, size=(16, 16), dtype=np.uint8),
        "players": rng.integers(0, 100, size=(ticks + 1, agents, 5), dtype=np.int16),
        "npc_count": np.zeros(ticks + 1, dtype=np.int32),
        "npcs": np.zeros((0, 4), dtype=np.int16),
    }
    header = {"version": replay_format.VERSION, "match_id": match_id, "ticks": ticks, "events": [], "tiers": [],
              "faults": [], "teams": []}
    return replay_format.encode(header, arrays)


def synthetic_logs(match_id: str) -> bytes:
    """A small team log file (`arena.logs`) of one sandboxed team."""
    text = f"hello from {match_id}"
    team = logs_format.TeamLog(slot=0, policy_id="bench/team", revision="0" * 40,
                               lines=(logs_format.LogLine(tick=0, stream="stdout", text=text),), total_bytes=len(text) + 1)
    return logs_format.encode(match_id, [team])


def pushed_tree(root: Path) -> dict[str, int]:
    """Folder (relative, "" for the root) -> its entries (files and subfolders), of what the
    pusher sends: the folders it never sends (`wal/`, `quarantine/`, `compaction/`) and
    hidden files left out (`files_pushed` checks the count against the patterns)."""
    entries: dict[str, int] = {}
    for parent, dirs, names in os.walk(root):
        relative = Path(parent).relative_to(root).as_posix()
        relative = "" if relative == "." else relative
        if not relative:
            dirs[:] = [d for d in dirs if d not in ("wal", "quarantine", "compaction")]
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        entries[relative] = len(dirs) + sum(not n.startswith(".") for n in names)
    return entries


def files_pushed(root: Path) -> int:
    """The files the pusher would send (`history.mirror.PUSHED`, less `NOT_PUSHED`)."""
    from huggingface_hub.utils import filter_repo_objects

    files = [(Path(parent) / name).relative_to(root).as_posix() for parent, _, names in os.walk(root) for name in names]
    return len(list(filter_repo_objects(files, allow_patterns=PUSHED, ignore_patterns=NOT_PUSHED)))


def first_frame_s(reader: HistoryReader, match_id: str, started_at: str | None = None) -> float:
    """Seconds to read a match's replay (by id, and its start if given, as the viewer reads
    it) and decode its first frame."""
    started = time.perf_counter()
    data = reader.replay(match_id, started_at=started_at)
    if data is None:
        raise SystemExit(f"match {match_id} has no replay: the bench's history is incomplete")
    _, arrays = replay_format.read(data)
    arrays["players"][0].copy()
    return time.perf_counter() - started


def hub_first_frame_s(root: Path, day: str, match_id: str, started_at: str) -> float:
    """Push one day's replay bundles to an embedded Hub and time reading one replay by range."""
    from huggingface_hub import HfApi, HfFileSystem

    from history.remote import HubFiles
    from localhub import LocalHub

    hub = LocalHub(root.parent / "bench-hub").start()
    try:
        api = HfApi(endpoint=hub.endpoint, token="bench")
        api.create_repo("bench/history", repo_type="dataset", exist_ok=True)
        api.upload_folder(repo_id="bench/history", repo_type="dataset", folder_path=root / "replays" / day,
                          path_in_repo=f"replays/{day}")
        files = HubFiles("bench/history", fs=HfFileSystem(endpoint=hub.endpoint, token="bench"))
        started = time.perf_counter()
        data = files.replay(match_id, started_at=started_at)
        if data is None:
            raise SystemExit(f"match {match_id} is not in the pushed bundles of {day}")
        replay_format.read(data)[1]["players"][0].copy()
        return time.perf_counter() - started
    finally:
        hub.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--rate", type=float, default=250.0, help="matches an hour")
    parser.add_argument("--compact-minutes", type=float, default=240.0, help="NMMO_ARENA_COMPACT_MINUTES")
    parser.add_argument("--full-days", type=int, default=1, help="days at the full rate (the first ones)")
    parser.add_argument("--flush-s", type=float, default=BASELINE_FLUSH_S, help="flush interval of the full-rate days")
    parser.add_argument("--later-rate", type=float, default=2.0, help="matches an hour of the later, time-lapsed days")
    parser.add_argument("--later-flush-s", type=float, default=3600.0, help="flush interval of the later days")
    parser.add_argument("--root", type=Path, help="history folder (default: a temporary one, removed)")
    parser.add_argument("--no-hub", action="store_true", help="skip the read through the embedded Hub")
    args = parser.parse_args(argv)
    if args.days < 1 or args.full_days < 0 or min(args.rate, args.later_rate, args.compact_minutes) <= 0:
        parser.error("--days must be at least 1, --full-days at least 0, the rates and --compact-minutes positive")
    temporary = args.root is None
    # tmpfs when there is one: creating a file on this machine's disk took 2 ms under load
    shm = Path("/dev/shm")
    scratch = tempfile.mkdtemp(prefix="history-growth-", dir=shm if shm.is_dir() and os.access(shm, os.W_OK) else None)
    root = Path(scratch) / "history" if temporary else args.root
    try:
        return run(args, root)
    finally:
        if temporary:
            shutil.rmtree(root.parent, ignore_errors=True)


@dataclass
class Simulation:
    """What the simulated days left: the store, the counts, the fullest folder seen (its
    entries and name), the matches whose replays are timed (label -> id and start), the
    dataset's files at the end and the seconds the whole simulation took."""

    store: HistoryStore
    matches: int
    flushes: int
    compactions: int
    peak: tuple[int, str]
    samples: dict[str, tuple[str, str]]
    files: int
    simulated_s: float


def simulate(args: argparse.Namespace, root: Path) -> Simulation:
    """The days of play through the store on the simulated clock: record, flush, compact,
    the folders measured at their fullest."""
    clock = [EPOCH.timestamp()]
    store = HistoryStore(root, clock=lambda: clock[0], durable=False)
    population = Population.random(40, seed=1)
    rng = np.random.default_rng(1)
    template = play(list(population.ids[:4]), population.skills[:4], rng=rng, index=0)
    end = EPOCH.timestamp() + args.days * 86400
    next_flush, next_compact = clock[0] + args.flush_s, clock[0] + args.compact_minutes * 60
    matches = flushes = compactions = 0
    peak: tuple[int, str] = (0, "")
    started_wall = time.perf_counter()
    samples: dict[str, tuple[str, str]] = {}  # label -> (match id, started_at)
    window_first: tuple[str, str] | None = None  # the first match since the last compaction

    def measure() -> None:
        nonlocal peak
        tree = pushed_tree(root)
        folder = max(tree, key=lambda f: tree[f])
        if tree[folder] > peak[0]:
            peak = (tree[folder], folder or "/")

    t = clock[0]
    day_index = measured_day = -1
    while t < end:
        clock[0] = t
        day = int((t - EPOCH.timestamp()) // 86400)
        if day != day_index:
            day_index = day
            if day and day % 30 == 0 or day == args.days - 1:
                print(f"day {day + 1}/{args.days}: {matches:,} matches, {compactions} compactions, "
                      f"{time.perf_counter() - started_wall:.0f} s", flush=True)
        full = day < args.full_days
        match_id = hashlib.sha256(f"bench:{matches}".encode()).hexdigest()[:20]
        started_at = datetime.fromtimestamp(t - 60, timezone.utc).isoformat(timespec="seconds")
        result = replace(template, match_id=match_id, started_at=started_at, seed=matches)
        store.record(result, replay=synthetic_replay(match_id), logs=synthetic_logs(match_id))
        if matches == 0:
            samples["oldest"] = (match_id, started_at)
        elif day % 30 == 15 and f"day {day + 1}" not in samples and len(samples) < 14:
            samples[f"day {day + 1}"] = (match_id, started_at)
        if window_first is None:
            window_first = (match_id, started_at)
        matches += 1
        t += 3600.0 / (args.rate if full else args.later_rate)
        flush_every = args.flush_s if full else args.later_flush_s
        if t >= next_flush or t >= end:
            clock[0] = t
            store.flush()
            flushes += 1
            next_flush = t + flush_every
        if t >= next_compact:
            clock[0] = t
            if full or day != measured_day:
                measure()  # the worst moment: everything since the last compaction still loose
                measured_day = day
            store.compact()
            compactions += 1
            if window_first is not None:  # recorded a compaction interval ago: flushed, so bundled now
                samples["latest bundled"] = window_first
            window_first = None
            next_compact = t + args.compact_minutes * 60
            if full:
                measure()
    samples["latest loose"] = (match_id, started_at)
    store.flush()
    measure()
    files = files_pushed(root)
    return Simulation(store, matches, flushes, compactions, peak, samples, files, time.perf_counter() - started_wall)


@dataclass
class ReplayReads:
    """Seconds to a replay's first frame per sample, as the viewer reads it (`times`) and by
    id alone (`by_id`); the oldest match by id through as many full-size bundle indexes as
    there are bundles (`scan_s`, `bundles`, and the entries of such an index)."""

    times: dict[str, float]
    by_id: dict[str, float]
    bundles: int
    full_entries: int
    scan_s: float


def replay_reads(root: Path, sim: Simulation) -> ReplayReads:
    times, by_id = {}, {}
    for label, (mid, at) in sim.samples.items():  # each with a fresh reader: no index cached
        times[label] = first_frame_s(HistoryReader(root), mid, at)  # as the viewer reads: the match's day known
        by_id[label] = first_frame_s(HistoryReader(root), mid)  # by id alone: the bundles looked through
    # the oldest match's reader looked through every bundle: time that with full-size indexes
    from history import bundle as bundle_format

    bundles = sim.store.bundles()
    full_size = max(bundles, key=lambda b: b.stat().st_size)
    started = time.perf_counter()
    for _ in range(len(bundles)):
        with full_size.open("rb") as f:
            bundle_format.read_index(f).span("0" * 20)
    scan_s = time.perf_counter() - started + by_id["oldest"]
    with full_size.open("rb") as f:
        full_entries = len(bundle_format.read_index(f))
    return ReplayReads(times, by_id, len(bundles), full_entries, scan_s)


def run(args: argparse.Namespace, root: Path) -> int:
    sim = simulate(args, root)
    reads = replay_reads(root, sim)
    times, by_id, peak, files = reads.times, reads.by_id, sim.peak, sim.files
    worst = max(times.values())
    worst_by_id = max(max(by_id.values()), reads.scan_s)
    hub_s = None
    if not args.no_hub and "latest bundled" in sim.samples:
        bundled_id, bundled_started = sim.samples["latest bundled"]
        day = datetime.fromisoformat(bundled_started).strftime("%Y/%m/%d")
        hub_s = hub_first_frame_s(root, day, bundled_id, bundled_started)
    baseline_flushes = int(args.days * 86400 / BASELINE_FLUSH_S)
    baseline_matches = int(args.days * 24 * args.rate)
    baseline_files = 2 * baseline_matches + max(baseline_flushes, 1) + 1
    later = args.days - min(args.full_days, args.days)
    print(f"simulated {args.days} days: {min(args.full_days, args.days)} at {args.rate:g} matches an hour, {later} "
          f"time-lapsed at {args.later_rate:g}; {sim.matches:,} matches, {sim.flushes:,} flushes, {sim.compactions:,} "
          f"compactions every {args.compact_minutes:g} min, in {sim.simulated_s:.0f} s")
    print(f"files in the dataset: {files:,} (the layout before compaction, {args.days} days at {args.rate:g} an hour: "
          f"{baseline_files:,}: a replay and a log file per match, a shard every {BASELINE_FLUSH_S:g} s)")
    print(f"most entries in one folder: {peak[0]:,} ({peak[1]}) (the layout before: {baseline_matches:,} in replays/)")
    print("first frame of a replay, as the viewer reads it (the match's day known; fresh reader): "
          + ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in times.items()))
    print("by match id alone (the bundles looked through, newest first): "
          + ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in by_id.items()))
    print(f"by id alone, the oldest match through {reads.bundles:,} bundles of full-size indexes ({reads.full_entries:,} "
          f"entries): {reads.scan_s * 1000:.1f} ms")
    if hub_s is not None:
        print(f"first frame through the embedded Hub's HTTP API (one day's bundles, by range): {hub_s * 1000:.1f} ms")
    targets = {"files": (files, 10_000), "max_entries_per_folder": (peak[0], 1_000),
               "replay_first_frame_s": (worst, 1.0)}
    for key, (value, limit) in targets.items():
        print(f"  {key} = {value:,.3f}".rstrip("0").rstrip(".") + f"  (target under {limit:,}: {'met' if value < limit else 'MISSED'})")
    print(json.dumps({
        "days": args.days, "matches": sim.matches,
        "files": files, "max_entries_per_folder": peak[0], "replay_first_frame_s": round(worst, 4),
        "replay_first_frame_by_id_s": round(worst_by_id, 4),
        "replay_first_frame_hub_s": None if hub_s is None else round(hub_s, 4),
        "baseline_files": baseline_files, "baseline_max_entries_per_folder": baseline_matches,
        "simulated_s": round(sim.simulated_s, 1),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
