"""Recomputing every rating from scratch over 10,000 and 100,000 synthetic matches.

    python -m bench.ratings_recompute [--sizes 10000 100000] [--package-sample 2000]

A population of 1,000 policies with hidden skills plays uniformly random 16-team pools
(`arena.simulation`). For each size the bench times, in one run:

- TrueSkill through `arena.trueskill_ffa` (this project's specialisation), and the
  `trueskill` package on the first `--package-sample` matches of the same history, as the
  baseline: the ratio is per match;
- the incremental update: a checkpoint at 99% of the history plus the last 1%;
- Elo (vectorised per match);
- the Plackett-Luce fit, and its bootstrap (seconds per resample, and for 200).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import trueskill

from arena.ratings import (
    DRAW_PROBABILITY,
    TRUESKILL_BETA,
    TRUESKILL_MU,
    TRUESKILL_SIGMA,
    _design,
    _fit,
    elo_ratings,
    outcomes,
    plackett_luce,
    trueskill_ratings,
)
from arena.simulation import Population, random_history


def package_trueskill(history) -> float:
    """Seconds for the `trueskill` package to rate `history` (same order and sorting)."""
    env = trueskill.TrueSkill(mu=TRUESKILL_MU, sigma=TRUESKILL_SIGMA, beta=TRUESKILL_BETA, tau=0.0, draw_probability=DRAW_PROBABILITY)
    ratings: dict[str, trueskill.Rating] = {}
    started = time.perf_counter()
    for o in history:
        order = sorted(range(len(o.players)), key=lambda i: (o.players[i], i))
        ranks = o.ranks()
        rated = env.rate([(ratings.get(o.players[i], env.create_rating()),) for i in order], ranks=[ranks[i] for i in order])
        for i, team in zip(order, rated):
            ratings[o.players[i]] = team[0]
    return time.perf_counter() - started


def timed(fn):
    started = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description="Full recomputation of ratings.")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--policies", type=int, default=1000)
    parser.add_argument("--package-sample", type=int, default=2000)
    parser.add_argument("--resamples", type=int, default=5, help="bootstrap resamples actually timed")
    parser.add_argument("--json")
    args = parser.parse_args()

    population = Population.random(args.policies, seed=0)
    report = {}
    for size in args.sizes:
        history = outcomes(random_history(population, size, seed=size), tracks=("pvp",))
        full, ts_s = timed(lambda: trueskill_ratings(history, anchors={}))
        sample = history[: args.package_sample]
        package_s = package_trueskill(sample)
        ours_sample, ours_sample_s = timed(lambda: trueskill_ratings(sample, anchors={}))
        cut = int(len(history) * 0.99)
        checkpoint = trueskill_ratings(history[:cut], anchors={})
        _, incremental_s = timed(lambda: trueskill_ratings(history[cut:], state=checkpoint, anchors={}))
        _, elo_s = timed(lambda: elo_ratings(history, anchors={}))
        fitted, fit_s = timed(lambda: plackett_luce(history, anchors={}, bootstrap=0))
        design = _design(history)
        import numpy as np

        estimate = np.array([fitted[p].rating for p in design.players])
        rng = np.random.default_rng(0)
        started = time.perf_counter()
        for _ in range(args.resamples):
            weights = np.bincount(rng.integers(0, len(history), size=len(history)), minlength=len(history)).astype(float)
            _fit(design, weights, {}, 0.01, start=estimate)
        resample_s = (time.perf_counter() - started) / args.resamples
        report[size] = {
            "matches": size,
            "trueskill_s": round(ts_s, 2),
            "trueskill_ms_per_match": round(ts_s / size * 1000, 3),
            "package_ms_per_match": round(package_s / len(sample) * 1000, 3),
            "speedup_vs_package": round((package_s / len(sample)) / (ours_sample_s / len(sample)), 1),
            "incremental_last_1pct_s": round(incremental_s, 2),
            "elo_s": round(elo_s, 2),
            "plackett_luce_fit_s": round(fit_s, 2),
            "bootstrap_s_per_resample": round(resample_s, 2),
            "bootstrap_200_s": round(resample_s * 200, 1),
        }
        r = report[size]
        print(
            f"{size:>7} matches: TrueSkill {r['trueskill_s']} s ({r['trueskill_ms_per_match']} ms/match, "
            f"package {r['package_ms_per_match']} ms/match on the first {len(sample)}: {r['speedup_vs_package']}x), "
            f"last 1% incrementally {r['incremental_last_1pct_s']} s; Elo {r['elo_s']} s; "
            f"Plackett-Luce fit {r['plackett_luce_fit_s']} s, bootstrap {r['bootstrap_s_per_resample']} s/resample "
            f"({r['bootstrap_200_s']} s for 200)",
            flush=True,
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
