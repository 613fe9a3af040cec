"""What the Space is doing right now: matches in flight and the PvE queue's forecast.

The matchmaker produces these records (`matchmaking.service.live`, `matchmaking.service.pve_queue`) and
the pages show them ("Now playing", the Submissions tab's queue and estimates); they are
never part of the history: the history holds what has happened, these what is happening.
"""

from __future__ import annotations

from dataclasses import dataclass

from arena.records import Record
from arena.revision import Revision


@dataclass(frozen=True)
class LiveMatch(Record):
    """A match being played, as its process last reported it."""

    match_id: str
    track: str
    stage: int | None
    lineup: tuple[str, ...]
    """Player ids in team order (`builtin:NAME` or `owner/name@sha`)."""
    tick: int
    horizon: int
    started: float
    """Unix time the match started."""
    updated: float
    """Unix time of the last report."""
    node: str = ""
    """The Ray node playing it ("" on the Space's own machine)."""



@dataclass(frozen=True)
class QueueEntry:
    """A revision's place in the PvE queue and the forecast of its current stage's end."""

    id: Revision
    stage: int
    place: int
    """1 + the revisions whose verdict comes before this one's (`matchmaking.service.pve_queue`)."""
    matches_left: int
    """Matches of the stage still to play, at most (those in flight included)."""
    eta_s: float | None
    """Seconds from the forecast until the stage's last match should end (None: no match
    duration measured yet)."""
    played: int = 0
    """Matches of the stage recorded so far."""
