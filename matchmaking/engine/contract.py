"""The team-policy contract every submission implements, and the check of what it returns.

A submission is a folder whose `policy.py` defines::

    class Team:
        def __init__(self, team_id: int, env_config: dict): ...
        def act(self, observations: dict[int, dict]) -> dict[int, dict]: ...
        def reset(self) -> None: ...          # optional, called before each match

`observations` maps a team-local member index (0..7) to that agent's observation in nmmo
2.x's own format (the dict `nmmo.Env.step` returns per agent: `Tile`, `Entity`,
`Inventory`, `Market`, `Communication`, `Task`, `CurrentTick`, `AgentId`,
`ActionTargets`). Dead members are absent. `act` returns, for any subset of the alive
members, nmmo's per-agent action dict with string keys and integer indices, e.g.::

    {0: {"Move": {"Direction": 2}}, 3: {"Attack": {"Style": 0, "Target": 5}}}

`Target` is a row of that member's own `Entity` observation, `InventoryItem` a row of its
`Inventory`, `MarketItem` a row of the `Market`. `env_config` is a plain dict described in
`matchmaking.engine.game.env_config`.

This module checks an answer against the action space and turns it into what the game
accepts; it never raises on bad input, it reports it, because the runner owns failure.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: Action name -> argument name -> number of choices (indices 0..n-1), as nmmo 2.x defines
#: them for the Arena's config (see `matchmaking.engine.game.action_space`).
ActionSpace = Mapping[str, Mapping[str, int]]

#: What the game accepts: member index -> action name -> argument name -> index.
MemberActions = dict[int, dict[str, dict[str, int]]]


@dataclass(frozen=True)
class CheckedActions:
    """A team's answer after checking: the valid part, and what was wrong with the rest."""

    actions: MemberActions
    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        """One line naming the first problem and how many more there were."""
        if not self.problems:
            return ""
        more = len(self.problems) - 1
        return self.problems[0] + (f" (+{more} more)" if more else "")


def _as_index(value: Any) -> int | None:
    """An integer index from an int or a NumPy integer; None for anything else (bools too)."""
    kind = type(value)
    if kind is int:  # the common case, checked first: this runs for every argument of every agent
        return value
    if kind is bool or not isinstance(value, numbers.Integral):
        return None
    return int(value)


def check_actions(
    answer: Any,
    *,
    alive_members: frozenset[int] | set[int],
    team_size: int,
    space: ActionSpace,
) -> CheckedActions:
    """Check a team's `act()` answer; keep each member's action only if it is well formed.

    A member whose action has any malformed part idles this tick; the other members'
    actions stand. Actions for members that are dead are ignored without complaint (the
    policy may not know yet).

    Args:
        answer (`Any`): whatever `act()` returned.
        alive_members (`set[int]`): member indices that received an observation this tick.
        team_size (`int`): members per team; keys outside `0..team_size-1` are invalid.
        space (`ActionSpace`): the valid actions and their argument ranges.

    Returns:
        `CheckedActions`: the actions to play and a description of every problem found.

    Example:
        >>> space = {"Move": {"Direction": 5}}
        >>> check_actions({0: {"Move": {"Direction": 9}}}, alive_members={0}, team_size=8,
        ...               space=space).problems
        ('member 0: Move.Direction=9 is out of range 0..4',)
    """
    if not isinstance(answer, Mapping):
        return CheckedActions(
            {}, (f"act() must return a dict of member index -> action dict, got {type(answer).__name__}",)
        )
    actions: MemberActions = {}
    problems: list[str] = []
    for key, member_action in answer.items():
        member = _as_index(key)
        if member is None or not 0 <= member < team_size:
            problems.append(f"key {key!r} is not a member index 0..{team_size - 1}")
            continue
        if member not in alive_members:
            continue
        checked, problem = _check_member(member, member_action, space)
        if problem:
            problems.append(problem)
        else:
            actions[member] = checked
    return CheckedActions(actions, tuple(problems))


def _check_member(member: int, action: Any, space: ActionSpace) -> tuple[dict[str, dict[str, int]], str]:
    if not isinstance(action, Mapping):
        return {}, f"member {member}: action must be a dict of action name -> arguments, got {type(action).__name__}"
    checked: dict[str, dict[str, int]] = {}
    for name, args in action.items():
        arg_space = space.get(name) if isinstance(name, str) else None
        if arg_space is None:
            return {}, f"member {member}: unknown action {name!r} (valid: {', '.join(sorted(space))})"
        if not isinstance(args, Mapping):
            return {}, f"member {member}: {name} arguments must be a dict, got {type(args).__name__}"
        if len(args) < len(arg_space):
            missing = set(arg_space) - set(args)
            return {}, f"member {member}: {name} is missing argument(s) {', '.join(sorted(map(str, missing)))}"
        checked_args: dict[str, int] = {}
        for arg, value in args.items():
            size = arg_space.get(arg) if isinstance(arg, str) else None
            if size is None:
                return {}, f"member {member}: {name} has no argument {arg!r} (valid: {', '.join(sorted(arg_space))})"
            index = _as_index(value)
            if index is None:
                return {}, f"member {member}: {name}.{arg} must be an integer index, got {type(value).__name__}"
            if not 0 <= index < size:
                return {}, f"member {member}: {name}.{arg}={index} is out of range 0..{size - 1}"
            checked_args[arg] = index
        checked[name] = checked_args
    return checked, ""
