"""Matches in flight, reported by the processes that play them, for the "Now playing" panel.

On the Space's machine (`LiveBoard`), each match process rewrites one small JSON file
(`LiveMatch`) in a shared folder about once a second and removes it when the match ends,
so the Space's process learns line-ups and ticks without a channel to its workers. A file
that has not been rewritten for `STALE_S` belongs to a process that died: readers skip it,
and `clear()` at start-up removes what a killed Space left.

On a Ray cluster (`ClusterBoard`) the nodes share no disk with the Space: each match sends
the same record, as often, to one actor of the cluster (`_Reports`, on the head node when it
can be found), which the Space asks. A node lost mid-match stops reporting, and its matches
go stale the same way.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arena.activity import LiveMatch
from arena.files import write_atomically

log = logging.getLogger(__name__)

#: Seconds between a match process's reports.
REPORT_EVERY_S = 1.0

#: A report older than this is from a process that died.
STALE_S = 60.0

#: The resource Ray gives its head node (`ray start --head`): where the cluster's board goes.
HEAD_RESOURCE = "node:__internal_head__"


class LiveBoard:
    """The folder of reports of matches in flight."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def reporter(self, spec, *, node: str = "") -> tuple[Callable[[int], None], Callable[[], None]]:
        """(report(tick), done()) for one match (`matchmaking.engine.match.MatchSpec`)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{spec.match_id}.json"

        def write(record: LiveMatch) -> None:
            write_atomically(path, json.dumps(record.to_dict()), durable=False)

        return _throttled(spec, write, lambda: path.unlink(missing_ok=True), node=node)

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


def _throttled(spec, publish: Callable[[LiveMatch], None], remove: Callable[[], None], *,
               node: str = "") -> tuple[Callable[[int], None], Callable[[], None]]:
    """(report(tick), done()) for one match: a record published at most every
    `REPORT_EVERY_S` (and at the last tick), removed when the match ends."""
    started = time.time()
    lineup = tuple(p.id.player for p in spec.policies)
    last = [0.0]

    def report(tick: int) -> None:
        now = time.time()
        if tick and now - last[0] < REPORT_EVERY_S and tick < spec.config.horizon:
            return
        last[0] = now
        publish(LiveMatch(spec.match_id, spec.track, spec.stage, lineup, tick, spec.config.horizon, started, now, node))

    return report, remove


class _Reports:
    """The Ray actor holding the latest record of each match in flight on the cluster."""

    def __init__(self) -> None:
        self.latest: dict[str, dict] = {}

    def report(self, record: dict) -> None:
        self.latest[record["match_id"]] = record

    def done(self, match_id: str) -> None:
        self.latest.pop(match_id, None)

    def matches(self, stale_s: float = STALE_S) -> list[dict]:
        now = time.time()
        for match_id in [m for m, r in self.latest.items() if now - r["updated"] > stale_s]:
            del self.latest[match_id]  # its node died mid-match: never reported done
        return list(self.latest.values())


class ClusterBoard:
    """The reports of matches in flight on a Ray cluster's nodes, held by one actor
    (`ClusterBoard.start`); picklable, so that it travels to the nodes with each match.

    Args:
        actor: the `_Reports` actor's handle.
    """

    #: Seconds the Space waits for the actor's answer (a page asks every 2 s).
    ASK_TIMEOUT_S = 2.0

    def __init__(self, actor: Any):
        self.actor = actor

    @classmethod
    def start(cls) -> ClusterBoard:
        """A new board on the cluster Ray is connected to: on the head node when its node
        is marked as such (a worker node lost would take the board with it), restarted
        (empty) if its node is lost all the same."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        head = next((n["NodeID"] for n in ray.nodes() if n.get("Alive") and HEAD_RESOURCE in n.get("Resources", {})), None)
        strategy = NodeAffinitySchedulingStrategy(head, soft=True) if head else "DEFAULT"
        actor = ray.remote(num_cpus=0, max_restarts=-1)(_Reports).options(scheduling_strategy=strategy).remote()
        return cls(actor)

    def reporter(self, spec, *, node: str = "") -> tuple[Callable[[int], None], Callable[[], None]]:
        """(report(tick), done()) for one match, sent to the actor without waiting."""
        return _throttled(spec, lambda record: self.actor.report.remote(record.to_dict()),
                          lambda: self.actor.done.remote(spec.match_id), node=node)

    def matches(self) -> list[LiveMatch]:
        """The matches in flight, oldest first; none when the cluster does not answer in
        `ASK_TIMEOUT_S` (the panel must never hold a page)."""
        import ray

        try:
            records = ray.get(self.actor.matches.remote(), timeout=self.ASK_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - unreachable, restarting, timed out: nothing to show now
            log.info("the cluster's board of matches in flight did not answer", exc_info=True)
            return []
        found = []
        for record in records:
            try:
                found.append(LiveMatch.from_dict(record))
            except (KeyError, TypeError, ValueError):
                continue
        return sorted(found, key=lambda m: (m.started, m.match_id))


#: Where matches report while they play: a folder on the Space's machine, or the cluster's actor.
Board = LiveBoard | ClusterBoard
