"""How the Space's processes keep their memory: allocators that give memory back.

Measured on a Space restored from 200,000 matches (`bench/ui_scale.py`, issue 39): its
process held 1.8 GB once settled, of which the history's rows are about 0.3 GB. Two
allocators kept most of the rest after the restore had freed it:

- glibc's malloc gives each thread that allocates its own arena (up to 8 per core) and
  returns little of them; the Space runs some forty threads (Gradio's workers, the
  refresher, the scheduler). Two arenas: 1,826 MB to 1,580 MB, nothing measurably slower.
- pyarrow's default pool (jemalloc) keeps what the parquet reads freed; its system pool
  hands it back to malloc: with the above, 1,528 MB.

`lean_allocators()` is called first thing by `app.py`. Written by hand (a `mallopt` call
through ctypes) because no maintained library sets glibc's arena limit at run time; the
environment variables make the Space's child processes (the match worker, the sandbox's
zygote) start the same way.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os

log = logging.getLogger(__name__)

#: Malloc arenas a process keeps (glibc's `M_ARENA_MAX`).
ARENAS = 2

#: glibc's `mallopt` parameter number for the arena limit (malloc.h).
_M_ARENA_MAX = -8


def lean_allocators() -> dict[str, bool]:
    """Limit glibc's malloc to `ARENAS` arenas in this process (threads started from now on)
    and in its children, and make pyarrow use the system allocator (call before pyarrow is
    imported). Returns what took effect (on a libc without `mallopt`, e.g. musl, the arena
    limit does not apply and is logged as such)."""
    os.environ.setdefault("MALLOC_ARENA_MAX", str(ARENAS))
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    applied = False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        applied = bool(getattr(libc, "mallopt", None) and libc.mallopt(_M_ARENA_MAX, ARENAS) == 1)
    except OSError:
        pass
    if not applied:
        log.info("malloc arenas not limited here (no glibc mallopt): the Space uses more memory, nothing else changes")
    return {"malloc_arenas": applied, "arrow_system_pool": os.environ["ARROW_DEFAULT_MEMORY_POOL"] == "system"}
