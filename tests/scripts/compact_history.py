"""Compacts a history folder, as the Space does; killed by tests at chosen or random moments.

    python compact_history.py ROOT once [STAGE]                 one compaction (killed at STAGE, if given)
    python compact_history.py ROOT forever START                record, flush and compact in a loop until killed;
                                                                prints each match id once it is durable
    python compact_history.py ROOT hub ENDPOINT REPO [STAGE]    one compaction through a Hub mirror (one commit)

STAGE is one of the stages a compaction tells its `StageHook` (`history.store.compaction`):
the process kills itself there with SIGKILL, as a crash would.
"""

import os
import signal
import sys
from dataclasses import replace

import numpy as np

from arena.simulation import Population, play
from bench.history_growth import synthetic_logs, synthetic_replay
from history.store import HistoryStore


def kill_at(stage: str):
    """A `StageHook` that kills this process when a compaction reaches `stage`."""
    def hook(reached: str, plan) -> None:
        if reached == stage:
            print(f"killing this process at stage {stage!r} of compaction {plan.name}", file=sys.stderr, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
    return hook


root, mode = sys.argv[1], sys.argv[2]
stage = {"once": sys.argv[3:4], "hub": sys.argv[5:6]}.get(mode)
store = HistoryStore(root, on_stage=kill_at(stage[0]) if stage else None)
if mode == "once":
    store.compact()
elif mode == "hub":
    from huggingface_hub import HfApi

    from history.mirror import HubMirror

    mirror = HubMirror(store, api=HfApi(endpoint=sys.argv[3], token="test-token"), repo_id=sys.argv[4], every_minutes=60)
    report = mirror.compact_now()
    mirror.stop()
    sys.exit(0 if report is not None else 1)
elif mode == "forever":
    start = int(sys.argv[3])
    population = Population.random(40, seed=1)
    rng = np.random.default_rng(start)
    for i in range(100000):
        chosen = rng.choice(len(population.ids), size=16, replace=False)
        result = play([population.ids[c] for c in chosen], population.skills[chosen], rng=rng, index=i)
        # matches of two days, so that compactions write to both
        day = "2026-12-01" if i % 2 else "2026-12-02"
        result = replace(result, match_id=f"k{start}-{i:06d}", started_at=f"{day}T{i % 24:02d}:00:00+00:00")
        if store.record(result, replay=synthetic_replay(result.match_id), logs=synthetic_logs(result.match_id)):
            print(result.match_id, flush=True)
        if i % 3 == 2:
            store.flush()
        if i % 9 == 8:
            store.compact()
