"""Fit the built-in teams' anchor ratings (`arena.ratings.ANCHORS`) from their matches.

    python -m bench.anchors --matches 12 [--workers 2]
    python -m bench.anchors --from calibration.json   # matches saved by bench.calibrate_tiers --json

Plays full matches of the PvE stage-1 line-up with a Combat team as the 16th (7 Random,
5 Forage, 4 Combat teams; the teams that fill PvP pools), fits the Plackett-Luce model
with Random fixed at 0, and prints the other built-ins' ratings with bootstrap intervals.
Refit and update `ANCHORS` whenever the built-ins change.
"""

from __future__ import annotations

import argparse
import json
import sys

from arena.ratings import outcomes, plackett_luce
from arena.schema import MatchResult
from bench.match_speed import stage1_lineup
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec
from matchmaking.service.executor import default_workers, run_matches


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=12)
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--seed", type=int, default=2000)
    parser.add_argument("--from", dest="source", help="a bench.calibrate_tiers --json file to reuse")
    args = parser.parse_args()
    if args.source:
        with open(args.source) as f:
            results = [MatchResult.from_dict(m) for m in json.load(f)["matches"]]
    else:
        specs = [MatchSpec(seed=args.seed + i, policies=stage1_lineup(), config=MatchConfig()) for i in range(args.matches)]
        results = [o.result for o in run_matches(specs, workers=args.workers) if o.result is not None]
    history = outcomes([MatchResult(**{**r.__dict__, "track": "pvp"}) for r in results])
    fitted = plackett_luce(history, anchors={"builtin:random": 0.0}, bootstrap=200)
    print(f"{len(results)} matches; Plackett-Luce ratings with builtin:random fixed at 0:")
    for player, rating in sorted(fitted.items(), key=lambda kv: -kv[1].rating):
        print(f"  {player:<18} {rating.rating:6.2f}   95% interval {rating.low:6.2f} to {rating.high:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
