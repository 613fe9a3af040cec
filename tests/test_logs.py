"""A team's stdout and stderr: captured per match, stamped with tick and stream, capped,
and a flood never stalls the team or the match.

The first tests feed `BoundedLog` and `OutputCapture` directly (real pipes, no match); the
last play real short matches with sandboxed test policies beside built-in teams.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from arena.errors import DamagedFileError
from arena.logs import BoundedLog, MatchLogs, read, render_text
from arena.policies import builtin, local
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec, run_match
from matchmaking.sandbox.host import sandboxed_host
from matchmaking.sandbox.output import OutputCapture
from tests_support import POLICIES


def kept(log: BoundedLog) -> int:
    return log._head_used + log._tail_used  # what the log holds, newlines included


def test_lines_carry_the_tick_their_first_byte_was_read_and_their_stream():
    log = BoundedLog()
    log.feed("stdout", 0, b"building\nhal")
    log.feed("stderr", 1, b"warning: low food\n")
    log.feed("stdout", 2, b"f a line\n\n")  # "half a line" began at tick 0
    log.feed("stdout", 3, b"no newline at the end")
    team = log.close(slot=3, policy_id="alice/a", revision="abc")
    assert [(line.tick, line.stream, line.text) for line in team.lines] == [
        (0, "stdout", "building"),
        (1, "stderr", "warning: low food"),
        (0, "stdout", "half a line"),
        (2, "stdout", ""),
        (3, "stdout", "no newline at the end"),
    ]
    assert team.total_bytes == sum(len(x) for x in (b"building\nhal", b"warning: low food\n", b"f a line\n\n", b"no newline at the end"))
    assert team.dropped_bytes == 0 and team.gap_at is None


def test_the_cap_keeps_the_head_and_the_tail_and_counts_what_it_drops():
    log = BoundedLog(head_bytes=100, tail_bytes=50)
    for tick in range(1, 101):
        log.feed("stdout", tick, f"line {tick:03d}\n".encode())  # 9 bytes a line
    team = log.close(slot=0, policy_id="p", revision="r")
    texts = [line.text for line in team.lines]
    assert texts[:11] == [f"line {t:03d}" for t in range(1, 12)]  # 11 lines fit in 100 bytes
    assert texts[11:] == [f"line {t:03d}" for t in range(96, 101)]  # the last 5 in 50
    assert team.gap_at == 11 and team.total_bytes == 900
    assert team.dropped_bytes == 900 - 16 * 9 == team.total_bytes - kept(log)
    text = render_text("m1", [team])
    assert "line 011\n[... 756 bytes dropped]\ntick   96 stdout | line 096" in text
    assert "tick    1 stdout | line 001" in text


def test_a_flood_is_cut_without_splitting_it_all_and_the_accounts_balance():
    log = BoundedLog()
    chunk = b"x" * 65536
    # the CPU this thread spends (about 5 ms here), not the wall clock: on a loaded machine
    # the wall clock measures the other processes as well
    started = time.thread_time()
    for tick in range(1, 301):  # 300 ticks of 64 KiB on each stream, as a pipe hands it over
        log.feed("stdout", tick, chunk)
        log.feed("stderr", tick, b"e" * 1000 + b"\n")
    elapsed = time.thread_time() - started
    team = log.close(slot=0, policy_id="p", revision="r")
    assert team.total_bytes == 300 * (65536 + 1001)
    assert team.total_bytes - team.dropped_bytes == kept(log) <= 64 * 1024
    assert all(len(line.text.encode()) <= 2000 for line in team.lines)  # long lines cut into pieces
    assert team.lines[-1].tick == 300 and {line.stream for line in team.lines} == {"stdout", "stderr"}
    assert elapsed < 1.0, f"20 MB took {elapsed:.2f} s of CPU to account for"


def test_logs_encode_and_read_back_and_damage_is_refused():
    log = BoundedLog()
    log.feed("stderr", 4, "ünïcode ✓\n".encode())
    logs = MatchLogs()
    logs.add(log.close(slot=5, policy_id="bob/b", revision="f" * 40))
    data = logs.finish(match_id="m42")
    match_id, teams = read(data)
    assert match_id == "m42" and teams == logs.teams and teams[0].lines[0].text == "ünïcode ✓"
    assert MatchLogs().finish(match_id="m43") is None  # no sandboxed team: no file
    with pytest.raises(DamagedFileError, match="damaged"):
        read(data[: len(data) // 2])
    with pytest.raises(DamagedFileError, match="damaged"):
        read(b"not gzip at all")


def test_capture_stamps_by_the_tick_asked_however_the_thread_is_scheduled():
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    capture = OutputCapture(out_r, err_r)
    capture.start()
    for tick in range(1, 51):
        capture.at_tick(tick)  # what the host does before asking for `tick`
        os.write(out_w, f"stdout {tick}\n".encode())
        os.write(err_w, f"stderr {tick}\n".encode())
    os.close(out_w)
    os.close(err_w)
    capture.finish(timeout=5)
    team = capture.team_log(slot=0, policy_id="p", revision="r")
    assert len(team.lines) == 100
    for line in team.lines:
        stream, tick = line.text.split()
        assert (line.stream, line.tick) == (stream, int(tick))


def test_a_writer_flooding_the_pipe_is_never_held_up():
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    capture = OutputCapture(out_r, err_r)
    capture.start()
    total = 200 * (1 << 20)
    done = threading.Event()

    def flood():
        chunk = b"y" * (1 << 20)
        for _ in range(200):
            os.write(out_w, chunk)  # blocks only while the pipe is full
        done.set()

    started = time.perf_counter()
    writer = threading.Thread(target=flood)
    writer.start()
    tick = 0
    while not done.is_set():
        tick += 1
        capture.at_tick(tick)
        time.sleep(0.001)
    elapsed = time.perf_counter() - started
    writer.join()
    os.close(out_w)
    os.close(err_w)
    capture.finish(timeout=5)
    team = capture.team_log(slot=0, policy_id="p", revision="r")
    assert team.total_bytes == total and team.total_bytes - team.dropped_bytes <= 64 * 1024
    print(f"200 MB drained in {elapsed:.2f} s")
    assert elapsed < 20, f"draining 200 MB took {elapsed:.1f} s"


# -- real matches ----------------------------------------------------------------------
CONFIG = MatchConfig(horizon=14, time_bank_s=0.4)


@pytest.fixture(scope="module")
def played():
    lineup = [local(POLICIES / "chatty"), local(POLICIES / "adversarial" / "loud")] + [builtin("forage")] * 14
    logs = MatchLogs()
    result = run_match(MatchSpec(seed=3, policies=tuple(lineup), config=CONFIG), host_factory=sandboxed_host, logs=logs)
    return result, logs


def test_a_sandboxed_team_log_has_its_lines_with_tick_and_stream(played):
    result, logs = played
    _, teams = read(logs.data)
    assert [t.slot for t in teams] == [0, 1]  # built-in teams run in the match process: no logs
    chatty = teams[0]
    lines = [(line.tick, line.stream, line.text) for line in chatty.lines]
    assert lines[0] == (0, "stdout", "building team 0")
    team = result.teams[0]
    busy = {f.tick for f in team.faults if "still busy" in f.message}  # not asked: it was busy with tick 9
    for tick in range(1, CONFIG.horizon + 1):
        assert ((tick, "stdout", f"hello from tick {tick}") in lines) == (tick not in busy), tick
    assert (5, "stderr", "about to fail at tick 5") in lines
    # printed while deciding tick 9, after the host had given up waiting: still tick 9
    assert (9, "stdout", "sleeping at tick 9") in lines and (9, "stdout", "woke up at tick 9") in lines
    assert chatty.dropped_bytes == 0 and chatty.policy_id == "local:chatty"
    assert team.fault_counts.get("ERROR") == 1 and team.fault_counts.get("TIMEOUT", 0) >= 1
    assert any(f.tick == 5 and "deliberate failure at tick 5" in f.message for f in team.faults)


def test_a_flood_is_capped_counted_and_costs_the_match_nothing(played):
    result, logs = played
    _, teams = read(logs.data)
    loud = teams[1]
    assert result.ticks == CONFIG.horizon and result.teams[1].fault_counts == {}  # never late, never stopped
    assert loud.total_bytes >= 2 * (1 << 20) * CONFIG.horizon  # a megabyte a tick on each stream, all read
    assert loud.total_bytes - loud.dropped_bytes <= 64 * 1024 and loud.gap_at is not None
    assert {line.stream for line in loud.lines} == {"stdout", "stderr"}
    assert loud.lines[-1].tick == CONFIG.horizon
