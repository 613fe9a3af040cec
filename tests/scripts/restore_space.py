"""Starts a Space on DATA against the Hub at HUB and prints how its restore goes, until the
restore is done; tests kill -9 it midway and start it again.

    restore_space.py DATA HUB

Prints `progress DONE TOTAL` after each shard taken in, then one JSON line: the matches
and shards the folder holds, the matches this run restored, and the revisions known."""

import json
import sys
import threading
import time
from pathlib import Path

from arena.settings import ArenaSettings
from matchmaking.service.space import Arena

if __name__ == "__main__":
    data, hub = Path(sys.argv[1]), sys.argv[2]
    settings = ArenaSettings(data_dir=data, hub_endpoint=hub, seed_examples=False, match_horizon=16, audit_minutes=0,
                             model_cards=False, map_secret="restart-test-map-secret")
    arena = Arena.start(settings, schedule=True)  # restores in the background, as the Space does

    def report() -> None:
        last = -1
        while not arena.pull.done.is_set():
            progress = arena.pull.progress
            if progress.phase == "shards" and progress.shards_done != last:
                last = progress.shards_done
                print(f"progress {progress.shards_done} {progress.shards_total}", flush=True)
            time.sleep(0.005)

    threading.Thread(target=report, daemon=True).start()
    arena.wait_restored()
    table = arena.store.table()
    print(json.dumps({"matches": len(set(table.column("match_id").to_pylist())), "shards": len(arena.store.shard_names()),
                      "restored_now": arena.pull.progress.matches_done, "statuses": len(arena.statuses.states())}), flush=True)
    arena.stop()
