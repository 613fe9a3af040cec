"""Raw task values read from nmmo's own event log and from positions.

Situations are constructed in a real nmmo environment (its event logger records the
events, as in a match) or as position tables, and checked at every tier boundary.
"""

from __future__ import annotations

import numpy as np
import pytest
from nmmo.entity.entity import EntityState
from nmmo.lib.event_code import EventCode
from nmmo.systems import item as items
from nmmo.systems import skill

from arena.scoring import RULES, Task, achievement
from matchmaking.engine import game
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.progress import TravelTracker, team_progress

COLS = EntityState.State.attr_name_to_col


def entity_table(positions: dict[int, tuple[int, int]]) -> np.ndarray:
    table = np.zeros((len(positions), len(COLS)), dtype=np.int16)
    for row, (agent, (r, c)) in enumerate(positions.items()):
        table[row, COLS["id"]], table[row, COLS["row"]], table[row, COLS["col"]] = agent, r, c
    return table


@pytest.mark.parametrize("distance", [31, 32, 63, 64, 126, 127])
def test_travel_is_linf_distance_from_own_spawn(distance):
    tracker = TravelTracker(num_agents=16)
    tracker.start(entity_table({1: (16, 80), 2: (143, 40), -3: (70, 70)}))  # -3 is an NPC
    tracker.update(entity_table({1: (16 + distance, 80 + distance // 2), 2: (140, 40)}))
    tracker.update(entity_table({1: (20, 80), 2: (140, 41)}))  # coming back keeps the record
    assert tracker.farthest[1] == distance
    assert tracker.farthest[2] == 3
    teams = {0: [1], 1: [2]}
    progress = team_progress(np.zeros((0, 0)), teams, tracker.farthest)
    expected = RULES[Task.TRAVEL].points(distance)
    assert achievement(progress[0]).points[Task.TRAVEL] == expected
    assert expected == {31: 0, 32: 4, 63: 4, 64: 10, 126: 10, 127: 21}[distance]


@pytest.fixture(scope="module")
def env():
    config = MatchConfig(num_teams=4, team_size=2, horizon=16)
    env = game.make_env(config, map_id=1)
    game.reset_env(env, seed=0)
    return env


def record_events(env, *, kills=(), levels=(), equips=()):
    log = env.realm.event_log
    log.reset()
    players = env.realm.players
    for killer, victim in kills:
        log.record(EventCode.PLAYER_KILL, players[killer], target=players[victim])
    for agent, skill_cls, level in levels:
        log.record(EventCode.LEVEL_UP, players[agent], skill=skill_cls, level=level)
    for agent, item_cls, level in equips:
        item = item_cls(env.realm, level)
        log.record(EventCode.EQUIP_ITEM, players[agent], item=item)
    return log.get_data()


TEAMS = {0: [1, 2], 1: [3, 4], 2: [5, 6], 3: [7, 8]}
NO_TRAVEL = np.zeros(9, dtype=np.int64)


@pytest.mark.parametrize("kills", [0, 1, 2, 3, 5, 6])
def test_eliminate_counts_kills_of_other_teams(env, kills):
    victims = [3, 4, 5, 6, 7, 8]
    events = record_events(env, kills=[(1 + i % 2, victims[i]) for i in range(kills)])
    progress = team_progress(events, TEAMS, NO_TRAVEL)
    assert progress[0].eliminate == kills
    assert achievement(progress[0]).points[Task.ELIMINATE] == RULES[Task.ELIMINATE].points(kills)


def test_friendly_fire_and_npc_kills_do_not_count(env):
    npc = next(iter(env.realm.npcs.values()))
    log = env.realm.event_log
    log.reset()
    log.record(EventCode.PLAYER_KILL, env.realm.players[1], target=env.realm.players[2])  # teammate
    log.record(EventCode.PLAYER_KILL, npc, target=env.realm.players[3])  # an NPC's kill
    log.record(EventCode.PLAYER_KILL, env.realm.players[5], target=npc)  # killing an NPC
    progress = team_progress(log.get_data(), TEAMS, NO_TRAVEL)
    assert [progress[t].eliminate for t in TEAMS] == [0, 0, 0, 0]


@pytest.mark.parametrize("level", RULES[Task.FORAGE].thresholds + tuple(t - 1 for t in RULES[Task.FORAGE].thresholds))
def test_forage_is_best_gathering_level_of_any_member(env, level):
    events = record_events(
        env,
        levels=[(2, skill.Prospecting, level), (1, skill.Fishing, 2), (3, skill.Melee, 10)],  # melee is combat
    )
    progress = team_progress(events, TEAMS, NO_TRAVEL)
    assert progress[0].forage == max(level, 2)
    assert progress[1].forage == 1  # combat skills are not foraging; everyone starts at level 1
    assert achievement(progress[0]).points[Task.FORAGE] == RULES[Task.FORAGE].points(max(level, 2))


@pytest.mark.parametrize("level", [0, *RULES[Task.EQUIPMENT].thresholds, *(t - 1 for t in RULES[Task.EQUIPMENT].thresholds[1:])])
def test_equipment_is_best_level_equipped(env, level):
    equips = [(7, items.Hat, level)] if level else []
    events = record_events(env, equips=equips + [(8, items.Spear, 1)])
    progress = team_progress(events, TEAMS, NO_TRAVEL)
    assert progress[3].equipment == max(level, 1)
    assert progress[0].equipment == 0
    assert achievement(progress[3]).points[Task.EQUIPMENT] == RULES[Task.EQUIPMENT].points(max(level, 1))


def test_no_events_gives_base_values(env):
    progress = team_progress(record_events(env), TEAMS, NO_TRAVEL)
    assert all(p.forage == 1 and p.equipment == 0 and p.eliminate == 0 and p.travel == 0 for p in progress.values())
