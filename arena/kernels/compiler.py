"""numba, when it is installed, and where its compiled code is cached.

`AVAILABLE` says whether numba imported; without it `jit` hands back the function itself,
which then runs as plain Python (same results, minutes instead of seconds). Compiled code
is cached on disk (`cache=True`): next to these modules if that folder is writable, else in
numba's user-wide cache or `NUMBA_CACHE_DIR` (set here to a temporary folder when neither is
writable, e.g. a read-only Space folder).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any


def _cache_dir_ok() -> bool:
    here = os.path.dirname(os.path.abspath(__file__))
    return os.access(here, os.W_OK) or bool(os.environ.get("NUMBA_CACHE_DIR"))


if not _cache_dir_ok():  # a read-only install: cache where we can write, not nowhere
    os.environ["NUMBA_CACHE_DIR"] = os.path.join(tempfile.gettempdir(), "nmmo-arena-numba")

try:
    import numba

    AVAILABLE = True
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None
    AVAILABLE = False


def jit(**options: Any) -> Callable[[Any], Any]:
    """numba.njit with the cache, or, without numba, the function itself (run as plain Python)."""
    if not AVAILABLE:
        return lambda f: f
    return numba.njit(cache=True, **options)
