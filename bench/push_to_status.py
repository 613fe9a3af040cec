"""Seconds from a push to its first status, and to its validation verdict, on a busy Space.

    python -m bench.push_to_status [--pushes 3] [--horizon 1024] [--json FILE]

Starts the Arena as `make run` does (embedded Hub seeded with the 8 example and built-in
submissions, which are then validated and evaluated: full matches by default), but with
discovery polling only every 600 s so that nothing but the webhook can explain a fast
status, and serves the Space's Gradio app with its webhook route on a free port. Once the
seeded revisions are being evaluated, it pushes `examples/policies/wanderer` `--pushes`
times, each to a new repo, with the participants' own command
(`python -m matchmaking.submit`, a subprocess, the embedded Hub found through the data
folder), and times from the moment the command prints its commit (right after the upload
returned) until the status log shows the revision `queued`, then its validation verdict.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from arena import PROJECT_ROOT
from arena.lifecycle import Status
from arena.settings import ArenaSettings

VERDICTS = (Status.EVALUATING, Status.REJECTED, Status.EVALUATED, Status.QUALIFIED, Status.ERROR)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _until(condition, timeout: float) -> float | None:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if condition():
            return time.monotonic() - started
        time.sleep(0.02)
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pushes", type=int, default=3)
    parser.add_argument("--horizon", type=int, default=1024, help="ticks of the PvE matches keeping the Space busy")
    parser.add_argument("--json")
    args = parser.parse_args()

    from app import build_space

    data = Path(tempfile.mkdtemp(prefix="arena-bench-"))
    settings = ArenaSettings(data_dir=data, sync_every_s=600.0, match_horizon=args.horizon, local_hub_port=0)
    port = _free_port()
    space = build_space(settings, space_url=f"http://127.0.0.1:{port}", bootstrap=0)
    space.serve(host="127.0.0.1", port=port, block=False, quiet=True)
    arena = space.arena
    rows = []
    try:
        busy = _until(lambda: sum(s.status is Status.EVALUATING for s in arena.statuses.states()) >= 4, timeout=600)
        evaluating = sum(s.status is Status.EVALUATING for s in arena.statuses.states())
        print(f"{evaluating} seeded revisions evaluating after {busy or 600:.0f} s; pushing", flush=True)
        for i in range(args.pushes):
            folder = data / "pushes" / f"wanderer-{i}"
            shutil.copytree(PROJECT_ROOT / "examples" / "policies" / "wanderer", folder)
            env = {**os.environ, "NMMO_ARENA_DATA": str(data), "PYTHONPATH": str(PROJECT_ROOT)}
            command = subprocess.Popen([sys.executable, "-m", "matchmaking.submit", str(folder), "--repo", f"bench/wanderer-{i}"],
                                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            sha, pushed = "", 0.0
            for line in command.stdout:  # the commit is printed as soon as the upload returned
                if line.startswith("Commit: "):
                    sha, pushed = line.split()[-1], time.monotonic()
            if command.wait(timeout=120) != 0 or not sha:
                print(command.stderr.read(), file=sys.stderr)
                return 1
            key = (f"bench/wanderer-{i}", sha)
            queued = _until(lambda key=key: arena.statuses.get(*key) is not None, timeout=60)
            _until(lambda key=key: (s := arena.statuses.get(*key)) is not None and s.status in VERDICTS, timeout=300)
            verdict = time.monotonic() - pushed
            state = arena.statuses.get(*key)
            rows.append({"repo": key[0], "queued_s": queued, "verdict_s": round(verdict, 2),
                         "verdict": state.status.value if state else "none"})
            print(f"push {i + 1}: queued after {queued:.2f} s, {rows[-1]['verdict']} after {verdict:.1f} s", flush=True)
    finally:
        space.stop()
    report = {
        "horizon": args.horizon,
        "pushes": rows,
        "queued_s_median": statistics.median(r["queued_s"] for r in rows),
        "queued_s_max": max(r["queued_s"] for r in rows),
        "verdict_s_median": statistics.median(r["verdict_s"] for r in rows),
        "verdict_s_max": max(r["verdict_s"] for r in rows),
    }
    print(f"push -> queued: median {report['queued_s_median']:.2f} s, max {report['queued_s_max']:.2f} s (target 5 s); "
          f"push -> validation verdict: median {report['verdict_s_median']:.1f} s, max {report['verdict_s_max']:.1f} s "
          "(target 30 s)")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
