"""Strategies, analysed: per-team numbers read from a replay, summed per policy.

The paper's section 5.3.2 (Fig. 7-9) tells strategies apart by where teams go, how they
score on each task and how their agents die. This module reads those from the compact
replays (`arena.replay`), pure and numpy only:

- `analyse(header, arrays)`: per team of one replay, the tile-visit counts (every alive
  member's tile on every frame, frame 0 the spawn), the alive members per frame, and the
  cause of every member's death (`CAUSES`, rules below);
- `trajectories(header, arrays, slots)`: the (tick, row, col) path of each member of some
  teams in one match, for the trajectory plot (one replay, cheap: read on demand);
- `Analytics`: the accumulator over many matches, one `PolicyAnalytics` per player
  (`arena.schema.player_id`); `add` takes one match at a time, so it follows the history
  as it grows, and `to_bytes`/`from_bytes` save it whole (an npz), so a restart does not
  read every replay again.

Cause of death (nmmo 2.1.2's rules, `nmmo/entity/entity.py` and `player.py`). A member
dies at tick t when its health is above 0 in frame t-1 and 0 in frame t. Within a tick
nmmo first applies food and water damage (`Resources.update`: 10 health for an empty food
bar, 10 more for an empty water bar, judged on the bars as they were at the end of tick
t-1, i.e. frame t-1), then the actions, attacks included. A death by an attack is logged
as a PLAYER_KILL event of tick t whose attacker (`ent_id`) is the killer: a positive id is
a player, a negative id an NPC. So, in order:

1. a KILL event of tick t names the member as target: `player` (attacker id > 0) or `npc`
   (attacker id < 0); this holds even if the bars were empty, as nmmo credits the kill;
2. else both bars were empty in frame t-1: `starved_and_dehydrated`;
3. else the food bar was empty: `starved`; the water bar: `dehydrated`;
4. else `other` (nothing in the replay explains it, e.g. a death-fog tile; the Arena runs
   without fog, so this stays 0 unless the rules change).
"""

from __future__ import annotations

import io
import json
import logging
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from arena.errors import ArenaError, DamagedFileError
from arena.replay import KILL

log = logging.getLogger(__name__)

#: Causes of death, in display order (see the module docstring for the rules).
CAUSES: tuple[str, ...] = ("starved", "dehydrated", "starved_and_dehydrated", "npc", "player", "other")

#: Columns of a replay's `players` frames.
_ROW, _COL, _HEALTH, _FOOD, _WATER = range(5)

#: Bumped when the saved accumulator's layout changes; an older save is discarded (and the
#: replays read again) rather than misread.
SAVE_VERSION = 1


class ReplayAnalysisError(ArenaError, ValueError):
    """A replay's content contradicts itself (teams naming agents it has no frames for, a
    match id that is another match's): the replay is skipped; check or restore the file."""


@dataclass(frozen=True)
class Death:
    """How one member died."""

    agent: int
    """nmmo agent id (1-based)."""
    tick: int
    """The first frame in which its health is 0."""
    cause: str
    """One of `CAUSES`."""
    killer: int = 0
    """The attacker's entity id for `player` and `npc` deaths (NPCs are negative), else 0."""


@dataclass(frozen=True)
class TeamAnalysis:
    """One team of one match, as its replay shows it."""

    slot: int
    visits: np.ndarray
    """(map height, map width) int32: member-frames spent on each tile (alive members only)."""
    alive: np.ndarray
    """(frames,) int16: members alive in each frame (frame 0 is the spawn)."""
    deaths: tuple[Death, ...]


def death_causes(header: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> dict[int, Death]:
    """The death of every agent that died in the match, by agent id (rules: module docstring)."""
    players = arrays["players"]
    health = players[:, :, _HEALTH]
    alive = health > 0
    died = alive[:-1] & ~alive[1:]  # [t-1, agent]: alive in frame t-1, dead in frame t
    killers: dict[tuple[int, int], int] = {}
    for tick, kind, attacker, target, *_ in header.get("events", ()):
        if kind == KILL and target > 0:
            killers.setdefault((int(tick), int(target)), int(attacker))
    out: dict[int, Death] = {}
    for before, index in zip(*np.nonzero(died)):
        tick, agent = int(before) + 1, int(index) + 1
        if agent in out:
            continue  # nmmo never revives an agent; keep the first death if a replay claims so
        killer = killers.get((tick, agent))
        food, water = int(players[before, index, _FOOD]), int(players[before, index, _WATER])
        if killer is not None and killer != 0:
            cause = "player" if killer > 0 else "npc"
        elif food == 0 and water == 0:
            cause = "starved_and_dehydrated"
        elif food == 0:
            cause = "starved"
        elif water == 0:
            cause = "dehydrated"
        else:
            cause = "other"
        out[agent] = Death(agent=agent, tick=tick, cause=cause, killer=killer if killer is not None and cause in ("player", "npc") else 0)
    return out


def _team_agents(header: Mapping[str, Any], num_agents: int) -> dict[int, list[int]]:
    teams = {int(slot): [int(a) for a in agents] for slot, agents in header["teams"].items()}
    for slot, agents in teams.items():
        bad = [a for a in agents if not 1 <= a <= num_agents]
        if bad:
            raise ReplayAnalysisError(f"team {slot} names agents {bad} outside the replay's 1..{num_agents}")
    return teams


def analyse(header: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> list[TeamAnalysis]:
    """Per team of one replay (slot order): visits, alive members per frame, deaths.

    Raises:
        `ReplayAnalysisError`: the replay's teams and frames disagree.
    """
    players = arrays["players"]
    tiles = arrays["map"]
    height, width = tiles.shape[:2]
    if players.ndim != 3 or players.shape[2] < 5:
        raise ReplayAnalysisError(f"player frames have shape {players.shape}, expected (frames, agents, 5)")
    teams = _team_agents(header, players.shape[1])
    deaths = death_causes(header, arrays)
    alive = players[:, :, _HEALTH] > 0
    rows, cols = players[:, :, _ROW].astype(np.int64), players[:, :, _COL].astype(np.int64)
    if (rows[alive] >= height).any() or (cols[alive] >= width).any():
        raise ReplayAnalysisError(f"an alive agent stands outside the {height}x{width} map")
    out = []
    for slot in sorted(teams):
        index = np.asarray(teams[slot], dtype=np.int64) - 1
        mask = alive[:, index]
        flat = rows[:, index][mask] * width + cols[:, index][mask]
        visits = np.bincount(flat, minlength=height * width).astype(np.int32).reshape(height, width)
        out.append(TeamAnalysis(
            slot=slot,
            visits=visits,
            alive=mask.sum(axis=1).astype(np.int16),
            deaths=tuple(deaths[a] for a in teams[slot] if a in deaths),
        ))
    return out


def trajectories(header: Mapping[str, Any], arrays: Mapping[str, np.ndarray], slots: Sequence[int]) -> dict[int, dict[int, list[list[int]]]]:
    """Per slot in `slots`, per member (agent id): its `[tick, row, col]` on every frame it is alive."""
    players = arrays["players"]
    teams = _team_agents(header, players.shape[1])
    out: dict[int, dict[int, list[list[int]]]] = {}
    for slot in slots:
        members: dict[int, list[list[int]]] = {}
        for agent in teams.get(int(slot), []):
            frames = players[:, agent - 1]
            ticks = np.flatnonzero(frames[:, _HEALTH] > 0)
            members[agent] = np.column_stack([ticks, frames[ticks, _ROW], frames[ticks, _COL]]).astype(int).tolist()
        out[int(slot)] = members
    return out


# -- the accumulator ------------------------------------------------------------------------

def _add_curve(total: np.ndarray, count: np.ndarray, curve: np.ndarray, teams: int) -> tuple[np.ndarray, np.ndarray]:
    """Sum `curve` (a sum over `teams` teams) into per-frame totals and counts, growing them."""
    if len(curve) > len(total):
        total = np.concatenate([total, np.zeros(len(curve) - len(total), total.dtype)])
        count = np.concatenate([count, np.zeros(len(curve) - len(count), count.dtype)])
    total[: len(curve)] += curve
    count[: len(curve)] += teams
    return total, count


@dataclass
class PolicyAnalytics:
    """One player's analysed matches, summed (what the Analytics tab shows for it)."""

    player: str
    visits: np.ndarray | None = None
    """(map height, map width) int64: member-frames on each tile, over every analysed team."""
    team_frames: int = 0
    """Frames summed into `visits`, one per team and frame: divides it into members per tile and frame."""
    teams: int = 0
    """Team appearances analysed (a player may field several teams in one match)."""
    deaths: dict[str, int] = field(default_factory=lambda: {c: 0 for c in CAUSES})
    alive_sum: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Per frame: alive members summed over this player's teams ..."""
    alive_count: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """... and how many teams reached that frame (the mean is sum / count)."""
    field_sum: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """The same for the other players' teams in the same matches (the field it met)."""
    field_count: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    matches: list[str] = field(default_factory=list)
    """Analysed match ids, in the order they were added (the trajectory chooser's list)."""
    maps: dict[int, int] = field(default_factory=dict)
    """Analysed matches per map id."""

    def alive_mean(self) -> np.ndarray:
        return self.alive_sum / np.maximum(self.alive_count, 1)

    def field_mean(self) -> np.ndarray:
        return self.field_sum / np.maximum(self.field_count, 1)


class Analytics:
    """Every player's `PolicyAnalytics`, built one match at a time.

    Example:
        >>> book = Analytics()
        >>> book.add("m1", header, arrays, {0: "builtin:forage", 1: "alice/x@abc", ...})  # doctest: +SKIP
        True
        >>> book.players["builtin:forage"].deaths["starved"]  # doctest: +SKIP
    """

    def __init__(self) -> None:
        self.players: dict[str, PolicyAnalytics] = {}
        self.analysed: set[str] = set()
        """Match ids added."""
        self.skipped: dict[str, str] = {}
        """Match ids whose replay could not be analysed, and why (not retried)."""
        self.terrain: dict[int, np.ndarray] = {}
        """Tile materials of each map id seen (the heatmap's background)."""

    def knows(self, match_id: str) -> bool:
        return match_id in self.analysed or match_id in self.skipped

    def skip(self, match_id: str, why: str) -> None:
        """Name a match whose replay is unusable, so it is not read again."""
        self.skipped[match_id] = why
        log.warning("analytics: skipped the replay of match %s: %s", match_id, why)

    def add(self, match_id: str, header: Mapping[str, Any], arrays: Mapping[str, np.ndarray],
            players_by_slot: Mapping[int, str], *, map_id: int = 0, horizon: int | None = None) -> bool:
        """Add one match's replay. Returns False if it was added before or could not be
        analysed (then it is in `skipped`, and the accumulator is unchanged).

        Args:
            match_id: the match's id (the replay must say the same).
            header, arrays: the replay, as `arena.replay.read` returns it.
            players_by_slot: the player (`arena.schema.player_id`) of each slot, from the record.
            map_id: the map played (keys `PolicyAnalytics.maps` and `terrain`).
            horizon: ticks the match was set to last; a match that ended early because
                everyone died counts 0 alive members up to it.
        """
        if self.knows(match_id):
            return False
        try:
            if header.get("match_id") != match_id:
                raise ReplayAnalysisError(f"the replay is of match {header.get('match_id')!r}")
            teams = analyse(header, arrays)
            missing = [t.slot for t in teams if t.slot not in players_by_slot]
            if missing:
                raise ReplayAnalysisError(f"the match record has no team in slots {missing}")
        except (ReplayAnalysisError, KeyError, TypeError, ValueError, IndexError) as exc:
            self.skip(match_id, f"{type(exc).__name__}: {exc}")
            return False
        frames = len(teams[0].alive) if teams else 0
        if teams and not any(t.alive[-1] for t in teams):  # everyone died: the rest of the horizon is 0 alive
            frames = max(frames, (horizon or 0) + 1)
        curves = {t.slot: np.pad(t.alive.astype(np.int64), (0, frames - len(t.alive))) for t in teams}
        total = sum(curves.values(), np.zeros(frames, np.int64))
        shape = teams[0].visits.shape if teams else (0, 0)
        by_player: dict[str, list[TeamAnalysis]] = {}
        for team in teams:
            by_player.setdefault(players_by_slot[team.slot], []).append(team)
        for player, own in by_player.items():
            book = self.players.setdefault(player, PolicyAnalytics(player))
            if book.visits is None:
                book.visits = np.zeros(shape, np.int64)
            if book.visits.shape == shape:  # every Arena map has one size; another is left out of the sum
                for team in own:
                    book.visits += team.visits
                book.team_frames += len(own) * len(own[0].alive)
            mine = sum((curves[t.slot] for t in own), np.zeros(frames, np.int64))
            book.alive_sum, book.alive_count = _add_curve(book.alive_sum, book.alive_count, mine, len(own))
            book.field_sum, book.field_count = _add_curve(book.field_sum, book.field_count, total - mine, len(teams) - len(own))
            for team in own:
                for death in team.deaths:
                    book.deaths[death.cause] = book.deaths.get(death.cause, 0) + 1
            book.teams += len(own)
            book.matches.append(match_id)
            book.maps[map_id] = book.maps.get(map_id, 0) + 1
        if map_id not in self.terrain:
            self.terrain[map_id] = np.array(arrays["map"], dtype=np.uint8)
        self.analysed.add(match_id)
        return True

    # -- saving ---------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The whole accumulator as one npz (arrays, plus its scalars as JSON in `meta`)."""
        arrays: dict[str, np.ndarray] = {}
        players = []
        for i, (name, p) in enumerate(sorted(self.players.items())):
            players.append({"player": name, "team_frames": p.team_frames, "teams": p.teams, "deaths": p.deaths,
                            "matches": p.matches, "maps": {str(k): v for k, v in p.maps.items()}})
            if p.visits is not None:
                arrays[f"visits_{i}"] = p.visits
            for key in ("alive_sum", "alive_count", "field_sum", "field_count"):
                arrays[f"{key}_{i}"] = getattr(p, key)
        for map_id, tiles in self.terrain.items():
            arrays[f"terrain_{map_id}"] = tiles
        meta = {"version": SAVE_VERSION, "players": players, "analysed": sorted(self.analysed), "skipped": self.skipped}
        arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        sink = io.BytesIO()
        np.savez_compressed(sink, **arrays)
        return sink.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> Analytics:
        """The accumulator `to_bytes` saved.

        Raises:
            `ValueError`: not a saved accumulator of this version (start a new one).
        """
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as npz:
                meta = json.loads(npz["meta"].tobytes())
                if meta.get("version") != SAVE_VERSION:
                    raise DamagedFileError(f"saved analytics have version {meta.get('version')}, this code reads {SAVE_VERSION}")
                book = cls()
                for i, p in enumerate(meta["players"]):
                    book.players[p["player"]] = PolicyAnalytics(
                        player=p["player"],
                        visits=np.array(npz[f"visits_{i}"]) if f"visits_{i}" in npz.files else None,
                        team_frames=int(p["team_frames"]), teams=int(p["teams"]),
                        deaths={c: int(p["deaths"].get(c, 0)) for c in CAUSES},
                        **{key: np.array(npz[f"{key}_{i}"]) for key in ("alive_sum", "alive_count", "field_sum", "field_count")},
                        matches=list(p["matches"]), maps={int(k): int(v) for k, v in p["maps"].items()},
                    )
                for name in npz.files:
                    if name.startswith("terrain_"):
                        book.terrain[int(name[len("terrain_"):])] = np.array(npz[name])
                book.analysed = set(meta["analysed"])
                book.skipped = dict(meta["skipped"])
        except (OSError, KeyError, TypeError, ValueError, zipfile.BadZipFile, EOFError) as exc:
            raise DamagedFileError(f"not saved analytics ({type(exc).__name__}: {exc})") from exc
        return book
