"""`python -m bench.restart` at a small N, as CI runs it: its keys, and no replay, no loss."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests_support import TESTS

pytestmark = pytest.mark.slow


def test_bench_restart_restores_identical_tables_and_replays_nothing():
    done = subprocess.run([sys.executable, "-m", "bench.restart", "--matches", "400", "--shard-matches", "100",
                           "--bootstrap", "20", "--run-s", "8", "--json"],
                          cwd=TESTS.parent, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"restore_s", "matches_restored", "tables_identical", "replayed_matches", "status_events_lost"} <= set(report)
    assert report["tables_identical"] and report["replayed_matches"] == 0 and report["status_events_lost"] == 0
    assert report["matches_restored"] == report["matches"] >= 400 and report["shards"] == 4
    assert 0 < report["restore_s"] < 120
