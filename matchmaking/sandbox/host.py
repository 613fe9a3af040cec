"""How a policy is isolated: one OS process per submitted team, confined and watched.

A `SandboxedTeam` starts `matchmaking.sandbox.worker` in its own process with an empty
environment (no `HF_TOKEN`, no secret of the Space) and a private working folder; the
worker confines itself before it loads the policy (`matchmaking.sandbox.confine`: one CPU, a
memory limit, no network, no new processes, and Landlock rules that let it read only the
Python installation, the Arena's code and its own policy and write only its folder).
Observations reach it through shared memory; its answers come back as JSON over a pipe;
its stdout and stderr are drained all match long and kept, capped and stamped with the
tick being asked, as the team's log (`matchmaking.sandbox.output`, `arena.logs`).

Whatever the team does (raise, hang, sleep, exhaust memory, exit, fork, flood its output,
return garbage) ends as a `Fault` of a closed set of kinds, the team's agents idle, and
the match goes on. A team that stops answering or keeps timing out is stopped for the
rest of the match. Nothing the team sends is unpickled in the match process.

Each mechanism depends on the kernel; the worker reports which ones it applied and the
isolation self-test (`matchmaking.isolation`, docs/isolation.md) checks what holds. Whatever the kernel,
the Space's `/proc` entries are made unreadable to its children (`protect_process`).
"""

from __future__ import annotations

import collections
import ctypes
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from arena import PROJECT_ROOT
from arena.errors import PipeClosedError, ProtocolError, SandboxError
from arena.logs import BoundedLog, TeamLog
from arena.policies import PolicyRef
from arena.schema import Fault, FaultKind
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.hosting import Answer, TeamHost, TeamSlot, TimeBank
from matchmaking.sandbox.leftovers import private_folder
from matchmaking.sandbox.output import OutputCapture
from matchmaking.sandbox.protocol import (
    SharedBlock,
    parse_ready,
    parse_reply,
    receive_message,
    send_message,
)
from matchmaking.teams.factory import in_process_host
from matchmaking.teams.frameworks import needed_by

_PR_SET_DUMPABLE = 4

#: How often the host reads a team's memory while it waits for the team's answer, in s.
MEMORY_POLL_S = 0.05

#: How long the host waits for the zygote to report the exit of a team whose pipe closed,
#: in s. Waited only when the pipe closed (a crash); the zygote reaps every 0.05 s, and a
#: team that closed its pipe but lives on is stopped after this wait all the same.
EXIT_REPORT_S = 2.0

def protect_process() -> None:
    """Make this process's `/proc` entries (environ, memory) unreadable to its children.

    Call once in the Space's process before starting sandboxes: without it, a team running
    as the same user could read `/proc/<parent>/environ` and find `HF_TOKEN` there.
    """
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    except OSError:  # not Linux: nothing to do
        pass


def _clean_environment(home: Path | str) -> dict[str, str]:
    """The whole environment of a team's process: nothing inherited from the Space."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "TMPDIR": str(home),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(PROJECT_ROOT),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONUNBUFFERED": "1",
        # one thread each: the team has one core
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


class _Zygote:
    """This process's handle on its sandbox zygote (`matchmaking.sandbox.zygote`)."""

    _instance: _Zygote | None = None
    _guard = threading.Lock()

    @classmethod
    def get(cls) -> _Zygote:
        """This process's zygote, started if need be."""
        with cls._guard:
            zygote = cls._instance
            if zygote is None or zygote.owner != os.getpid() or zygote.process.poll() is not None:
                zygote = cls._instance = cls()
            return zygote

    def __init__(self) -> None:
        self.owner = os.getpid()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        home = self.home = private_folder("zygote")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "matchmaking.sandbox.zygote", str(theirs.fileno())],
            env=_clean_environment(home),
            cwd=home,
            stdin=subprocess.DEVNULL,
            pass_fds=(theirs.fileno(),),
            start_new_session=True,
        )
        theirs.close()
        self.sock = mine
        self.lock = threading.Lock()
        self.started: collections.deque[int] = collections.deque()
        self.exits: dict[int, int] = {}
        self.ready = threading.Event()
        """Set once the zygote has done its imports (about a second: nmmo, the teams' code)."""
        self.changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True, name="sandbox-zygote").start()

    def _read(self) -> None:
        for line in self.sock.makefile("rb"):
            message = json.loads(line)
            with self.changed:
                if message["type"] == "ready":
                    self.ready.set()
                elif message["type"] == "started":
                    self.started.append(int(message["pid"]))
                elif message["type"] == "exit":
                    self.exits[int(message["pid"])] = int(message["code"])
                self.changed.notify_all()

    def spawn(self, fds: tuple[int, int, int, int], *, frameworks: bool, timeout: float = 30.0) -> int:
        """Fork a team process wired to the four descriptors (control in and out, stdout,
        stderr), from a zygote holding the frameworks if `frameworks`; its pid."""
        with self.lock:
            socket.send_fds(self.sock, [json.dumps({"frameworks": frameworks}).encode()], list(fds))
            with self.changed:
                if not self.changed.wait_for(lambda: self.started, timeout=timeout):
                    raise SandboxError("the sandbox zygote did not start a team process")
                return self.started.popleft()

    def exit_code(self, pid: int, timeout: float) -> int | None:
        """How process `pid` ended (negative: killed by that signal), or None if still running."""
        with self.changed:
            self.changed.wait_for(lambda: pid in self.exits, timeout=timeout)
            return self.exits.get(pid)


def start_zygote(*, wait_s: float | None = None) -> bool:
    """Start this process's sandbox zygote now rather than at its first sandboxed team.

    Its imports take about a second; started when a match worker starts (`LocalExecutor`'s
    `prepare`), they overlap the worker's idle time instead of following the game's set-up
    of its first match. With `wait_s`, wait that long for them; returns whether it is ready.
    torch and ONNX Runtime (about 2 s of CPU more) wait for the first team that needs them
    (`matchmaking.teams.frameworks.needed_by`).
    """
    zygote = _Zygote.get()
    return zygote.ready.wait(wait_s) if wait_s is not None else zygote.ready.is_set()


class SandboxedTeam(TeamHost):
    """A team in its own confined process, behind the runner's `TeamHost` protocol."""

    def __init__(self, ref: PolicyRef, slot: TeamSlot, *, frameworks: bool | None = None):
        self.ref = ref
        self.slot = slot
        # whether its zygote must hold torch and ONNX Runtime when it forks the team (None: by its files)
        self.frameworks = needed_by(ref.path) if frameworks is None else frameworks
        self.config: MatchConfig = slot.config
        self.pid: int | None = None
        self.shm: SharedBlock | None = None
        self.views: list[list[Any]] = []
        self.workdir: Path | None = None
        self.output: OutputCapture | None = None
        self.confinement: dict[str, str] = {}
        self.stopped = ""  # why the team was stopped, once it is
        self._pending: int | None = None  # tick of an unanswered request
        self._sent_at = 0.0
        self._busy_fault: Fault | None = None
        self._crash_fault: Fault | None = None
        self._waited_timeouts = 0
        self.bank = TimeBank(slot.config)
        self._check_disk = False  # True where no tmpfs quota could be mounted: the host checks
        # Per answer, the CPU and the wall-clock time the team's act() reported, for validation
        # reports. The figures come from the team's own process (the host waits on 16 teams in
        # turn and cannot time each one alone); a team that lies about them misreports only its
        # own cost, since the limits are enforced from the host's clock as well.
        self.step_cpu_s: list[float] = []
        self.step_wall_s: list[float] = []
        self.peak_memory_mb = 0.0  # most memory the policy used beyond the preloaded frameworks
        self._baseline_mb = 0.0  # the process's anonymous resident memory when it was forked

    # -- lifecycle -----------------------------------------------------------------------
    def launch(self) -> None:
        """Start the process and send its instructions, without waiting for it to be ready
        (the runner launches every sandbox first, so that they import in parallel)."""
        if self.pid is not None:
            return
        layout = self.slot.layout
        self.shm = SharedBlock.create(layout.total_bytes)
        self.views = layout.views(self.shm.buf)
        self.workdir = private_folder(f"team{self.slot.team_id}")
        limits = {
            "cpu_index": self.slot.team_id,
            "cpu_count": self.config.cpu_limit,
            "max_file_mb": self.config.max_file_mb,
            "workdir_mb": self.config.workdir_mb,
            "memory_limit_mb": self.config.memory_limit_mb,
            # a backstop far above the per-step budget: a team that spins forever dies
            "cpu_seconds": int(self.config.init_timeout_s + self.config.horizon * self.config.step_timeout_s * 2
                               + self.config.time_bank_s + 10),
            "workdir": str(self.workdir),
        }

        child_in, parent_out = os.pipe()
        parent_in, child_out = os.pipe()
        stdout_read, stdout_write = os.pipe()
        stderr_read, stderr_write = os.pipe()
        try:
            self.pid = _Zygote.get().spawn((child_in, child_out, stdout_write, stderr_write), frameworks=self.frameworks)
            self._baseline_mb = anonymous_rss_mb(self.pid)  # before the policy's code runs
        finally:
            for fd in (child_in, child_out, stdout_write, stderr_write):
                os.close(fd)
        self._in, self._out = parent_in, parent_out
        self.output = OutputCapture(
            stdout_read, stderr_read, log=BoundedLog(head_bytes=self.config.log_head_bytes, tail_bytes=self.config.log_tail_bytes)
        )
        self.output.start()
        send_message(
            self._out,
            {
                "type": "init",
                "shm": self.shm.name,
                "layout": layout.to_dict(),
                "limits": limits,
                "message_chars": self.config.fault_message_chars,
                "policy_id": self.ref.policy_id,
                "revision": self.ref.id.sha,
                "policy_path": None if self.ref.path is None else str(self.ref.path),
                "team_id": self.slot.team_id,
                "env_config": self.slot.env_config,
            },
        )

    def start(self) -> Fault | None:
        self.launch()
        limit = self.config.fault_message_chars
        try:
            message = receive_message(self._in, timeout=self.config.init_timeout_s)
            ready = None if message is None else parse_ready(message)
        except ProtocolError as exc:
            alive = self._exit_code(0.2) is None
            why = f"the team process sent a bad message while starting ({exc})" if alive else self._exit_description("while starting")
            self._stop("failed to start")
            return Fault(0, FaultKind.INIT, why[:limit])
        if ready is None:
            self._stop(f"not ready within {self.config.init_timeout_s:.0f} s")
            return Fault(0, FaultKind.INIT, f"the team was not ready within {self.config.init_timeout_s:.0f} s (import and Team() took too long)")
        if not ready.ok:
            self._stop("failed to start")
            return Fault(0, FaultKind(ready.kind), (ready.message or "failed to start")[:limit])
        self.confinement = ready.confinement
        self._check_disk = "tmpfs" not in self.confinement.get("disk", "")
        return self._memory_fault(0, "while being built")

    @property
    def max_step_cpu_s(self) -> float:
        return max(self.step_cpu_s, default=0.0)

    def close(self) -> None:
        self._memory_over_limit("")
        if self.pid is not None and self._exit_code(0) is None and not self.stopped:
            try:
                send_message(self._out, {"type": "close"})
                self._exit_code(0.5)
            except OSError:
                pass
        self._kill()
        for fd in (getattr(self, "_in", -1), getattr(self, "_out", -1)):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._in = self._out = -1  # closed
        if self.shm is not None:  # the memory goes when the last view of it does
            self.views = []
            self.shm.unlink()
            self.shm = None
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def bind_observations(self, env: Any, agent_ids: list[int]) -> None:
        """Have the env write this team's observations straight into its shared block."""
        from matchmaking.engine.game import share_observation_arrays

        for member, agent_id in enumerate(agent_ids):
            share_observation_arrays(env, agent_id, self.slot.layout, self.views[member])

    # -- one tick ------------------------------------------------------------------------
    def request(self, tick: int, observations: Mapping[int, Mapping[str, Any]]) -> None:
        self._busy_fault = None
        if self.stopped or self.pid is None:
            return
        if self._pending is not None:  # still working on an earlier tick: do not pile up
            try:
                stale = receive_message(self._in, timeout=0)
            except ProtocolError as exc:
                self._crash_fault = self._broke(tick, exc)
                return
            if stale is None:
                busy_for = time.monotonic() - self._sent_at
                if busy_for > self.config.hang_timeout_s:
                    pending = self._pending  # `_stop` forgets it
                    self._stop("hangs")
                    self._busy_fault = Fault(
                        tick, FaultKind.TIMEOUT,
                        f"no answer to tick {pending} for {busy_for:.0f} s: stopped for the rest of the match",
                    )
                else:
                    self._busy_fault = Fault(tick, FaultKind.TIMEOUT, f"still busy with tick {self._pending} ({busy_for:.1f} s)")
                return
            self._pending = None
            self._busy_fault = self._late_error(tick, stale)
            if self._busy_fault is not None:  # this tick's answer is that error
                return
        layout = self.slot.layout
        for member, observation in observations.items():
            layout.write(self.views[member], observation)
        if self.output is not None:  # what it printed until now belongs to the ticks before
            self.output.at_tick(tick)
        try:
            send_message(self._out, {"type": "act", "tick": tick, "members": sorted(observations)})
        except OSError:
            self._crashed(tick)
            return
        self._pending, self._sent_at = tick, time.monotonic()

    def answer(self) -> Answer:
        if self._crash_fault is not None:
            fault, self._crash_fault = self._crash_fault, None
            return Answer(fault=fault)
        if self._busy_fault is not None:  # perhaps still building what made it late
            tick = self._busy_fault.tick
            return Answer(fault=self._memory_fault(tick, f"at tick {tick}") or self._busy_fault)
        if self.stopped or self._pending is None:
            return Answer(actions={})
        tick = self._pending
        wall_limit = self.bank.wait_s
        try:
            message, memory = self._await_reply(tick, self._sent_at + wall_limit)
        except ProtocolError as exc:
            return Answer(fault=self._broke(tick, exc))
        if memory is not None:
            return Answer(fault=memory)
        if message is None:
            self.bank.spend()
            return Answer(fault=self._timeout(tick, f"no answer within {wall_limit:.2f} s (its deadline and the rest of "
                                                    "its time bank)"))
        self._pending = None
        try:
            reply = parse_reply(message)
        except ProtocolError as exc:
            return Answer(fault=self._broke(tick, exc))
        if reply.tick != tick:
            return Answer(fault=Fault(tick, FaultKind.INVALID, "the team process answered the wrong tick"))
        disk = self._disk_over_quota()
        if disk:
            self._stop("over its disk quota")
            return Answer(fault=Fault(tick, FaultKind.ERROR, disk))
        memory = self._memory_fault(tick, f"at tick {tick}")
        if memory is not None:
            return Answer(fault=memory)
        if reply.error_kind:
            return Answer(fault=Fault(tick, FaultKind(reply.error_kind), reply.message[: self.config.fault_message_chars]))
        self.step_cpu_s.append(reply.cpu_s)
        self.step_wall_s.append(reply.wall_s)
        late = self.bank.charge(reply.wall_s)
        if late:
            return Answer(fault=self._timeout(tick, late, answered=True))
        return Answer(actions=reply.actions)

    def settle(self, tick: int) -> Fault | None:
        """Its late answer's error or its memory past the limit, if it still owes an answer:
        waited for until the hang limit, as a busy team would have been, then stopped."""
        if self.stopped or self.pid is None or self._pending is None:
            return None
        try:
            message, memory = self._await_reply(tick, self._sent_at + self.config.hang_timeout_s)
        except ProtocolError:
            return None  # a process that died after its last tick harms no one: nothing owed
        if memory is not None or message is None:
            return memory
        self._pending = None
        return self._late_error(tick, message)

    def _late_error(self, tick: int, message: dict) -> Fault | None:
        """The fault a late answer (`message`) carries, noticed at `tick`, or None."""
        try:
            reply = parse_reply(message)
        except ProtocolError as exc:
            return self._broke(tick, exc)
        if not reply.error_kind:
            return None
        said = f"in its late answer to tick {reply.tick}: {reply.message}"
        return Fault(tick, FaultKind(reply.error_kind), said[: self.config.fault_message_chars])

    def _await_reply(self, tick: int, deadline: float) -> tuple[dict | None, Fault | None]:
        """Wait for the team's answer until `deadline`, reading its memory every
        `MEMORY_POLL_S` meanwhile: (message or None, its MEMORY fault if it went over).

        A model that builds something too large is stopped while it builds, not only once it
        answers: resident memory is what the limit is about, and the address-space cap
        (`confine.limit_memory`) is only a backstop far above it."""
        while True:
            remaining = deadline - time.monotonic()
            # past the deadline, one last look: the runner may come to this team only after
            # waiting for others, and an answer that arrived in time counts
            readable, _, _ = select.select([self._in], [], [], min(max(remaining, 0.0), MEMORY_POLL_S))
            if readable:
                return receive_message(self._in, timeout=max(remaining, MEMORY_POLL_S)), None
            memory = self._memory_fault(tick, f"at tick {tick}")
            if memory is not None or remaining <= 0:
                return None, memory

    def _disk_over_quota(self) -> str:
        """Where the kernel gave no tmpfs quota: why the working folder is over it, or ""."""
        if not self._check_disk or self.workdir is None:
            return ""
        used = 0
        for root, _, files in os.walk(self.workdir):
            for name in files:
                try:
                    used += os.lstat(os.path.join(root, name)).st_blocks * 512
                except OSError:
                    pass
        if used > self.config.workdir_mb << 20:
            return (f"wrote {used / 2**20:.0f} MB into its working folder, over the {self.config.workdir_mb} MB quota: "
                    "stopped for the rest of the match")
        return ""

    def _exit_code(self, timeout: float) -> int | None:
        """The team process's exit code (negative: killed by that signal), None if running."""
        return None if self.pid is None else _Zygote.get().exit_code(self.pid, timeout)

    def _memory_fault(self, tick: int, when: str) -> Fault | None:
        """The team's MEMORY fault, and the team stopped, if it is over its limit now."""
        memory = self._memory_over_limit(when)
        if not memory:
            return None
        self._stop("over its memory limit")
        return Fault(tick, FaultKind.MEMORY, memory)

    def _memory_over_limit(self, when: str) -> str:
        """Read the memory the policy uses now (resident, beyond what its process held when
        forked: the interpreter and the preloaded frameworks); why it is over the limit, or ""."""
        if self.pid is None or self._exit_code(0) is not None:
            return ""
        used = anonymous_rss_mb(self.pid) - self._baseline_mb
        self.peak_memory_mb = max(self.peak_memory_mb, used)
        if used <= self.config.memory_limit_mb:
            return ""
        return (f"the team used {used:.0f} MB of memory {when} beyond the Arena's preloaded frameworks, over the "
                f"{self.config.memory_limit_mb} MB limit: stopped for the rest of the match")

    # -- failures ------------------------------------------------------------------------
    def _timeout(self, tick: int, why: str, *, answered: bool = False) -> Fault:
        """A TIMEOUT fault; the team is stopped once the match has waited for it too often."""
        if answered:  # it answered, only too late or too expensively: no wait to count
            return Fault(tick, FaultKind.TIMEOUT, why)
        self._waited_timeouts += 1
        if self._waited_timeouts >= self.config.max_timeouts:
            self._stop("too many timeouts")
            return Fault(tick, FaultKind.TIMEOUT, f"{why}; stopped for the rest of the match after {self._waited_timeouts} timeouts")
        return Fault(tick, FaultKind.TIMEOUT, why)

    def _broke(self, tick: int, exc: ProtocolError) -> Fault:
        """The fault for a bad message: INVALID if the process is alive (it is stopped),
        else its crash. A closed pipe is nearly always a process that ended: its exit is
        waited for longer (the zygote reports it once it has reaped it, later on a busy
        machine), so that a crash is not recorded as a bad message."""
        if self._exit_code(EXIT_REPORT_S if isinstance(exc, PipeClosedError) else 0.2) is None:
            self._stop(f"broke the protocol ({exc})")
            return Fault(tick, FaultKind.INVALID, f"the team process sent a bad message ({exc}) and was stopped")
        self._crashed(tick)
        fault, self._crash_fault = self._crash_fault, None
        assert fault is not None  # `_crashed` sets it
        return fault

    def _crashed(self, tick: int) -> None:
        how = self._exit_description(f"at tick {tick}")
        self._stop("process ended")
        kind = FaultKind.MEMORY if "MemoryError" in how else FaultKind.CRASH
        self._crash_fault = Fault(tick, kind, how[: self.config.fault_message_chars])

    def _exit_description(self, when: str) -> str:
        code = self._exit_code(1.0)
        if code is None:
            what = "the team process stopped answering"
        elif code < 0:
            what = f"the team process was killed by {signal.Signals(-code).name}"
        else:
            what = f"the team process exited with code {code}"
        tail = ""
        if self.output:
            self.output.join(timeout=0.5)  # the process is gone: its last words are on their way
            tail = self.output.text(self.config.output_tail_chars)
        return f"{what} {when}" + (f"; its last output: {tail[-300:]}" if tail else "")

    def _stop(self, why: str) -> None:
        self.stopped = why
        self._pending = None
        self._kill()

    def _kill(self) -> None:
        """Kill the team process and its process group (it cannot fork: see `confine`)."""
        if self.pid is None:
            return
        if self._exit_code(0) is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)  # the process leads its own session
            except (ProcessLookupError, PermissionError):
                pass
            self._exit_code(5.0)
        if self.output is not None:
            self.output.finish(timeout=1.0)

    def output_log(self) -> TeamLog | None:
        """The team's log: its stdout and stderr lines with their ticks, capped (once the
        team is closed; None if its process never started)."""
        if self.output is None:
            return None
        return self.output.team_log(slot=self.slot.team_id, policy_id=self.ref.policy_id, revision=self.ref.id.sha)


def anonymous_rss_mb(pid: int) -> float:
    """Resident anonymous memory of a process (heap, stacks, arrays: not files or shared
    memory), in MB; 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def sandboxed_host(ref: PolicyRef, slot: TeamSlot) -> TeamHost:
    """Host factory for `run_match`: built-ins in the match process, every other policy in a sandbox."""
    if ref.is_builtin:
        return in_process_host(ref, slot)
    return SandboxedTeam(ref, slot)


# `run_match` calls a factory's `prepare` before the game's set-up when the match seats a
# submission: the zygote's imports (about a second) then overlap the map's loading and reset
sandboxed_host.prepare = start_zygote  # type: ignore[attr-defined]


def always_sandboxed_host(ref: PolicyRef, slot: TeamSlot) -> SandboxedTeam:
    """Host factory that sandboxes every team, built-ins included (for the isolation benchmark)."""
    return SandboxedTeam(ref, slot)
