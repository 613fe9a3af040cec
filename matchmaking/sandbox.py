"""How a policy is isolated: one OS process per submitted team, confined and watched.

A `SandboxedTeam` starts `matchmaking.sandbox_worker` in its own process with an empty
environment (no `HF_TOKEN`, no secret of the Space) and a private working folder; the
worker confines itself before it loads the policy (`matchmaking.confine`: one CPU, a
memory limit, no network, no new processes, and Landlock rules that let it read only the
Python installation, the Arena's code and its own policy and write only its folder).
Observations reach it through shared memory; its answers come back as JSON over a pipe;
its own output is drained and only its tail kept.

Whatever the team does (raise, hang, sleep, exhaust memory, exit, fork, flood its output,
return garbage) ends as a `Fault` of a closed set of kinds, the team's agents idle, and
the match goes on. A team that stops answering or keeps timing out is stopped for the
rest of the match. Nothing the team sends is unpickled in the match process.

Each mechanism depends on the kernel; the worker reports which ones it applied and the
README's "Isolation" section says what is lost where one is missing. Whatever the kernel,
the Space's `/proc` entries are made unreadable to its children (`protect_process`).
"""

from __future__ import annotations

import collections
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from multiprocessing import shared_memory
from pathlib import Path
from typing import Any, Mapping

from matchmaking.config import PROJECT_ROOT, MatchConfig
from matchmaking.policy import PolicyRef
from matchmaking.records import Fault, FaultKind
from matchmaking.sandbox_protocol import ProtocolError, from_json_safe, receive_message, send_message
from matchmaking.teams import Answer, TeamSlot, over_budget

_PR_SET_DUMPABLE = 4



def protect_process() -> None:
    """Make this process's `/proc` entries (environ, memory) unreadable to its children.

    Call once in the Space's process before starting sandboxes: without it, a team running
    as the same user could read `/proc/<parent>/environ` and find `HF_TOKEN` there.
    """
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    except OSError:  # not Linux: nothing to do
        pass


class _OutputTail(threading.Thread):
    """Reads a process's output to the end, keeping only the last `keep` characters."""

    def __init__(self, pipe, keep: int):
        super().__init__(daemon=True, name="sandbox-output")
        self.pipe, self.keep = pipe, keep
        self.buffer: collections.deque[str] = collections.deque()
        self.size = 0

    def run(self) -> None:
        for chunk in iter(lambda: self.pipe.read1(65536), b""):
            self.buffer.append(chunk.decode(errors="replace"))
            self.size += len(self.buffer[-1])
            while self.size > self.keep and len(self.buffer) > 1:
                self.size -= len(self.buffer.popleft())

    def text(self) -> str:
        return "".join(self.buffer)[-self.keep:].strip()


class SandboxedTeam:
    """A team in its own confined process, behind the runner's `TeamHost` protocol."""

    def __init__(self, ref: PolicyRef, slot: TeamSlot):
        self.ref = ref
        self.slot = slot
        self.config: MatchConfig = slot.config
        self.process: subprocess.Popen | None = None
        self.shm: shared_memory.SharedMemory | None = None
        self.views: list[list[Any]] = []
        self.workdir: Path | None = None
        self.output: _OutputTail | None = None
        self.confinement: dict[str, str] = {}
        self.stopped = ""  # why the team was stopped, once it is
        self._pending: int | None = None  # tick of an unanswered request
        self._sent_at = 0.0
        self._busy_fault: Fault | None = None
        self._crash_fault: Fault | None = None
        self._waited_timeouts = 0

    # -- lifecycle -----------------------------------------------------------------------
    def launch(self) -> None:
        """Start the process and send its instructions, without waiting for it to be ready
        (the runner launches every sandbox first, so that they import in parallel)."""
        if self.process is not None:
            return
        layout = self.slot.layout
        self.shm = shared_memory.SharedMemory(create=True, size=layout.total_bytes)
        self.views = layout.views(self.shm.buf)
        self.workdir = Path(tempfile.mkdtemp(prefix=f"arena-team{self.slot.team_id}-"))
        limits = {
            "cpu_index": self.slot.team_id,
            "max_file_mb": self.config.max_file_mb,
            "max_processes": self.config.max_processes,
            "memory_limit_mb": self.config.memory_limit_mb,
            # a backstop far above the per-step budget: a team that spins forever dies
            "cpu_seconds": int(self.config.init_timeout_s + self.config.horizon * self.config.step_timeout_s * 2 + 10),
            "workdir": str(self.workdir),
        }

        child_in, parent_out = os.pipe()
        parent_in, child_out = os.pipe()
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.workdir),
            "TMPDIR": str(self.workdir),
            "LANG": "C.UTF-8",
            "PYTHONPATH": str(PROJECT_ROOT),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
            "PYTHONUNBUFFERED": "1",
            # one thread each: the team has one core, and thread pools would count as processes
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "matchmaking.sandbox_worker", str(child_in), str(child_out)],
                env=env,
                cwd=str(self.workdir),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=(child_in, child_out),
                start_new_session=True,
            )
        finally:
            os.close(child_in)
            os.close(child_out)
        self._in, self._out = parent_in, parent_out
        self.output = _OutputTail(self.process.stdout, self.config.output_tail_chars)
        self.output.start()
        send_message(
            self._out,
            {
                "type": "init",
                "shm": self.shm.name.lstrip("/"),
                "layout": layout.to_dict(),
                "limits": limits,
                "message_chars": self.config.fault_message_chars,
                "policy_id": self.ref.policy_id,
                "revision": self.ref.revision,
                "policy_path": None if self.ref.path is None else str(self.ref.path),
                "team_id": self.slot.team_id,
                "env_config": self.slot.env_config,
            },
        )

    def start(self) -> Fault | None:
        self.launch()
        limit = self.config.fault_message_chars
        try:
            reply = receive_message(self._in, timeout=self.config.init_timeout_s)
        except ProtocolError:
            reply = {"type": "init_error", "kind": "INIT", "message": self._exit_description("while starting")}
        if reply is None:
            self._stop(f"not ready within {self.config.init_timeout_s:.0f} s")
            return Fault(0, FaultKind.INIT, f"the team was not ready within {self.config.init_timeout_s:.0f} s (import and Team() took too long)")
        if reply.get("type") != "ready":
            self._stop("failed to start")
            kind = FaultKind.MEMORY if reply.get("kind") == "MEMORY" else FaultKind.INIT
            return Fault(0, kind, str(reply.get("message", "failed to start"))[:limit])
        self.confinement = dict(reply.get("confinement", {}))
        return None

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None and not self.stopped:
            try:
                send_message(self._out, {"type": "close"})
                self.process.wait(timeout=0.5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill()
        for fd in (getattr(self, "_in", None), getattr(self, "_out", None)):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._in = self._out = None
        if self.shm is not None:
            self.views = []
            self.shm.close()
            self.shm.unlink()
            self.shm = None
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    # -- one tick ------------------------------------------------------------------------
    def request(self, tick: int, observations: Mapping[int, Mapping[str, Any]]) -> None:
        self._busy_fault = None
        if self.stopped or self.process is None:
            return
        if self._pending is not None:  # still working on an earlier tick: do not pile up
            try:
                stale = receive_message(self._in, timeout=0)
            except ProtocolError:
                self._crashed(tick)
                return
            if stale is None:
                busy_for = time.monotonic() - self._sent_at
                if busy_for > self.config.hang_timeout_s:
                    self._stop("hangs")
                    self._busy_fault = Fault(
                        tick, FaultKind.TIMEOUT,
                        f"no answer to tick {self._pending} for {busy_for:.0f} s: stopped for the rest of the match",
                    )
                else:
                    self._busy_fault = Fault(tick, FaultKind.TIMEOUT, f"still busy with tick {self._pending} ({busy_for:.1f} s)")
                return
            self._pending = None
        layout = self.slot.layout
        for member, observation in observations.items():
            layout.write(self.views[member], observation)
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
        if self._busy_fault is not None:
            return Answer(fault=self._busy_fault)
        if self.stopped or self._pending is None:
            return Answer(actions={})
        tick = self._pending
        wall_limit = self.config.step_wall_timeout_s
        try:
            reply = receive_message(self._in, timeout=max(0.0, self._sent_at + wall_limit - time.monotonic()))
        except ProtocolError as exc:
            if self.process is not None and self.process.poll() is None:  # alive but talking nonsense
                self._stop(f"broke the protocol ({exc})")
                return Answer(fault=Fault(tick, FaultKind.INVALID, f"the team process sent a bad message ({exc}) and was stopped"))
            self._crashed(tick)
            return self.answer()
        if reply is None:
            return Answer(fault=self._timeout(tick, f"no answer within {wall_limit:.2f} s"))
        self._pending = None
        if reply.get("tick") != tick:
            return Answer(fault=Fault(tick, FaultKind.INVALID, "the team process answered the wrong tick"))
        over = over_budget(float(reply.get("wall_s", 0)), float(reply.get("cpu_s", 0)), self.config)
        if reply.get("type") == "error":
            kind = reply.get("kind", "ERROR")
            kind = FaultKind(kind) if kind in ("ERROR", "INVALID", "MEMORY") else FaultKind.ERROR
            return Answer(fault=Fault(tick, kind, str(reply.get("message", ""))[: self.config.fault_message_chars]))
        if over:
            return Answer(fault=self._timeout(tick, over, answered=True))
        return Answer(actions=from_json_safe(reply.get("actions")))

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

    def _crashed(self, tick: int) -> None:
        how = self._exit_description(f"at tick {tick}")
        self._stop("process ended")
        kind = FaultKind.MEMORY if "MemoryError" in how else FaultKind.CRASH
        self._crash_fault = Fault(tick, kind, how[: self.config.fault_message_chars])

    def _exit_description(self, when: str) -> str:
        code = None
        if self.process is not None:
            try:
                code = self.process.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                code = None
        if code is None:
            what = "the team process stopped answering"
        elif code < 0:
            what = f"the team process was killed by {signal.Signals(-code).name}"
        else:
            what = f"the team process exited with code {code}"
        tail = self.output.text() if self.output else ""
        if self.output:
            self.output.join(timeout=0.5)
            tail = self.output.text()
        return f"{what} {when}" + (f"; its last output: {tail[-300:]}" if tail else "")

    def _stop(self, why: str) -> None:
        self.stopped = why
        self._pending = None
        self._kill()

    def _kill(self) -> None:
        """Kill the team process and its process group (it cannot fork: see `confine`)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        if self.output is not None:
            self.output.join(timeout=1.0)


def sandboxed_host(ref: PolicyRef, slot: TeamSlot):
    """Host factory for `run_match`: built-ins in the match process, every other policy in a
    sandbox."""
    if ref.is_builtin:
        from matchmaking.match import in_process_host

        return in_process_host(ref, slot)
    return SandboxedTeam(ref, slot)


def always_sandboxed_host(ref: PolicyRef, slot: TeamSlot) -> SandboxedTeam:
    """Host factory that sandboxes every team, built-ins included (for the isolation benchmark)."""
    return SandboxedTeam(ref, slot)
