"""Isolation holds or refuses: the self-test, the doctor, and what `strict` and `warn` do.

Every host kind is simulated on this machine: an ordinary user (`tests_support.unprivileged`,
as a Space runs), and a weak kernel (`matchmaking.sandbox.weak_kernel`: no Landlock and no
namespaces, as under a container runtime's default seccomp profile on an older kernel).
The probe team's attempts go through libc, past anything Python could refuse.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from arena import PROJECT_ROOT
from matchmaking.sandbox.isolation import ANYWAY, PROBES, STRICT, WARN, IsolationGate, IsolationReport, ProbeResult
from tests_support import EXAMPLES, POLICIES, open_interpreter, unprivileged

PY = sys.executable
WEAK = [PY, "-m", "matchmaking.sandbox.weak_kernel"]

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="simulating other hosts needs root (setpriv, unshare)")


@pytest.fixture
def tmp_path():
    """A folder an ordinary user can use too (pytest's own sit in a 0700 folder of root's)."""
    folder = Path(tempfile.mkdtemp(prefix="nmmo-arena-isolation-test-"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def run(command: list[str], tmp_path, **env: str) -> subprocess.CompletedProcess:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    home.chmod(0o777)
    environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
               "PYTHONPATH": f"{PROJECT_ROOT}{os.pathsep}{PROJECT_ROOT / 'tests'}", **env}
    return subprocess.run(command, cwd=PROJECT_ROOT, env=environ, capture_output=True, text=True, timeout=600)


def doctor(tmp_path, *, user: bool, weak: list[str] | None, open_python: bool = False) -> tuple[int, dict, str]:
    command = [PY, "-m", "matchmaking.isolation", "--json"]
    if weak is not None:
        command = [*WEAK, *weak, "--", *command]
    if user:
        command = unprivileged(command)
    elif open_python:
        command = open_interpreter(command)
    done = run(command, tmp_path)
    assert done.stdout.strip(), done.stderr
    return done.returncode, json.loads(done.stdout.splitlines()[-1]), done.stderr


def held(report: dict) -> dict[str, bool]:
    return {name: m["held"] for name, m in report["mechanisms"].items()}


ALL = {"files": True, "network": True, "signals": True, "processes": True}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("host", "user", "weak", "open_python", "expected"),
    [
        ("full kernel, root", False, None, False, ALL),
        ("full kernel, ordinary user", True, None, False, ALL),
        # the probe reads the Space's user's own files: nothing but Landlock or a mount
        # namespace can stop that, and this host has neither
        ("no Landlock, no namespaces, ordinary user", True, [], False, {**ALL, "files": False}),
        ("no namespaces (Landlock kept), ordinary user", True, ["--keep-landlock"], False, ALL),
        ("no Landlock (namespaces kept), ordinary user", True, ["--keep-namespaces"], False, {**ALL, "files": False}),
        # as root, teams become their own users: no Landlock needed for files
        ("no Landlock, no namespaces, root, Python open to all users", False, [], True, ALL),
    ],
)
def test_the_doctor_reports_each_mechanism_on_each_kind_of_host(tmp_path, host, user, weak, open_python, expected):
    code, report, _ = doctor(tmp_path, user=user, weak=weak, open_python=open_python)
    print(host, json.dumps(report["mechanisms"], indent=1))
    assert held(report) == expected
    assert code == (0 if all(expected.values()) else 1)  # exit 0 only when everything holds
    assert {p["probe"] for p in report["probes"]} == set(PROBES)
    assert not any(p["escaped"] for p in report["probes"] if expected[PROBES[p["probe"]][1]])
    if not expected["files"]:
        read = next(p for p in report["probes"] if p["probe"] == "read")
        assert read["escaped"] and "the secret" in read["detail"]
        assert report["refuses_submitted_code"] and "files MISSING" in report["line"]
    if weak is not None and open_python and not user:
        assert report["confinement"]["user"].startswith("its own user")


@pytest.mark.slow
def test_the_doctors_table_names_every_missing_mechanism(tmp_path):
    done = run(unprivileged([*WEAK, "--", PY, "-m", "matchmaking.isolation"]), tmp_path)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    files = next(line for line in lines if line.startswith("files "))
    assert "MISSING" in files and "not available" in files
    assert any(line.startswith("read a file outside its folder") and "ESCAPED" in line for line in lines)
    assert "NMMO_ARENA_ISOLATION=warn" in done.stdout  # what the operator can do


@pytest.fixture
def escape(tmp_path):
    """The issue's attacker: a policy that reads, writes and connects through libc, with a
    secret file in a folder only root may enter, and a TCP listener on loopback."""
    secret = tmp_path / "space"
    secret.mkdir(mode=0o700)
    (secret / "secret.txt").write_text("the-map-secret")
    server = socket.create_server(("127.0.0.1", 0))
    accepted = []
    threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()
    folder = tmp_path / "libc_escape"
    shutil.copytree(POLICIES / "hostile" / "libc_escape", folder)
    (folder / "targets.json").write_text(json.dumps({"read": str(secret / "secret.txt"), "write": str(secret / "forged.txt"),
                                                    "port": server.getsockname()[1]}))
    for path in (folder, folder / "policy.py", folder / "targets.json"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    yield {"folder": folder, "secret": secret, "accepted": accepted}
    server.close()


def evaluate(tmp_path, folder, *, user: bool, weak: bool, open_python: bool = False, **env: str):
    command = [PY, "-m", "matchmaking.evaluate", str(folder), "--matches", "1", "--horizon", "4", "--workers", "1"]
    if weak:
        command = [*WEAK, "--", *command]
    if user:
        command = unprivileged(command)
    elif open_python:
        command = open_interpreter(command)
    cache = tmp_path / "cache"
    cache.mkdir(exist_ok=True)
    cache.chmod(0o777)
    return run(command, tmp_path, NMMO_ARENA_CACHE=str(cache), **env)


@pytest.mark.slow
def test_evaluate_warns_by_default_and_refuses_under_strict_on_a_weak_host(tmp_path):
    warned = evaluate(tmp_path, EXAMPLES / "gatherer", user=True, weak=True)
    assert warned.returncode == 0, warned.stderr[-2000:]
    assert "warning: files isolation is missing on this machine" in warned.stderr
    assert "network isolation" not in warned.stderr  # only what is missing is named
    assert "Top1Ratio" in warned.stdout
    refused = evaluate(tmp_path, EXAMPLES / "gatherer", user=True, weak=True, NMMO_ARENA_ISOLATION=STRICT)
    assert refused.returncode == 3
    assert "error: Isolation MISSING (files MISSING" in refused.stderr and "NMMO_ARENA_ISOLATION=warn" in refused.stderr
    assert "Top1Ratio" not in refused.stdout  # nothing was played


@pytest.mark.slow
def test_the_issues_escape_is_contained_by_unprivileged_layers_on_a_weak_kernel_as_root(tmp_path, escape):
    """No Landlock and no namespaces, as root: the team's own user keeps it out of the
    Space's folder, seccomp out of the network; `strict` finds nothing missing and plays."""
    for path in (escape["folder"], escape["folder"] / "policy.py", escape["folder"] / "targets.json"):
        path.chmod(0o700 if path.is_dir() else 0o600)  # closed to the team's user: it reads a copy
    done = evaluate(tmp_path, escape["folder"], user=False, weak=True, open_python=True, NMMO_ARENA_ISOLATION=STRICT)
    assert done.returncode == 0, done.stderr[-2000:]
    fault = next(line for line in done.stdout.splitlines() if "escape:" in line)
    assert "read=Permission denied" in fault and "write=Permission denied" in fault and "connect=Permission denied" in fault
    assert "the-map-secret" not in done.stdout
    assert not (escape["secret"] / "forged.txt").exists() and not escape["accepted"]


@pytest.mark.slow
def test_the_issues_escape_is_refused_under_strict_where_it_would_get_out(tmp_path, escape):
    """No Landlock and no namespaces, as an ordinary user: the file read could not be
    stopped, so `strict` never starts the policy."""
    (escape["secret"]).chmod(0o777)  # the Space's user's own folder, as DATA is on a Space
    (escape["secret"] / "secret.txt").chmod(0o644)
    done = evaluate(tmp_path, escape["folder"], user=True, weak=True, NMMO_ARENA_ISOLATION=STRICT)
    assert done.returncode == 3 and "escape:" not in done.stdout
    assert not (escape["secret"] / "forged.txt").exists() and not escape["accepted"]


def space(tmp_path, mode: str) -> dict:
    data = tmp_path / mode
    data.mkdir()
    data.chmod(0o777)
    done = run(unprivileged([*WEAK, "--", PY, str(PROJECT_ROOT / "tests" / "scripts" / "isolation_space.py"), str(data / "data")]),
               tmp_path, NMMO_ARENA_ISOLATION=mode)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow
def test_a_space_under_strict_on_a_weak_host_runs_no_submission_and_says_why(tmp_path):
    seen = space(tmp_path, STRICT)
    assert seen["isolation"]["refuses_submitted_code"] and seen["isolation"]["missing"] == ["files"]
    examples = [s for s in seen["statuses"] if "/example-" in s["repo"]]
    builtins = [s for s in seen["statuses"] if "/builtin-" in s["repo"]]
    assert examples and all(s["status"] == "queued" for s in examples)
    assert all("cannot isolate submitted code (missing: files" in s["reason"] and "NMMO_ARENA_ISOLATION=warn" in s["reason"]
               for s in examples)
    # the packaged built-ins are the Arena's own code: they validate and play on
    assert builtins and all(s["status"] in ("evaluating", "evaluated", "qualified") for s in builtins)
    assert seen["pve"] and all("/builtin-" in p for p in seen["pve"])
    assert any(line.startswith("Isolation MISSING (files MISSING") for line in seen["operator"])
    assert "submitted code does not run here" in seen["banner"]


@pytest.mark.slow
def test_a_space_under_warn_on_a_weak_host_runs_submissions_under_a_red_banner(tmp_path):
    seen = space(tmp_path, WARN)
    assert not seen["isolation"]["refuses_submitted_code"] and seen["isolation"]["missing"] == ["files"]
    examples = [s for s in seen["statuses"] if "/example-" in s["repo"]]
    assert examples and all(s["status"] in ("evaluating", "rejected") for s in examples)
    assert any(s["reason"].startswith("Played 4 ticks") for s in examples)  # their code ran in its sandbox
    assert "#b00020" in seen["banner"] and "submitted code runs anyway" in seen["banner"]


@pytest.fixture(scope="module")
def warned_space():
    folder = Path(tempfile.mkdtemp(prefix="nmmo-arena-isolation-test-"))
    folder.chmod(0o777)
    data = folder / "warn"
    data.mkdir()
    data.chmod(0o777)
    done = run(unprivileged([*WEAK, "--", PY, str(PROJECT_ROOT / "tests" / "scripts" / "isolation_space.py"), str(data / "data")]),
               folder, NMMO_ARENA_ISOLATION=WARN)
    assert done.returncode == 0, done.stderr[-3000:]
    yield json.loads(done.stdout.splitlines()[-1]), done.stderr
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_what_a_policy_says_under_warn_reaches_the_operator_alone(warned_space):
    """The issue's leak: as an ordinary user on a weak host under `warn`, a policy reads a
    0600 file of the Space's user and raises (and prints) what it holds. Its rejection, the
    match record, the replay and the log say the words are withheld; the Space's own log
    (its operator's) has them."""
    seen, operator_log = warned_space
    tattler = next(s for s in seen["statuses"] if s["repo"] == "mallory/tattler")
    assert tattler["status"] == "rejected" and tattler["reason"].startswith("ERROR at tick 1: [the policy's own words are withheld")
    assert not seen["secret_published"] and seen["secret"] not in json.dumps(seen["statuses"])
    assert seen["public_faults"] and all("withheld" in message for message in seen["public_faults"])
    assert f"RuntimeError: the Space's file says: {seen['secret']}" in operator_log  # the operator reads it
    assert f"the Space's file says: {seen['secret']}" in operator_log.split("output (")[1]  # and what it printed


def test_the_advice_names_the_cause_found_on_this_host():
    """Root with Python closed to other users is told to open Python, not to run as root;
    an ordinary user is told to run as root; a kernel without Landlock is named."""
    probes = tuple(ProbeResult(name, name == "read", "read the secret" if name == "read" else "stopped") for name in PROBES)
    as_root = IsolationReport(STRICT, probes, host={"uid": 0, "kernel": "5.10.0", "landlock_abi": 0,
                                                    "python_closed": "/root (mode 0700)"})
    advice = as_root.advice()
    assert "Run the Space as root" not in advice and "/root (mode 0700) is closed to other users" in advice
    assert "it runs 5.10.0" in advice and advice.endswith(ANYWAY)
    assert "/root (mode 0700)" in as_root.reason()
    as_user = IsolationReport(STRICT, probes, host={"uid": 1000, "kernel": "6.8.0", "landlock_abi": 4, "python_closed": ""})
    assert as_user.advice().startswith("Run the Space as root (it runs as uid 1000)") and "Landlock" not in as_user.advice()
    assert IsolationReport(STRICT, tuple(ProbeResult(n, False, "stopped") for n in PROBES)).advice() == ""


def test_a_self_test_that_cannot_run_isolates_nothing():
    report = IsolationReport(STRICT, error="the self-test failed: TimeoutExpired")
    assert report.missing == ["files", "network", "signals", "processes"] and report.refuses
    assert "not tested" in report.mechanisms()[0].why
    gate = IsolationGate(WARN, checker=lambda mode: IsolationReport(mode, error="boom"))
    assert gate.reason().startswith("Waiting for the isolation self-test")  # nothing runs before it ends
    gate.run()
    assert gate.reason() == "" and gate.may_run(None)  # warn: runs anyway


def test_an_unreported_probe_counts_as_an_escape():
    probes = tuple(ProbeResult(name, False, "stopped") for name in PROBES if name != "fork")
    report = IsolationReport(STRICT, probes)
    assert report.missing == ["processes"] and not report.refuses  # strict needs files and network
