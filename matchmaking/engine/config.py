"""Every rule and limit of an Arena match, in one place, each with its default and reason.

A match is only comparable to another played under the same `MatchConfig`; the fields
that define the game (teams, sizes, horizon, map pool) are recorded with every result.
Limits that protect the service (time per step, how much of a fault to keep) live here
too, so that nothing is a magic number in the runner.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from arena.errors import InvalidArgumentError
from arena.logs import HEAD_BYTES, TAIL_BYTES
from arena.rules import MATCH
from arena.settings import default_cache_dir


@dataclass(frozen=True)
class MatchConfig:
    """The rules of a match and the limits the runner enforces on each team.

    Defaults are the IJCAI 2022 challenge's: 16 teams of 8 on a 128x128 map for 1024 ticks,
    1 CPU, 1 GB and 600 ms per step for each team.
    """

    num_teams: int = MATCH.num_teams
    """Teams in a free-for-all match."""

    team_size: int = MATCH.team_size
    """Agents per team."""

    horizon: int = MATCH.horizon
    """Ticks played; the match ends earlier only when every agent is dead."""

    map_pool: int = 256
    """Distinct maps a seed can draw from. Part of the rules: two matches with the same seed
    and map pool play on the same map."""

    step_timeout_s: float = 0.6
    """The deadline of one tick's answer, in wall time (the IJCAI budget of 600 ms): what
    `act()` takes beyond it is drawn from the team's `time_bank_s`."""

    time_bank_s: float = 60.0
    """A team's overage for a whole match (Kaggle's): the time beyond its deadlines its
    answers may take in all. It absorbs the odd slow tick (a garbage collection, a busy
    machine) and no more: once it is spent, an answer later than the deadline is dropped
    (the team's agents idle that tick) and recorded as a TIMEOUT fault, so that no team holds
    a worker much longer than a normal match (at most this, and `max_timeouts` deadlines)."""

    max_timeouts: int = 5
    """Times in one match the runner may wait out a sandboxed team's deadline with its bank
    spent before it stops the team for the rest of the match (ticks on which the team is
    still busy with an earlier one cost no wait and do not count, though its agents idle
    and each is a TIMEOUT fault)."""

    hang_timeout_s: float = 10.0
    """A sandboxed team still busy with one tick after this long is stopped: it hangs."""

    init_timeout_s: float = 60.0
    """Wall time a team may take to be built (imports, loading weights)."""

    memory_limit_mb: int = 1024
    """Memory a sandboxed team may use (resident, read by the host every tick) on top of what
    its process holds when forked: the interpreter, nmmo and the preloaded frameworks
    (NumPy, PyTorch, ONNX Runtime). Weights and state the policy loads count."""

    cpu_limit: int = 1
    """CPU cores a sandboxed team may run on."""

    max_file_mb: int = 64
    """Largest file a sandboxed team may write (in its private working folder)."""

    workdir_mb: int = 128
    """Total size of a sandboxed team's working folder (a tmpfs of this size where the
    kernel allows a mount namespace; elsewhere the host measures it every tick)."""

    output_tail_chars: int = 2000
    """Characters of a sandboxed team's last output (a traceback's end) that a CRASH
    fault's message may quote (300 of them fit)."""

    log_head_bytes: int = HEAD_BYTES
    """Bytes of a sandboxed team's stdout and stderr kept in its log from the start of a
    match (48 KiB: how it started, what it says every tick) ..."""

    log_tail_bytes: int = TAIL_BYTES
    """... and from its end (16 KiB: what led to its last fault). Everything between is
    read and counted, not kept (`arena.logs`), so printing megabytes harms nobody."""

    max_faults_recorded: int = 50
    """Faults kept with full detail per team and match; all are still counted by kind."""

    fault_message_chars: int = 300
    """Characters of an error message kept in a fault record."""

    withhold_policy_words: bool = False
    """What a submitted team says (its faults' messages, its output) reaches the operator's
    log alone, the records keeping each fault's kind and tick (`arena.untrusted`): set
    where the isolation self-test found files or network open to submitted code
    (`IsolationReport.exposed`). Built-in teams' words are the Arena's and always kept."""

    cache_dir: Path | None = field(default_factory=default_cache_dir)
    """Generated maps are cached here, one folder per map and nmmo version; None in a spec
    bound for another machine, which uses its own (`matchmaking.service.nodes`)."""

    @property
    def maps_dir(self) -> Path:
        """Where this machine caches generated maps.

        Raises:
            `ValueError`: a spec bound for another machine, not yet given this one's cache.
        """
        if self.cache_dir is None:
            raise InvalidArgumentError("This match's config has no cache folder (a spec bound for another machine): "
                             "give it this machine's with `dataclasses.replace(config, cache_dir=...)`.")
        return self.cache_dir / "maps"

    map_key: str | None = field(default=None, repr=False)
    """The key the held-out maps are generated from (`matchmaking.engine.maps.held_out_key` of the
    Space's secret); None: only the published pool can be played. Never shown (not in the
    repr) and never sent to a team: `env_config` carries none of it."""

    def __post_init__(self) -> None:
        if self.num_teams < 1:
            raise InvalidArgumentError(f"`num_teams` must be at least 1, got {self.num_teams}.")
        if self.team_size < 1:
            raise InvalidArgumentError(f"`team_size` must be at least 1, got {self.team_size}.")
        if self.num_teams * self.team_size > 128:
            raise InvalidArgumentError(
                "`num_teams * team_size` must be at most 128 (nmmo's Medium config holds "
                f"128 agents), got {self.num_teams} x {self.team_size}."
            )
        if not 1 <= self.horizon <= 1024:
            raise InvalidArgumentError(f"`horizon` must be between 1 and 1024 ticks, got {self.horizon}.")
        if self.map_pool < 1:
            raise InvalidArgumentError(f"`map_pool` must be at least 1, got {self.map_pool}.")
        if self.time_bank_s < 0:
            raise InvalidArgumentError(f"`time_bank_s` must be 0 or more seconds, got {self.time_bank_s}.")
        for name in ("log_head_bytes", "log_tail_bytes"):
            if getattr(self, name) < 0:
                raise InvalidArgumentError(f"`{name}` must be 0 or more bytes, got {getattr(self, name)}.")
        for name in ("step_timeout_s", "init_timeout_s", "hang_timeout_s"):
            if getattr(self, name) <= 0:
                raise InvalidArgumentError(f"`{name}` must be positive, got {getattr(self, name)}.")

    @property
    def num_agents(self) -> int:
        """Agents in the match (teams x team size)."""
        return self.num_teams * self.team_size
