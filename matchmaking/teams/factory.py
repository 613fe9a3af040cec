"""From a policy reference to a playing team in this process.

`team_factory` is how any process builds the team a `PolicyRef` names: the Arena's built-ins
from `matchmaking.teams.builtin`, anything else by loading its folder's `policy.py`
(`matchmaking.teams.loading`). `in_process_host` hosts that team in the match's own process,
the runner's `HostFactory` for the Arena's own teams and trusted local runs; the sandbox
hosts every other team in a process of its own (`matchmaking.sandbox.host`).
"""

from __future__ import annotations

from typing import Any

from arena.errors import PolicyNotFoundError
from arena.policies import PolicyRef
from matchmaking.engine.hosting import InProcessTeam, TeamHost, TeamSlot
from matchmaking.teams.builtin import builtin_factory, is_packaged
from matchmaking.teams.loading import TeamFactory, load_team_class


def team_factory(ref: PolicyRef) -> TeamFactory:
    """The constructor of `ref`'s team, loading its code into this process."""
    if ref.is_builtin:
        return builtin_factory(ref.builtin_name)
    if ref.path is None:
        raise PolicyNotFoundError(f"Policy {ref.policy_id} has no files: download it before playing.")
    return load_team_class(ref.path, arena_code=is_packaged(ref.path))


class BuiltinHost(InProcessTeam):
    """An Arena built-in in the match's own process: as `InProcessTeam`, and a team that can
    read nmmo's own observations (`ScriptedTeam.bind_observations`) is bound to them."""

    def bind_observations(self, env: Any, agent_ids: list[int]) -> None:
        bind = getattr(self.team, "bind_observations", None)
        if callable(bind):
            bind(env, agent_ids)


def in_process_host(ref: PolicyRef, slot: TeamSlot) -> TeamHost:
    """Host every team in the match's own process (trusted code only)."""

    def factory(tid: int, cfg: dict[str, Any]) -> Any:
        return team_factory(ref)(tid, cfg)  # loading errors surface as INIT faults

    return BuiltinHost(factory, slot) if ref.is_builtin else InProcessTeam(factory, slot)
