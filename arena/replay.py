"""Compact match replays: what the browser viewer plays back, recorded by the runner.

nmmo's own replay helper writes ~117 MB of JSON per match (743 KB after LZMA) and takes
30 s to save; this format keeps what the viewer shows and nothing else, in typed arrays:

- the map once (material of every tile);
- per tick and agent: row, column, health, food, water (dead agents: zeros);
- per tick, the NPCs present: id, row, column, health;
- the match's events from nmmo's event log: hits (attacker, target, style, damage),
  kills, level-ups and equipped items, each with its tick;
- per team and task, the tick each tier was reached (team achievement over time);
- every fault of every team (since version 2), as the runner recorded it: header
  `faults`, rows `[tick, team, kind, message]` in tick order, `kind` one of
  `arena.schema.FaultKind` (INIT, ERROR, INVALID, TIMEOUT, CRASH, MEMORY), the message
  cut to `FAULT_MESSAGE_CHARS`. A team faults at most once a tick (and INIT at tick 0), so
  a match holds at most `teams x (horizon + 1)` of them. The match record keeps the first
  50 per team; the replay keeps all, so the viewer's timeline shows each one.

Encoding (version 2): gzip of `b"NMRP" | u32 header length | header JSON | arrays`. The
header lists each array's name, dtype, shape and byte offset; arrays are little-endian
and 8-byte aligned. The viewer decodes it with the browser's DecompressionStream; the
`read` function here is the reference decoder. Version 1 (before fault events) is read
too, as a replay without faults (`read` gives it an empty `faults`).
"""

from __future__ import annotations

import gzip
import json
import struct
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from arena.errors import DamagedFileError
from arena.schema import Fault
from arena.scoring import RULES, TIER_POINTS, Task

MAGIC = b"NMRP"
VERSION = 2

#: Versions `read` accepts: 1 has no fault events.
READABLE = (1, 2)

#: Characters of a fault's message kept on the replay's timeline.
FAULT_MESSAGE_CHARS = 200

#: Event kinds, as in the header's `events` rows: [tick, kind, a, b, c, d].
HIT, KILL, LEVEL, EQUIP = "hit", "kill", "level", "equip"


class ReplayRecorder:
    """Collects one match's replay as the runner plays it; `finish` returns the bytes.

    The runner calls `start` after reset, `tick` after every step (with the entity table
    it already reads for travel), `fault` for every fault of a team, and `finish` at the
    end with the event log.
    """

    def __init__(self) -> None:
        self.data: bytes | None = None
        self._players: list[np.ndarray] = []
        self._npcs: list[np.ndarray] = []
        self._faults: list[list[Any]] = []

    def fault(self, team: int, fault: Fault) -> None:
        """One fault of team `team` (its slot), for the timeline."""
        self._faults.append([int(fault.tick), int(team), fault.kind.value, fault.message[:FAULT_MESSAGE_CHARS]])

    def start(self, *, tiles: np.ndarray, entities: np.ndarray, columns: Mapping[str, int], num_agents: int) -> None:
        self.tiles = np.asarray(tiles, dtype=np.uint8)
        self.columns = columns
        self.num_agents = num_agents
        self.tick(entities)

    def tick(self, entities: np.ndarray) -> None:
        c = self.columns
        ids = entities[:, c["id"]]
        players = entities[ids > 0]
        frame = np.zeros((self.num_agents, 5), dtype=np.uint8)
        index = players[:, c["id"]].astype(np.int64) - 1
        frame[index] = players[:, [c["row"], c["col"], c["health"], c["food"], c["water"]]].clip(0, 255)
        self._players.append(frame)
        npcs = entities[ids < 0]
        self._npcs.append(npcs[:, [c["id"], c["row"], c["col"], c["health"]]].astype(np.int16))

    def finish(
        self,
        *,
        match_id: str,
        events: np.ndarray,
        event_columns: Mapping[str, int],
        event_codes: Mapping[str, int],
        teams: Mapping[int, Sequence[int]],
        policies: Sequence[str],
        farthest_by_tick: np.ndarray | None = None,
    ) -> bytes:
        players = np.stack(self._players)
        npc_count = np.array([len(n) for n in self._npcs], dtype=np.uint8)
        width = max(1, int(npc_count.max(initial=0)))
        npcs = np.zeros((len(self._npcs), width, 4), dtype=np.int16)
        for t, frame in enumerate(self._npcs):
            npcs[t, : len(frame)] = frame
        header_events = _events(events, event_columns, event_codes)
        tiers = _tiers(players, header_events, teams)
        header = {
            "version": VERSION,
            "match_id": match_id,
            "ticks": len(self._players) - 1,
            "num_agents": self.num_agents,
            "teams": {str(t): list(ids) for t, ids in teams.items()},
            "policies": list(policies),
            "events": header_events,
            "tiers": tiers,
            "tasks": [task.value for task in Task],
            "tier_points": list(TIER_POINTS),
            "faults": sorted(self._faults, key=lambda f: (f[0], f[1])),
        }
        self.data = encode(header, {"map": self.tiles, "players": players, "npc_count": npc_count, "npcs": npcs})
        return self.data


def _events(events: np.ndarray, col: Mapping[str, int], code: Mapping[str, int]) -> list[list[Any]]:
    out: list[list[Any]] = []
    if events.size == 0:
        return out
    kind = events[:, col["event"]]
    for row in events[kind == code["SCORE_HIT"]]:
        out.append([int(row[col["tick"]]), HIT, int(row[col["ent_id"]]), int(row[col["target_ent"]]), int(row[col["type"]]), int(row[col["number"]])])
    for row in events[kind == code["PLAYER_KILL"]]:
        out.append([int(row[col["tick"]]), KILL, int(row[col["ent_id"]]), int(row[col["target_ent"]]), 0, 0])
    for row in events[kind == code["LEVEL_UP"]]:
        out.append([int(row[col["tick"]]), LEVEL, int(row[col["ent_id"]]), int(row[col["type"]]), int(row[col["level"]]), 0])
    for row in events[kind == code["EQUIP_ITEM"]]:
        out.append([int(row[col["tick"]]), EQUIP, int(row[col["ent_id"]]), int(row[col["type"]]), int(row[col["level"]]), 0])
    out.sort(key=lambda e: (e[0], e[1], e[2]))
    return out


def _tiers(players: np.ndarray, events: list[list[Any]], teams: Mapping[int, Sequence[int]]) -> list[list[Any]]:
    """[tick, team, task, tier, points] for every tier a team reached, in tick order.

    Mirrors `matchmaking.engine.progress` (the record is the authority; this is for display)."""
    team_of = {agent: team for team, agents in teams.items() for agent in agents}
    best: dict[tuple[int, str], int] = {}
    out: list[list[Any]] = []

    def reach(tick: int, team: int, task: Task, value: float) -> None:
        tier = RULES[task].tier(value)
        if tier > best.get((team, task.value), 0):
            for t in range(best.get((team, task.value), 0) + 1, tier + 1):
                out.append([tick, team, task.value, t, TIER_POINTS[t - 1]])
            best[(team, task.value)] = tier

    spawn = players[0, :, :2].astype(np.int64)
    alive = players[:, :, 2] > 0
    distance = np.maximum(np.abs(players[:, :, 0] - spawn[None, :, 0]), np.abs(players[:, :, 1] - spawn[None, :, 1]))
    farthest = np.maximum.accumulate(np.where(alive, distance, 0), axis=0)
    for team, agents in teams.items():
        team_best = farthest[:, [a - 1 for a in agents]].max(axis=1)
        for threshold in RULES[Task.TRAVEL].thresholds:
            hit = np.flatnonzero(team_best >= threshold)
            if len(hit):
                reach(int(hit[0]), team, Task.TRAVEL, threshold)
    kills: dict[int, int] = {}
    for tick, kind, a, b, c, _ in events:
        actor = team_of.get(a)
        if actor is None:
            continue
        if kind == KILL and b > 0 and team_of.get(b) != actor:
            kills[actor] = kills.get(actor, 0) + 1
            reach(tick, actor, Task.ELIMINATE, kills[actor])
        elif kind == LEVEL and b in (4, 5, 6, 7, 8):
            reach(tick, actor, Task.FORAGE, c)
        elif kind == EQUIP:
            reach(tick, actor, Task.EQUIPMENT, c)
    out.sort(key=lambda e: (e[0], e[1]))
    return out


def encode(header: dict[str, Any], arrays: Mapping[str, np.ndarray]) -> bytes:
    """The replay bytes of a header and named arrays (see the module docstring)."""
    blobs, specs, offset = [], [], 0
    for name, array in arrays.items():
        array = np.ascontiguousarray(array)
        data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        specs.append({"name": name, "dtype": array.dtype.str.lstrip("<>|="), "shape": list(array.shape), "offset": offset})
        padded = data + b"\0" * (-len(data) % 8)
        blobs.append(padded)
        offset += len(padded)
    head = json.dumps({**header, "arrays": specs}, separators=(",", ":")).encode()
    head += b" " * (-(len(head) + 8) % 8)  # arrays start 8-byte aligned
    return gzip.compress(MAGIC + struct.pack("<I", len(head)) + head + b"".join(blobs), compresslevel=6, mtime=0)


def read(data: bytes) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Decode replay bytes into (header, arrays), checking that they hold a whole replay.

    Raises:
        `DamagedFileError`: not a replay of this version, or cut short or corrupt.
    """
    try:
        raw = gzip.decompress(data)
        if raw[:4] != MAGIC:
            raise DamagedFileError("not an NMMO Arena replay (bad magic bytes)")
        (length,) = struct.unpack("<I", raw[4:8])
        header = json.loads(raw[8 : 8 + length])
        if not isinstance(header, dict) or header.get("version") not in READABLE:
            raise DamagedFileError(f"replay version {header.get('version') if isinstance(header, dict) else '?'} is not "
                             f"supported (this code reads {', '.join(map(str, READABLE))})")
        header.setdefault("faults", [])  # version 1: recorded before faults were
        for row in header["faults"]:
            tick, team, kind, message = row
            if not (isinstance(tick, int) and isinstance(team, int) and isinstance(kind, str) and isinstance(message, str)):
                raise DamagedFileError(f"a fault event is malformed: {row!r}")
        base = 8 + length
        arrays = {}
        for spec in header["arrays"]:
            dtype = np.dtype("<" + spec["dtype"]) if spec["dtype"][0] in "iuf" else np.dtype(spec["dtype"])
            count = int(np.prod(spec["shape"]))
            arrays[spec["name"]] = np.frombuffer(raw, dtype=dtype, count=count, offset=base + spec["offset"]).reshape(spec["shape"])
        missing = {"map", "players", "npc_count", "npcs"} - set(arrays)
        if missing:
            raise DamagedFileError(f"arrays missing: {', '.join(sorted(missing))}")
        if arrays["players"].shape[0] != int(header["ticks"]) + 1:
            raise DamagedFileError("fewer frames than ticks")
    except (OSError, EOFError, ValueError, KeyError, TypeError, IndexError, struct.error, zlib.error) as exc:
        raise DamagedFileError(f"this replay is damaged and cannot be played ({type(exc).__name__}: {exc})") from exc
    return header, arrays
