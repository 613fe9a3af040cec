"""One owner floods the queue, another waits: how much longer does the other's verdict take?

    python -m bench.flood [--horizon 32] [--flood 25] [--json]

Two runs of the Space as `make run` starts it (embedded Hub, webhooks, sandboxed teams, two
workers), each on an empty data folder, without the seeded examples:

- **alone**: the victim (`victim/newcomer`, `bench/policies/newcomer`) is pushed, and timed
  from its push to its stage-1 verdict;
- **flooded**: the owner `spammer` pushes `--flood` repos (the `explorer`, `wanderer` and
  `gatherer` examples in turn, as issue 37 measured), then the victim pushes, timed the same.

The last line is JSON: `victim_verdict_s_alone`, `victim_verdict_s_flooded`, `flood_ratio`
(flooded over alone; target at most 1.25), and `victim_pve_seat_share`, the victim's share
of the PvE seats of submissions in the matches that started between its push and its verdict
in the flooded run.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from app import build_space
from arena.lifecycle import Status
from arena.settings import ArenaSettings
from bench.submit_loop import EXAMPLES, NEWCOMER, free_port, push, wait_for

VICTIM = "victim/newcomer"
FLOOD_EXAMPLES = ("explorer", "wanderer", "gatherer")
DECIDED = (Status.QUALIFIED, Status.EVALUATED, Status.REJECTED, Status.ERROR)


def run(horizon: int, flood: int, timeout: float) -> dict:
    """One Space: `flood` spammer repos, then the victim; the victim's verdict time and seats."""
    data = Path(tempfile.mkdtemp(prefix="arena-flood-"))
    settings = ArenaSettings(data_dir=data, match_horizon=horizon, seed_examples=False, local_hub_port=0, workers=2)
    port = free_port()
    space = build_space(settings, space_url=f"http://127.0.0.1:{port}", bootstrap=0)
    space.serve(host="127.0.0.1", port=port, block=False, quiet=True)
    arena = space.arena
    tag = settings.submission_tag
    try:
        for i in range(flood):
            name = FLOOD_EXAMPLES[i % len(FLOOD_EXAMPLES)]
            push(arena.api, f"spammer/{name}-{i:02d}", folder=EXAMPLES / name, tag=tag)
        if flood:  # the flood is in the queue, as the victim found it
            wait_for(lambda: sum(s.id.policy_id.startswith("spammer/") for s in arena.statuses.states()) >= flood,
                     timeout=timeout)
        pushed = push(arena.api, VICTIM, folder=NEWCOMER, tag=tag)

        def verdict() -> bool:
            mine = [s for s in arena.statuses.states() if s.id.policy_id == VICTIM]
            return bool(mine) and mine[0].status in DECIDED

        decided = wait_for(verdict, timeout=timeout)
        if decided is None:
            raise SystemExit(f"the victim had no verdict within {timeout:.0f} s")
        since = datetime.fromtimestamp(pushed, timezone.utc).isoformat(timespec="seconds")
        until = datetime.fromtimestamp(decided, timezone.utc).isoformat(timespec="seconds")
        seats = [r.teams[0].policy_id for r in arena.store.results() if r.track == "pve" and since <= r.started_at <= until]
    finally:
        space.stop()
    return {"verdict_s": round(decided - pushed, 1), "seats": len(seats), "victim_seats": seats.count(VICTIM)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=32)
    parser.add_argument("--flood", type=int, default=25)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--json", action="store_true", help="(the JSON line is always printed last)")
    args = parser.parse_args()
    started = time.monotonic()
    alone = run(args.horizon, 0, args.timeout)
    print(f"alone: {alone}", file=sys.stderr)
    flooded = run(args.horizon, args.flood, args.timeout)
    print(f"flooded: {flooded}", file=sys.stderr)
    ratio = flooded["verdict_s"] / alone["verdict_s"]
    report = {"horizon": args.horizon, "flood": args.flood, "victim_verdict_s_alone": alone["verdict_s"],
              "victim_verdict_s_flooded": flooded["verdict_s"], "flood_ratio": round(ratio, 3),
              "victim_pve_seat_share": round(flooded["victim_seats"] / max(flooded["seats"], 1), 3),
              "wall_s": round(time.monotonic() - started, 1)}
    print(f"flood_ratio {ratio:.2f} (target at most 1.25: {'met' if ratio <= 1.25 else 'MISSED'})", file=sys.stderr)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
