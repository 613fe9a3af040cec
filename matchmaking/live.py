"""Matches in flight, reported by the processes that play them, for the "Now playing" panel.

Each match process rewrites one small JSON file (`LiveMatch`) in a shared folder about once
a second and removes it when the match ends, so the Space's process learns line-ups and
ticks without a channel to its workers (a pool process, or a Ray task on this machine).
A file that has not been rewritten for `STALE_S` belongs to a process that died: readers
skip it, and `clear()` at start-up removes what a killed Space left.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable

from arena.activity import LiveMatch
from arena.schema import player_id

#: Seconds between a match process's reports.
REPORT_EVERY_S = 1.0

#: A report older than this is from a process that died.
STALE_S = 60.0


class LiveBoard:
    """The folder of reports of matches in flight."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def reporter(self, spec) -> tuple[Callable[[int], None], Callable[[], None]]:
        """(report(tick), done()) for one match (`matchmaking.match.MatchSpec`)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{spec.match_id}.json"
        started = time.time()
        lineup = tuple(player_id(p.policy_id, p.revision) for p in spec.policies)
        last = [0.0]

        def report(tick: int) -> None:
            now = time.time()
            if tick and now - last[0] < REPORT_EVERY_S and tick < spec.config.horizon:
                return
            last[0] = now
            record = LiveMatch(spec.match_id, spec.track, spec.stage, lineup, tick, spec.config.horizon, started, now)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(record.to_dict()))
            os.replace(tmp, path)

        def done() -> None:
            path.unlink(missing_ok=True)

        return report, done

    def matches(self, *, now: float | None = None, stale_s: float = STALE_S) -> list[LiveMatch]:
        """The matches in flight, oldest first (reports older than `stale_s` and unreadable
        ones skipped)."""
        now = time.time() if now is None else now
        found = []
        for path in self.folder.glob("*.json") if self.folder.is_dir() else ():
            try:
                record = LiveMatch.from_dict(json.loads(path.read_text()))
            except (OSError, ValueError, KeyError, TypeError):
                continue  # vanished or being replaced under us: the next look sees it
            if now - record.updated <= stale_s:
                found.append(record)
        return sorted(found, key=lambda m: (m.started, m.match_id))

    def clear(self) -> int:
        """Remove every report (at start-up: no match is in flight yet). Returns how many."""
        removed = 0
        for path in self.folder.glob("*") if self.folder.is_dir() else ():
            path.unlink(missing_ok=True)
            removed += 1
        return removed
