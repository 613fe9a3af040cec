"""Loading a policy folder's `Team` class: the one place a submission's code is executed.

Call it only inside the process meant to host the team: a sandbox process for untrusted
policies (`matchmaking.sandbox.worker`), the match's own process for the Arena's built-ins.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arena.errors import PolicyLoadError
from arena.policies import POLICY_FILE

#: Constructor of a team: `(team_id, env_config) -> object with act()`.
TeamFactory = Callable[[int, dict[str, Any]], Any]


def load_team_class(path: Path) -> type:
    """Import `policy.py` from a folder and return its `Team` class.

    The folder goes first on `sys.path` so `policy.py` can import its own modules. This
    runs the policy's code in the calling process: call it only where the team is meant to
    live (a sandbox process for untrusted policies).

    Raises:
        `PolicyLoadError`: the import failed, or `Team` is missing or not a class with `act`.
    """
    file = Path(path) / POLICY_FILE
    if not file.is_file():
        raise PolicyLoadError(f"{file} does not exist: a policy folder must hold {POLICY_FILE}.")
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
