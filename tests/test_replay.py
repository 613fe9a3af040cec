"""A recorded replay reads back whole, and agrees with the match record it belongs to."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from arena.errors import DamagedFileError
from arena.replay import ReplayRecorder, read
from arena.rules import stage_opponents
from matchmaking.config import MatchConfig
from matchmaking.match import MatchSpec, policies_for, run_match
from matchmaking.policy import builtin


@pytest.fixture(scope="module")
def recorded():
    recorder = ReplayRecorder()
    lineup = policies_for(builtin("elite"), [builtin(n) for n in stage_opponents(1)])
    result = run_match(MatchSpec(seed=4, policies=lineup, config=MatchConfig(horizon=150)), recorder=recorder)
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
    for tick, team, task, tier, points in header["tiers"]:
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
