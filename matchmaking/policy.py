"""Policy references: naming who plays a team slot, and loading its `Team` class.

A policy is named by a `PolicyRef`: an id, an exact revision, and where its files are.
Three kinds exist:

- `builtin:NAME`, one of nmmo's scripted baselines (`matchmaking.builtin`), trusted and
  run in the match's own process;
- a folder holding `policy.py` (`local:NAME` with a content hash as revision), as the
  evaluation tool takes it;
- a Hub model repo (`owner/name` at a commit sha), from discovery.

Only `load_team_class` executes a policy's code; the runner calls it inside the
process that will host the team.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.errors import InvalidPolicySpecError, PolicyLoadError, PolicyNotFoundError
from arena.rules import builtin_team
from arena.schema import BUILTIN_PREFIX, LOCAL_PREFIX, is_builtin

#: The file every submission's root must hold.
POLICY_FILE = "policy.py"

#: Constructor of a team: `(team_id, env_config) -> object with act()`.
TeamFactory = Callable[[int, dict[str, Any]], Any]


@dataclass(frozen=True)
class PolicyRef:
    """Who plays a team slot, pinned to an exact revision.

    Attributes:
        policy_id (`str`): `builtin:NAME`, `local:NAME` or a Hub repo id `owner/name`.
        revision (`str`): `builtin` for built-ins, a content hash for local folders, a
            commit sha for Hub repos.
        path (`Path`, *optional*): folder holding `policy.py` (None for built-ins, and for
            Hub revisions not fetched on this machine yet).
        hub (`str`, *optional*): the endpoint of the Hub a repo's revision is fetched from,
            where a match travels to another machine (`matchmaking.nodes`); "" otherwise.
    """

    policy_id: str
    revision: str
    path: Path | None = None
    hub: str = ""

    @property
    def is_builtin(self) -> bool:
        return is_builtin(self.policy_id)

    @property
    def builtin_name(self) -> str:
        if not self.is_builtin:
            raise ValueError(f"{self.policy_id!r} is not a built-in policy.")
        return self.policy_id[len(BUILTIN_PREFIX):]

    @property
    def label(self) -> str:
        """Short name for tables: the id, with a short revision for non-built-ins."""
        return self.policy_id if self.is_builtin else f"{self.policy_id}@{self.revision[:7]}"


def builtin(name: str) -> PolicyRef:
    """The reference of built-in team `name` (case-insensitive: `Forage` is `forage`).

    Raises:
        `PolicyNotFoundError`: no built-in of that name.
    """
    return PolicyRef(policy_id=builtin_team(name).policy_id, revision="builtin")


def folder_revision(path: Path) -> str:
    """A content hash of a policy folder: same files, same revision (40 hex digits)."""
    digest = hashlib.sha1()
    for file in sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        digest.update(hashlib.sha1(file.read_bytes()).digest())
    return digest.hexdigest()


def local(path: str | Path) -> PolicyRef:
    """The reference of a policy folder, revision = content hash.

    Raises:
        `PolicyNotFoundError`: the folder or its `policy.py` does not exist.
    """
    folder = Path(path).expanduser().resolve()
    if not folder.is_dir():
        raise PolicyNotFoundError(f"Policy folder {str(path)!r} does not exist.")
    if not (folder / POLICY_FILE).is_file():
        raise PolicyNotFoundError(
            f"Policy folder {str(path)!r} has no {POLICY_FILE}: a submission's root must hold "
            "policy.py defining `class Team` (see docs/participants.md, 'Writing a policy')."
        )
    return PolicyRef(policy_id=f"{LOCAL_PREFIX}{folder.name}", revision=folder_revision(folder), path=folder)


def parse_target(text: str) -> PolicyRef:
    """A reference from the command line: `builtin:NAME` or a folder path.

    Raises:
        `InvalidPolicySpecError`: empty text.
        `PolicyNotFoundError`: no such built-in or folder.
    """
    text = text.strip()
    if not text:
        raise InvalidPolicySpecError("Empty policy: give `builtin:NAME` or the path of a folder holding policy.py.")
    if text.lower().startswith(BUILTIN_PREFIX):
        return builtin(text)
    return local(text)


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


def team_factory(ref: PolicyRef) -> TeamFactory:
    """The constructor of `ref`'s team, loading its code into this process."""
    if ref.is_builtin:
        from matchmaking.builtin import builtin_factory

        return builtin_factory(ref.builtin_name)
    if ref.path is None:
        raise PolicyNotFoundError(f"Policy {ref.policy_id} has no files: download it before playing.")
    return load_team_class(ref.path)
