"""A recorded replay reads back whole, and agrees with the match record it belongs to."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from arena.errors import DamagedFileError
from arena.policies import builtin
from arena.replay import ReplayRecorder, read
from arena.rules import stage_opponents
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec, policies_for, run_match
from matchmaking.teams.factory import in_process_host


@pytest.fixture(scope="module")
def recorded():
    recorder = ReplayRecorder()
    lineup = policies_for(builtin("elite"), [builtin(n) for n in stage_opponents(1)])
    result = run_match(MatchSpec(seed=4, policies=lineup, config=MatchConfig(horizon=150)), recorder=recorder, host_factory=in_process_host)
    return result, recorder.data


def test_the_replay_reads_back_with_every_frame(recorded):
    result, data = recorded
    header, arrays = read(data)
    assert header["match_id"] == result.match_id and header["ticks"] == result.ticks
    assert header["policies"] == [t.policy_id for t in result.teams]
    assert arrays["players"].shape == (result.ticks + 1, 128, 5)
    assert arrays["map"].shape[0] == arrays["map"].shape[1] >= 128
    alive_at_end = (arrays["players"][-1, :, 2] > 0).reshape(16, 8).sum(axis=1)
    assert alive_at_end.tolist() == [t.alive for t in result.teams]


def test_the_tiers_in_the_replay_match_the_record(recorded):
    result, data = recorded
    header, _ = read(data)
    best: dict[tuple[int, str], int] = {}
    for tick, team, task, _tier, points in header["tiers"]:
        assert 0 <= tick <= result.ticks
        best[(team, task)] = max(best.get((team, task), 0), points)
    for team in result.teams:
        for task, value in team.tasks.items():
            assert best.get((team.slot, task), 0) == value.points, (team.slot, task)
    assert any(points for points in best.values())  # the match reached some tier


def test_damaged_bytes_are_refused_with_a_reason(recorded):
    _, data = recorded
    with pytest.raises(DamagedFileError, match="damaged"):
        read(data[: len(data) // 3])
    with pytest.raises(DamagedFileError, match="bad magic"):
        read(gzip.compress(b"NOPE" + bytes(100)))
    raw = bytearray(gzip.decompress(data))
    with pytest.raises(DamagedFileError, match="fewer frames than ticks|damaged"):
        read(gzip.compress(bytes(raw[: len(raw) - len(raw) // 4])))
    assert np.frombuffer(gzip.decompress(data)[:4], np.uint8).tobytes() == b"NMRP"


def test_every_fault_is_an_event_on_the_replay_timeline():
    """A team that raises at tick 5 and returns garbage on every tick: the replay carries
    each fault with team, tick, kind and a bounded message, the record only its first ones."""
    from arena.policies import local
    from tests_support import POLICIES

    recorder = ReplayRecorder()
    lineup = (local(POLICIES / "raise_at_tick"), local(POLICIES / "wrong_type")) + (builtin("forage"),) * 14
    config = MatchConfig(horizon=30, max_faults_recorded=10)
    result = run_match(MatchSpec(seed=2, policies=lineup, config=config), recorder=recorder, host_factory=in_process_host)
    header, _ = read(recorder.data)
    assert header["version"] == 2
    faults = header["faults"]
    assert [f for f in faults if f[1] == 0] == [[5, 0, "ERROR", next(f.message for f in result.teams[0].faults)]]
    assert "deliberate failure at tick 5" in [f for f in faults if f[1] == 0][0][3]
    garbage = [f for f in faults if f[1] == 1]
    # one a tick while it has members alive (idling, they starve by tick 25)
    assert [f[0] for f in garbage] == list(range(1, len(garbage) + 1)) and {f[2] for f in garbage} == {"INVALID"}
    assert len(result.teams[1].faults) == 10 < len(garbage)  # the record keeps its first 10, the replay all
    assert result.teams[1].fault_counts == {"INVALID": len(garbage)}
    assert all(len(f[3]) <= 200 for f in faults)
    assert [f[0] for f in faults] == sorted(f[0] for f in faults)


def test_a_version_1_replay_still_reads_without_faults(recorded):
    """Replays recorded before fault events (version 1) read as replays without faults."""
    import json
    import struct

    from arena.replay import MAGIC

    _, data = recorded
    raw = gzip.decompress(data)
    (length,) = struct.unpack("<I", raw[4:8])
    header = json.loads(raw[8 : 8 + length])
    header["version"] = 1
    del header["faults"]
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (length - len(head))  # same length: the arrays stay where they are
    old = gzip.compress(MAGIC + struct.pack("<I", length) + head + raw[8 + length:])
    old_header, arrays = read(old)
    assert old_header["version"] == 1 and old_header["faults"] == []
    assert arrays["players"].shape[0] == old_header["ticks"] + 1
    header["version"] = 3
    with pytest.raises(DamagedFileError, match="version 3 is not supported"):
        read(gzip.compress(MAGIC + struct.pack("<I", length) + json.dumps(header, separators=(",", ":")).encode().ljust(length) + raw[8 + length:]))
