"""Matches in flight report their line-up and tick while they play, and vanish when done."""

from __future__ import annotations

import threading
import time

import pytest

from arena.policies import builtin, local
from arena.rules import stage_opponents
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec, policies_for
from matchmaking.service.executor import LocalExecutor
from matchmaking.service.live import STALE_S, LiveBoard
from tests_support import POLICIES

#: Ticks of the local match: its first team takes 150 ms a tick while its agents live (they
#: starve by about tick 25), so it is in flight for about 3 s however fast the engine plays.
HORIZON = 150
#: Ticks of the Ray match, which seats only built-ins (a node fetches submissions from the
#: Hub; a local folder does not travel): elite, the slowest, plays 500 ticks in seconds.
RAY_HORIZON = 500


def play_watching(executor, spec, in_flight) -> tuple[list, list]:
    """Play `spec` on `executor` in a thread; its outcomes, and every report past tick 0
    that `in_flight()` showed meanwhile."""
    outcomes, seen = [], []
    player = threading.Thread(target=lambda: outcomes.extend(executor.run([spec])))
    player.start()
    deadline = time.time() + 240
    while player.is_alive() and time.time() < deadline:
        seen += [m for m in in_flight() if m.tick > 0]
        time.sleep(0.2)
    player.join()
    return outcomes, seen


@pytest.mark.slow
def test_a_match_in_flight_reports_its_tick_and_vanishes_when_it_ends(tmp_path):
    board = LiveBoard(tmp_path / "live")
    spec = MatchSpec(seed=5, policies=policies_for(local(POLICIES / "unhurried"), [builtin(n) for n in stage_opponents(1)]),
                     config=MatchConfig(horizon=HORIZON), track="pve", stage=1)  # at least 3 s: see HORIZON
    executor = LocalExecutor(1, live=board.folder)
    try:
        outcomes, seen = play_watching(executor, spec, board.matches)
    finally:
        executor.close()
    assert outcomes and outcomes[0].result is not None, outcomes
    assert seen, "no report while the match played"
    ticks = [m.tick for m in seen]
    assert ticks == sorted(ticks) and 0 < ticks[0] < HORIZON  # reported as it goes, not only at the end
    first = seen[0]
    assert first.match_id == spec.match_id and (first.track, first.stage, first.horizon) == ("pve", 1, HORIZON)
    assert first.lineup[0].startswith("local:unhurried@") and len(first.lineup) == 16
    assert board.matches() == []  # gone once the match ended


def test_stale_and_damaged_reports_are_skipped_and_cleared(tmp_path):
    board = LiveBoard(tmp_path / "live")
    spec = MatchSpec(seed=1, policies=(builtin("forage"),) * 16, config=MatchConfig(horizon=8))
    report, done = board.reporter(spec)
    report(0)
    (board.folder / "torn.json").write_text('{"match_id": ')
    assert [m.match_id for m in board.matches()] == [spec.match_id]
    assert board.matches(now=time.time() + STALE_S + 1) == []  # its process died: skipped
    assert board.clear() == 2 and board.matches() == []
    done()  # a match ending after a clear is fine



@pytest.mark.cluster
@pytest.mark.xdist_group("ray")
def test_a_match_on_ray_reports_to_the_clusters_board_with_its_node(tmp_path):
    """On Ray the nodes share no disk with the Space: a match reports to the cluster's
    actor (`ClusterBoard`), which `in_flight()` asks; here on a local Ray runtime."""
    pytest.importorskip("ray")
    from matchmaking.service.executor import RayExecutor

    spec = MatchSpec(seed=6, policies=policies_for(builtin("elite"), [builtin(n) for n in stage_opponents(1)]),
                     config=MatchConfig(horizon=RAY_HORIZON), track="pvp")
    executor = RayExecutor(num_cpus=1, record_replays=False)
    try:
        assert executor.in_flight() == []
        outcomes, seen = play_watching(executor, spec, executor.in_flight)
        after = executor.in_flight()
    finally:
        executor.close()
    assert outcomes and outcomes[0].result is not None, outcomes
    assert seen, "no report reached the board while the match played"
    assert [m.tick for m in seen] == sorted(m.tick for m in seen) and 0 < seen[0].tick < RAY_HORIZON
    assert {(m.match_id, m.track, m.horizon, len(m.lineup)) for m in seen} == {(spec.match_id, "pvp", RAY_HORIZON, 16)}
    assert {m.node for m in seen} == {outcomes[0].node} and outcomes[0].node  # the node that played it
    assert after == []  # gone once the match ended


def test_now_playing_names_the_node_of_a_match_on_a_cluster():
    from arena.activity import LiveMatch
    from leaderboard.tables import now_playing

    lineup = ("you/team@" + "a" * 40, *["builtin:forage"] * 15)
    here = LiveMatch("m1", "pvp", None, lineup, 10, 1024, 0.0, 5.0)
    there = LiveMatch.from_dict({**here.to_dict(), "match_id": "m2", "node": "0123456789abcdef"})
    text = now_playing([here, there], hub_url="http://hub", now=60.0)
    first, second = text.splitlines()[1:]
    assert "node" not in first and "on node `01234567`" in second and "`m2`" in second
