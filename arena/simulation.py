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

from arena.schema import MatchResult, TaskResult, TeamResult
from arena.scoring import competition_ranks

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
    coarse: bool = True,
) -> MatchResult:
    """One synthetic match. Performance = skill + Gumbel noise, so that the order of
    performances is exactly a Plackett-Luce draw. `coarse` scores it as real matches look
    (Achievement = 4 x round(max(0, performance + 2)): many ties, many zeros); otherwise
    the score keeps the full order (no ties), where the model is exactly right."""
    performance = np.asarray(skills) + rng.gumbel(size=len(skills))
    if coarse:
        achievement = (4 * np.clip(np.round(performance + 2.0), 0, 21)).astype(int)
    else:
        achievement = np.round((performance + 20.0) * 1000).astype(int)
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


def random_history(
    population: Population, matches: int, *, seed: int = 0, pool: int = 16, coarse: bool = True
) -> list[MatchResult]:
    """`matches` matches of uniformly random pools of `pool` policies."""
    rng = np.random.default_rng(seed)
    history = []
    for index in range(matches):
        chosen = rng.choice(len(population.ids), size=pool, replace=False)
        lineup = [population.ids[i] for i in chosen]
        history.append(play(lineup, population.skills[chosen], rng=rng, index=index, coarse=coarse))
    return history
