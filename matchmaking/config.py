"""Every rule and limit of an Arena match, in one place, each with its default and reason.

A match is only comparable to another played under the same `MatchConfig`; the fields
that define the game (teams, sizes, horizon, map pool) are recorded with every result.
Limits that protect the service (time per step, how much of a fault to keep) live here
too, so that nothing is a magic number in the runner.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

#: Version of this project, written into every match record.
ARENA_VERSION = "0.2.0"

#: Folder of the repository, for defaults that live beside the code.
PROJECT_ROOT = Path(__file__).resolve().parent.parent


def default_cache_dir() -> Path:
    """Where generated maps and other rebuildable files go (`NMMO_ARENA_CACHE` overrides)."""
    return Path(os.environ.get("NMMO_ARENA_CACHE", PROJECT_ROOT / ".cache"))


@dataclass(frozen=True)
class MatchConfig:
    """The rules of a match and the limits the runner enforces on each team.

    Defaults are the IJCAI 2022 challenge's: 16 teams of 8 on a 128x128 map for 1024 ticks,
    1 CPU, 1 GB and 600 ms per step for each team.
    """

    num_teams: int = 16
    """Teams in a free-for-all match."""

    team_size: int = 8
    """Agents per team."""

    horizon: int = 1024
    """Ticks played; the match ends earlier only when every agent is dead."""

    map_pool: int = 256
    """Distinct maps a seed can draw from. Part of the rules: two matches with the same seed
    and map pool play on the same map."""

    step_timeout_s: float = 0.6
    """Wall time a team may take to answer one tick. A later answer is dropped (the team's
    agents idle that tick) and recorded as a TIMEOUT fault."""

    init_timeout_s: float = 60.0
    """Wall time a team may take to be constructed (imports, loading weights)."""

    memory_limit_mb: int = 1024
    """Address space a sandboxed team process may use (enforced by the sandbox)."""

    cpu_limit: int = 1
    """CPU cores a sandboxed team process may use (enforced by the sandbox)."""

    max_faults_recorded: int = 50
    """Faults kept with full detail per team and match; all are still counted by kind."""

    fault_message_chars: int = 300
    """Characters of an error message kept in a fault record."""

    cache_dir: Path = field(default_factory=default_cache_dir)
    """Generated maps are cached here, one folder per map and nmmo version."""

    def __post_init__(self) -> None:
        if self.num_teams < 1:
            raise ValueError(f"`num_teams` must be at least 1, got {self.num_teams}.")
        if self.team_size < 1:
            raise ValueError(f"`team_size` must be at least 1, got {self.team_size}.")
        if self.num_teams * self.team_size > 128:
            raise ValueError(
                "`num_teams * team_size` must be at most 128 (nmmo's Medium config holds "
                f"128 agents), got {self.num_teams} x {self.team_size}."
            )
        if not 1 <= self.horizon <= 1024:
            raise ValueError(f"`horizon` must be between 1 and 1024 ticks, got {self.horizon}.")
        if self.map_pool < 1:
            raise ValueError(f"`map_pool` must be at least 1, got {self.map_pool}.")
        if self.step_timeout_s <= 0 or self.init_timeout_s <= 0:
            raise ValueError("`step_timeout_s` and `init_timeout_s` must be positive.")

    @property
    def num_agents(self) -> int:
        """Agents in the match (teams x team size)."""
        return self.num_teams * self.team_size
