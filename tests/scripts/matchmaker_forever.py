"""Runs the matchmaker's rounds in a loop on a data folder until killed; prints the id of
every match the executor plays right after it is recorded (not the validation matches), and keeps DATA/live.json holding what the Space's
"Now playing" shows (`Matchmaker.live()`). Tests kill -9 it mid-match and mid-write.

    matchmaker_forever.py DATA HORIZON HUB [RAY_ADDRESS]

With RAY_ADDRESS the matches run on that Ray cluster, as `NMMO_ARENA_RAY` makes the Space do."""

import json
import logging
import os
import sys
import threading
import time
from pathlib import Path

from arena.settings import ArenaSettings
from history.store import HistoryStore
from matchmaking.service.space import Arena

if __name__ == "__main__":
    data, horizon = Path(sys.argv[1]), int(sys.argv[2])
    settings = ArenaSettings(
        data_dir=data, match_horizon=horizon, workers=2, pve_matches_per_stage=3,
        qualify_achievement=0.0, next_stage_top1=0.0, seed_examples=False,
        hub_endpoint=sys.argv[3], ray_address=sys.argv[4] if len(sys.argv) > 4 else None,
    )
    original = HistoryStore.record

    def record(self, result, **kwargs):
        fresh = original(self, result, **kwargs)
        if fresh and result.track != "validation":  # validation matches are played here, never on a Ray node
            print(result.match_id, flush=True)
        return fresh

    HistoryStore.record = record
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("matchmaking.service.executor").setLevel(logging.INFO)  # each Ray node's isolation verdict
    arena = Arena.start(settings, schedule=False)
    m = arena.matchmaker

    def show_live() -> None:
        while True:
            tmp = data / "live.json.tmp"
            tmp.write_text(json.dumps([match.to_dict() for match in m.live()]))
            os.replace(tmp, data / "live.json")
            time.sleep(0.3)

    threading.Thread(target=show_live, daemon=True).start()
    while True:
        m.sync()
        m.validate()
        m.play_pve()
        m.play_pvp()
        m.flush()
