"""Matchmaking: the match engine, the teams, the sandbox, the Hub glue, the Space's service
and the command-line tools (`docs/architecture.md`).

Before any of its modules imports nmmo, this package defers two of SciPy's subpackages.
`import nmmo` runs `nmmo.render.render_utils` (`from scipy import signal`, for a renderer
the Arena never calls) and `nmmo.core.terrain` (`from scipy import stats`, used only to
generate a map): together about 0.25 s of CPU and 32 MB in every process that imports nmmo,
that is every match worker, sandbox zygote and isolation self-test. Deferred, each is
imported at its first use, unchanged.

Written here because nothing in the standard library does it: `importlib.util.LazyLoader`
loads a module as soon as the import system looks at its `__spec__`, which `from scipy
import stats` does.
"""

from __future__ import annotations

import importlib
import sys
import threading
import types
from typing import Any


class _Deferred(types.ModuleType):
    """Stands in `sys.modules` for a module not imported yet; its first attribute read
    imports the real module (which then replaces it there) and answers from it."""

    # One lock for all: importing scipy.signal imports scipy.stats, so it is reentrant.
    _lock = threading.RLock()

    def __getattr__(self, name: str) -> Any:
        with self._lock:
            if sys.modules.get(self.__name__) is self:
                del sys.modules[self.__name__]
            real = importlib.import_module(self.__name__)
        self.__dict__.update(real.__dict__)  # later reads are plain attribute reads
        return getattr(real, name)


def _defer(*names: str) -> None:
    for name in names:
        if name not in sys.modules:  # already imported: nothing left to save
            sys.modules[name] = _Deferred(name)


_defer("scipy.signal", "scipy.stats")
