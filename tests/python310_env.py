"""The Python 3.10 environment `test_python310.py` plays in, built as a Space builds it.

`python3.10 -m venv`, then plain `pip install -r requirements.txt` (no flags: a Space passes
none; `--no-compile` only, as byte-compiling every installed module cannot fail the install
and costs 40 s of CPU here, while the tests' interpreters compile what they import), except
for PyTorch, whose 3.10 CPU build this machine does not hold (PyTorch's own index, which
the Space's `pre-requirements.txt` uses, is out of reach here; docs/isolation.md). It is kept
in `.venv310` while `requirements.txt` is unchanged.

Standard library only: `make test` runs this file with the system's Python to build the
environment beside its own install, whose pip unpacks on one core (a minute of the other
one otherwise idle); the test then finds it built, or waits for the build (a lock).

    python3 tests/python310_env.py      build `.venv310` unless it is current
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
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


if __name__ == "__main__":
    sys.exit(build() or None)
