"""Arena-like synthetic PvP histories for the ratings' tests: every case the rating
conventions have to settle, in one history.

- submissions (`team/p-NN` at a 40-hex revision) and the three anchors, built-ins filling
  seats several times;
- one submission seated twice in some matches (its TrueSkill takes the mean of its two
  updates; Elo and Plackett-Luce count both seats);
- scores as real matches look (`arena.simulation.play`, coarse): many ties, many zeros;
- matches of duplicate sets as Arenas recorded them before sets were retired (2026-12-03):
  complete sets (4 matches, one lineup, seats rotated) and one incomplete set, their
  `set_id`, `set_size` and `set_rotation` filled; every one of them is rated as a match
  of its own, as old history is read now;
- match ids that are 20 hex digits, so their order is not the start-time order.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import numpy as np

from arena.rules import ANCHORS
from arena.schema import MatchResult
from arena.simulation import play

EPOCH = datetime(2026, 3, 1, tzinfo=timezone.utc)
SUBMISSIONS = tuple(f"team/p-{i:02d}" for i in range(10))
TWICE = SUBMISSIONS[0]
"""The submission seated twice in every fifth single match."""


def revision(policy: str) -> str:
    return hashlib.sha1(policy.encode()).hexdigest()


def _id(seed: int, label: str) -> str:
    return hashlib.sha256(f"{seed}:{label}".encode()).hexdigest()[:20]


def _stamp(seconds: int) -> str:
    return (EPOCH + timedelta(seconds=seconds)).isoformat(timespec="seconds")


def arena_history(*, matches: int = 60, sets: int = 4, seed: int = 0) -> list[MatchResult]:
    """`matches` single PvP matches, then the matches of `sets` complete duplicate sets and
    of one set missing two of its four matches (old records: see the module docstring),
    in start-time order."""
    rng = np.random.default_rng(seed)
    skills = dict(zip(SUBMISSIONS, rng.normal(1.5, 1.5, len(SUBMISSIONS))))
    skills.update(ANCHORS)
    fill = ["builtin:combat", "builtin:forage", "builtin:random"]

    def lineup(index: int) -> list[str]:
        chosen = [SUBMISSIONS[i] for i in rng.choice(len(SUBMISSIONS), size=8, replace=False)]
        if index % 5 == 0:
            chosen = [TWICE] + [p for p in chosen if p != TWICE][:7] + [TWICE]
        return (chosen + [fill[k % 3] for k in range(16)])[:16]

    def result(players: list[str], index: int, at: int, **fields) -> MatchResult:
        played = play(players, [skills[p] for p in players], rng=rng, index=index)
        teams = tuple(t if t.policy_id.startswith("builtin:") else replace(t, revision=revision(t.policy_id))
                      for t in played.teams)
        teams = tuple(replace(t, revision="builtin") if t.policy_id.startswith("builtin:") else t for t in teams)
        return replace(played, match_id=_id(seed, f"m{index}"), started_at=_stamp(at), teams=teams, **fields)

    history = [result(lineup(i), i, 60 * i) for i in range(matches)]
    at = 60 * matches
    for k in range(sets + 1):
        base = lineup(matches + k)
        set_id = _id(seed, f"set{k}")
        rotations = range(4) if k < sets else range(2)  # the last set is left incomplete
        for r in rotations:
            seated = base[4 * r:] + base[:4 * r]
            history.append(result(seated, 10_000 + 4 * k + r, at, set_id=set_id, set_size=4, set_rotation=r))
            at += 60
    return history


def permute_start_times(history: list[MatchResult], *, seed: int) -> list[MatchResult]:
    """The same matches with their start times shuffled among them."""
    times = [r.started_at for r in history]
    order = np.random.default_rng(seed).permutation(len(times))
    return [replace(r, started_at=times[j]) for r, j in zip(history, order)]
