"""How much of a team's result is luck, measured on a recorded history.

    python -m bench.luck [--data DIR] [--json] [--track pvp] [--horizon 1024] [--bootstrap 50]

Reads the history folder DIR/history (default: the Space's data folder, `ArenaSettings`),
fits `arena.luck.luck_report` on every match with spawn points recorded, and prints the
figures: the spread of the policies' strengths beside the spread of the spawn side, the
spawn point along the edge, the slot and the side on a given map (rating units, noise
taken out, bootstrap 95% intervals), and the shares of Achievement's variance (policy,
map, side, index, slot, lobby, map x side, unexplained). The last line is one JSON object
of the figures (`policy_sd`, `side_sd`, `index_sd`, `slot_sd`, `map_side_sd`, `shares`,
`matches`, `teams`, ...); `--json` prints only that line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from arena.errors import NotEnoughMatchesError
from arena.luck import EFFECT_GROUPS, LABELS, MIN_MATCHES, SHARE_GROUPS, luck_report


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.luck", description="How much of a result is luck, from a history.")
    parser.add_argument("--data", type=Path, help="data folder holding history/ (default: the Space's, ArenaSettings.data_dir)")
    parser.add_argument("--json", action="store_true", help="print only the JSON line")
    parser.add_argument("--track", action="append", help="only this track's matches (repeatable; default: all)")
    parser.add_argument("--horizon", type=int, help="only matches of this many ticks (default: all)")
    parser.add_argument("--latest", type=int, help="only the latest this many matches (default: all)")
    parser.add_argument("--bootstrap", type=int, default=50, help="resamples of whole matches (default 50)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--min-matches", type=int, default=MIN_MATCHES)
    args = parser.parse_args()
    if args.data is None:
        from arena.settings import ArenaSettings

        args.data = ArenaSettings.from_env().data_dir
    from history.store import HistoryReader

    started = time.perf_counter()
    frame = HistoryReader(args.data / "history").table().to_pandas()
    try:
        report = luck_report(frame, tracks=args.track, horizon=args.horizon, latest=args.latest,
                             bootstrap=args.bootstrap, seed=args.seed, min_matches=args.min_matches)
    except NotEnoughMatchesError as exc:
        print(f"{args.data / 'history'}: {exc}", file=sys.stderr)
        return 1
    figures = report.to_json()
    figures["seconds"] = round(time.perf_counter() - started, 1)
    if not args.json:
        for line in report.summary():
            print(line)
        print()
        print(f"{'group':<24}{'spread':>8}{'95% interval':>16}{'raw':>8}{'levels':>8}")
        for g in ("policy", *EFFECT_GROUPS):
            s = report.effects.spreads[g]
            interval = "-" if s.low is None else f"{s.low:.3f}-{s.high:.3f}"
            print(f"{LABELS[g]:<24}{s.sd:>8.3f}{interval:>16}{s.raw:>8.3f}{s.levels:>8}")
        print()
        print(f"{'share of Achievement variance':<32}{'share':>8}{'df':>6}")
        for g in (*SHARE_GROUPS, "residual"):
            print(f"{LABELS[g]:<32}{report.achievement.shares[g]:>8.1%}{report.achievement.degrees.get(g, ''):>6}")
        print(f"(Achievement variance {report.achievement.variance:.1f} points^2, full-model R^2 {report.achievement.r2:.3f}; "
              f"{figures['seconds']} s)")
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
