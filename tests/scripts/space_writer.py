"""Runs a Space (its scheduled rounds, as app.py starts them, without the pages) on DATA
against the Hub at HUB for SECONDS, then stops it cleanly; several run at once on one
dataset in the two-writer test.

    space_writer.py DATA HUB SECONDS

Prints `ready WRITER` once restored, `match ID TRACK STARTED_AT` as each match is recorded,
`pushing` as each push starts, then `stopped WRITER UNIX_TIME` once its last push is done."""

import signal
import sys
import threading
import time
from pathlib import Path

from arena.settings import ArenaSettings
from history.mirror import HistoryPusher
from history.store import HistoryStore
from matchmaking.service.space import Arena

if __name__ == "__main__":
    data, hub, seconds = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    settings = ArenaSettings(
        data_dir=data, hub_endpoint=hub, seed_examples=False, match_horizon=16, workers=1, pve_matches_per_stage=2,
        qualify_achievement=0.0, next_stage_top1=1.0, audit_minutes=0, model_cards=False, map_secret="restart-test-map-secret",
        sync_every_s=2, validate_every_s=2, pve_every_s=1, pvp_every_s=2, flush_every_s=2, push_every_minutes=0.05,
    )
    said = threading.Lock()

    def say(*words: object) -> None:
        """One whole line at a time: the rounds record and push from several threads, and
        print() writes its arguments piece by piece, so two unlocked lines can interleave."""
        with said:
            sys.stdout.write(" ".join(map(str, words)) + "\n")
            sys.stdout.flush()

    original = HistoryStore.record

    def record(self, result, **kwargs):
        fresh = original(self, result, **kwargs)
        if fresh:
            say("match", result.match_id, result.track, result.started_at)
        return fresh

    HistoryStore.record = record
    push = HistoryPusher.push_to_hub

    def pushing(self):
        say("pushing")
        return push(self)

    HistoryPusher.push_to_hub = pushing
    stop = threading.Event()
    arena = Arena.start(settings)
    arena.wait_restored()
    say("ready", arena.writers.writer)
    signal.signal(signal.SIGTERM, lambda *_: stop.set())  # a Space is stopped with SIGTERM
    stop.wait(seconds)
    arena.stop()
    say("stopped", arena.writers.writer, time.time())
