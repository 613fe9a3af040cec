"""Shared fixtures."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    """Under xdist, fill numba's cache once, here in the controller, before the workers
    start (`scripts/warm_kernels.py` says why: on a fresh clone every process would compile
    the kernels itself). With the cache warm this only loads it, in about 2 s."""
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        return  # a worker, or a run without xdist: the first test that needs a kernel compiles it
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    warm = subprocess.run([sys.executable, str(ROOT / "tests" / "scripts" / "warm_kernels.py")], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    if warm.returncode != 0:  # the tests will say what is wrong; the warm-up only saves time
        print(f"warming numba's cache failed (exit {warm.returncode}):\n{warm.stderr[-2000:]}", file=sys.stderr)


@pytest.fixture(scope="session")
def stage1_opponents():
    """The 15 built-in teams of PvE stage 1."""
    from arena.policies import builtin
    from arena.rules import stage_opponents

    return [builtin(name) for name in stage_opponents(1)]


@pytest.fixture(scope="module")
def local_hub(tmp_path_factory):
    """The embedded local Hub on a free port, for tests that use the real client over HTTP:
    one per test module, so the tagged repos one module pushes never show up in another's
    discovery."""
    from localhub import LocalHub

    hub = LocalHub(tmp_path_factory.mktemp("hub"), write_token="test-token").start()
    yield hub
    hub.stop()


@pytest.fixture()
def hub_api(local_hub):
    from huggingface_hub import HfApi

    return HfApi(endpoint=local_hub.endpoint, token="test-token")


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium through Playwright (never a downloaded browser), headless."""
    from playwright.sync_api import sync_playwright

    from tests_support import BROWSER_ARGS, CHROMIUM

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS, headless=True)
        new_context = b.new_context

        def patient_context(**options):
            # a page on a busy machine (two busy loops beside the suite) draws slowly: a wait or
            # a screenshot given no bound of its own waits up to a minute rather than 30 s
            context = new_context(**options)
            context.set_default_timeout(60_000)
            return context

        b.new_context = patient_context
        yield b
        b.close()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    """Start slow set-ups in the background as soon as a test that needs them is selected:
    the Python 3.10 environment (`test_python310.py`) builds while the rest of the suite runs.
    Last, after `-m` has deselected what a run leaves out: `make check` (no slow tests) once
    started the build too, a pip install of every requirement beside the unit tests."""
    for item in items:
        start = getattr(getattr(item, "module", None), "start_build", None)
        if start is not None and item.module.__name__.endswith("test_python310"):
            start()
            break
