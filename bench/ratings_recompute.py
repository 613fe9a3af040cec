"""Recomputing every rating, and the standings behind the tables, from N synthetic matches.

    python -m bench.ratings_recompute --matches 100000 --json

A population of 1,000 policies with hidden skills plays N uniformly random 16-team pools
(`arena.simulation.random_history_columns`: the history table's columns, as the store
reads them). In one run the bench times:

- `outcomes_s`: the rows read as rated results (`history.index.rated_table`: columns,
  no object per match);
- `trueskill_full_s`: TrueSkill over the whole history (`arena.ratings.trueskill_ratings`,
  compiled where numba is installed), and, as the baseline, the `trueskill` package on the
  first `--package-sample` matches of the same history: `trueskill_max_abs_diff` is the
  largest difference of any player's mu or sigma between the two after those matches,
  `trueskill_speedup_vs_package` the ratio of their times per match;
- `trueskill_last_1pct_s`: a checkpoint at 99% of the history extended by the last 1%;
- `elo_s`, `mle_fit_s` (the Plackett-Luce point fit) and `bootstrap_200_s` (the fit with its
  200 resamples, as the standings compute it, on `bootstrap_workers` threads);
- `standings_s`: `leaderboard.standings.compute` from the rows, with `--standings-bootstrap`
  resamples (20, as `bench.tables_scale` and the earlier figure of 145 s);
- `standings_update_1pct_s`: the refresher's path when 1% more matches arrive:
  `leaderboard.standings.update` given the previous standings (of the first 99%) and only
  the new rows (TrueSkill and Elo carried forward, per-policy sums merged, match summaries
  appended; the Plackett-Luce fit, its bootstrap and the head to head kept from the
  previous standings, rerun on the refresher's `mle_every_s` schedule);
- `ratings_update_1pct_s`: the part of that update which is the ratings (the new rows read
  as rated results, TrueSkill and Elo extended from the previous standings);
- `peak_rss_mb`: the peak resident memory of the whole recomputation as the Space runs it
  from the history: a fresh process reads the N matches' rows from a history folder written
  by this run as the dataset holds it after compaction (one shard a day of
  `--shard-matches` matches, 6,000: a day at 250 matches an hour), one shard at a time
  (`history.index.HistoryIndex`, as a Space reads it), and rates them (`compute`, as the
  refresher does); `recompute_s` its time, reading included.
  `peak_rss_run_mb` is that of this whole run (the generator's arrays, the timed engines,
  the previous standings of 99% and the updated ones held besides);
- `compile_s`: numba's compilation of the kernels, or loading them from its cache.

With `--json` the figures are printed as one JSON object on the last line of stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import trueskill

from arena import kernels
from arena.ratings import (
    DRAW_PROBABILITY,
    TRUESKILL_BETA,
    TRUESKILL_MU,
    TRUESKILL_SIGMA,
    Outcome,
    RatedTable,
    elo_ratings,
    plackett_luce,
    trueskill_ratings,
)
from arena.simulation import Population, random_history_columns
from history.index import HistoryIndex, narrow, rated_table, with_players
from history.store import TEAM_SCHEMA, HistoryReader
from leaderboard.standings import compute, update

#: Targets of issue 12 at 100,000 matches (seconds) and at 1,000,000 (update, memory).
TARGETS = {"trueskill_full_s": 10.0, "trueskill_max_abs_diff": 1e-6, "bootstrap_200_s": 60.0, "standings_s": 20.0}
TARGETS_1M = {"standings_update_1pct_s": 10.0, "peak_rss_mb": 4096.0}


def package_trueskill(history) -> tuple[dict[str, trueskill.Rating], float]:
    """The `trueskill` package over `history` (teams sorted by player id, as ours), and its time."""
    env = trueskill.TrueSkill(mu=TRUESKILL_MU, sigma=TRUESKILL_SIGMA, beta=TRUESKILL_BETA, tau=0.0,
                              draw_probability=DRAW_PROBABILITY)
    ratings: dict[str, trueskill.Rating] = {}
    started = time.perf_counter()
    for o in history:
        order = sorted(range(len(o.players)), key=lambda i: (o.players[i], i))
        ranks = o.ranks()
        rated = env.rate([(ratings.get(o.players[i], env.create_rating()),) for i in order],
                         ranks=[ranks[i] for i in order])
        for i, team in zip(order, rated):
            ratings[o.players[i]] = team[0]
    return ratings, time.perf_counter() - started


def timed(fn):
    started = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - started


def peak_rss_mb() -> float:
    """This process's peak resident memory since it started its program. Linux's `VmHWM`,
    not `ru_maxrss`: a child keeps the larger of its own peak and its parent's resident
    memory when it was forked (this bench's child read 4.5 GB, the bench's own size, for a
    recomputation that peaked at 3.2 GB when started from a shell)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def say(text: str) -> None:
    print(text, flush=True)


def write_history(frame: pd.DataFrame, folder: Path, *, shard_matches: int, writer: str = "") -> int:
    """`frame` (whole matches in order, 16 rows each) as a history folder after compaction:
    one shard a day (`data/YYYY/MM/DD/day-*.parquet`, the names ending in `-writer` when one
    is given) of `shard_matches` matches, strings dictionary-encoded in the file as pyarrow
    writes them. Returns the shards written."""
    rows = shard_matches * 16
    day = datetime(2026, 1, 1, tzinfo=timezone.utc)
    shards = 0
    for start in range(0, len(frame), rows):
        table = pa.Table.from_pandas(frame.iloc[start:start + rows], preserve_index=False).cast(TEAM_SCHEMA)
        path = folder / "data" / (day + timedelta(days=shards)).strftime("%Y/%m/%d") / f"day-{shards:08d}{'-' + writer if writer else ''}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
        shards += 1
    return shards


def recompute_from(folder: Path, bootstrap: int) -> dict[str, float]:
    """In this (fresh) process: the history folder's shards read one at a time and folded
    into the standings, as the Space's refresher recomputes them; the peak resident memory
    and the time."""
    started = time.perf_counter()
    standings = compute(HistoryIndex(HistoryReader(folder)).refresh().folded, bootstrap=bootstrap)
    return {"recompute_s": round(time.perf_counter() - started, 1), "peak_rss_mb": round(peak_rss_mb(), 0),
            "matches": standings.matches, "chunks": len(standings.teams.chunks),
            "shards": len(HistoryReader(folder).shard_names())}


def recompute_in_child(frame: pd.DataFrame, bootstrap: int, *, shard_matches: int) -> dict[str, float]:
    """`recompute_from` in a new Python process, on `frame` written as a history folder."""
    with tempfile.TemporaryDirectory(prefix="ratings-recompute-") as folder:
        shards = write_history(frame, Path(folder), shard_matches=shard_matches)
        say(f"the history written as {shards} day shards of {shard_matches} matches for the recomputation")
        done = subprocess.run([sys.executable, "-m", "bench.ratings_recompute", "--recompute-from", str(folder),
                               "--standings-bootstrap", str(bootstrap)], capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"the recomputation in a fresh process failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=100_000, help="synthetic matches (N)")
    parser.add_argument("--policies", type=int, default=1000)
    parser.add_argument("--package-sample", type=int, default=2000, help="matches rated by the trueskill package")
    parser.add_argument("--bootstrap", type=int, default=200, help="resamples of the timed bootstrap")
    parser.add_argument("--standings-bootstrap", type=int, default=20, help="resamples inside the timed standings")
    parser.add_argument("--workers", type=int, default=None, help="bootstrap threads (default: one per core)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on the last line")
    parser.add_argument("--shard-matches", type=int, default=6000,
                        help="matches a shard of the history the recomputation reads (a day at 250 an hour)")
    parser.add_argument("--recompute-from", type=Path, default=None, help=argparse.SUPPRESS)  # the child's part
    return parser.parse_args()


def generated(args: argparse.Namespace, report: dict[str, object], compile_s: float) -> tuple[pd.DataFrame, RatedTable]:
    """The synthetic history's rows, narrowed as the store's shards hold them, and read as
    rated results (both timed)."""
    population = Population.random(args.policies, seed=0)
    columns, gen_s = timed(lambda: random_history_columns(population, args.matches, seed=args.matches))
    # one block per column, not a consolidated copy; the strings dictionary-encoded, as the
    # store's Parquet shards hold them (`leaderboard.standings.narrow`)
    frame = narrow(pd.DataFrame(columns, copy=False))
    del columns
    history, read_s = timed(lambda: rated_table(with_players(frame)))
    report.update(generate_s=round(gen_s, 2), outcomes_s=round(read_s, 2))
    say(f"{args.matches} matches of {args.policies} policies ({len(frame)} rows) generated in {gen_s:.1f} s, "
        f"read as rated results in {read_s:.1f} s; kernels compiled/loaded in {compile_s:.1f} s (numba: {kernels.AVAILABLE})")
    return frame, history


def time_trueskill(history: RatedTable, args: argparse.Namespace, report: dict[str, object]) -> None:
    """TrueSkill over the whole history, against the `trueskill` package on a sample, and
    the last 1% from a checkpoint."""
    _, ts_s = timed(lambda: trueskill_ratings(history, anchors={}))
    sample = history.take(slice(0, max(args.package_sample, 1))).outcomes()
    if args.package_sample:
        package, package_s = package_trueskill(sample)
        ours, ours_sample_s = timed(lambda: trueskill_ratings(sample, anchors={}))
        diff = max(max(abs(ours.ratings[p].mu - r.mu), abs(ours.ratings[p].sigma - r.sigma)) for p, r in package.items())
    else:  # --package-sample 0: no baseline (the 1,000,000-match run, where it measures nothing new)
        package_s, ours_sample_s, diff = float("nan"), float("nan"), float("nan")
    cut = int(len(history) * 0.99)
    checkpoint = trueskill_ratings(history.take(slice(0, cut)), anchors={})
    _, last_s = timed(lambda: trueskill_ratings(history.take(slice(cut, None)), state=checkpoint, anchors={}))
    report.update(
        trueskill_full_s=round(ts_s, 2),
        trueskill_ms_per_match=round(ts_s / len(history) * 1000, 4),
        trueskill_max_abs_diff=float(diff),
        package_ms_per_match=round(package_s / len(sample) * 1000, 3),
        trueskill_speedup_vs_package=round((package_s / len(sample)) / (ours_sample_s / len(sample)), 1),
        trueskill_last_1pct_s=round(last_s, 3),
    )
    if not args.package_sample:
        report.update(trueskill_max_abs_diff=None, package_ms_per_match=None, trueskill_speedup_vs_package=None)
    say(f"TrueSkill: {ts_s:.2f} s ({report['trueskill_ms_per_match']} ms/match; the package "
        f"{report['package_ms_per_match']} ms/match on the first {len(sample)}: {report['trueskill_speedup_vs_package']}x; "
        f"largest difference from it {diff:.2e}); last 1% from a checkpoint {last_s:.2f} s")


def time_elo_and_mle(history: RatedTable, args: argparse.Namespace, report: dict[str, object]) -> None:
    """Elo, the Plackett-Luce point fit, and the fit with its bootstrap on every core."""
    _, elo_s = timed(lambda: elo_ratings(history, anchors={}))
    _, fit_s = timed(lambda: plackett_luce(history, anchors={}, bootstrap=0))
    workers = args.workers or os.cpu_count() or 1
    _, boot_s = timed(lambda: plackett_luce(history, anchors={}, bootstrap=args.bootstrap, workers=workers))
    report.update(elo_s=round(elo_s, 2), mle_fit_s=round(fit_s, 2), bootstrap_200_s=round(boot_s, 1),
                  bootstrap_resamples=args.bootstrap, bootstrap_workers=workers)
    say(f"Elo {elo_s:.2f} s; Plackett-Luce fit {fit_s:.2f} s; with its {args.bootstrap} bootstrap resamples "
        f"{boot_s:.1f} s on {workers} threads")


def time_standings(frame: pd.DataFrame, args: argparse.Namespace, report: dict[str, object]) -> None:
    """The standings from the rows; their update by 1% more matches (and its ratings part);
    the whole recomputation from day shards in a fresh process."""
    standings_s = timed(lambda: compute(frame, bootstrap=args.standings_bootstrap))[1]  # not kept: memory
    child = recompute_in_child(frame, args.standings_bootstrap, shard_matches=args.shard_matches)
    assert child["matches"] == args.matches, child
    matches = frame["match_id"].to_numpy()
    first = matches[int(args.matches * 0.99) * 16] if args.matches >= 100 else matches[-1]
    cut_rows = int((matches < first).sum())
    previous = compute(frame.iloc[:cut_rows], bootstrap=args.standings_bootstrap)
    added = frame.iloc[cut_rows:]  # the new shards' rows, as the refresher reads them
    update_s = timed(lambda: update(previous, added, refresh_mle=False, bootstrap=args.standings_bootstrap))[1]

    def ratings_update():  # the ratings alone carried forward: the new rows read, TrueSkill and Elo extended
        table = rated_table(with_players(added))
        trueskill_ratings(table, state=previous.trueskill)
        elo_ratings(table, state=previous.elo, extends=True)

    _, ratings_update_s = timed(ratings_update)
    report["ratings_update_1pct_s"] = round(ratings_update_s, 2)
    report.update(standings_s=round(standings_s, 1), standings_bootstrap=args.standings_bootstrap,
                  standings_update_1pct_s=round(update_s, 2), peak_rss_mb=child["peak_rss_mb"],
                  recompute_s=child["recompute_s"], recompute_shards=child["shards"], recompute_chunks=child["chunks"],
                  peak_rss_run_mb=round(peak_rss_mb(), 0))
    say(f"standings (bootstrap {args.standings_bootstrap}) {standings_s:.1f} s; after 1% more matches "
        f"(previous standings, refresh_mle=False) {update_s:.2f} s, of which the ratings {ratings_update_s:.2f} s; "
        f"the whole recomputation in a fresh process (the day shards read one at a time, folded into the standings) "
        f"{report['recompute_s']} s, peak RSS {report['peak_rss_mb']:.0f} MB; {report['peak_rss_run_mb']:.0f} MB "
        f"for this run (the generator, the engines, the previous standings and the updated ones)")


def main() -> int:
    args = parse()
    if args.recompute_from is not None:
        print(json.dumps(recompute_from(args.recompute_from, args.standings_bootstrap)))
        return 0
    report: dict[str, object] = {"matches": args.matches, "policies": args.policies, "numba": kernels.AVAILABLE}

    # the kernels compile (or load from numba's cache) on first use: timed apart
    tiny = [Outcome(("a", "1"), ("x", "y", "z"), (2, 1, 1))]
    _, compile_s = timed(lambda: (trueskill_ratings(tiny, anchors={}), elo_ratings(tiny, anchors={}),
                                  plackett_luce(tiny, anchors={}, bootstrap=2)))
    report["compile_s"] = round(compile_s, 2)
    frame, history = generated(args, report, compile_s)
    time_trueskill(history, args, report)
    time_elo_and_mle(history, args, report)
    time_standings(frame, args, report)

    targets = TARGETS if args.matches <= 100_000 else TARGETS_1M
    met = {key: report[key] is not None and bool(report[key] <= limit) for key, limit in targets.items()}
    report["targets_met"] = met
    for key, ok in met.items():
        say(f"  {key} = {report[key]} (target <= {targets[key]}): {'met' if ok else 'MISSED'}")
    if args.json:
        print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
