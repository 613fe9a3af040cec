"""Does the sandbox hold on this machine? A self-test before any submitted code runs.

The sandbox (`matchmaking.sandbox.confine`) applies what the kernel offers, and a host we
do not control may offer little: no Landlock, no namespaces, no root. So before the first
submitted team runs, the Arena starts a probe team (`matchmaking.sandbox.probe`) in a real
sandboxed process, exactly as a submission would run, and lets it try to escape through
libc: read and write outside its folder, open TCP, UDP and raw sockets, reach an abstract
unix socket, signal its parent, fork. The host watches from outside too (files created,
connections accepted). Each mechanism is then held or missing, with the reason.

`NMMO_ARENA_ISOLATION` decides what follows: `strict` (the Space's default) runs no
submitted code while file or network isolation is missing; `warn` runs it anyway, under a
red banner. `python -m matchmaking.isolation` is the doctor: it prints the table and exits
0 only when every mechanism holds.

Usage::

    python -m matchmaking.isolation [--json]
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from arena import PROJECT_ROOT
from arena.errors import ArenaError, SandboxError
from arena.records import Format, Record
from arena.settings import ISOLATION_MODES

#: The two modes of `NMMO_ARENA_ISOLATION`, read and checked by `arena.settings` (the
#: Space's `ArenaSettings.isolation`, a command's `ArenaSettings.read("isolation")`): every
#: function here takes the mode as read.
MODES = ISOLATION_MODES
STRICT, WARN = MODES

#: Each probe, what it tries, and the mechanism it tests.
PROBES: dict[str, tuple[str, str]] = {
    "read": ("read a file outside its folder", "files"),
    "write": ("create a file outside its folder", "files"),
    "tcp": ("connect over TCP to the host", "network"),
    "udp": ("send UDP to the host", "network"),
    "raw": ("open a raw socket", "network"),
    "abstract_unix": ("reach the host's abstract unix socket", "network"),
    "signal": ("signal its parent", "signals"),
    "fork": ("start a process", "processes"),
}
MECHANISMS = ("files", "network", "signals", "processes")
#: Without these, `strict` runs no submitted code: they keep a team from the Space's state
#: (DATA: the history, the held-out maps' secret) and from the network.
REQUIRED = ("files", "network")

#: What the confinement report says about each mechanism (`confine.confine`'s keys).
_APPLIED = {"files": ("files", "user"), "network": ("network",), "signals": ("signals", "user"), "processes": ("processes",)}

#: What `IsolationReport.advice` ends with: the way out when the host cannot be fixed.
ANYWAY = ("To run submissions anyway, set NMMO_ARENA_ISOLATION=warn: what a policy says then reaches only the "
          "operator's log (docs/isolation.md).")


class IsolationError(ArenaError):
    """Submitted code was not run: this machine cannot isolate it and the mode is `strict`."""


@dataclass(frozen=True)
class ProbeResult:
    """One escape attempt: did it get out, and what happened."""

    probe: str
    escaped: bool
    detail: str

    FORMAT = Format(layout=("probe", "tries", "escaped", "detail"))

    @property
    def tries(self) -> str:
        """What the probe tries, in words."""
        return PROBES[self.probe][0]

    @property
    def mechanism(self) -> str:
        return PROBES[self.probe][1]


@dataclass(frozen=True)
class Mechanism:
    """One mechanism's verdict: held when every probe of it failed to escape."""

    name: str
    held: bool
    why: str


@dataclass(frozen=True)
class IsolationReport(Record):
    """The self-test's findings on one machine, and what the mode makes of them.

    Its dict (`python -m matchmaking.isolation --json`, the Space's API) adds the verdicts
    to the findings; read back (`check`), the verdicts are made again from the findings.
    """

    mode: str
    probes: tuple[ProbeResult, ...] = ()
    confinement: Mapping[str, str] = field(default_factory=dict)
    host: Mapping[str, Any] = field(default_factory=dict)
    error: str = ""
    """Why the probe could not run at all (then every mechanism counts as missing)."""
    checked_at: float = field(default_factory=time.time)

    FORMAT = Format(layout=("mode", "holds", "refuses", "missing", "verdicts", "probes", "confinement", "host", "error",
                            "checked_at", "line"), keys={"refuses": "refuses_submitted_code", "verdicts": "mechanisms"})

    # -- verdicts ------------------------------------------------------------------------
    def mechanisms(self) -> list[Mechanism]:
        verdicts = []
        for name in MECHANISMS:
            tried = [p for p in self.probes if p.mechanism == name]
            if self.error or not tried:
                verdicts.append(Mechanism(name, False, f"not tested: {self.error or 'no probe ran'}"))
                continue
            escaped = [p for p in tried if p.escaped]
            applied = "; ".join(f"{k}: {self.confinement[k]}" for k in _APPLIED[name] if k in self.confinement)
            if escaped:
                why = "; ".join(f"{PROBES[p.probe][0]}: {p.detail}" for p in escaped)
            else:
                why = "; ".join(f"{p.probe}: {p.detail}" for p in tried)
            verdicts.append(Mechanism(name, not escaped, f"{why} [{applied}]" if applied else why))
        return verdicts

    @property
    def verdicts(self) -> dict[str, dict[str, Any]]:
        """Each mechanism's verdict by its name: held, and why."""
        return {m.name: {"held": m.held, "why": m.why} for m in self.mechanisms()}

    @property
    def missing(self) -> list[str]:
        return [m.name for m in self.mechanisms() if not m.held]

    @property
    def holds(self) -> bool:
        """Every mechanism held."""
        return not self.missing

    @property
    def exposed(self) -> bool:
        """Files or network missing: a submitted team could read the Space's files or reach
        out, so what it says is the operator's alone (`arena.untrusted`)."""
        return any(name in self.missing for name in REQUIRED)

    @property
    def refuses(self) -> bool:
        """Whether submitted code must not run: `strict`, and files or network missing."""
        return self.mode == STRICT and self.exposed

    def advice(self) -> str:
        """What would make the missing mechanisms hold on this host, from what the self-test
        found here (its user, kernel and what the sandbox applied), then `ANYWAY`."""
        if not self.missing:
            return ""
        host, applied = self.host, self.confinement
        steps = []
        if self.error:
            steps.append(f"Make the probe team run ({self.error}): `python -m matchmaking.isolation` shows the same.")
        if host.get("uid") != 0:
            steps.append(f"Run the Space as root (it runs as uid {host.get('uid', '?')}): each team then runs as a user "
                         "of its own, to whom the Space's files are closed.")
        elif host.get("python_closed"):
            steps.append(f"This Space runs as root, but its teams cannot run as users of their own: {host['python_closed']} is closed to "
                         "other users, and a team's own user could not import Python from there. Make the Python "
                         "installation and its packages readable by others (chmod o+rX on that path and the folders "
                         "above it), or install them outside a private home folder.")
        if "files" in self.missing and not host.get("landlock_abi"):
            steps.append(f"Or run on a kernel with Landlock (Linux 5.13+; it runs {host.get('kernel', '?')}, which offers "
                         "none or has it disabled), so that each team may read only what it needs.")
        if "network" in self.missing and "namespace" not in applied.get("network", ""):
            steps.append("Run under a container runtime that allows unshare() (a network namespace of its own for each "
                         "team), or on Linux 6.7+ where Landlock also refuses TCP.")
        if not steps:
            steps.append("`python -m matchmaking.isolation` prints each probe and why it escaped.")
        return " ".join([*steps, ANYWAY])


    def reason(self) -> str:
        """Why submitted code waits (for a status reason), or "" if it may run."""
        if not self.refuses:
            return ""
        missing = ", ".join(n for n in self.missing if n in REQUIRED)
        return (f"Waiting: this Space cannot isolate submitted code (missing: {missing} isolation; "
                f"NMMO_ARENA_ISOLATION=strict), so no submission runs here until the operator fixes the host. {self.advice()}")

    # -- words ---------------------------------------------------------------------------
    def line(self) -> str:
        """One line for the operator and the log: every mechanism's verdict, and what follows."""
        verdicts = ", ".join(f"{m.name} {'held' if m.held else 'MISSING'}" for m in self.mechanisms())
        if self.holds:
            return f"Isolation holds ({verdicts}; self-test of a sandboxed probe team)."
        if self.refuses:
            then = "no submitted code runs here (NMMO_ARENA_ISOLATION=strict)"
        elif self.mode == STRICT:
            then = "submitted code runs: files and network hold"
        else:
            then = "submitted code runs anyway (NMMO_ARENA_ISOLATION=warn)"
        return f"Isolation MISSING ({verdicts}): {then}. `python -m matchmaking.isolation` prints why."

    def table(self) -> str:
        """The doctor's table: each probe, then each mechanism."""
        host = self.host
        lines = [f"Host: {host.get('machine', '?')}, Linux {host.get('kernel', '?')}, uid {host.get('uid', '?')}, "
                 f"Landlock ABI {host.get('landlock_abi', '?')}; mode {self.mode}", ""]
        if self.error:
            lines += [f"The probe team could not run: {self.error}", ""]
        lines.append(f"{'probe':<40}{'result':<10}detail")
        for p in self.probes:
            lines.append(f"{PROBES[p.probe][0]:<40}{'ESCAPED' if p.escaped else 'stopped':<10}{p.detail}")
        lines += ["", f"{'mechanism':<12}{'verdict':<10}why"]
        for m in self.mechanisms():
            lines.append(f"{m.name:<12}{'held' if m.held else 'MISSING':<10}{m.why}")
        lines += ["", self.line()]
        if self.missing:
            lines.append(self.advice())
        return "\n".join(lines)


def _host_facts() -> dict[str, Any]:
    from matchmaking.sandbox.confine import closed_to_others, landlock_abi, python_paths

    return {"machine": platform.machine(), "kernel": platform.release(), "uid": os.getuid(), "landlock_abi": landlock_abi(),
            "python": platform.python_version(), "python_closed": closed_to_others(python_paths())}


# -- the self-test, in this process ------------------------------------------------------
class _Listeners:
    """The host's side of the network probes: what arrived is evidence."""

    def __init__(self) -> None:
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.unix_name = f"nmmo-arena-probe-{secrets.token_hex(6)}"
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind("\0" + self.unix_name)
        self.unix.listen(4)
        for s in (self.tcp, self.udp, self.unix):
            s.setblocking(False)

    def arrived(self) -> dict[str, bool]:
        seen = {}
        for name, sock in (("tcp", self.tcp), ("abstract_unix", self.unix)):
            try:
                conn, _ = sock.accept()
                conn.close()
                seen[name] = True
            except OSError:
                seen[name] = False
        try:
            seen["udp"] = bool(self.udp.recv(64))
        except OSError:
            seen["udp"] = False
        return seen

    def close(self) -> None:
        for s in (self.tcp, self.udp, self.unix):
            s.close()


def self_test(mode: str = STRICT, *, timeout_s: float = 60.0) -> IsolationReport:
    """Run the probe team in a sandbox on this machine, now; its report.

    The read target stands for `DATA`: a file in a folder only this process's user may
    enter (the Arena keeps `DATA` at 0700).
    """
    facts = _host_facts()
    token = secrets.token_hex(16)
    listeners = _Listeners()
    with tempfile.TemporaryDirectory(prefix="nmmo-arena-isolation-") as tmp:
        root = Path(tmp)
        space = root / "space"
        space.mkdir(mode=0o700)
        (space / "secret.txt").write_text(token)
        shared = Path(tempfile.gettempdir()) / f"nmmo-arena-escape-{token}"  # world-writable /tmp
        targets = {
            "read": str(space / "secret.txt"),
            "token": token,
            "write": [str(space / "escaped.txt"), str(shared)],
            "tcp_port": listeners.tcp.getsockname()[1],
            "udp_port": listeners.udp.getsockname()[1],
            "unix_name": listeners.unix_name,
            "host_pid": os.getpid(),
        }
        folder = root / "probe"
        folder.mkdir(mode=0o755)
        shutil.copyfile(Path(__file__).parent / "probe.py", folder / "policy.py")
        (folder / "targets.json").write_text(json.dumps(targets))
        for path in (folder / "policy.py", folder / "targets.json"):
            path.chmod(0o644)
        try:
            confinement, said, error = _run_probe(folder, timeout_s=timeout_s)
            arrived = listeners.arrived()
            created = {p: Path(p).exists() for p in targets["write"]}
        finally:
            listeners.close()
            shared.unlink(missing_ok=True)
    if error:
        return IsolationReport(mode, confinement=confinement, host=facts, error=error)
    probes = []
    for name in PROBES:
        reported = next((r for r in said if r.get("probe") == name), None)
        if reported is None:
            probes.append(ProbeResult(name, True, "the probe did not report this attempt: counted as escaped"))
            continue
        escaped, detail = bool(reported.get("escaped")), str(reported.get("detail", ""))[:300]
        if name in arrived and arrived[name] and not escaped:
            escaped, detail = True, f"the host received it (the probe said: {detail})"
        if name == "write" and any(created.values()) and not escaped:
            escaped, detail = True, "a file appeared outside its folder (the probe said: " + detail + ")"
        probes.append(ProbeResult(name, escaped, detail))
    return IsolationReport(mode, tuple(probes), confinement, facts)


def _run_probe(folder: Path, *, timeout_s: float) -> tuple[dict[str, str], list[dict], str]:
    """Play one turn of the probe team in a sandbox: (what the sandbox applied, what the
    probe reported, why it could not run or "")."""
    from arena.policies import PolicyRef
    from arena.revision import Revision
    from matchmaking.engine.config import MatchConfig
    from matchmaking.engine.hosting import TeamSlot
    from matchmaking.engine.observations import ObservationLayout
    from matchmaking.sandbox.host import SandboxedTeam
    from matchmaking.sandbox.probe import MARKER

    config = MatchConfig(num_teams=1, team_size=1, horizon=2, step_timeout_s=timeout_s, time_bank_s=0.0,
                         hang_timeout_s=timeout_s, init_timeout_s=timeout_s, cache_dir=None)
    sample = {"CurrentTick": np.zeros((), dtype=np.int64)}
    slot = TeamSlot(0, {}, config, ObservationLayout.from_observation(sample, 1))
    team = SandboxedTeam(PolicyRef(Revision("isolation-probe", "self-test"), path=folder), slot, frameworks=False)  # it needs none
    try:
        fault = team.start()
        if fault is not None:
            return team.confinement, [], f"{fault.kind.value}: {fault.message}"
        team.request(1, {0: sample})
        answer = team.answer()
        if answer.fault is not None:
            return team.confinement, [], f"{answer.fault.kind.value}: {answer.fault.message}"
    finally:
        team.close()
    log = team.output_log()
    text = "\n".join(line.text for line in log.lines) if log is not None else ""
    for line in text.splitlines():
        if line.startswith(MARKER):
            return team.confinement, json.loads(line[len(MARKER):]), ""
    return team.confinement, [], f"the probe printed no report (its output: {text[-300:]!r})"


# -- the self-test, in a child process ---------------------------------------------------
_verdicts: dict[str, IsolationReport] = {}
_verdict_lock = threading.Lock()


def check(mode: str, *, timeout_s: float = 120.0) -> IsolationReport:
    """The self-test's report for this machine, run once per process and mode in a child
    process (`python -m matchmaking.isolation --json`), so that the caller keeps no sandbox
    zygote and the probe never shares its process. Never raises: a self-test that cannot
    run is a report whose every mechanism is missing."""
    with _verdict_lock:
        if mode in _verdicts:
            return _verdicts[mode]
        # the mode travels as its variable: the child reads it back as every command does (`ArenaSettings.read`)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(PROJECT_ROOT), "LANG": "C.UTF-8",
               "NMMO_ARENA_ISOLATION": mode, "HOME": tempfile.gettempdir()}
        try:
            done = subprocess.run([sys.executable, "-m", "matchmaking.isolation", "--json"], env=env, cwd=PROJECT_ROOT,
                                  capture_output=True, text=True, timeout=timeout_s)
            lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
            if not lines:
                raise SandboxError(f"exit code {done.returncode}: {done.stderr.strip()[-500:]}")
            report = IsolationReport.from_dict(json.loads(lines[-1]))
        except Exception as exc:  # noqa: BLE001 - fail closed: an untested machine isolates nothing
            report = IsolationReport(mode, host=_host_facts(), error=f"the self-test failed: {type(exc).__name__}: {exc}")
        _verdicts[mode] = report
        return report


def require(mode: str, *, where: str = "this machine") -> IsolationReport:
    """`check`, and raise if `mode` forbids running submitted code here (a Ray node calls
    this before it plays a match that seats a submission).

    Raises:
        `IsolationError`: with the missing mechanisms and what to do.
    """
    report = check(mode)
    if report.refuses:
        raise IsolationError(f"{where}: {report.line()} {report.advice()}")
    return report


class IsolationGate:
    """The matchmaker's question before it runs a revision: may this code run here?

    Until the self-test has finished nothing submitted runs; then, under `strict` with
    files or network missing, only the Arena's own packaged built-in teams do
    (`matchmaking.teams.builtin.is_packaged`): their code is the Arena's, so nothing untrusted runs.
    """

    def __init__(self, mode: str, *, checker: Callable[[str], IsolationReport] = check) -> None:
        self.mode = mode
        self.checker = checker
        self.report: IsolationReport | None = None
        self.done = threading.Event()

    def run(self) -> IsolationReport:
        self.report = self.checker(self.mode)
        self.done.set()
        return self.report

    def reason(self) -> str:
        """Why submitted code may not run now, or ""."""
        if self.report is None:
            return "Waiting for the isolation self-test, which runs before any submitted code."
        return self.report.reason()

    def may_run(self, path: Path | None) -> bool:
        """Whether the policy in `path` may run (None: a built-in, run by the Arena itself)."""
        from matchmaking.teams.builtin import is_packaged

        return path is None or not self.reason() or is_packaged(path)

    def withholds(self) -> bool:
        """Whether what submitted teams say must reach the operator alone (the self-test has
        not finished, or found files or network open: `IsolationReport.exposed`)."""
        return self.report is None or self.report.exposed

    def line(self) -> str:
        return "Isolation: the self-test is running." if self.report is None else self.report.line()
