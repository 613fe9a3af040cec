"""The Space's own Python (3.10, README front matter): plain pip installs the Arena, which
imports and plays a match with a sandboxed example there.

The environment is built as a Space builds it: `python3.10 -m venv`, then plain
`pip install -r requirements.txt` (no flags: a Space passes none; `--no-compile` only, as
byte-compiling every installed module cannot fail the install and costs 40 s of CPU here,
while the tests' interpreters compile what they import), except for PyTorch,
whose 3.10 CPU build this machine does not hold (PyTorch's own index, which the Space's
`pre-requirements.txt` uses, is out of reach here; docs/isolation.md). It is kept in
`.venv310` while `requirements.txt` is unchanged, and its build starts in the background
as soon as this test is collected (`conftest.py`), so the rest of the suite runs meanwhile.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from arena import PROJECT_ROOT

pytestmark = pytest.mark.slow

VENV = PROJECT_ROOT / ".venv310"
PY = VENV / "bin" / "python"
STAMP = VENV / ".installed"
LOG = VENV.with_name(".venv310-build.log")


def python310() -> str | None:
    """A Python 3.10 interpreter: `NMMO_ARENA_PYTHON310`, else `python3.10` on PATH, else
    one pyenv knows (a pyenv shim on PATH answers only when its version is selected)."""
    candidates = [os.environ.get("NMMO_ARENA_PYTHON310"), shutil.which("python3.10")]
    if shutil.which("pyenv"):
        versions = subprocess.run(["pyenv", "versions", "--bare"], capture_output=True, text=True).stdout.split()
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip()
        candidates += [f"{root}/versions/{v}/bin/python3.10" for v in sorted(versions, reverse=True) if v.startswith("3.10")]
    for candidate in filter(None, candidates):
        done = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2] == (3, 10))"],
                              capture_output=True, text=True)
        if done.stdout.strip() == "True":
            return candidate
    return None


def _requirements_key() -> str:
    return hashlib.sha256((PROJECT_ROOT / "requirements.txt").read_bytes()).hexdigest()


def build() -> str:
    """Build `.venv310` unless it is current; "" or why it could not be built. One build at a
    time: every pytest-xdist worker that collects this test starts one, and waits here."""
    with open(VENV.with_name(".venv310-build.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build()


def _build() -> str:
    if STAMP.is_file() and STAMP.read_text() == _requirements_key():
        return ""
    interpreter = python310()
    if interpreter is None:
        return ("no Python 3.10 found: install one (e.g. `pyenv install 3.10`) or point NMMO_ARENA_PYTHON310 at it; "
                "the Space runs 3.10, so CI must check it")
    shutil.rmtree(VENV, ignore_errors=True)
    requirements = VENV.with_name(".venv310-requirements.txt")
    lines = (PROJECT_ROOT / "requirements.txt").read_text().splitlines()
    requirements.write_text("\n".join(line for line in lines if not line.startswith("torch==")) + "\n")
    with open(LOG, "w") as log:
        for command in ([interpreter, "-m", "venv", str(VENV)],
                        [str(PY), "-m", "pip", "install", "--quiet", "--no-compile", "-r", str(requirements)]):
            if subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, cwd=PROJECT_ROOT).returncode:
                return f"`{' '.join(command)}` failed; its output is in {LOG}"
    STAMP.write_text(_requirements_key())
    return ""


_built: dict[str, str] = {}
_done = threading.Event()


def start_build() -> None:
    """Start building in the background (once)."""
    if _built or _done.is_set():
        return
    _built["started"] = "yes"

    def run() -> None:
        try:
            _built["error"] = build()
        except Exception as exc:  # noqa: BLE001 - reported by the test
            _built["error"] = f"{type(exc).__name__}: {exc}"
        _done.set()

    threading.Thread(target=run, daemon=True, name="python310-venv").start()


@pytest.fixture(scope="module")
def venv310() -> Path:
    start_build()
    _done.wait(timeout=1500)
    if not _done.is_set():
        pytest.fail(f"building the Python 3.10 environment took over 25 minutes (see {LOG})")
    if _built.get("error"):
        pytest.fail(_built["error"])
    return PY


def run310(py: Path, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(PROJECT_ROOT),
           "LANG": "C.UTF-8"}
    return subprocess.run([str(py), *args], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_the_arenas_code_imports_on_python_310(venv310):
    done = run310(venv310, "-c", """
import importlib, pkgutil, sys
assert sys.version_info[:2] == (3, 10), sys.version
names = ["app"]
for package in ("arena", "history", "leaderboard", "localhub", "matchmaking", "modelcards"):
    module = importlib.import_module(package)
    names += [m.name for m in pkgutil.walk_packages(module.__path__, package + ".")]
for name in names:
    if name.endswith("__main__"):
        continue
    importlib.import_module(name)
print(len(names), "modules")
""")
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout.split()[0]) > 80


def test_a_sandboxed_example_plays_a_match_on_python_310(venv310):
    done = run310(venv310, "-m", "matchmaking.evaluate", "examples/policies/gatherer", "--matches", "1", "--horizon", "16",
                  "--workers", "1", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    assert '"match_count": 1' in done.stdout and '"failed_matches": []' in done.stdout
    isolation = run310(venv310, "-m", "matchmaking.isolation")
    assert "Host: " in isolation.stdout and "Landlock" in isolation.stdout, isolation.stderr[-2000:]


def test_the_spaces_cpu_torch_satisfies_the_requirements_pin():
    """pre-requirements.txt brings torch 2.13.0+cpu; requirements.txt's pin must accept it,
    so that the Space's pip fetches no CUDA build after it."""
    pre = [line for line in (PROJECT_ROOT / "pre-requirements.txt").read_text().splitlines() if line.startswith("torch==")]
    pin = next(line for line in (PROJECT_ROOT / "requirements.txt").read_text().splitlines() if line.startswith("torch=="))
    assert pre == ["torch==2.13.0+cpu"]
    assert "https://download.pytorch.org/whl/cpu" in (PROJECT_ROOT / "pre-requirements.txt").read_text()
    assert SpecifierSet(pin.removeprefix("torch")).contains("2.13.0+cpu")
