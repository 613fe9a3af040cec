"""How the Space's processes keep their memory: allocators that give memory back.

Measured on a Space restored from 200,000 matches (`bench/ui_scale.py`, issue 39): its
process held 1.8 GB once settled, of which the history's rows are about 0.3 GB. The
allocators kept most of the rest after the restore and the fits had freed it:

- glibc's malloc gives each thread that allocates its own arena (up to 8 per core) and
  returns little of them; the Space runs some forty threads (Gradio's workers, the
  refresher, the scheduler). Two arenas: 1,826 MB to 1,580 MB, nothing measurably slower.
- pyarrow's default pool (jemalloc) keeps what the parquet reads freed; its system pool
  hands it back to malloc: with the above, 1,528 MB.
- glibc returns a heap's free memory to the system only from its top: the pages freed in
  its middle (the standings' and the fits' passes over 3.2 million rows) stay resident.
  `malloc_trim` gives them back: called by hand on the settled Space, 1,561 MB to 864 MB.
  `give_back_in_background` calls it every `GIVE_BACK_EVERY_S` while the process is quiet.
- NumPy asks the kernel for huge pages for its large arrays (2 MB at a time): off
  (`NUMPY_MADVISE_HUGEPAGE=0`, NumPy's own setting), 1,559 MB to 1,512 MB.

`lean_allocators()` is called first thing by `app.py`. Written by hand (`mallopt` and
`malloc_trim` through ctypes) because no maintained library sets glibc's arena limit or
trims its heap at run time; the environment variables make the Space's child processes
(the match worker, the sandbox's zygote) start the same way.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import threading
import time

log = logging.getLogger(__name__)

#: Malloc arenas a process keeps (glibc's `M_ARENA_MAX`).
ARENAS = 2

#: glibc's `mallopt` parameter number for the arena limit (malloc.h).
_M_ARENA_MAX = -8

#: Seconds between looks at whether to return the heap's free pages to the system (each
#: return a few milliseconds, with the interpreter's lock released).
GIVE_BACK_EVERY_S = 30.0

#: The share of a core under which a process counts as quiet since the last look (a settled
#: Space uses about 0.03).
QUIET_SHARE = 0.25


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or None)
    except OSError:
        return None


def lean_allocators() -> dict[str, bool]:
    """Limit glibc's malloc to `ARENAS` arenas in this process (threads started from now on)
    and in its children, make pyarrow use the system allocator and NumPy ask for no huge
    pages (call before numpy and pyarrow are imported). Returns what took effect (on a libc without `mallopt`, e.g. musl, the arena
    limit does not apply and is logged as such)."""
    os.environ.setdefault("MALLOC_ARENA_MAX", str(ARENAS))
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
    libc = _libc()
    applied = bool(libc is not None and getattr(libc, "mallopt", None) and libc.mallopt(_M_ARENA_MAX, ARENAS) == 1)
    if not applied:
        log.info("malloc arenas not limited here (no glibc mallopt): the Space uses more memory, nothing else changes")
    return {"malloc_arenas": applied, "arrow_system_pool": os.environ["ARROW_DEFAULT_MEMORY_POOL"] == "system",
            "numpy_no_huge_pages": os.environ["NUMPY_MADVISE_HUGEPAGE"] == "0"}


def give_back() -> bool:
    """Return the free pages of this process's malloc heaps to the system (glibc's
    `malloc_trim(0)`); False where there is none to call (not glibc) or nothing was returned."""
    libc = _libc()
    trim = getattr(libc, "malloc_trim", None) if libc is not None else None
    return bool(trim is not None and trim(0) == 1)


def give_back_in_background(every_s: float = GIVE_BACK_EVERY_S, stop: threading.Event | None = None,
                            quiet: float = QUIET_SHARE) -> threading.Thread | None:
    """Call `give_back` every `every_s` in a daemon thread (until `stop` is set) when the
    process was quiet since the last look (its threads used less than `quiet` of a core on
    average): trimming while it works (a restore, a fit) hands back pages it is about to use
    again, and faulting them back in slowed a restore's first page by 3-4 s. None, and logged
    once, where this libc has no `malloc_trim`."""
    libc = _libc()
    if libc is None or getattr(libc, "malloc_trim", None) is None:
        log.info("no malloc_trim here (not glibc): freed memory stays with the process, nothing else changes")
        return None
    stopped = stop if stop is not None else threading.Event()

    def loop() -> None:
        last = time.process_time()
        while not stopped.wait(every_s):
            now = time.process_time()
            if now - last < quiet * every_s:
                give_back()
            last = time.process_time()

    thread = threading.Thread(target=loop, daemon=True, name="give-back-memory")
    thread.start()
    return thread
