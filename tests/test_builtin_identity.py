"""The Arena's compiled built-ins decide exactly what nmmo's own scripted agents decide.

`matchmaking.teams.compiled_builtins` replaces the pure-Python path searches and scans
of nmmo's `scripted` package with compiled ones, and lets a built-in team read nmmo's own
observations. These tests hold it to nmmo's unpatched code, at two levels:

- the searches themselves, on many random vision windows (ties, walls, cut-offs, goals out
  of sight), against `scripted.move.aStar`, `forageDijkstra` and `attack.closestTarget`;
- whole matches (a few seeds on different maps, short horizons): nmmo's own loop
  (`bench.match_speed.bare_match`) and the Arena's runner write the same event log, row
  for row, and score every team the same, whether the built-ins read nmmo's own
  observations (in the match process) or the observation dicts (as in a sandbox). The
  full check (20 seeds, 1024 ticks) is `python -m bench.match_speed`.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
from nmmo.core import action
from nmmo.entity.entity import EntityState
from nmmo.lib import material
from scripted import attack, baselines, move

from bench.match_speed import compare_with_nmmo, long_lived_lineup, stage1_lineup
from matchmaking.engine import game, speedups
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec
from matchmaking.teams import compiled_builtins
from matchmaking.teams.builtin import builtin_factory
from tests_support import patient

VISION = 7
SIDE = 2 * VISION + 1
COLUMNS = EntityState.State.attr_name_to_col


class _Config:
    PLAYER_VISION_RADIUS = VISION


class _Window:
    """The part of nmmo's `Observation` the searches read: tiles, `tile()`, the agent."""

    def __init__(self, tiles: np.ndarray, agent: types.SimpleNamespace):
        self.tiles = tiles
        self.agent = agent

    def tile(self, r: int, c: int) -> types.SimpleNamespace:
        return types.SimpleNamespace(material_id=int(self.tiles[(VISION + r) * SIDE + VISION + c, 2]))


def _random_window(rng: np.random.Generator) -> _Window:
    every = np.array(sorted(material.All.indices))
    open_share = rng.uniform(0.3, 0.95)  # from walled-in to open ground
    materials = np.where(rng.random(SIDE * SIDE) < open_share, material.Grass.index, rng.choice(every, SIDE * SIDE))
    materials[rng.random(SIDE * SIDE) < 0.1] = material.Foilage.index
    materials[rng.random(SIDE * SIDE) < 0.05] = material.Water.index
    tiles = np.zeros((SIDE * SIDE, 3), dtype=np.int16)
    tiles[:, 2] = materials
    agent = types.SimpleNamespace(food=int(rng.integers(0, 101)), water=int(rng.integers(0, 101)))
    return _Window(tiles, agent)


def test_compiled_searches_equal_nmmos_on_random_windows():
    rng = np.random.default_rng(25)
    for case in range(1500):
        ob = _random_window(rng)
        goal = (int(rng.integers(-VISION - 2, VISION + 3)), int(rng.integers(-VISION - 2, VISION + 3)))
        cutoff = int(rng.choice([100, 100, 40, 5, 1]))
        expected = move.aStar(_Config, ob, {}, *goal, cutoff=cutoff)
        assert compiled_builtins.a_star(_Config, ob, {}, *goal, cutoff=cutoff) == tuple(expected), (case, goal)

        theirs, ours = {}, {}
        their_rng, our_rng = np.random.default_rng(case), np.random.default_rng(case)
        move.forageDijkstra(_Config, ob, theirs, 100, 100, their_rng, cutoff=cutoff)
        compiled_builtins.forage_dijkstra(_Config, ob, ours, 100, 100, our_rng, cutoff=cutoff)
        assert ours == theirs, case
        assert our_rng.random() == their_rng.random(), case  # the RNG drawn exactly as often


def test_closest_target_equals_nmmos():
    rng = np.random.default_rng(7)
    for case in range(300):
        rows = int(rng.integers(1, 12))
        values = np.zeros((rows, len(COLUMNS)), dtype=np.int16)
        values[:, COLUMNS["id"]] = rng.choice(np.r_[-20:0, 1:40], rows, replace=False)
        values[:, COLUMNS["row"]] = rng.integers(60, 66, rows)  # many ties in distance
        values[:, COLUMNS["col"]] = rng.integers(60, 66, rows)
        me = EntityState.parse_array(values[int(rng.integers(0, rows))])
        ob = types.SimpleNamespace(entities=types.SimpleNamespace(values=values), agent=me)
        theirs = attack.closestTarget(None, ob)
        ours = compiled_builtins.closest_target(None, ob)
        assert (ours[0] is None) == (theirs[0] is None), case
        if theirs[0] is not None:
            assert vars(ours[0]) == vars(theirs[0]) and ours[1] == theirs[1], case


def test_nmmos_own_code_is_left_alone():
    """The compiled searches live in the Arena's classes only: nmmo's modules and classes,
    which `bare_match` plays, are untouched."""
    team = builtin_factory("combat")(0, _env_config())
    classes = set(team.agent_classes)
    assert all(issubclass(cls, (baselines.Melee, baselines.Range, baselines.Mage)) for cls in classes)
    assert not classes & {baselines.Melee, baselines.Range, baselines.Mage}
    assert move.aStar.__module__ == "scripted.move" and move.forageDijkstra.__module__ == "scripted.move"
    assert attack.closestTarget.__module__ == "scripted.attack"
    assert baselines.Scripted.explore.__globals__["move"] is move
    assert {cls.__name__ for cls in classes} == {"Melee", "Range", "Mage"}
    assert action.Move is move.action.Move


def _env_config() -> dict:
    from matchmaking.engine import game

    return game.env_config(MatchConfig(horizon=8), team_id=0, seed=1)


@pytest.mark.parametrize("seed, horizon", [(11, 100), (29, 80), (47, 80)])
def test_arena_matches_equal_nmmos_own_loop(seed, horizon):
    spec = MatchSpec(seed=seed, policies=stage1_lineup(), config=patient(MatchConfig(horizon=horizon)))
    compared = compare_with_nmmo(spec)
    assert compared["identical"], compared
    assert compared["ticks"] == horizon and compared["events"] > 0 and compared["states_compared"] == horizon


def test_a_long_lived_line_up_equals_nmmos_own_loop():
    """Sixteen forage teams: players move, explore and harvest all match long, so the lean
    moves (players' as well as NPCs') and their GO_FARTHEST events are compared too."""
    spec = MatchSpec(seed=5, policies=long_lived_lineup(), config=patient(MatchConfig(horizon=80)))
    compared = compare_with_nmmo(spec)
    assert compared["identical"], compared


def test_the_realm_speed_ups_are_bound_to_the_arenas_env_alone(tmp_path):
    """An Arena env plays the lean realm step; nmmo's `Realm` class, which `bare_match` and
    anything else in the process play, keeps nmmo's own."""
    import nmmo
    from nmmo.core.realm import Realm
    from nmmo.lib.event_log import EventLogger

    config = MatchConfig(horizon=8)
    env = game.env_on(config, game.ensure_map(1, config))
    try:
        assert env.realm.step.__func__ is speedups._realm_step
        assert "_compute_rewards" in vars(env) and "_update_comm_obs" in vars(env)
        assert "_create_event" in vars(env.realm.event_log)
        assert Realm.step is not speedups._realm_step and Realm.step.__module__ == "nmmo.core.realm"
        assert EventLogger._create_event.__module__ == "nmmo.lib.event_log"
        assert nmmo.Env._update_comm_obs.__module__ == "nmmo.core.env"
    finally:
        game.dispose_env(env)


def test_identity_check_catches_a_realm_that_plays_differently(monkeypatch):
    """An NPC update that forgets nmmo's one point of health regained a tick changes no
    event at first, only the entities' rows: the tick-by-tick state comparison says so."""
    original = speedups._npc_update

    def no_regeneration(npc, actions, equipment):
        health = npc.resources.health._val
        original(npc, actions, equipment)
        if npc.resources.health._val > 0:
            speedups._write(npc.resources.health, health)

    monkeypatch.setattr(speedups, "_npc_update", no_regeneration)
    spec = MatchSpec(seed=11, policies=stage1_lineup(), config=patient(MatchConfig(horizon=60)))
    compared = compare_with_nmmo(spec)
    assert not compared["identical"] and "entities" in compared["difference"], compared


def test_identity_check_catches_an_event_written_differently(monkeypatch):
    """An event row whose extra cells (a step's distance, a hit's damage) are written one
    off: the event logs differ, and the comparison says so."""
    monkeypatch.setattr(speedups._EventCell, "update",
                        lambda self, value: self._table._data.__setitem__((self._row, self._column), value + 1))
    spec = MatchSpec(seed=11, policies=stage1_lineup(), config=patient(MatchConfig(horizon=40)))
    compared = compare_with_nmmo(spec)
    assert not compared["identical"] and "event" in compared["difference"], compared


def test_team_messages_equal_nmmos_every_tick():
    """Each agent's `Comm` rows, gathered in one pass, equal what nmmo's own
    `Env._update_comm_obs` gathers on the same env, after every tick of a match."""
    import nmmo

    from bench.match_speed import _Captured
    from matchmaking.engine.match import run_match
    from matchmaking.teams.factory import in_process_host

    compared = []

    def check(tick):
        env = captured.env
        env._update_comm_obs()  # the lean one, bound to this env
        lean = {agent: rows.copy() for agent, rows in env._comm_obs.items()}
        nmmo.Env._update_comm_obs(env)  # nmmo's own
        assert lean.keys() == env._comm_obs.keys() and lean
        for agent, rows in env._comm_obs.items():
            assert rows.dtype == lean[agent].dtype and np.array_equal(rows, lean[agent]), (tick, agent)
        compared.append(tick)

    spec = MatchSpec(seed=29, policies=stage1_lineup(), config=patient(MatchConfig(horizon=30)))
    with _Captured() as captured:
        run_match(spec, host_factory=in_process_host, progress=check)
    assert len(compared) >= 30


def test_identity_check_catches_a_skill_update_skipped(monkeypatch):
    """The players' lean update calls a skill's own update only where the skill's material
    is: one that wrongly skips food's (no hunger) is caught by the state comparison."""
    from nmmo.systems import skill

    checks = speedups._skill_checks
    monkeypatch.setattr(speedups, "_skill_checks", lambda: {**checks(), skill.Food: ("nothing",)})
    spec = MatchSpec(seed=11, policies=stage1_lineup(), config=patient(MatchConfig(horizon=20)))
    compared = compare_with_nmmo(spec)
    assert not compared["identical"] and "entities" in compared["difference"], compared


def _unbound_host(ref, slot):
    """The built-ins as a sandbox plays them: compiled, but reading the observation dicts."""
    from matchmaking.engine.hosting import InProcessTeam
    from matchmaking.teams.factory import team_factory

    return InProcessTeam(lambda tid, cfg: team_factory(ref)(tid, cfg), slot)


def test_built_ins_reading_observation_dicts_equal_nmmos_own_loop():
    spec = MatchSpec(seed=63, policies=stage1_lineup(), config=patient(MatchConfig(horizon=80)))
    compared = compare_with_nmmo(spec, host_factory=_unbound_host)
    assert compared["identical"], compared


def test_identity_check_can_fail(monkeypatch):
    """A search that differs from nmmo's only in how it breaks ties (neighbours visited
    in another order) makes other decisions, and the comparison says so."""
    monkeypatch.setattr(compiled_builtins, "NEIGHBOUR_ROWS", compiled_builtins.NEIGHBOUR_ROWS[::-1].copy())
    monkeypatch.setattr(compiled_builtins, "NEIGHBOUR_COLS", compiled_builtins.NEIGHBOUR_COLS[::-1].copy())
    spec = MatchSpec(seed=11, policies=stage1_lineup(), config=patient(MatchConfig(horizon=60)))
    compared = compare_with_nmmo(spec)
    assert not compared["identical"] and compared["difference"]
