"""More hostile teams: what a team's process sends is bounded and checked before it is
believed, its disk is bounded, and x32 system calls cannot fork past the filter.

As in `test_sandbox.py`, one match puts the hostile teams beside built-in bystanders and a
second match, same seed, puts idle teams in their places: every hostile team must end as
its own fault, the match must complete, and the bystanders must not notice.
"""

from __future__ import annotations

import os
import platform
import time

import pytest

from arena.policies import builtin, local
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec, run_match
from matchmaking.sandbox.host import sandboxed_host
from matchmaking.sandbox.leftovers import SANDBOX_ROOT, remove_stale_sandboxes
from matchmaking.sandbox.protocol import SHM_PREFIX, SharedBlock, owner_tag
from matchmaking.teams.factory import in_process_host
from tests_support import POLICIES, fault_of

HOSTILE = ("nested_reply", "wrong_shape_reply", "wrong_time_reply", "oversized_reply", "disk_filler", "x32_fork")
BYSTANDERS = ("combat", "forage", "random") * 3 + ("combat",)
CONFIG = MatchConfig(horizon=30, time_bank_s=0.4, hang_timeout_s=2.0, max_faults_recorded=100, fault_message_chars=1000)


@pytest.fixture(scope="module")
def matches():
    lineup = tuple([local(POLICIES / "hostile" / name) for name in HOSTILE] + [builtin(n) for n in BYSTANDERS])
    attacked = run_match(MatchSpec(seed=5, policies=lineup, config=CONFIG), host_factory=sandboxed_host)
    idle = local(POLICIES / "adversarial" / "idle")
    quiet = tuple([idle] * len(HOSTILE) + [builtin(n) for n in BYSTANDERS])
    baseline = run_match(MatchSpec(seed=5, policies=quiet, config=CONFIG), host_factory=in_process_host)
    return attacked, baseline


def test_the_match_completes_and_bystanders_see_no_difference(matches):
    attacked, baseline = matches
    assert attacked.ticks == baseline.ticks == CONFIG.horizon
    for slot in range(len(HOSTILE), 16):
        assert attacked.teams[slot] == baseline.teams[slot]


def test_a_deeply_nested_message_is_refused_undecoded(matches):
    team, faults = fault_of(matches[0], "nested_reply")
    assert team.fault_counts == {"INVALID": 1}
    assert "3:INVALID:the team process sent a bad message (message nests 300001 levels deep, over the limit of 16)" in faults


def test_a_message_of_the_wrong_shape_is_the_teams_fault(matches):
    team, faults = fault_of(matches[0], "wrong_shape_reply")
    assert team.fault_counts == {"INVALID": 1} and "'tick' is a list, not a int" in faults and "and was stopped" in faults


def test_a_message_at_the_wrong_time_is_the_teams_fault(matches):
    team, faults = fault_of(matches[0], "wrong_time_reply")
    assert team.fault_counts["INVALID"] >= 1 and faults.startswith("3:INVALID:the team process answered the wrong tick")
    assert set(team.fault_counts) == {"INVALID"}


def test_an_oversized_message_is_refused_unread(matches):
    team, faults = fault_of(matches[0], "oversized_reply")
    assert team.fault_counts == {"INVALID": 1} and "over the 1048576-byte limit" in faults


def test_the_working_folder_has_a_quota(matches):
    team, faults = fault_of(matches[0], "disk_filler")
    assert team.fault_counts == {"ERROR": 1}
    written = int(faults.split("wrote ")[1].split(" MB")[0])
    assert written <= CONFIG.workdir_mb, faults
    assert "No space left on device" in faults or "quota" in faults


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x32 is an x86_64 ABI")
def test_x32_system_calls_cannot_fork(matches):
    team, faults = fault_of(matches[0], "x32_fork")
    assert team.fault_counts == {"ERROR": 1} and "x32 fork returned -1, errno Function not implemented" in faults  # refused as an unknown ABI


def test_leftovers_of_killed_match_processes_are_removed_at_the_next_start():
    """A dead process's folders and shared memory go; a live one's stay, and so do those made
    in another PID namespace (a Ray node under `unshare`, a container sharing /tmp), whose
    pids say nothing here: that node's zygote lost its home to another process's start-up
    once, and its teams could not start."""
    dead = 2**22 + 12345  # above pid_max on this kind of machine: never a live process
    try:
        os.kill(dead, 0)
        pytest.skip("the chosen pid is alive")
    except ProcessLookupError:
        pass
    here = owner_tag().split("-")[1]
    SANDBOX_ROOT.mkdir(exist_ok=True)
    stale = SANDBOX_ROOT / f"team3-{dead}-{here}-abc"
    stale.mkdir()
    (stale / "junk.bin").write_bytes(b"x" * 1000)
    elsewhere = SANDBOX_ROOT / f"zygote-{dead}-{int(here) + 1}-abc"  # same pid, another namespace
    elsewhere.mkdir(exist_ok=True)
    mine = SANDBOX_ROOT / f"team3-{owner_tag()}-abc"
    mine.mkdir(exist_ok=True)
    block = SharedBlock(f"{SHM_PREFIX}{dead}-{here}-0123456789abcdef", 4096, create=True)
    foreign = SharedBlock(f"{SHM_PREFIX}{dead}-{int(here) + 1}-0123456789abcdef", 4096, create=True)
    live = SharedBlock.create(4096)
    try:
        assert remove_stale_sandboxes() >= 2
        assert not stale.exists() and not os.path.exists(f"/dev/shm/{block.name}")
        assert mine.exists() and os.path.exists(f"/dev/shm/{live.name}")  # a live process's are kept
        assert elsewhere.exists() and os.path.exists(f"/dev/shm/{foreign.name}")  # another namespace's too
    finally:
        mine.rmdir()
        elsewhere.rmdir()
        for kept in (live, block, foreign):
            kept.unlink()


def test_a_finished_matchs_folders_and_memory_are_gone(matches):
    time.sleep(0.5)
    mine = [p for p in SANDBOX_ROOT.glob(f"team*-{owner_tag()}-*")]
    blocks = [p for p in os.listdir("/dev/shm") if p.startswith(f"{SHM_PREFIX}{owner_tag()}-")]
    assert mine == [] and blocks == []
