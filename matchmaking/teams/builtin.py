"""Built-in teams: nmmo's scripted baselines behind the same contract as a submission.

What each built-in is (its description, scripted or learned, anchor or not) is written in
`arena.rules.BUILTIN_TEAMS`; this module is how they play. A built-in team is a `Team` like any other (`__init__(team_id, env_config)`, `act`,
`reset`), so built-in and submitted teams mix freely in a match and a participant can
read these as example policies. Each member is one of nmmo's scripted agents
(`scripted/baselines.py`); they expect nmmo's `Observation` object rather than the
per-agent dict, so the team rebuilds one from the dict each tick and turns the agent's
answer (keyed by nmmo's action classes) back into the contract's string/index format.

nmmo 2.1.2's `Meander` crashes and its plain `Combat`/`Gather` lack a weapon or tool,
so the Combat team is made of the Melee, Range and Mage subclasses.

The members are nmmo's classes with their path searches compiled
(`matchmaking.teams.compiled_builtins`): the same decisions, tick for tick, in far less
time. In the match's own process (`matchmaking.teams.factory.in_process_host`) the team
also reads nmmo's `Observation` objects directly (`bind_observations`), as nmmo's own
loop hands them to its scripted agents, instead of rebuilding them from the arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import nmmo
import numpy as np
from nmmo.core.observation import Observation
from nmmo.entity.entity import EntityState
from nmmo.lib import seeding
from nmmo.systems.item import ItemState
from scripted import baselines

from arena.rules import BUILTIN_TEAMS, builtin_team
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.game import nmmo_config
from matchmaking.teams import compiled_builtins, strategies
from matchmaking.teams.learned import learned_factory

_INDEX_TYPES = (int, np.integer)
_ENTITY_ID = EntityState.State.attr_name_to_col["id"]
_ITEM_ID = ItemState.State.attr_name_to_col["id"]

#: nmmo's scripted baselines: name -> the scripted agent class of each member, cycled (nmmo's
#: own classes: a `ScriptedTeam` plays their compiled subclasses, `compiled_builtins.compiled_class`).
SCRIPTED_AGENTS: dict[str, tuple[type[baselines.Scripted], ...]] = {
    "random": (baselines.Random,),
    "forage": (baselines.Forage,),
    "combat": (baselines.Melee, baselines.Range, baselines.Mage),
    "melee": (baselines.Melee,),
    "range": (baselines.Range,),
    "mage": (baselines.Mage,),
}

def _present_rows(table: np.ndarray, id_col: int) -> np.ndarray:
    """The rows of an observation table that hold something, as a view.

    nmmo fills these tables from the top and pads the rest with zeros (id 0), so the
    present rows are a prefix: counting them avoids copying the table every tick.
    """
    return table[: np.count_nonzero(table[:, id_col])]


def _to_contract(actions: Mapping[Any, Mapping[Any, Any]]) -> dict[str, dict[str, int]]:
    """nmmo's class-keyed action dict -> the contract's `{"Move": {"Direction": 2}}`."""
    converted: dict[str, dict[str, int]] = {}
    for action, args in actions.items():
        converted_args = {}
        for arg, value in args.items():
            # indices (Target, InventoryItem, Price, ...) stay; choices (North, Mage) become their index
            converted_args[arg.__name__] = int(value) if isinstance(value, _INDEX_TYPES) else arg.edges.index(value)
        converted[action.__name__] = converted_args
    return converted


class ScriptedTeam:
    """A team of nmmo scripted agents, seen through the team-policy contract.

    Args:
        team_id (`int`): the team's slot in the match.
        env_config (`dict`): from `matchmaking.engine.game.env_config`; its `seed` seeds the team.
        agents (`tuple[type]`): scripted agent class of each member, cycled.
        compiled (`bool`, *optional*): play nmmo's classes with their searches compiled
            (the default), or nmmo's classes as they are (the benchmarks' "before").
    """

    def __init__(self, team_id: int, env_config: Mapping[str, Any], agents: tuple[type, ...], *, compiled: bool = True):
        self.team_id = team_id
        self.team_size = int(env_config["team_size"])
        self.seed = int(env_config["seed"])
        match = MatchConfig(
            num_teams=int(env_config["num_teams"]),
            team_size=self.team_size,
            horizon=int(env_config["horizon"]),
        )
        self.config = nmmo_config(match)
        nmmo.Action.hook(self.config)  # sets up Price and Token choices, as nmmo's Realm does
        self.first_agent_id = team_id * self.team_size + 1
        playing = compiled_builtins.compiled_class if compiled else (lambda cls: cls)
        self.agent_classes = [playing(agents[m % len(agents)]) for m in range(self.team_size)]
        self.compiled = compiled
        self.reset()

    def reset(self) -> None:
        """New agents (they keep per-episode state such as their spawn), a reseeded RNG, and
        no binding to a previous game's observations."""
        rng, _ = seeding.np_random(self.seed)
        self.bound: list[Any] | None = None
        self.agents = []
        self.observations = []
        for member, cls in enumerate(self.agent_classes):
            agent = cls(self.config, self.first_agent_id + member)
            agent.set_rng(rng)
            self.agents.append(agent)
            self.observations.append(Observation(self.config, self.first_agent_id + member).reset(None))

    def bind_observations(self, env: Any, agent_ids: list[int]) -> None:
        """Read the members' observations straight from nmmo's `env` from now on (the match's
        own process only: see `compiled_builtins.direct_observations`)."""
        if self.compiled:
            self.bound = compiled_builtins.direct_observations(env, agent_ids)

    def act(self, observations: Mapping[int, Mapping[str, Any]]) -> dict[int, dict[str, dict[str, int]]]:
        actions = {}
        if self.bound is not None:  # nmmo's own observations, as its loop hands them over
            for member in observations:
                actions[member] = _to_contract(self.agents[member](self.bound[member]))
            return actions
        for member, obs in observations.items():
            ob = self.observations[member]
            ob.update(
                int(obs["CurrentTick"]),
                obs["Tile"],
                _present_rows(obs["Entity"], _ENTITY_ID),
                inventory=_present_rows(obs["Inventory"], _ITEM_ID),
                market=_present_rows(obs["Market"], _ITEM_ID),
                comm=_present_rows(obs["Communication"], _ENTITY_ID),
            )
            actions[member] = _to_contract(self.agents[member](ob))
        return actions


def builtin_factory(name: str) -> Callable[[int, Mapping[str, Any]], Any]:
    """A `Team` constructor for built-in `name` (one of `arena.rules.BUILTIN_TEAMS`)."""
    team = builtin_team(name)
    name = team.name
    if team.kind == "learned":
        return learned_factory(name)
    if name not in SCRIPTED_AGENTS:
        return {"coordinated": strategies.coordinated, "elite": strategies.elite}[name]
    agents = SCRIPTED_AGENTS[name]

    def make(team_id: int, env_config: Mapping[str, Any]) -> ScriptedTeam:
        return ScriptedTeam(team_id, env_config, agents)

    make.__name__ = builtin_team(name).policy_id
    return make


_PACKAGED = '''"""The Arena's built-in team `{name}`, packaged as a submission.

The Arena also plays it directly as `builtin:{name}` (a PvE opponent and rating anchor);
as a submission it goes through discovery, validation, the sandbox and PvE like any other.
"""

from matchmaking.builtin import builtin_factory

_make = builtin_factory("{name}")


class Team:
    def __init__(self, team_id, env_config):
        self._team = _make(team_id, env_config)
        self.reset = getattr(self._team, "reset", lambda: None)

    def act(self, observations):
        return self._team.act(observations)
'''


def packaged_policy(name: str) -> str:
    """The `policy.py` of built-in team `name` packaged as a submission (the embedded Hub
    is seeded with these, so a fresh Arena has a field to play)."""
    return _PACKAGED.format(name=name)


def is_packaged(folder: Path) -> bool:
    """Whether `folder` holds exactly a packaged built-in team: its `policy.py` is one of
    `packaged_policy`'s, and nothing else in it is code. Such a revision runs only the
    Arena's own code, so it may play where submitted code may not (`matchmaking.isolation`)."""
    try:
        text = (folder / "policy.py").read_text()
        names = {p.name for p in folder.iterdir() if not p.name.startswith(".")}
    except OSError:
        return False
    if not names <= {"policy.py", "README.md"}:
        return False
    return any(text == packaged_policy(team.name) for team in BUILTIN_TEAMS)
