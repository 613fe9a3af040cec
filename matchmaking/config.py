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
    """CPU time a team may spend answering one tick (the IJCAI budget). CPU rather than wall
    time, so that a team is not punished for sharing a busy machine. A later answer is
    dropped (the team's agents idle that tick) and recorded as a TIMEOUT fault."""

    step_wall_timeout_s: float = 2.0
    """Wall time the runner waits for an answer: catches teams that sleep, block or hang,
    which use no CPU. Generous, because 16 teams share the machine's cores."""

    max_timeouts: int = 5
    """Times in one match the runner may wait out `step_wall_timeout_s` for a sandboxed
    team before it stops the team for the rest of the match (a slow team must not hold
    the match up; ticks on which the team is still busy with an earlier one cost no wait
    and do not count, though its agents idle and each is a TIMEOUT fault)."""

    hang_timeout_s: float = 10.0
    """A sandboxed team still busy with one tick after this long is stopped: it hangs."""

    init_timeout_s: float = 60.0
    """Wall time a team may take to be built (imports, loading weights)."""

    memory_limit_mb: int = 1024
    """Memory a sandboxed team may allocate on top of the interpreter and NumPy/nmmo."""

    cpu_limit: int = 1
    """CPU cores a sandboxed team may run on."""

    max_file_mb: int = 64
    """Largest file a sandboxed team may write (in its private working folder)."""

    output_tail_chars: int = 2000
    """Characters of a sandboxed team's own output (prints, tracebacks) kept for diagnosis;
    the rest is read and thrown away, so printing megabytes harms nobody."""

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
        for name in ("step_timeout_s", "step_wall_timeout_s", "init_timeout_s", "hang_timeout_s"):
            if getattr(self, name) <= 0:
                raise ValueError(f"`{name}` must be positive, got {getattr(self, name)}.")

    @property
    def num_agents(self) -> int:
        """Agents in the match (teams x team size)."""
        return self.num_teams * self.team_size


@dataclass(frozen=True)
class ArenaSettings:
    """How the Space runs: where its Hub and data are, and what it accepts.

    Read from the environment by `from_env` (variables named in each field's docstring),
    so a Space is configured in its settings page, not in code.
    """

    hub_endpoint: str | None = None
    """`NMMO_ARENA_HUB`: URL of the Hub to use. None (default) starts the embedded local Hub
    (`localhub`) on `data_dir/hub`, with no account and no network."""

    data_dir: Path = PROJECT_ROOT / "data"
    """`NMMO_ARENA_DATA`: the Space's own state: downloads, statuses, the history store."""

    submission_tag: str = "nmmo-arena"
    """`NMMO_ARENA_TAG`: the tag a model repo carries to be a submission."""

    max_submission_mb: float = 200.0
    """`NMMO_ARENA_MAX_MB`: largest submission (sum of its files) that is downloaded."""

    history_repo: str = "nmmo-arena/match-history"
    """`NMMO_ARENA_HISTORY_REPO`: dataset repo the match history is pushed to."""

    validation_ticks: int = 16
    """Ticks of the small match that validates a new revision."""

    match_horizon: int = 1024
    """`NMMO_ARENA_HORIZON`: ticks of every PvE and PvP match (shorten only for demos and
    tests: results at another horizon are not comparable)."""

    workers: int = 0
    """`NMMO_ARENA_WORKERS`: parallel matches on this machine (0: one per CPU)."""

    ray_address: str | None = None
    """`NMMO_ARENA_RAY`: address of a Ray cluster to run matches on (`auto`, `ray://...`);
    unset: local worker processes."""

    pairing: str = "random"
    """`NMMO_ARENA_PAIRING`: PvP pools: `random` (the paper's), `closest-rating`, `uncertainty`."""

    pvp_matches_per_round: int = 0
    """PvP matches started per round of the PvP job (0: one per worker)."""

    pve_matches_per_round: int = 0
    """PvE matches started per round of the PvE job (0: two per worker)."""

    sync_every_s: float = 60.0
    """`NMMO_ARENA_SYNC_S`: seconds between looks at the Hub for new revisions."""

    validate_every_s: float = 15.0
    """Seconds between validation rounds."""

    pve_every_s: float = 10.0
    """Seconds between PvE rounds (a round waits for its matches, so rounds never overlap)."""

    pvp_every_s: float = 10.0
    """Seconds between PvP rounds."""

    flush_every_s: float = 30.0
    """Seconds between moves of recorded matches from the WAL into a shard."""

    push_every_minutes: float = 5.0
    """Minutes between pushes of the history to the Hub (one commit each)."""

    pve_matches_per_stage: int = 10
    """PvE matches per stage (the paper's 10)."""

    next_stage_top1: float = 0.5
    """Top1Ratio in a PvE stage that opens the next stage."""

    qualify_achievement: float = 25.0
    """Mean Achievement in PvE stage 1 that qualifies for PvP (the paper's 25)."""

    error_after_faulty_matches: int = 2
    """Faulty matches (crash, memory, or faults on 10% of ticks) after which a revision
    is marked `error` and no longer played."""

    seed_examples: bool = True
    """`NMMO_ARENA_SEED_EXAMPLES`: push the example and built-in submissions to an empty
    embedded Hub at start-up."""

    @classmethod
    def from_env(cls, environ: "os._Environ[str] | dict[str, str]" = os.environ) -> "ArenaSettings":
        defaults = cls()
        return cls(
            hub_endpoint=environ.get("NMMO_ARENA_HUB") or None,
            data_dir=Path(environ.get("NMMO_ARENA_DATA", defaults.data_dir)),
            submission_tag=environ.get("NMMO_ARENA_TAG", defaults.submission_tag),
            max_submission_mb=float(environ.get("NMMO_ARENA_MAX_MB", defaults.max_submission_mb)),
            history_repo=environ.get("NMMO_ARENA_HISTORY_REPO", defaults.history_repo),
            match_horizon=int(environ.get("NMMO_ARENA_HORIZON", defaults.match_horizon)),
            workers=int(environ.get("NMMO_ARENA_WORKERS", defaults.workers)),
            ray_address=environ.get("NMMO_ARENA_RAY") or None,
            pairing=environ.get("NMMO_ARENA_PAIRING", defaults.pairing),
            sync_every_s=float(environ.get("NMMO_ARENA_SYNC_S", defaults.sync_every_s)),
            seed_examples=environ.get("NMMO_ARENA_SEED_EXAMPLES", "1") not in ("0", "false", "no"),
        )

    @property
    def submissions_dir(self) -> Path:
        """Downloaded submissions, one folder per revision."""
        return self.data_dir / "submissions"

    @property
    def local_hub_dir(self) -> Path:
        """Storage of the embedded local Hub."""
        return self.data_dir / "hub"

    @property
    def history_dir(self) -> Path:
        """The match-history dataset folder (see `matchmaking.history`)."""
        return self.data_dir / "history"
