"""The Space's allocators give memory back (`arena.memory`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from arena import PROJECT_ROOT


def test_lean_allocators_limit_mallocs_arenas_and_make_pyarrow_use_the_system_pool():
    """In a fresh process, as `app.py` starts: glibc's arena limit applied, pyarrow's default
    pool the system allocator, and both carried to the process's children by the environment."""
    code = ("import json, os; from arena.memory import lean_allocators; done = lean_allocators(); import pyarrow; "
            "print(json.dumps({**done, 'pool': pyarrow.default_memory_pool().backend_name, "
            "'arenas': os.environ['MALLOC_ARENA_MAX']}))")
    env = {k: v for k, v in os.environ.items() if k not in ("MALLOC_ARENA_MAX", "ARROW_DEFAULT_MEMORY_POOL")}
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, check=True)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found == {"malloc_arenas": True, "arrow_system_pool": True, "pool": "system", "arenas": "2"}, found
