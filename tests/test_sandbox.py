"""Isolation: misbehaving submissions are contained, and nobody else notices.

One match puts twelve adversarial policies (each idles except for its misbehaviour) in
sandboxes beside four built-in teams; a second match, same seed, puts a policy that only
idles in their places. The built-in teams' results must be identical, every adversary's
faults must say what happened, and nothing may leak or escape.

A team that sleeps past the deadline plays a match of its own, where the test wakes it
once the runner has gone on without it: what it shows depends on that order of events,
never on how long a tick takes on a busy machine.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import socket
import threading
from dataclasses import replace

import pytest

from arena import PROJECT_ROOT
from arena.policies import builtin, local
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec, run_match
from matchmaking.sandbox.host import SandboxedTeam, protect_process, sandboxed_host
from matchmaking.teams.factory import in_process_host
from tests_support import POLICIES, fault_of

ADVERSARIES = (
    "hang",
    "memory_hog",
    "big_import",
    "fork_bomb",
    "token_thief",
    "socket_user",
    "file_writer",
    "exits",
    "segfault",
    "garbage",
    "loud",
)
BUILTINS = ("combat", "forage", "combat", "random", "forage")
# hang_timeout_s: just past the wait for an answer. The hanging team's idle members starve by
# tick 25, so it must be stopped within 21 ticks of tick 3's wait: 0.1 s is a few ticks of a
# fast machine, and a busy machine's slower ticks only stop it sooner (at tick 4 at the latest)
CONFIG = MatchConfig(horizon=60, time_bank_s=0.4, hang_timeout_s=1.1, max_faults_recorded=100, fault_message_chars=1000)
SECRET = "hf_arena_test_secret_4f1d9c"


class Listener:
    """A TCP server on this machine that records connections (none should arrive)."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    """Copies of the adversaries (with the files they need), a fake history store and a
    fake other submission holding a secret."""
    root = tmp_path_factory.mktemp("arena")
    history = root / "history"
    history.mkdir()
    (history / "matches.parquet").write_text("the match history")
    other = root / "submissions" / "someone-else"
    other.mkdir(parents=True)
    (other / "weights.bin").write_text("another team's secret weights")
    listener = Listener()
    policies = {}
    for name in ADVERSARIES + ("idle",):
        folder = root / "policies" / name
        shutil.copytree(POLICIES / "adversarial" / name, folder)
        policies[name] = folder
    (policies["socket_user"] / "port.txt").write_text(str(listener.port))
    (policies["file_writer"] / "targets.txt").write_text(
        "\n".join(
            [
                f"write {PROJECT_ROOT / 'sandbox-escape.txt'}",
                f"write {history / 'forged.parquet'}",
                "write /tmp/arena-sandbox-escape.txt",
                f"read {history / 'matches.parquet'}",
                f"read {other / 'weights.bin'}",
                f"read {policies['idle'] / 'policy.py'}",
            ]
        )
    )
    return {"root": root, "history": history, "other": other, "listener": listener, "policies": policies}


@pytest.fixture(scope="module")
def matches(arena):
    os.environ["HF_TOKEN"] = SECRET  # as on a Space: the matchmaker holds a token
    protect_process()
    try:
        adversaries = [local(arena["policies"][name]) for name in ADVERSARIES]
        lineup = tuple(adversaries + [builtin(name) for name in BUILTINS])
        attacked = run_match(MatchSpec(seed=21, policies=lineup, config=CONFIG), host_factory=sandboxed_host)
        idle = local(arena["policies"]["idle"])
        quiet = tuple([idle] * len(ADVERSARIES) + [builtin(name) for name in BUILTINS])
        baseline = run_match(MatchSpec(seed=21, policies=quiet, config=CONFIG), host_factory=in_process_host)
    finally:
        del os.environ["HF_TOKEN"]
    return attacked, baseline


def test_the_match_finishes_and_bystanders_see_no_difference(matches):
    attacked, baseline = matches
    assert attacked.ticks == baseline.ticks == CONFIG.horizon
    bystanders = range(len(ADVERSARIES), 16)
    for slot in bystanders:
        assert attacked.teams[slot] == baseline.teams[slot], f"built-in team in slot {slot} was affected"
    for slot in range(len(ADVERSARIES)):  # adversaries idle, as the baseline's idle teams
        a, b = attacked.teams[slot], baseline.teams[slot]
        assert (a.achievement, a.tasks, a.alive) == (b.achievement, b.tasks, b.alive)


def test_hang_is_stopped(matches):
    team, faults = fault_of(matches[0], "hang")
    assert team.fault_counts["TIMEOUT"] >= 2
    assert "3:TIMEOUT:no answer within 1.00 s" in faults
    assert re.search(r":TIMEOUT:no answer to tick 3 for \d+ s: stopped for the rest of the match", faults), faults


class WokenWhenLeftBehind(SandboxedTeam):
    """The sleeper in its sandbox, woken (SIGUSR1) as soon as the runner has gone on to a
    tick without it, and its late answer awaited before the runner goes on again.

    Its sleep ends on these events, not on a clock: it is still asleep when the runner asks
    for tick 4, however long tick 3's game step took on a busy machine, and its answer to
    tick 3 is in the pipe before the runner asks for tick 5. (It once slept 1.1 s against
    a 1.0 s wait: on a loaded machine tick 3's step outlasted the 0.1 s between them.)
    """

    def __init__(self, ref, slot):
        super().__init__(ref, slot)
        self.asked = 0
        self.woken_at: int | None = None
        self.answered: list[int] = []  # the ticks it answered in time

    def request(self, tick, observations):
        self.asked = tick
        super().request(tick, observations)

    def answer(self):
        answer = super().answer()
        if answer.fault is None and not self.stopped:
            self.answered.append(self.asked)
        elif answer.fault is not None and "still busy" in answer.fault.message and self.woken_at is None:
            self.woken_at = self.asked
            os.kill(self.pid, signal.SIGUSR1)
            select.select([self._in], [], [], 60)  # its answer to the tick it slept through
        return answer


#: The sleeper's match: the default `hang_timeout_s` (10 s), far above anything it waits for;
#: short of tick 25, when its idle members starve.
SLEEPER_CONFIG = MatchConfig(horizon=16, time_bank_s=0.4, max_faults_recorded=100, fault_message_chars=1000)


def woken_match(lineup, config):
    """Play `lineup` with its first team in a `WokenWhenLeftBehind` sandbox and the others in
    the match's process: (the result, that first team's host)."""
    hosts = []

    def host(ref, slot):
        if ref is not lineup[0]:
            return in_process_host(ref, slot)
        hosts.append(WokenWhenLeftBehind(ref, slot))
        return hosts[-1]

    return run_match(MatchSpec(seed=21, policies=lineup, config=config), host_factory=host), hosts[0]


@pytest.fixture(scope="module")
def sleeper():
    """A match of the sleeper (sandboxed) and 15 idle teams (in the match's process)."""
    lineup = (local(POLICIES / "adversarial" / "sleepy"),) + (local(POLICIES / "adversarial" / "idle"),) * 15
    return woken_match(lineup, SLEEPER_CONFIG)


def test_sleeping_past_the_deadline_costs_only_those_ticks(sleeper):
    result, host = sleeper
    team, faults = fault_of(result, "sleepy")
    assert result.ticks == SLEEPER_CONFIG.horizon
    assert team.fault_counts == {"TIMEOUT": 2}, faults
    # waited for once; then, still asleep, passed over without a wait
    assert faults.startswith("3:TIMEOUT:no answer within 1.00 s (its deadline and the rest of its time bank) / "
                             "4:TIMEOUT:still busy with tick 3 ("), faults
    assert host.woken_at == 4 and not host.stopped  # it woke up ...
    assert host.answered == [1, 2, *range(5, SLEEPER_CONFIG.horizon + 1)]  # ... and answered every later tick


def test_a_late_answers_error_is_recorded_when_it_is_read():
    """The error a team raised after its deadline counts: read with the next tick's request,
    it is that tick's fault (the team's agents idle once more), and the team plays on."""
    lineup = (local(POLICIES / "adversarial" / "sleepy_raises"), builtin("forage"))
    result, host = woken_match(lineup, replace(SLEEPER_CONFIG, num_teams=2))
    team, faults = fault_of(result, "sleepy_raises")
    assert team.fault_counts == {"TIMEOUT": 2, "ERROR": 1}, faults
    assert faults.split(" / ")[2].startswith(
        "5:ERROR:in its late answer to tick 3: RuntimeError: raised after the deadline (at policy.py:"), faults
    assert host.answered == [1, 2, *range(6, SLEEPER_CONFIG.horizon + 1)] and not host.stopped


def test_a_late_answers_error_after_the_last_tick_is_recorded_too():
    """A match that ends (or a team whose members all die) while the team is still working
    on a tick: its answer is awaited, up to the hang limit, and its error recorded."""
    config = replace(SLEEPER_CONFIG, num_teams=2, horizon=5)
    lineup = (local(POLICIES / "adversarial" / "late_raise"), builtin("forage"))
    result = run_match(MatchSpec(seed=21, policies=lineup, config=config), host_factory=sandboxed_host)
    team, faults = fault_of(result, "late_raise")
    assert team.fault_counts == {"TIMEOUT": 3, "ERROR": 1}, faults
    assert faults.split(" / ")[-1].startswith(
        "5:ERROR:in its late answer to tick 3: RuntimeError: raised after the match's last tick"), faults


def test_withheld_words_reach_the_operator_and_no_record(caplog):
    """`withhold_policy_words` (a Space whose isolation is in doubt): the record, the replay
    and the log keep each fault's kind and tick, the TIMEOUT's host-written message, and a
    note where the team's words were; the operator's log has the words."""
    from arena import logs as logs_format
    from arena.logs import MatchLogs
    from arena.replay import ReplayRecorder
    from arena.replay import read as read_replay
    from arena.untrusted import WITHHELD

    config = replace(SLEEPER_CONFIG, num_teams=2, horizon=10, withhold_policy_words=True)
    recorder, logs = ReplayRecorder(), MatchLogs()
    lineup = (local(POLICIES / "chatty"), builtin("forage"))
    with caplog.at_level("WARNING", logger="nmmo_arena.withheld"):
        result = run_match(MatchSpec(seed=3, policies=lineup, config=config), host_factory=sandboxed_host,
                           recorder=recorder, logs=logs)
    team, faults = fault_of(result, "chatty")
    error = next(f for f in team.faults if f.kind.value == "ERROR")
    assert error.tick == 5 and error.message == WITHHELD, faults
    assert all(f.message == WITHHELD or f.kind.value == "TIMEOUT" for f in team.faults)
    assert "deliberate failure" not in str(read_replay(recorder.data)[0]["faults"])
    (chatty,) = logs_format.read(logs.data)[1]
    assert [line.text for line in chatty.lines] == [WITHHELD] and chatty.dropped_bytes == chatty.total_bytes > 0
    operator = caplog.text
    assert "ValueError: deliberate failure at tick 5" in operator and "hello from tick 4" in operator


def test_memory_limit(matches):
    team, faults = fault_of(matches[0], "memory_hog")
    assert team.fault_counts == {"MEMORY": 1} and "3:MEMORY:MemoryError" in faults
    team, faults = fault_of(matches[0], "big_import")
    assert team.fault_counts == {"MEMORY": 1} and faults.startswith("0:MEMORY:") and "MemoryError" in faults


def test_forking_without_end_is_refused(matches):
    team, faults = fault_of(matches[0], "fork_bomb")
    assert team.fault_counts == {"ERROR": 1}
    assert "forked 0 processes, then PermissionError" in faults


def test_no_token_in_sight(matches):
    team, faults = fault_of(matches[0], "token_thief")
    assert SECRET not in faults
    assert "env=<absent>" in faults and "env_keys=<none>" in faults
    assert "parent_environ=<PermissionError>" in faults and "init_environ=<PermissionError>" in faults


def test_no_network(matches, arena):
    team, faults = fault_of(matches[0], "socket_user")
    assert "report local=" in faults and "local=OK" not in faults
    assert "remote=OK" not in faults and "dns=OK" not in faults
    assert arena["listener"].connections == 0


def test_no_files_outside_its_folder(matches, arena):
    team, faults = fault_of(matches[0], "file_writer")
    assert ": OK" not in faults.replace("write cwd: OK", "")
    assert "write cwd: OK" in faults
    assert not (PROJECT_ROOT / "sandbox-escape.txt").exists()
    assert not (arena["history"] / "forged.parquet").exists()
    assert not os.path.exists("/tmp/arena-sandbox-escape.txt")


def test_exit_and_crash_are_recorded(matches):
    team, faults = fault_of(matches[0], "exits")
    assert team.fault_counts == {"CRASH": 1} and "3:CRASH:the team process exited with code 3 at tick 3" in faults
    team, faults = fault_of(matches[0], "segfault")
    assert team.fault_counts == {"CRASH": 1} and "killed by SIGSEGV at tick 3" in faults


def test_garbage_answers_are_invalid(matches):
    team, faults = fault_of(matches[0], "garbage")
    assert team.fault_counts == {"INVALID": 2}
    assert "3:INVALID:act() returned value of type object cannot be an action" in faults
    assert "4:INVALID:member 0: Move.Direction must be an integer index, got float" in faults


def test_flooding_output_is_harmless(matches):
    team, _ = fault_of(matches[0], "loud")
    assert team.fault_counts == {}


def test_confinement_report():
    """What the sandbox applied on this machine (printed for the CI log)."""
    config = MatchConfig(horizon=4)
    from matchmaking.engine import game
    from matchmaking.engine.hosting import TeamSlot
    from matchmaking.engine.observations import ObservationLayout

    env = game.make_env(replace(config, num_teams=1), map_id=1)
    obs = game.reset_env(env, seed=0)
    layout = ObservationLayout.from_observation(next(iter(obs.values())), config.team_size)
    slot = TeamSlot(0, game.env_config(config, team_id=0, seed=0), config, layout)
    team = SandboxedTeam(local(POLICIES / "adversarial" / "idle"), slot)
    try:
        assert team.start() is None
        print(team.confinement)
        assert set(team.confinement) >= {"cpu", "network", "files", "processes", "capabilities"}
        assert "namespace" in team.confinement["network"] or "no TCP" in team.confinement["files"]
    finally:
        team.close()


def _zygotes_of(pid: int) -> list[int]:
    """The sandbox zygotes whose parent is process `pid`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read()
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == pid and b"matchmaking.sandbox.zygote" in command:
            found.append(int(entry))
    return found


def test_match_workers_start_their_zygote_before_their_first_match():
    """A Space's match workers start the sandbox zygote as they start (`prepare`), so its
    imports do not follow the game's set-up of their first match."""
    import time

    from matchmaking.sandbox.host import start_zygote
    from matchmaking.service.executor import LocalExecutor

    executor = LocalExecutor(1, host_factory=sandboxed_host, prepare=start_zygote)
    try:
        worker = executor._ensure().submit(os.getpid).result(timeout=120)  # the worker, before any match
        deadline = time.monotonic() + 30
        while not _zygotes_of(worker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _zygotes_of(worker), "the worker started no sandbox zygote before its first match"
        spec = MatchSpec(seed=3, policies=(local(PROJECT_ROOT / "examples" / "policies" / "gatherer"),
                                           *[builtin("random")] * 15), config=MatchConfig(horizon=8))
        (outcome,) = list(executor.run([spec]))
        assert outcome.result is not None and not any(t.fault_counts for t in outcome.result.teams), outcome.error
        assert len(_zygotes_of(worker)) == 1  # the match used it: no second one
    finally:
        executor.close()


def test_the_zygote_says_when_it_is_ready():
    from matchmaking.sandbox.host import start_zygote

    assert start_zygote(wait_s=120)  # imports done: its first team forks at once
    assert start_zygote()



_SAYS_WHAT_IS_LOADED = """
import sys

LOADED = [name for name in ("tor" + "ch", "onnx" + "runtime") if name in sys.modules]  # before this file's imports
{imports}

class Team:
    def __init__(self, team_id, env_config):
        print("loaded before the policy:", " ".join(LOADED) or "none")

    def act(self, observations):
        return {{}}
"""

_PLAY_EACH = """
import sys
from pathlib import Path

import numpy as np

from arena.policies import local
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.hosting import TeamSlot
from matchmaking.engine.observations import ObservationLayout
from matchmaking.sandbox.host import SandboxedTeam, start_zygote

assert start_zygote(wait_s=120)  # as a Space's match worker starts it: without the frameworks
config = MatchConfig(num_teams=1, team_size=1, horizon=2, cache_dir=None)
slot = TeamSlot(0, {}, config, ObservationLayout.from_observation({"CurrentTick": np.zeros((), dtype=np.int64)}, 1))
for folder in sys.argv[1:]:
    team = SandboxedTeam(local(Path(folder)), slot)
    try:
        assert team.start() is None
    finally:
        team.close()
    print(Path(folder).name + ":", team.output_log().lines[0].text)
"""


def test_the_frameworks_are_loaded_before_the_first_trained_team_and_never_for_scripted_ones(tmp_path):
    """A Space's zygotes start without torch and ONNX Runtime, and load them before they fork
    the first team whose files name one (or carry weights): a trained team never imports
    them after its fork, where they would count against its memory limit, and a scripted
    one never waits for them."""
    import subprocess
    import sys

    from matchmaking.teams.frameworks import needed_by

    folders = {"scripted": "import math", "weights": "import math", "trained": "import torch"}
    for name, imports in folders.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "policy.py").write_text(_SAYS_WHAT_IS_LOADED.format(imports=imports))
    (tmp_path / "weights" / "model.onnx").write_bytes(b"")
    assert [needed_by(tmp_path / name) for name in folders] == [False, True, True]
    assert needed_by(None) and needed_by(PROJECT_ROOT / "examples" / "policies" / "apprentice-onnx")
    (tmp_path / "device").mkdir()
    (tmp_path / "device" / "policy.py").symlink_to("/dev/zero")  # never read: it would never end
    assert needed_by(tmp_path / "device")
    assert not needed_by(PROJECT_ROOT / "examples" / "policies" / "gatherer")
    done = subprocess.run([sys.executable, "-c", _PLAY_EACH, *(str(tmp_path / name) for name in folders)],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["scripted: loaded before the policy: none",
                                        "weights: loaded before the policy: torch onnxruntime",
                                        "trained: loaded before the policy: torch onnxruntime"]
