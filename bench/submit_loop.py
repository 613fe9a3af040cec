"""The submitter's loop, timed: from a push to `queued`, to the validation verdict, and to
the PvE stage-1 verdict, with eight revisions already in evaluation.

    python -m bench.submit_loop [--horizon 1024] [--head-start 120] [--json]

Starts the Arena as `make run` does (embedded Hub, sandboxed teams, full matches, two
workers on this machine), pushes eight submissions (four examples, four built-in teams
packaged as repos), waits until all eight are being evaluated and `--head-start` seconds
more, then pushes a ninth (the `gatherer` example under a new repo) and times it from the
push, reading the status log. It also counts the later-stage PvE matches of the eight that
started after the push and before the newcomer's stage-1 verdict (the order puts stage 1
first, so only matches already in flight should). The last line is JSON: `queued_s`,
`validated_s`, `stage1_s`, `stage1_matches`, `later_stage_matches_started`,
`others_stages`.

Targets (issue 10): queued within 5 s, validation verdict within 30 s, stage-1 verdict
within 600 s, full 1024-tick matches.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from huggingface_hub import HfApi

from arena import PROJECT_ROOT
from arena.lifecycle import Status
from arena.settings import ArenaSettings
from matchmaking.service import _BUILTIN_POLICY, Arena, _card

EXAMPLES = PROJECT_ROOT / "examples" / "policies"
EIGHT_EXAMPLES = ("wanderer", "explorer", "gatherer", "apprentice-onnx")
EIGHT_BUILTINS = ("random", "forage", "combat", "elite")
NEWCOMER = "newcomer/gatherer"


def push(api: HfApi, repo_id: str, *, folder: Path | None = None, files: dict[str, str] | None = None, tag: str) -> float:
    """Push one submission; returns the time of the push (after the commit returned)."""
    api.create_repo(repo_id, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        staging = Path(tmp)
        if folder is not None:
            shutil.copytree(folder, staging, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
        for name, text in (files or {}).items():
            (staging / name).write_text(text)
        (staging / "README.md").write_text(_card(tag, repo_id, "bench submission"))
        api.upload_folder(repo_id=repo_id, folder_path=staging, commit_message="submit")
    return time.time()


def wait_for(predicate, *, timeout: float, poll: float = 0.2) -> float | None:
    """Poll until `predicate()` is true; the time it became true, or None at the timeout."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return time.time()
        time.sleep(poll)
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=1024)
    parser.add_argument("--head-start", type=float, default=120.0, help="seconds the eight play before the push")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--json", action="store_true", help="(the JSON line is always printed last)")
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="arena-submit-loop-"))
    settings = ArenaSettings(data_dir=data, match_horizon=args.horizon, workers=args.workers, seed_examples=False)
    arena = Arena.start(settings)
    tag = settings.submission_tag
    try:
        api = arena.api
        eight = []
        for name in EIGHT_EXAMPLES:
            eight.append(f"bench/example-{name}")
            push(api, eight[-1], folder=EXAMPLES / name, tag=tag)
        for name in EIGHT_BUILTINS:
            eight.append(f"bench/builtin-{name}")
            push(api, eight[-1], files={"policy.py": _BUILTIN_POLICY.format(name=name)}, tag=tag)
        in_pve = (Status.EVALUATING, Status.QUALIFIED, Status.EVALUATED)

        def eight_evaluating() -> bool:
            states = {s.repo_id: s for s in arena.statuses.states()}
            return all(r in states and states[r].status in in_pve for r in eight)

        if wait_for(eight_evaluating, timeout=args.timeout) is None:
            print("the eight never all reached evaluation", file=sys.stderr)
            return 1
        print(f"eight in evaluation; playing {args.head_start:.0f} s before the push", file=sys.stderr)
        time.sleep(args.head_start)
        pushed = push(api, NEWCOMER, folder=EXAMPLES / "gatherer", tag=tag)
        pushed_iso = datetime.fromtimestamp(pushed, timezone.utc).isoformat(timespec="seconds")

        def status() -> Status | None:
            mine = [s for s in arena.statuses.states() if s.repo_id == NEWCOMER]
            return mine[0].status if mine else None

        queued = wait_for(lambda: status() is not None, timeout=60, poll=0.05)
        validated = wait_for(lambda: status() not in (None, Status.QUEUED, Status.VALIDATING), timeout=300)
        verdict = wait_for(lambda: status() in (Status.QUALIFIED, Status.EVALUATED, Status.ERROR, Status.REJECTED), timeout=args.timeout)
        results = arena.store.results()
        mine = [r for r in results if r.track == "pve" and r.teams[0].policy_id == NEWCOMER]
        later = [r for r in results if r.track == "pve" and r.stage > 1 and r.teams[0].policy_id != NEWCOMER
                 and r.started_at >= pushed_iso and (verdict is None or r.started_at <= datetime.fromtimestamp(verdict, timezone.utc).isoformat())]
        states = {s.repo_id: s for s in arena.statuses.states()}
        final = states.get(NEWCOMER)
        others = {r.split("/")[1]: max((s.stage for s in states[r].pve), default=0) for r in eight}
    finally:
        arena.stop()

    def since(t: float | None) -> float | None:
        return None if t is None else round(t - pushed, 1)

    report = {
        "horizon": args.horizon, "workers": args.workers, "head_start_s": args.head_start,
        "queued_s": since(queued), "validated_s": since(validated), "stage1_s": since(verdict),
        "stage1_status": final.status.value if final else None, "stage1_reason": final.reason if final else None,
        "stage1_matches": sum(r.stage == 1 for r in mine), "later_stage_matches_started": len(later),
        "others_stages": others,
    }
    for key in ("queued_s", "validated_s", "stage1_s"):
        print(f"{key:>28}: {report[key]}", file=sys.stderr)
    targets = {"queued_s": 5, "validated_s": 30, "stage1_s": 600}
    for key, limit in targets.items():
        value = report[key]
        print(f"{key} target {limit} s: {'met' if value is not None and value <= limit else 'MISSED'}", file=sys.stderr)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
