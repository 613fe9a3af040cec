"""The submitter's loop, timed: from a push to `queued`, to the validation verdict, to the
first PvE figure on the page and to the PvE stage-1 verdict, while other revisions are
being evaluated.

    python -m bench.submit_loop [--horizon 1024] [--early 120] [--cases seeded,early,late] [--json]

**seeded** (the case of issue 36, `push_to_first_figure_s` and `push_to_verdict_s`): the
Space on its default settings, as `make run` starts it, with the ten seeded submissions
(examples and packaged built-ins); once all ten are in PvE stage 1, `newcomer/first`
(`bench/policies/newcomer`, written from the docs alone) is pushed and timed until the Space's own `/pve_table` endpoint
(what the PvE tab shows) has a figure of it, and until its stage-1 verdict. Targets: 90 s
and 600 s.

Starts the Arena as `make run` does (embedded Hub, webhooks, sandboxed teams, full matches,
two workers on this machine) and pushes eight submissions (four examples, four built-in
teams packaged as repos). Two newcomers, each `bench/policies/newcomer` under a new repo, are
then pushed and timed from their push, reading the status log:

- `early`, `--early` seconds after the eight are all being evaluated: every one of them is
  still in stage 1, so the newcomer catches up and then shares the workers round-robin
  with them (the fair share);
- `late`, once all eight (and `early`) have their stage-1 verdicts and are being
  evaluated in later stages: the case of the issue, where stage 1 goes first.

For `late` it also counts the later-stage PvE matches of the others that started after its
push and before its stage-1 verdict (only those already in flight at the push should).
The last line is JSON: per newcomer `queued_s`, `validated_s`, `stage1_s`, `stage1_matches`,
and for `late` `later_stage_matches_started`.

Targets (issue 10): queued within 5 s, validation verdict within 30 s, stage-1 verdict
within 600 s with full 1024-tick matches.

The last line is JSON: `push_to_first_figure_s` and `push_to_verdict_s` (seeded), and the
`early` and `late` records.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from huggingface_hub import HfApi

from app import build_space
from arena import PROJECT_ROOT
from arena.lifecycle import Status
from arena.settings import ArenaSettings
from matchmaking.hub.pushing import push_submission, submission_card
from matchmaking.service.space import Arena
from matchmaking.teams.builtin import packaged_policy

EXAMPLES = PROJECT_ROOT / "examples" / "policies"
#: The policy the newcomers push: written from the docs alone, and like no other entry (a
#: copy of an example would be refused as a duplicate of the seeded one).
NEWCOMER = PROJECT_ROOT / "bench" / "policies" / "newcomer"
EIGHT_EXAMPLES = ("wanderer", "explorer", "gatherer", "apprentice-onnx")
EIGHT_BUILTINS = ("random", "forage", "combat", "elite")


def push(api: HfApi, repo_id: str, *, folder: Path | None = None, files: dict[str, str] | None = None, tag: str) -> float:
    """Push one submission; returns the time of the push (after the commit returned)."""
    push_submission(api, repo_id, folder=folder, files=files, card=submission_card(tag, repo_id, "bench submission"))
    return time.time()


def wait_for(predicate, *, timeout: float, poll: float = 0.2) -> float | None:
    """Poll until `predicate()` is true; the time it became true, or None at the timeout."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return time.time()
        time.sleep(poll)
    return None


def timed(arena: Arena, repo_id: str, pushed: float, *, timeout: float) -> dict:
    """Times from `pushed` to the newcomer's `queued`, validation verdict and stage-1 verdict."""
    def status() -> Status | None:
        mine = [s for s in arena.statuses.states() if s.id.policy_id == repo_id]
        return mine[0].status if mine else None

    queued = wait_for(lambda: status() is not None, timeout=60, poll=0.05)
    validated = wait_for(lambda: status() not in (None, Status.QUEUED, Status.VALIDATING), timeout=300)
    verdict = wait_for(lambda: status() in (Status.QUALIFIED, Status.EVALUATED, Status.ERROR, Status.REJECTED), timeout=timeout)
    state = next(s for s in arena.statuses.states() if s.id.policy_id == repo_id)
    mine = [r for r in arena.store.results() if r.track == "pve" and r.teams[0].policy_id == repo_id and r.stage == 1]

    def since(t: float | None) -> float | None:
        return None if t is None else round(t - pushed, 1)

    return {"queued_s": since(queued), "validated_s": since(validated), "stage1_s": since(verdict),
            "stage1_after_queued_s": None if verdict is None or queued is None else round(verdict - queued, 1),
            "verdict_at": verdict, "status": state.status.value, "reason": state.reason, "stage1_matches": len(mine)}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def seeded_case(horizon: int, timeout: float) -> dict:
    """The seeded case: push_to_first_figure_s, push_to_verdict_s, and the newcomer's record."""
    from gradio_client import Client

    data = Path(tempfile.mkdtemp(prefix="arena-submit-loop-seeded-"))
    settings = ArenaSettings(data_dir=data, match_horizon=horizon, local_hub_port=0)  # the defaults, seeded
    port = free_port()
    space = build_space(settings, space_url=f"http://127.0.0.1:{port}")
    space.serve(host="127.0.0.1", port=port, block=False, quiet=True)
    arena = space.arena
    try:
        seeded = f"{settings.seed_owner}/"
        in_pve = (Status.EVALUATING, Status.QUALIFIED, Status.EVALUATED)

        def ready() -> bool:
            mine = [s for s in arena.statuses.states() if s.id.policy_id.startswith(seeded)]
            return len(mine) >= 10 and all(s.status in in_pve for s in mine)

        if wait_for(ready, timeout=timeout) is None:
            raise SystemExit("the ten seeded submissions never all reached PvE")
        client = Client(f"http://127.0.0.1:{port}/", verbose=False)
        repo = "newcomer/first"

        def figure() -> bool:
            table = client.predict(api_name="/pve_table")
            rows = [dict(zip(table["headers"], row)) for row in table["data"]]
            return any(repo in str(r["Policy"]) and not str(r["Matches per stage"]).startswith("0 /") for r in rows)

        shown: list[float | None] = []
        pushed = push(arena.api, repo, folder=NEWCOMER, tag=settings.submission_tag)
        watcher = threading.Thread(target=lambda: shown.append(wait_for(figure, timeout=timeout, poll=0.5)))
        watcher.start()  # beside the status log's timings, which poll from the push on
        record = timed(arena, repo, pushed, timeout=timeout)
        watcher.join()
    finally:
        space.stop()
    record.pop("verdict_at", None)
    first = shown[0] if shown else None
    return {"push_to_first_figure_s": None if first is None else round(first - pushed, 1),
            "push_to_verdict_s": record["stage1_s"], "seeded": record}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=1024)
    parser.add_argument("--early", type=float, default=120.0, help="seconds after the eight are evaluating: the early push")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=5400.0)
    parser.add_argument("--json", action="store_true", help="(the JSON line is always printed last)")
    parser.add_argument("--cases", default="seeded,early,late", help="which cases to time, comma-separated")
    args = parser.parse_args()
    cases = set(args.cases.split(","))
    report: dict = {"horizon": args.horizon, "workers": args.workers}
    if "seeded" in cases:
        report.update(seeded_case(args.horizon, args.timeout))
        for key, limit in (("push_to_first_figure_s", 90), ("push_to_verdict_s", 600)):
            value = report[key]
            print(f"seeded {key}: {value} s (target {limit} s: {'met' if value is not None and value <= limit else 'MISSED'})",
                  file=sys.stderr)
    if not cases & {"early", "late"}:
        print(json.dumps(report))
        return 0
    data = Path(tempfile.mkdtemp(prefix="arena-submit-loop-"))
    settings = ArenaSettings(data_dir=data, match_horizon=args.horizon, workers=args.workers, seed_examples=False,
                             local_hub_port=0)
    port = free_port()
    # the Space as app.py serves it: the UI, and the webhook route through which pushes arrive
    space = build_space(settings, space_url=f"http://127.0.0.1:{port}", bootstrap=0)
    space.serve(host="127.0.0.1", port=port, block=False, quiet=True)
    arena = space.arena
    tag = settings.submission_tag
    report["early_after_s"] = args.early
    try:
        api = arena.api
        eight = []
        for name in EIGHT_EXAMPLES:
            eight.append(f"bench/example-{name}")
            push(api, eight[-1], folder=EXAMPLES / name, tag=tag)
        for name in EIGHT_BUILTINS:
            eight.append(f"bench/builtin-{name}")
            push(api, eight[-1], files={"policy.py": packaged_policy(name)}, tag=tag)

        def states() -> dict:
            return {s.id.policy_id: s for s in arena.statuses.states()}

        in_pve = (Status.EVALUATING, Status.QUALIFIED, Status.EVALUATED)
        if wait_for(lambda: all(r in states() and states()[r].status in in_pve for r in eight), timeout=args.timeout) is None:
            print("the eight never all reached evaluation", file=sys.stderr)
            return 1
        time.sleep(args.early)
        early = "newcomer/early"
        report["early"] = timed(arena, early, push(api, early, folder=NEWCOMER, tag=tag), timeout=args.timeout)
        print(f"early: {report['early']}", file=sys.stderr)
        decided = (Status.QUALIFIED, Status.EVALUATED)
        if wait_for(lambda: all(states()[r].status in decided for r in [*eight, early]), timeout=args.timeout) is None:
            print("the others never all had their stage-1 verdicts", file=sys.stderr)
            return 1
        late = "newcomer/late"
        pushed = push(api, late, folder=NEWCOMER, tag=tag)
        in_later = sorted(r.split("/")[1] for r in [*eight, early] if arena.matchmaker.pve_queue and any(
            w.id.policy_id == r and w.stage > 1 for w in arena.matchmaker.pve_queue))
        report["late"] = timed(arena, late, pushed, timeout=args.timeout)
        pushed_iso = datetime.fromtimestamp(pushed, timezone.utc).isoformat(timespec="seconds")
        until_iso = datetime.fromtimestamp(report["late"]["verdict_at"] or time.time(), timezone.utc).isoformat(timespec="seconds")
        later = [r for r in arena.store.results() if r.track == "pve" and r.stage > 1 and r.teams[0].policy_id != late
                 and pushed_iso <= r.started_at <= until_iso]
        report["late"]["others_in_later_stages_at_push"] = in_later
        report["late"]["later_stage_matches_started"] = len(later)
    finally:
        space.stop()
    for who in ("early", "late"):
        if who in report:
            report[who].pop("verdict_at", None)
            for key, limit in (("queued_s", 5), ("validated_s", 30), ("stage1_s", 600)):
                value = report[who][key]
                print(f"{who:>5} {key:>12}: {value} s (target {limit} s: {'met' if value is not None and value <= limit else 'MISSED'})",
                      file=sys.stderr)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
