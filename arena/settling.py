"""When a revision's PvP rating is settled, and how far it is from settling: one definition.

**Settled.** A revision's rating is settled when its 95% interval, read off its TrueSkill
sigma and put in Plackett-Luce units (the leaderboard's unit: a gap of 1 wins a duel 73%
of the time), is at most `SETTLED_WIDTH` wide:

    width = 2 x 1.96 x sigma / TRUESKILL_PER_PL <= SETTLED_WIDTH (1.0),  i.e.  sigma <= SETTLED_SIGMA (0.942)

TrueSkill, because it is what the matchmaker keeps up to date match after match (the
history index, `arena.ratings.extend_trueskill`) without importing the leaderboard, and
because its sigma only falls (`tau = 0`): every revision that plays settles. Why a width of
1: docs/rules.md, "Settled" (the figures of `bench/pairing_study.py`).

**How far from settled** (the meter). TrueSkill's precision 1/sigma^2 grows by about the
same amount with each match a revision plays (measured: `bench/pairing_study.py`), so

    gain per match   g = (1/sigma^2 - 1/sigma_0^2) / n           (sigma_0 = 25/3, the prior; its own n >= 1
                                                                  matches; else the field's median g)
    matches needed   m = ceil((1/SETTLED_SIGMA^2 - 1/sigma^2) / g)
    Arena matches    M = m / s                                   (s: its expected seats per PvP match, `seat_shares`)
    time             T = M x d / c                               (d: median duration of recent PvP matches, c: PvP matches at once)

The scheduler that uses the definition is `matchmaking.service.pairing` (`Pairing.GUARANTEE`:
the least settled first, at most `PRIORITY_SEATS` of a pool, the rest at random); the
pages and `/settling` show `Settling.text`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from arena.errors import InvalidArgumentError
from arena.ratings.scales import TRUESKILL_PER_PL, TRUESKILL_SIGMA
from arena.rules import Pairing

__all__ = [
    "FALLBACK_GAIN", "PRIORITY_SEATS", "SETTLED_SIGMA", "SETTLED_WIDTH", "Settling", "interval_width", "is_settled",
    "matches_to_settle", "precision_gain", "priority_seats", "seat_shares", "settling",
]

#: 95% interval, 1.96 standard deviations each way.
_Z95 = 1.96

#: Widest 95% interval (Plackett-Luce units) of a settled rating.
SETTLED_WIDTH = 1.0

#: The TrueSkill sigma at which the interval is `SETTLED_WIDTH` wide (0.942).
SETTLED_SIGMA = SETTLED_WIDTH * TRUESKILL_PER_PL / (2.0 * _Z95)

#: Most seats of a pool of 16 that go to the least settled first (`Pairing.GUARANTEE`): half.
#: The others are drawn at random from everyone else, so that the unsettled always meet the
#: field and every qualified revision keeps at least (16 - 8) / N of the seats of every pool.
PRIORITY_SEATS = 8


def priority_seats(size: int) -> int:
    """Most seats of a pool of `size` that go to the least settled first: half (8 of 16).

    >>> priority_seats(16), priority_seats(5)
    (8, 2)
    """
    return size * PRIORITY_SEATS // 16


#: Precision 1/sigma^2 a revision gains per match when nobody has played yet (simulated
#: 16-team matches with coarse scores: 0.045-0.050, `bench/pairing_study.py`).
FALLBACK_GAIN = 0.048


def interval_width(sigma: float) -> float:
    """The 95% interval's width in Plackett-Luce units of a TrueSkill `sigma`.

    >>> round(interval_width(SETTLED_SIGMA), 6)
    1.0
    """
    return 2.0 * _Z95 * sigma / TRUESKILL_PER_PL


def is_settled(sigma: float) -> bool:
    """Whether a TrueSkill `sigma` is settled (the one definition; see the module docstring).

    >>> is_settled(TRUESKILL_SIGMA), is_settled(0.9)
    (False, True)
    """
    return sigma <= SETTLED_SIGMA


def precision_gain(sigma: float, matches: int) -> float | None:
    """Precision 1/sigma^2 gained per match so far; None before the first match."""
    if matches < 1:
        return None
    return max(0.0, (1.0 / sigma**2 - 1.0 / TRUESKILL_SIGMA**2) / matches)


def matches_to_settle(sigma: float, *, gain: float) -> int:
    """Matches of its own a revision still needs to settle, at `gain` precision per match.

    >>> matches_to_settle(0.9, gain=0.05), matches_to_settle(TRUESKILL_SIGMA, gain=0.05)
    (0, 23)
    """
    if is_settled(sigma):
        return 0
    if gain <= 0:
        raise InvalidArgumentError(f"`gain` must be positive, got {gain}.")
    return math.ceil((1.0 / SETTLED_SIGMA**2 - 1.0 / sigma**2) / gain - 1e-9)


def seat_shares(
    sigmas: Mapping[str, float],
    *,
    candidates: Sequence[str],
    size: int = 16,
    how: Pairing = Pairing.GUARANTEE,
    counts: Mapping[str, int] | None = None,
) -> dict[str, float]:
    """Each candidate's expected seats per PvP pool under the pairing rule `how`.

    Under `GUARANTEE`, the u unsettled share min(u, 8) priority seats (`priority_seats`;
    they take turns, the least settled first) and everybody not given one of them shares the
    other seats at random: a settled revision's share is r = (16 - min(u, 8)) / (N - min(u, 8)),
    an unsettled one's q + (1 - q) r with q = min(u, 8) / u. `RANDOM` (least-played first)
    seats in every pool whoever has played fewer matches than the 16th least-played, the
    others at 16 / N; `UNCERTAINTY` the 16 largest sigmas, the others at 16 / N.

    Args:
        sigmas (`Mapping[str, float]`): TrueSkill sigma of each player (missing: never played).
        candidates (`Sequence[str]`): the qualified revisions.
        size (`int`): seats in a match.
        how (`Pairing`): the pairing rule in force.
        counts (`Mapping[str, int]`, *optional*): PvP matches played (for `RANDOM`).

    Returns:
        `dict[str, float]`: per candidate, its expected seats per pool (at most 1).

    Example:
        >>> seat_shares({"a": 0.5, "b": 0.5}, candidates=["a", "b", "new"], size=2)
        {'a': 0.5, 'b': 0.5, 'new': 1.0}
    """
    players = list(dict.fromkeys(candidates))
    n = len(players)
    if n <= size:
        return {p: 1.0 for p in players}
    sigma = {p: sigmas.get(p, TRUESKILL_SIGMA) for p in players}
    fair = size / n
    if how is Pairing.GUARANTEE:
        unsettled = [p for p in players if not is_settled(sigma[p])]
        priority = min(len(unsettled), priority_seats(size))
        rest = (size - priority) / (n - priority)
        q = priority / len(unsettled) if unsettled else 0.0
        return {p: rest if is_settled(sigma[p]) else q + (1.0 - q) * rest for p in players}
    if how is Pairing.UNCERTAINTY:
        top = set(sorted(players, key=lambda p: -sigma[p])[:size])
        return {p: 1.0 if p in top else fair for p in players}
    if how is Pairing.RANDOM:
        played = {p: (counts or {}).get(p, 0) for p in players}
        level = sorted(played.values())[size - 1]
        return {p: 1.0 if played[p] < level else fair for p in players}
    raise InvalidArgumentError(f"Unknown pairing {how!r}.")


@dataclass(frozen=True)
class Settling:
    """How far one revision's PvP rating is from settled (the meter)."""

    player: str
    settled: bool
    width: float
    """Its 95% interval's width now, Plackett-Luce units (`interval_width`)."""
    matches: int
    """PvP matches it has played."""
    matches_left: int
    """Its own matches still needed (0 once settled)."""
    seat_share: float
    """Its expected seats per PvP match under the rule in force (`seat_shares`)."""
    arena_matches_left: float
    """PvP matches the Arena plays meanwhile: `matches_left / seat_share`."""
    seconds_left: float | None
    """`arena_matches_left x match_s / parallel`; None when no match duration is known."""

    def text(self) -> str:
        """`settled`, or `provisional: about N more matches (≈ T at the current rate)`."""
        if self.settled:
            return "settled"
        when = "" if self.seconds_left is None else f" (≈ {_duration(self.seconds_left)} at the current rate)"
        return f"provisional: about {self.matches_left} more matches{when}"


def settling(
    sigmas: Mapping[str, float],
    counts: Mapping[str, int],
    *,
    candidates: Sequence[str],
    match_s: float | None,
    parallel: int = 1,
    size: int = 16,
    how: Pairing = Pairing.GUARANTEE,
) -> dict[str, Settling]:
    """The meter: per qualified revision, settled, or how many matches (and how long) until it is.

    Pure: everything comes from what the matchmaker knows (TrueSkill sigmas and PvP counts
    from its history index, the rule in force, recent PvP durations). The formula is the
    module docstring's; a revision that never played uses the field's median gain per match
    (`FALLBACK_GAIN` when nobody has played).

    Args:
        sigmas (`Mapping[str, float]`): TrueSkill sigma per player (missing: never played,
            at the prior `TRUESKILL_SIGMA`).
        counts (`Mapping[str, int]`): PvP matches each has played.
        candidates (`Sequence[str]`): the qualified revisions (who the meter is for).
        match_s (`float`, *optional*): median duration of recent PvP matches, in seconds
            (None: no time estimate).
        parallel (`int`): PvP matches played at once (the workers).
        size (`int`): seats in a match.
        how (`Pairing`): the pairing rule in force.

    Returns:
        `dict[str, Settling]`: one entry per candidate.

    Raises:
        InvalidArgumentError: `parallel` or `size` below 1, or `match_s` not positive.

    Example:
        >>> meter = settling({"a": 0.8, "b": 2.0}, {"a": 40, "b": 5}, candidates=["a", "b"], match_s=30.0)
        >>> meter["a"].text()
        'settled'
        >>> meter["b"].text()
        'provisional: about 19 more matches (≈ 10 min at the current rate)'
    """
    if parallel < 1 or size < 1:
        raise InvalidArgumentError(f"`parallel` and `size` must be at least 1, got {parallel} and {size}.")
    if match_s is not None and not match_s > 0:
        raise InvalidArgumentError(f"`match_s` must be positive seconds, got {match_s}.")
    players = list(dict.fromkeys(candidates))
    sigma = {p: sigmas.get(p, TRUESKILL_SIGMA) for p in players}
    gains = [g for p in players if (g := precision_gain(sigma[p], counts.get(p, 0)))]
    field_gain = statistics.median(gains) if gains else FALLBACK_GAIN
    shares = seat_shares(sigmas, candidates=players, size=size, how=how, counts=counts)
    meter = {}
    for p in players:
        gain = precision_gain(sigma[p], counts.get(p, 0)) or field_gain
        left = matches_to_settle(sigma[p], gain=gain)
        arena = left / shares[p] if left else 0.0
        meter[p] = Settling(player=p, settled=is_settled(sigma[p]), width=interval_width(sigma[p]),
                            matches=counts.get(p, 0), matches_left=left, seat_share=shares[p],
                            arena_matches_left=arena,
                            seconds_left=None if match_s is None else arena * match_s / parallel)
    return meter


def _duration(seconds: float) -> str:
    """A rough duration: `40 s`, `9 min`, `3.5 h`, `2.0 days`."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 36 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
