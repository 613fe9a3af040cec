"""The sandbox zygote: one warm process that forks every sandboxed team of a match process.

Starting a team by `python -m ...` costs a second or more of imports (NumPy, nmmo); with 16
teams per match on two cores that is most of a short match. The zygote imports them once,
then forks a child per team on request (the children share those pages, copy-on-write).
A child becomes `matchmaking.sandbox.worker.serve`, which confines itself before loading
any policy: the zygote itself runs only the Arena's code, with an empty environment.

The numerical frameworks (`matchmaking.teams.frameworks`: torch, ONNX Runtime) are preloaded
too, so that a trained team starts in a fork rather than two seconds of imports: before the
first fork whose request asks for them. A zygote that only ever forks scripted teams never
loads them.

Protocol with the match process, over a Unix socket: once its imports are done the zygote
says `{"type": "ready"}`; a request is one JSON line, `{"frameworks": true}` for a team that
may use them, with four file descriptors attached (control in, control out, stdout, stderr: the host reads
the last two apart, so that each line of a team's log says its stream); the zygote answers
`{"type": "started", "pid": N}`, and later `{"type": "exit", "pid": N, "code": C}` for
every child that ends (C negative for a signal, as `subprocess` reports it).
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import socket
import sys

_PR_SET_PDEATHSIG = 1


def _reap(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        sock.sendall(json.dumps({"type": "exit", "pid": pid, "code": os.waitstatus_to_exitcode(status)}).encode() + b"\n")


def main(fd: int) -> int:
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # die with the match process
    sock = socket.socket(fileno=fd)
    # the imports every team needs, done once: children inherit them
    import matchmaking.teams.builtin  # noqa: F401
    import matchmaking.teams.factory  # noqa: F401
    from matchmaking.sandbox.worker import serve
    from matchmaking.teams.frameworks import preload

    preloaded = False  # numpy, torch, onnxruntime, each held to one thread: at the first team needing them
    sock.sendall(json.dumps({"type": "ready"}).encode() + b"\n")

    while True:
        ready, _, _ = select.select([sock], [], [], 0.05)
        _reap(sock)
        if not ready:
            continue
        message, fds, _, _ = socket.recv_fds(sock, 4096, 4)
        if not message:
            return 0  # the match process is gone
        if len(fds) != 4:
            for descriptor in fds:
                os.close(descriptor)
            continue
        if not preloaded and json.loads(message).get("frameworks", True):
            preload()
            preloaded = True
        pid = os.fork()
        if pid == 0:  # the team's process
            sock.close()
            os.setsid()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            ctrl_in, ctrl_out, stdout, stderr = fds
            os.dup2(stdout, 1)
            os.dup2(stderr, 2)
            os.close(stdout)
            os.close(stderr)
            code = 1
            try:
                code = serve(ctrl_in, ctrl_out)
            finally:
                sys.stdout.flush()
                os._exit(code)
        for descriptor in fds:
            os.close(descriptor)
        sock.sendall(json.dumps({"type": "started", "pid": pid}).encode() + b"\n")


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
