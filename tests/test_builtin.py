"""Built-in teams speak the same contract as submissions."""

from __future__ import annotations

import numpy as np
from nmmo.core import action

from arena.rules import BUILTIN_TEAMS
from matchmaking.engine import game
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.contract import check_actions
from matchmaking.teams.builtin import _to_contract, builtin_factory

BUILTINS = tuple(team.name for team in BUILTIN_TEAMS)


def test_scripted_actions_become_contract_indices():
    converted = _to_contract(
        {
            action.Move: {action.Direction: action.West},
            action.Attack: {action.Style: action.Mage, action.Target: np.int64(3)},
            action.Sell: {action.InventoryItem: np.int64(2), action.Price: 5},
        }
    )
    assert converted == {
        "Move": {"Direction": 3},
        "Attack": {"Style": 2, "Target": 3},
        "Sell": {"InventoryItem": 2, "Price": 5},
    }
    assert all(type(v) is int for args in converted.values() for v in args.values())


def test_every_builtin_answers_valid_actions_from_plain_observations():
    config = MatchConfig(num_teams=len(BUILTINS), team_size=2, horizon=30)
    env = game.make_env(config, map_id=3)
    observations = game.reset_env(env, seed=2)
    space = game.action_space(env)
    agent_ids = game.team_agent_ids(config)
    teams = {
        team_id: builtin_factory(name)(team_id, game.env_config(config, team_id=team_id, seed=team_id))
        for team_id, name in enumerate(BUILTINS)
    }
    moved = set()
    for _ in range(config.horizon):
        actions = {}
        for team_id, team in teams.items():
            members = {m: observations[a] for m, a in enumerate(agent_ids[team_id]) if a in env.realm.players}
            answer = team.act(members)
            checked = check_actions(answer, alive_members=set(members), team_size=config.team_size, space=space)
            assert checked.ok, checked.problems
            actions.update({agent_ids[team_id][m]: act for m, act in checked.actions.items()})
            moved |= {team_id for act in checked.actions.values() if "Move" in act}
        observations, *_ = env.step(actions)
    assert moved == set(teams)  # every built-in acted
