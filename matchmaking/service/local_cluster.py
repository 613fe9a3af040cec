"""A real multi-node Ray cluster on one machine: the test suite's and the benchmark's cluster.

`LocalCluster` starts a head and worker nodes as separate `ray start` processes, as an
operator would on separate machines, so what runs on a worker node has only what a real
node has. Each worker node runs in its own **mount and PID namespaces** (`unshare`):

- the machine's `/tmp` (where the Space's data folder and its submission downloads live in
  tests) and the project's checkout are covered by empty tmpfs mounts, so the node sees
  neither the driver's data nor the driver's code: the Arena's code can only arrive as
  Ray ships it (the job's runtime environment), submissions only from the Hub;
- the Python environment (`sys.prefix`) is mounted back read-only, as the requirements a
  real node has installed;
- the node's own temporary folder, cache and home are in its private `/tmp`;
- killing the node (`WorkerNode.kill`) kills every process of its PID namespace at once,
  as when a machine is lost.

The head runs in PID namespace of its own too, so that stopping the cluster leaves nothing.

The head offers no CPU, so every match runs on a worker node. Every node and the driver
authenticate with one token (Ray's token authentication, `RAY_AUTH_MODE=token`).
Needs Linux with `unshare` and either root or unprivileged user namespaces.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from arena import PROJECT_ROOT
from arena.errors import ArenaError

#: Where a worker node keeps everything of its own, inside its private `/tmp`.
NODE_HOME = "/tmp/node"

#: Seconds to wait for a node to join before giving up.
JOIN_TIMEOUT_S = 120.0


class ClusterError(ArenaError, RuntimeError):
    """The local cluster could not start; the message names the node and its log."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _started(log: Path) -> bool:
    """Whether `ray start` says, in its log, that its node runs."""
    return log.is_file() and "Ray runtime started" in log.read_text(errors="replace")


def _unshare() -> list[str]:
    """New mount and PID namespaces for one node (its PID 1 dies with `unshare`)."""
    command = ["unshare", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc"]
    return command if os.geteuid() == 0 else [command[0], "--map-root-user", *command[1:]]


def _ray() -> str:
    """The environment's `ray` command, by the real path the nodes see mounted back."""
    return str(Path(sys.prefix).resolve() / "bin" / "ray")


@dataclass
class WorkerNode:
    """One worker node: its `unshare` process and its namespace's first process."""

    name: str
    process: subprocess.Popen
    log: Path
    node_id: str = ""

    def init_pid(self) -> int:
        """Process id (in this machine's namespace) of the node's PID 1."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
        if not children:
            raise ClusterError(f"worker node {self.name} has no running process (log: {self.log})")
        return int(children[0])

    def path(self, inside: str) -> Path:
        """A path of the node's own filesystem, as this machine reaches it (`/proc/PID/root`)."""
        return Path(f"/proc/{self.init_pid()}/root") / inside.lstrip("/")

    def kill(self) -> None:
        """Lose the node: SIGKILL to its PID 1 takes every process of the namespace with it."""
        self.process.kill()  # `--kill-child`: its PID 1, and with it the whole namespace, goes too
        self.process.wait(timeout=30)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None


@dataclass
class LocalCluster:
    """A head and worker nodes on this machine (see the module docstring).

    Args:
        folder (`Path`): where the nodes' logs go (the driver's side).
        hidden (`list[Path]`): more folders the worker nodes must not see (the machine's
            `/tmp` and the project are always hidden).
    """

    folder: Path
    hidden: list[Path] = field(default_factory=list)
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    workers: list[WorkerNode] = field(default_factory=list)
    _head: subprocess.Popen | None = None
    _head_dir: Path | None = None

    def __post_init__(self) -> None:
        self.folder = Path(self.folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.gcs_port = _free_port()
        self.client_port = _free_port()

    # -- addresses ------------------------------------------------------------------------
    @property
    def address(self) -> str:
        """The head's GCS address (`ray start --address`, `ray.init(address)`)."""
        return f"127.0.0.1:{self.gcs_port}"

    @property
    def client_address(self) -> str:
        """The Ray Client address, as the Space takes it (`NMMO_ARENA_RAY=ray://...`)."""
        return f"ray://127.0.0.1:{self.client_port}"

    def driver_env(self) -> dict[str, str]:
        """What a driver's environment needs to join (the cluster's token)."""
        return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token}

    # -- nodes -----------------------------------------------------------------------------
    def start_head(self) -> LocalCluster:
        self._head_dir = Path(tempfile.mkdtemp(prefix="ray-head-", dir="/tmp"))  # short: socket paths are limited
        log = self.folder / "head.log"
        command = [
            _ray(), "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={self.gcs_port}",
            f"--ray-client-server-port={self.client_port}", "--num-cpus=0", f"--temp-dir={self._head_dir}",
            "--include-dashboard=false", "--disable-usage-stats",
            *self._worker_ports(20000),
        ]
        self._head = subprocess.Popen([*_unshare(), *command], env=self._env(), stdout=log.open("wb"),
                                      stderr=subprocess.STDOUT)
        self._wait(lambda: _started(log) or self._head.poll() is not None, f"the head (log: {log})")
        if self._head.poll() is not None:
            raise ClusterError(f"the head exited while starting; its log: {log}\n{log.read_text()[-2000:]}")
        return self

    def add_worker(self, cpus: int = 1) -> WorkerNode:
        """Start one more worker node with `cpus` CPUs and wait until it has joined."""
        index = len(self.workers)
        name = f"worker{index}"
        log = self.folder / f"{name}.log"
        script = self._namespace_script(name, cpus, 21000 + 1000 * index)
        process = subprocess.Popen([*_unshare(), "bash", "-c", script], env=self._env(), stdout=log.open("wb"),
                                   stderr=subprocess.STDOUT)
        node = WorkerNode(name, process, log)
        self.workers.append(node)
        self._wait(lambda: _started(log) or not node.alive, f"worker node {name} (log: {log})")
        if not node.alive:
            raise ClusterError(f"worker node {name} exited while starting; its log: {log}\n{log.read_text()[-2000:]}")
        node.node_id = self._wait(lambda: self._node_with(name), f"worker node {name} joining the head (log: {log})")
        return node

    def _namespace_script(self, name: str, cpus: int, ports_from: int) -> str:
        """The shell script a worker node's namespace runs: hide, keep, then `ray start`."""
        keep = [Path(sys.prefix).resolve()]
        covered = [Path("/tmp"), PROJECT_ROOT.resolve(), *(Path(p).resolve() for p in self.hidden)]
        lines = ["set -eu", "mount --make-rprivate /", "mount -t tmpfs arena-stage /mnt"]
        for i, path in enumerate(keep):
            lines += [f"mkdir -p /mnt/keep{i}", f"mount --bind {shlex.quote(str(path))} /mnt/keep{i}"]
        for path in covered:  # a folder inside one already covered is hidden with it (and gone from view)
            if path.exists() and not any(other != path and other in path.parents for other in covered):
                lines.append(f"mount -t tmpfs arena-hidden {shlex.quote(str(path))}")
        for i, path in enumerate(keep):
            q = shlex.quote(str(path))
            lines += [f"mkdir -p {q}", f"mount --bind /mnt/keep{i} {q}", f"mount -o remount,bind,ro {q}"]
        resources = json.dumps({name: 1})
        lines += [
            f"mkdir -p {NODE_HOME}/tmp {NODE_HOME}/cache && cd {NODE_HOME}",
            "exec " + shlex.join([
                _ray(), "start", f"--address={self.address}", f"--num-cpus={cpus}", f"--resources={resources}",
                "--node-ip-address=127.0.0.1", f"--temp-dir={NODE_HOME}/ray", "--disable-usage-stats", "--block",
                *self._worker_ports(ports_from),
            ]),
        ]
        return "\n".join(lines)

    @staticmethod
    def _worker_ports(start: int) -> list[str]:
        return [f"--min-worker-port={start}", f"--max-worker-port={start + 999}"]

    def _env(self) -> dict[str, str]:
        """A clean environment for nodes: nothing of the driver's (no PYTHONPATH, no HF_TOKEN)."""
        return {
            "PATH": f"{Path(sys.prefix).resolve() / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": NODE_HOME, "TMPDIR": f"{NODE_HOME}/tmp", "HF_HOME": f"{NODE_HOME}/hf",
            "NMMO_ARENA_NODE_CACHE": f"{NODE_HOME}/cache", "LANG": "C.UTF-8",
            "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token,
            "RAY_USAGE_STATS_ENABLED": "0",
            # Ray runs its workers at nice 15, for a machine of their own whose daemons must
            # stay responsive. These nodes share one machine with the Space and the tests, at
            # nice 0: at 15 a node's matches would stall whenever the machine is busy.
            "RAY_worker_niceness": "0",
        }

    # -- state ----------------------------------------------------------------------------
    def _status(self) -> list[dict]:
        """The cluster's nodes, asked of the head with the `ray` CLI's Python API in a
        subprocess (the driver process may not be connected)."""
        code = (f"import json, ray; ray.init(address={self.address!r}, log_to_driver=False); "
                "print('NODES', json.dumps([{'id': n['NodeID'], 'alive': n['Alive'], 'resources': n['Resources']} "
                "for n in ray.nodes()]))")
        env = {**self._env(), "HOME": str(self.folder), "TMPDIR": "/tmp"}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        # Ray's own log lines may share stdout: only the marked line is the answer
        answer = [line for line in out.stdout.splitlines() if line.startswith("NODES ")]
        return json.loads(answer[-1][len("NODES "):]) if out.returncode == 0 and answer else []

    def _node_with(self, resource: str) -> str:
        """The id of the live node offering `resource` (each worker offers its name), or ""."""
        return next((n["id"] for n in self._status() if n["alive"] and resource in n["resources"]), "")

    def _wait(self, ready, what: str):
        """`ready()`'s first truthy value, asked every half second."""
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        while time.monotonic() < deadline:
            value = ready()
            if value:
                return value
            time.sleep(0.5)
        raise ClusterError(f"{what} did not come up within {JOIN_TIMEOUT_S:.0f} s")

    def stop(self) -> None:
        """Stop every node (workers first); safe to call twice."""
        for node in self.workers:
            if node.alive:
                node.kill()
        if self._head is not None and self._head.poll() is None:
            self._head.kill()  # its namespace's processes go with it
            self._head.wait(timeout=30)
        if self._head_dir is not None:  # its logs are kept beside the nodes' (a failed test's only witness)
            logs = self._head_dir / "session_latest" / "logs"
            if logs.is_dir():
                shutil.copytree(logs, self.folder / "head-logs", dirs_exist_ok=True, ignore_dangling_symlinks=True)
            shutil.rmtree(self._head_dir, ignore_errors=True)

    def __enter__(self) -> LocalCluster:
        return self.start_head()

    def __exit__(self, *exc) -> None:
        self.stop()
