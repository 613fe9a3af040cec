"""The Space's allocators give memory back (`arena.memory`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from arena import PROJECT_ROOT


def test_lean_allocators_limit_mallocs_arenas_and_make_pyarrow_use_the_system_pool():
    """In a fresh process, as `app.py` starts: glibc's arena limit applied, pyarrow's default
    pool the system allocator, NumPy's huge pages off, and all carried to the process's
    children by the environment."""
    code = ("import json, os; from arena.memory import lean_allocators; done = lean_allocators(); import pyarrow; "
            "from numpy.core import multiarray; "
            "print(json.dumps({**done, 'pool': pyarrow.default_memory_pool().backend_name, "
            "'huge': multiarray._get_madvise_hugepage(), 'arenas': os.environ['MALLOC_ARENA_MAX']}))")
    env = {k: v for k, v in os.environ.items()
           if k not in ("MALLOC_ARENA_MAX", "ARROW_DEFAULT_MEMORY_POOL", "NUMPY_MADVISE_HUGEPAGE")}
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, check=True)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found == {"malloc_arenas": True, "arrow_system_pool": True, "numpy_no_huge_pages": True, "pool": "system",
                     "huge": False, "arenas": "2"}, found


def test_memory_freed_in_the_middle_of_the_heap_is_given_back():
    """Blocks freed below one still in use stay with the process (glibc trims only the
    heap's top); `give_back` returns them, and its thread does so on its own while the
    process is quiet, and not while it works."""
    code = """
import json, threading, psutil
from arena.memory import give_back, give_back_in_background, lean_allocators
lean_allocators()
rss = lambda: psutil.Process().memory_info().rss / 2**20
blocks = [bytes(2000) for _ in range(150_000)]  # 300 MB from malloc (above Python's small-object allocator)
kept = blocks[::200]  # one in 200 stays: the heap's top cannot be trimmed
del blocks
held = rss()
given = give_back()
after = rss()
blocks = [bytes(2000) for _ in range(150_000)]
kept += blocks[::200]
del blocks
stop = threading.Event()
again = rss()
give_back_in_background(0.1, stop, quiet=1e9)  # a busy machine's process counts as quiet here
threading.Event().wait(1.0)
stop.set()
background = rss()
busy_stop = threading.Event()
blocks = [bytes(2000) for _ in range(150_000)]
kept += blocks[::200]
del blocks
before_busy = rss()
give_back_in_background(0.1, busy_stop, quiet=0.0)  # never quiet: nothing is given back
threading.Event().wait(0.5)
busy_stop.set()
print(json.dumps({"held": held, "given": given, "after": after, "again": again, "background": background,
                  "before_busy": before_busy, "busy": rss()}))
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
    mb = json.loads(out.stdout.strip().splitlines()[-1])
    assert mb["given"] and mb["held"] > 250, mb  # freed, and still the process's
    assert mb["after"] < mb["held"] - 200, mb
    assert mb["again"] > mb["after"] + 200 and mb["background"] < mb["again"] - 200, mb
    assert mb["busy"] > mb["before_busy"] - 50, mb  # a process at work keeps its pages
