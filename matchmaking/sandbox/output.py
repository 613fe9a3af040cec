"""A sandboxed team's stdout and stderr, drained for the whole match and stamped by tick.

The team's process writes its two streams into two pipes (the zygote wires them); an
`OutputCapture` thread in the match process reads both continuously, so a team that
floods its output never blocks on a full pipe and never slows the match: every byte is
read, counted, and only what `arena.logs.BoundedLog` keeps is stored.

Ticks come from the host, which knows which tick it last asked the team: `at_tick(t)` is
called just before the host sends the request for tick `t`. It first reads whatever is
already in the pipes and gives it to the previous tick, so that a line the team printed
while deciding tick `t - 1` (written into the pipe before its answer, which the host has
read) is never stamped `t`, however the reading thread was scheduled.
"""

from __future__ import annotations

import fcntl
import os
import select
import threading

from arena.logs import BoundedLog, TeamLog

#: How much each pipe holds, and how much is read at a time. Linux's default pipe holds
#: 64 KiB: a team printing a megabyte a tick then waits for the reader sixteen times a
#: tick, and the reader each time for the match's own thread to let go of the GIL (up to
#: 5 ms): a flood made a 256-tick match 1.47x slower. 512 KiB takes a megabyte in two
#: reads and keeps two matches of 16 teams (64 pipes, 32 MiB) under Linux's default
#: per-user pipe budget (`/proc/sys/fs/pipe-user-pages-soft`, 64 MiB); past it the kernel
#: refuses, and the pipe keeps its default size.
PIPE_BYTES = 1 << 19
CHUNK = PIPE_BYTES

_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)

#: Most bytes `at_tick` reads before it gives up on emptying a pipe that a team's own
#: threads keep filling (what it leaves is read by the thread, stamped with the new tick).
SETTLE_LIMIT = 1 << 20


class OutputCapture(threading.Thread):
    """Reads a team process's stdout and stderr pipes to their end into a `BoundedLog`.

    Args:
        stdout (`int`), stderr (`int`): the read ends of the two pipes (owned: closed at the end).
    """

    def __init__(self, stdout: int, stderr: int, *, log: BoundedLog | None = None):
        super().__init__(daemon=True, name="sandbox-output")
        self.log = log or BoundedLog()
        self.tick = 0
        self._streams = {stdout: "stdout", stderr: "stderr"}
        for fd in self._streams:
            os.set_blocking(fd, False)
            try:
                fcntl.fcntl(fd, _F_SETPIPE_SZ, PIPE_BYTES)
            except OSError:  # a smaller limit on this machine: the default pipe still works, only slower to flood
                pass
        self._lock = threading.Lock()

    def run(self) -> None:
        while True:
            with self._lock:
                open_fds = list(self._streams)
            if not open_fds:
                return
            try:
                ready, _, _ = select.select(open_fds, [], [], 0.5)
            except (OSError, ValueError):  # closed under us by `close`
                return
            with self._lock:
                for fd in ready:
                    if fd in self._streams:
                        self._read(fd)

    def _read(self, fd: int) -> int:
        """Read one chunk of `fd` into the log (lock held); bytes read, -1 at the end."""
        try:
            data = os.read(fd, CHUNK)
        except BlockingIOError:
            return 0
        except OSError:
            data = b""
        if not data:
            os.close(fd)
            del self._streams[fd]
            return -1
        self.log.feed(self._streams[fd], self.tick, data)
        return len(data)

    def at_tick(self, tick: int) -> None:
        """From now on, output belongs to `tick`; what was written before belongs to the
        tick before."""
        with self._lock:
            for fd in list(self._streams):
                taken = 0
                while taken < SETTLE_LIMIT:
                    got = self._read(fd)
                    if got <= 0:
                        break
                    taken += got
            self.tick = tick

    def finish(self, timeout: float) -> None:
        """Wait (up to `timeout` s) for the pipes to reach their end, once the process is
        gone; then stop reading whatever is left."""
        self.join(timeout=timeout)
        with self._lock:
            for fd in list(self._streams):
                while self._read(fd) > 0:
                    pass
            for fd in list(self._streams):
                os.close(fd)
            self._streams.clear()

    def text(self, chars: int) -> str:
        """The last `chars` characters written, for a crash's reason."""
        with self._lock:
            return self.log.last_text(chars)

    def team_log(self, *, slot: int, policy_id: str, revision: str) -> TeamLog:
        with self._lock:
            return self.log.close(slot=slot, policy_id=policy_id, revision=revision)
