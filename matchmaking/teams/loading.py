"""Loading a policy folder's `Team` class: the one place a submission's code is executed.

Call it only inside the process meant to host the team: a sandbox process for untrusted
policies (`matchmaking.sandbox.worker`), the match's own process for the Arena's built-ins.

What a policy may import is the contract's (`IMPORTABLE`, as docs/participants.md lists
it): the standard library, its own folder's modules, and the packages the Arena installs
for it. An `import` in the policy's own files of anything else fails as a missing module
would (a `try: import x except ImportError:` fallback still works), with a message that
says what is allowed, even where the package happens to be installed for the Arena's own
use (pandas, scipy): a policy that validates here runs on any Space.
"""

from __future__ import annotations

import builtins
import hashlib
import importlib.util
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arena.errors import ImportNotAllowedError, PolicyLoadError
from arena.policies import POLICY_FILE

#: Packages beyond the standard library a policy may import: what the Arena installs and
#: preloads for it (`requirements.txt`), with what the docs say of each.
IMPORTABLE: dict[str, str] = {
    "numpy": "nmmo's pin",
    "torch": "CPU build; one intra-op and one inter-op thread",
    "onnxruntime": "`CPUExecutionProvider`; sessions get one thread",
    "nmmo": "with its `scripted` baselines",
    "scripted": "nmmo's scripted baselines (installed with nmmo)",
}


class _ImportGuard:
    """`builtins.__import__`, refusing the policies' own files what the contract does not
    allow (installed once per process; each loaded policy folder is registered)."""

    def __init__(self) -> None:
        self.folders: dict[str, frozenset[str]] = {}
        """Each policy folder (resolved, with a trailing separator) -> its own top-level module names."""
        self.lock = threading.Lock()
        self.original = builtins.__import__

    def register(self, folder: Path, extra: frozenset[str] = frozenset()) -> None:
        own = {p.stem for p in folder.glob("*.py")} | {p.name for p in folder.iterdir() if p.is_dir()} | extra
        with self.lock:
            self.folders[os.path.join(os.path.realpath(folder), "")] = frozenset(own)
            if builtins.__import__ is not self:
                builtins.__import__ = self

    def __call__(self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if level == 0 and globals:
            where = globals.get("__file__") or ""
            if where and self.folders:
                top = name.partition(".")[0]
                here = os.path.realpath(where)
                for folder, own in self.folders.items():
                    if here.startswith(folder) and not allowed(top, own):
                        raise ImportNotAllowedError(refusal(top), name=top)
        return self.original(name, globals, locals, fromlist, level)


def allowed(top: str, own: frozenset[str] = frozenset()) -> bool:
    """Whether a policy may import the top-level module `top` (its own modules are `own`)."""
    return top in sys.stdlib_module_names or top in IMPORTABLE or top in own or top == "__future__"


def refusal(top: str) -> str:
    """Why a policy's `import top` fails (the fault record adds the file and line)."""
    return (f"a policy may not import {top!r}, only the standard library, its own folder's modules and "
            f"{', '.join(sorted(IMPORTABLE))}")


_GUARD = _ImportGuard()

#: Constructor of a team: `(team_id, env_config) -> object with act()`.
TeamFactory = Callable[[int, dict[str, Any]], Any]


def load_team_class(path: Path, arena_code: bool = False) -> type:
    """Import `policy.py` from a folder and return its `Team` class.

    The folder goes first on `sys.path` so `policy.py` can import its own modules. This
    runs the policy's code in the calling process: call it only where the team is meant to
    live (a sandbox process for untrusted policies). `arena_code` marks a folder holding
    only the Arena's own code (a packaged built-in, `matchmaking.teams.builtin.is_packaged`),
    which may import `matchmaking`; no submitted folder may.

    Raises:
        `PolicyLoadError`: the import failed, or `Team` is missing or not a class with `act`.
    """
    file = Path(path) / POLICY_FILE
    if not file.is_file():
        raise PolicyLoadError(f"{file} does not exist: a policy folder must hold {POLICY_FILE}.")
    _GUARD.register(file.parent, frozenset({"matchmaking"}) if arena_code else frozenset())
    module_name = f"arena_policy_{hashlib.sha1(str(file).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(module_name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(file.parent))
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001 - a policy's import may raise anything, even SystemExit
        raise PolicyLoadError(f"Importing {POLICY_FILE} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        try:
            sys.path.remove(str(file.parent))
        except ValueError:
            pass
    team = getattr(module, "Team", None)
    if not isinstance(team, type):
        raise PolicyLoadError(
            f"{POLICY_FILE} must define `class Team` with __init__(self, team_id, env_config) and "
            f"act(self, observations); found {type(team).__name__ if team is not None else 'nothing'}."
        )
    if not callable(getattr(team, "act", None)):
        raise PolicyLoadError(f"{POLICY_FILE}'s Team class has no act(self, observations) method.")
    return team
