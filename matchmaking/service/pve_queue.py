"""Who plays PvE next, and when each revision should have its verdict.

Round-robin among the revisions of a stage gave every one of them a late verdict when
many arrived together (a newcomer among nine in stage 1: 1,332 s), and the place it
showed jumped as each revision played. The order here, written once and used both to
schedule and to forecast:

1. **Earliest stage first.** Stage-1 matches go ahead of every later stage (and PvP waits
   for them, `Matchmaker.play_pvp`): stage 1 decides qualification, the verdict a
   submitter waits for.
2. **The Arena's own seeded submissions last** (`PveWork.seeded`: the examples and
   packaged built-ins a fresh Space pushes to show a field): a researcher's revision never
   waits behind a demo.
3. **Owners in turn** (`turns`): every owner's earliest revision of the stage goes before
   any owner's second, so one owner pushing 25 revisions delays another's by about one
   match, not by 25 stages (issue 37's flood).
4. **A first match before everything else** among those: a revision with no match of the
   stage played or in flight goes first, so that a newcomer's first figure comes after one
   match (Kaggle boosts new submissions the same way).
5. **The owner with fewer revisions waiting first**, then **the earliest pushed** (then the
   repo id): verdicts come in the order of the pushes, each revision with every worker
   that is free, and the mean wait for a verdict is about half of round-robin's.

A revision's place is its verdict's in that order (`verdict_order`: all but rule 4).

`forecast` plays that order forward on the workers with a measured match duration, to
give each revision its place and an estimated time to its verdict. The estimate assumes
every match of the stage is played: a stage decided early (`pve.decide`) ends sooner.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from arena.activity import QueueEntry
from arena.revision import Revision, owner_of


@dataclass(frozen=True)
class PveWork:
    """The PvE matches a revision still owes in the stage it is playing."""

    id: Revision
    stage: int
    seeds: tuple[int, ...]
    """Seeds not yet recorded, in plan order (some may be in flight)."""
    played: int
    """Matches of the stage already recorded."""
    since: float
    """When the revision was first seen (its push): the order among equals."""
    seeded: bool = False
    """One of the Arena's own seeded submissions (`ArenaSettings.seed_owner`): it plays
    after every other revision of its stage."""


#: An owner's turn for one revision: (its place among the owner's revisions in the stage,
#: 0 for the earliest pushed; how many revisions of the stage the owner has).
Turn = tuple[int, int]


def turns(work: Iterable[PveWork]) -> dict[Revision, Turn]:
    """Each revision's turn within its owner's revisions of the same stage (the repo's
    namespace; the Arena's seeded submissions count as one owner, as they are)."""
    by_owner: dict[tuple[str, int], list[PveWork]] = {}
    for item in work:
        by_owner.setdefault((owner_of(item.id.policy_id) or item.id.policy_id, item.stage), []).append(item)
    return {item.id: (rank, len(mine)) for mine in by_owner.values()
            for rank, item in enumerate(sorted(mine, key=lambda w: (w.since, w.id)))}


def priority(work: PveWork, started: int = 0, turn: Turn = (0, 1)) -> tuple[int, bool, int, bool, int, float, Revision]:
    """The sort key of a revision's next match (lower plays first): `started` counts its
    matches of the stage recorded or in flight beyond `work.played`, `turn` is `turns`'."""
    return (work.stage, work.seeded, turn[0], work.played + started > 0, turn[1], work.since, work.id)


def verdict_order(work: PveWork, turn: Turn) -> tuple[int, bool, int, int, float, Revision]:
    """The order of the verdicts (a revision's place): `priority` without the first-match boost."""
    return (work.stage, work.seeded, turn[0], turn[1], work.since, work.id)


def pick(work: Iterable[PveWork], slots: int, *, in_flight: Mapping[Revision, Sequence[int]] | None = None
         ) -> list[tuple[PveWork, int]]:
    """The next `slots` matches to start, as (work, seed), in priority order.

    Args:
        work: every revision's owed matches.
        slots: how many matches to start now.
        in_flight: seeds already playing, by revision: not started twice, and counted as
            started (a revision with one in flight has had its first match).
    """
    in_flight = in_flight or {}
    work = list(work)
    turn = turns(work)
    heap = []
    for item in work:
        busy = set(in_flight.get(item.id, ()))
        free = [s for s in item.seeds if s not in busy]
        if free:
            heap.append((priority(item, len(busy), turn[item.id]), len(busy), free, item))
    heapq.heapify(heap)
    chosen: list[tuple[PveWork, int]] = []
    while heap and len(chosen) < slots:
        _, started, free, item = heapq.heappop(heap)
        chosen.append((item, free[0]))
        if len(free) > 1:
            heapq.heappush(heap, (priority(item, started + 1, turn[item.id]), started + 1, free[1:], item))
    return chosen


def forecast(work: Sequence[PveWork], *, workers: int, match_s: float | None, now: float = 0.0,
             in_flight: Mapping[Revision, Sequence[int]] | None = None,
             busy_until: Sequence[float] = (), later_share: float = 1.0) -> dict[Revision, QueueEntry]:
    """Each revision's place, and when its current stage should end, by playing `pick`'s
    order forward.

    Args:
        work: every revision's owed matches.
        workers: worker processes.
        match_s: measured seconds per match (None: places only).
        now: the clock the forecast starts at.
        in_flight: seeds playing now, by revision (they end as `busy_until` says).
        busy_until: when each busy worker frees up (at most `workers` entries).
        later_share: the share of the workers later stages get once no stage-1 match is
            left (PvP takes the rest).
    """
    in_flight = in_flight or {}
    turn = turns(work)
    order = sorted(work, key=lambda w: verdict_order(w, turn[w.id]))
    places = {w.id: i + 1 for i, w in enumerate(order)}
    entries = {
        w.id: QueueEntry(w.id, w.stage, places[w.id], len(w.seeds), None, played=w.played) for w in work
    }
    if not match_s or match_s <= 0 or workers < 1:
        return entries
    free = sorted(list(busy_until)[:workers] + [now] * max(0, workers - len(busy_until)))
    ends: dict[Revision, float] = {}
    running_end = sorted(busy_until)
    for w in work:  # matches in flight end as their workers free up, earliest first
        for _ in in_flight.get(w.id, ()):
            if running_end:
                ends[w.id] = max(ends.get(w.id, now), running_end.pop(0))
    left = {w.id: replace(w, seeds=tuple(s for s in w.seeds if s not in set(in_flight.get(w.id, ())))) for w in work}
    counts = {w.id: w.played + len(in_flight.get(w.id, ())) for w in work}
    while True:
        pending = [w for w in left.values() if w.seeds]
        if not pending:
            break
        now_turn = turns(pending)  # an owner's next revision moves up as its earlier one finishes
        nxt = min(pending, key=lambda w: priority(w, counts[w.id] - w.played, now_turn[w.id]))
        start = heapq.heappop(free)
        end = start + (match_s if nxt.stage == 1 else match_s / max(later_share, 1e-6))
        heapq.heappush(free, end)
        ends[nxt.id] = max(ends.get(nxt.id, now), end)
        counts[nxt.id] += 1
        left[nxt.id] = replace(nxt, seeds=nxt.seeds[1:])
    return {key: replace(entry, eta_s=max(0.0, ends.get(key, now) - now)) for key, entry in entries.items()}
