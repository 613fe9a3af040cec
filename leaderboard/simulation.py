"""Synthetic match histories from hidden skills, for testing and measuring the ratings.

A population of policies with known ("hidden") skills plays 16-team free-for-alls: each
team's Achievement is drawn from its skill plus noise and rounded to the scoring table's
grain, so ties happen (many teams at 0) the way they do in real matches. Nothing here
runs Neural MMO: this is how the rating engines and the matchmaking are checked against
a truth that real matches never reveal.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Sequence

import numpy as np

from matchmaking.records import MatchResult, TaskResult, TeamResult
from matchmaking.scoring import competition_ranks

_EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Population:
    """Policies and their hidden skills (in Plackett-Luce units: a skill gap of 1 makes
    the better policy win a duel about 73% of the time)."""

    ids: tuple[str, ...]
    skills: np.ndarray

    @classmethod
    def random(cls, size: int, *, seed: int = 0, spread: float = 1.5, prefix: str = "sim/policy") -> "Population":
        rng = np.random.default_rng(seed)
        return cls(ids=tuple(f"{prefix}-{i:04d}" for i in range(size)), skills=rng.normal(0.0, spread, size))

    def skill(self, policy_id: str) -> float:
        return float(self.skills[self.ids.index(policy_id)])


def play(
    lineup: Sequence[str],
    skills: Sequence[float],
    *,
    rng: np.random.Generator,
    index: int,
    track: str = "pvp",
) -> MatchResult:
    """One synthetic match: Achievement = 4 x round(max(0, skill + Gumbel noise + 2)),
    so that the order of the noisy performances is a Plackett-Luce draw before rounding."""
    performance = np.asarray(skills) + rng.gumbel(size=len(skills))
    achievement = (4 * np.clip(np.round(performance + 2.0), 0, 21)).astype(int)
    ranks = competition_ranks(achievement.tolist())
    teams = tuple(
        TeamResult(
            slot=slot,
            policy_id=policy,
            revision="sim",
            achievement=int(achievement[slot]),
            rank=ranks[slot],
            tasks={task: TaskResult(0, 0) for task in ("travel", "forage", "equipment", "eliminate")},
            alive=0,
            player_kills=0,
            deaths=8,
        )
        for slot, policy in enumerate(lineup)
    )
    return MatchResult(
        match_id=f"sim-{index:07d}",
        seed=index,
        map_id=1,
        horizon=1024,
        ticks=1024,
        nmmo_version="sim",
        arena_version="sim",
        started_at=(_EPOCH + timedelta(seconds=index)).isoformat(timespec="seconds"),
        duration_s=0.0,
        teams=teams,
        track=track,
    )


def random_history(population: Population, matches: int, *, seed: int = 0, pool: int = 16) -> list[MatchResult]:
    """`matches` matches of uniformly random pools of `pool` policies."""
    rng = np.random.default_rng(seed)
    history = []
    for index in range(matches):
        chosen = rng.choice(len(population.ids), size=pool, replace=False)
        history.append(play([population.ids[i] for i in chosen], population.skills[chosen], rng=rng, index=index))
    return history
