"""The participants' evaluation tool, end to end, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from arena.schema import MatchResult
from tests_support import EXAMPLES, TESTS, policy_dir

ROOT = TESTS.parent


def evaluate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "matchmaking.evaluate", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_json_report_of_a_policy_folder_with_two_workers():
    run = evaluate(str(EXAMPLES / "explorer"), "--matches", "3", "--horizon", "24", "--workers", "2", "--seed", "7", "--json")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)  # stdout holds exactly one JSON object
    assert set(report) >= {"top1_ratio", "mean_achievement", "per_task", "matches"}
    assert set(report["per_task"]) == {"travel", "forage", "equipment", "eliminate"}
    records = [MatchResult.from_dict(m) for m in report["matches"]]
    assert [r.seed for r in records] == [7, 8, 9]
    assert all(r.ticks == 24 and len(r.teams) == 16 for r in records)
    mine = [r.team("local:explorer") for r in records]
    assert report["top1_ratio"] == sum(t.rank == 1 for t in mine) / 3
    assert abs(report["mean_achievement"] - sum(t.achievement for t in mine) / 3) < 1e-9
    assert "match" in run.stderr  # the progress bar goes to stderr
    # validated as the Space validates it, with its time per tick; the distance to the PvP bar
    assert report["validation"]["ok"] and 0 < report["validation"]["median_step_ms"] <= report["validation"]["p99_step_ms"]
    assert report["validation"]["reason"].startswith("Played 16 ticks without a fault")
    assert report["pvp_bar"] == 25.0 and abs(report["to_pvp_bar"] - (25.0 - report["mean_achievement"])) < 1e-3


def test_text_report_shows_faults_of_a_failing_policy():
    run = evaluate(str(policy_dir("raise_every_tick")), "--matches", "1", "--horizon", "8", "--workers", "1")
    assert run.returncode == 0, run.stderr
    assert "Top1Ratio" in run.stdout and "Achievement" in run.stdout
    assert "ERROR x8" in run.stdout
    assert "first fault at tick 1: ERROR: RuntimeError: deliberate failure on call 1" in run.stdout
    # the Space would reject it: said at once, and the matches are played all the same
    assert "warning: the Space would reject this policy at validation: ERROR at tick 1" in run.stderr
    assert "Validation    REJECTED: ERROR at tick 1" in run.stdout and "Time / tick   " in run.stdout
    assert "below the 25 that qualifies for PvP (mean Achievement in PvE stage 1)" in run.stdout


def test_builtin_target_and_json_faults():
    run = evaluate("builtin:forage", "--matches", "1", "--horizon", "8", "--workers", "1", "--json")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["policy_id"] == "builtin:forage"
    assert report["matches"][0]["teams"][0]["fault_counts"] == {}
    assert report["validation"] is None  # the Arena's own code: no sandbox, nothing to validate


def test_bad_targets_are_refused_with_a_reason():
    missing = evaluate("no/such/folder")
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    no_policy = evaluate(str(TESTS))
    assert no_policy.returncode == 2 and "has no policy.py" in no_policy.stderr
    unknown = evaluate("builtin:nobody")
    assert unknown.returncode == 2 and "Available: builtin:random" in unknown.stderr
    bad_count = evaluate("builtin:forage", "--matches", "0")
    assert bad_count.returncode == 2 and "--matches must be at least 1" in bad_count.stderr


def test_help_and_bad_arguments_answer_without_loading_the_game():
    """`--help` and an argument it refuses answer at once: nothing of nmmo, numba, torch or
    the sandbox is imported before a run starts (they took `--help` 10 s)."""
    code = ("import sys\nfrom matchmaking import evaluate\n"
            "for argv in (['--help'], ['no-such-folder', '--matches', '0']):\n"
            "    try:\n        evaluate.main(argv)\n    except SystemExit:\n        pass\n"
            "print(sorted(m for m in ('nmmo', 'numba', 'torch', 'matchmaking.sandbox.host') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=TESTS.parent, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout
    assert "--matches must be at least 1" in done.stderr
