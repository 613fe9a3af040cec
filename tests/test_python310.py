"""The Space's own Python (3.10, README front matter): plain pip installs the Arena, which
imports and plays a match with a sandboxed example there.

The environment (`python310_env.py` says how it is built) is kept in `.venv310` while
`requirements.txt` is unchanged; `make test` starts its build beside the install, and
otherwise it starts in the background as soon as this test is collected (`conftest.py`), so
the rest of the suite runs meanwhile.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from python310_env import LOG, PY, build

from arena import PROJECT_ROOT

pytestmark = pytest.mark.slow

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
