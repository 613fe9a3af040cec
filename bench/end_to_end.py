"""Matches per hour through the whole Arena on this machine.

    python -m bench.end_to_end [--minutes 10]

Starts the Arena as `make run` does (embedded Hub seeded with the example and built-in
submissions, full 1024-tick matches, every team of a submission sandboxed, replays
recorded, history written), lets the scheduler run for `--minutes`, and counts the
matches recorded: discovery, validation and bookkeeping included.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from arena.settings import ArenaSettings
from matchmaking.service.space import Arena


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--json")
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="arena-bench-"))
    arena = Arena.start(ArenaSettings(data_dir=data))
    started = time.monotonic()
    try:
        time.sleep(args.minutes * 60)
    finally:
        elapsed = time.monotonic() - started
        arena.stop()
    results = arena.store.results()
    by_track = {t: sum(r.track == t for r in results) for t in ("pve", "pvp")}
    report = {
        "minutes": round(elapsed / 60, 1),
        "matches": len(results),
        "matches_per_hour": round(len(results) * 3600 / elapsed, 1),
        **{f"{t}_matches": n for t, n in by_track.items()},
        "revisions": len(arena.statuses.states()),
    }
    print(
        f"{report['matches']} full matches recorded in {report['minutes']} minutes "
        f"({report['pve_matches']} PvE, {report['pvp_matches']} PvP): {report['matches_per_hour']} matches/hour end to end"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
