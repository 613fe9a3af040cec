"""What each team achieved in a match, read off the game: the raw values scoring needs.

Three of the four values come from nmmo's event log at the end of the match (level-ups,
equipped items, player kills); travel is measured by the runner every tick, because nmmo
2.x only logs progress toward the map centre, not distance from spawn. The functions take
plain arrays so that tests can build situations by hand; `arena.scoring` turns the
values into points.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from nmmo.entity.entity import EntityState
from nmmo.lib.event_code import EventCode
from nmmo.lib.event_log import EventAttr

from arena.scoring import TeamProgress

_ID = EntityState.State.attr_name_to_col["id"]
_ROW = EntityState.State.attr_name_to_col["row"]
_COL = EntityState.State.attr_name_to_col["col"]

#: nmmo 2.x skill ids of the gathering professions (1-3 are the combat skills).
GATHERING_SKILLS: frozenset[int] = frozenset({4, 5, 6, 7, 8})  # fishing, herbalism, prospecting, carving, alchemy


class TravelTracker:
    """Largest L-infinity distance of every player from its own spawn tile so far.

    Feed it nmmo's entity table (`EntityState.Query.table`) after reset and after every
    step; NPC rows (negative ids) are ignored.
    """

    def __init__(self, num_agents: int):
        self.spawn = np.zeros((num_agents + 1, 2), dtype=np.int64)
        self.farthest = np.zeros(num_agents + 1, dtype=np.int64)

    def start(self, entities: np.ndarray) -> None:
        players = entities[entities[:, _ID] > 0]
        ids = players[:, _ID].astype(np.int64)
        self.spawn[ids, 0] = players[:, _ROW]
        self.spawn[ids, 1] = players[:, _COL]
        self.farthest[:] = 0

    def update(self, entities: np.ndarray) -> None:
        players = entities[entities[:, _ID] > 0]
        ids = players[:, _ID].astype(np.int64)
        dist = np.maximum(
            np.abs(players[:, _ROW] - self.spawn[ids, 0]),
            np.abs(players[:, _COL] - self.spawn[ids, 1]),
        )
        np.maximum.at(self.farthest, ids, dist)


def team_progress(
    events: np.ndarray,
    teams: Mapping[int, Sequence[int]],
    farthest: np.ndarray,
    *,
    base_level: int = 1,
) -> dict[int, TeamProgress]:
    """Raw task values of every team.

    Args:
        events (`np.ndarray`): nmmo's event log rows (columns as `nmmo.lib.event_log.EventAttr`).
        teams (`Mapping[int, Sequence[int]]`): team id -> its agents' ids.
        farthest (`np.ndarray`): per agent id, the largest distance from spawn (`TravelTracker`).
        base_level (`int`): skill level every agent starts at (nmmo's PROGRESSION_BASE_LEVEL).

    Returns:
        `dict[int, TeamProgress]`: per team, the best member's travel, gathering level and
        equipment level, and the team's kills of other teams' players.
    """
    if events.size == 0:
        events = np.zeros((0, len(EventAttr)), dtype=np.int64)
    code = events[:, EventAttr["event"]]
    actor = events[:, EventAttr["ent_id"]]
    team_of = {agent: team for team, agents in teams.items() for agent in agents}

    level_ups = events[(code == EventCode.LEVEL_UP) & np.isin(events[:, EventAttr["type"]], list(GATHERING_SKILLS))]
    equips = events[code == EventCode.EQUIP_ITEM]
    kills = events[(code == EventCode.PLAYER_KILL) & (actor > 0)]

    result = {}
    for team, agents in teams.items():
        members = np.asarray(list(agents))
        mine = lambda rows, members=members: rows[np.isin(rows[:, EventAttr["ent_id"]], members)]  # noqa: E731
        levels = mine(level_ups)[:, EventAttr["level"]]
        equipped = mine(equips)[:, EventAttr["level"]]
        victims = mine(kills)[:, EventAttr["target_ent"]]
        enemy_kills = sum(1 for v in victims if v > 0 and team_of.get(int(v)) != team)
        result[team] = TeamProgress(
            travel=int(farthest[members].max()) if len(members) else 0,
            forage=int(max(base_level, levels.max(initial=0))),
            equipment=int(equipped.max(initial=0)),
            eliminate=int(enemy_kills),
        )
    return result
