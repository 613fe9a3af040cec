"""Who plays a team slot: a `PolicyRef`, a revision and where its files are.

A policy is named by a `PolicyRef`: its exact revision (`arena.revision`), and where its files are.
Three kinds exist:

- `builtin:NAME`, one of the Arena's built-in teams (`arena.rules.BUILTIN_TEAMS`),
  trusted and run in the match's own process;
- a folder holding `policy.py` (`local:NAME` with a content hash as revision), as the
  evaluation tool takes it;
- a Hub model repo (`owner/name` at a commit sha), from discovery.

A reference is a value: naming a policy never runs its code (`matchmaking.teams.loading`
does, inside the process that hosts the team).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from arena.errors import InvalidArgumentError, InvalidPolicySpecError, PolicyNotFoundError
from arena.revision import BUILTIN_PREFIX, BUILTIN_VERSION, LOCAL_PREFIX, Revision
from arena.rules import builtin_team

#: The file every submission's root must hold.
POLICY_FILE = "policy.py"


@dataclass(frozen=True)
class PolicyRef:
    """Who plays a team slot: a revision, and where its files are.

    Attributes:
        id (`Revision`): the exact version played (`arena.revision`).
        path (`Path`, *optional*): folder holding `policy.py` (None for built-ins, and for
            Hub revisions not fetched on this machine yet).
        hub (`str`, *optional*): the endpoint of the Hub a repo's revision is fetched from,
            where a match travels to another machine (`matchmaking.service.nodes`); "" otherwise.
    """

    id: Revision
    path: Path | None = None
    hub: str = ""

    @property
    def policy_id(self) -> str:
        """The policy's id, as the match record's `policy_id` column names it."""
        return self.id.policy_id

    @property
    def is_builtin(self) -> bool:
        return self.id.is_builtin

    @property
    def builtin_name(self) -> str:
        if not self.is_builtin:
            raise InvalidArgumentError(f"{self.policy_id!r} is not a built-in policy.")
        return self.policy_id[len(BUILTIN_PREFIX):]

    @property
    def label(self) -> str:
        """Short name for tables (`Revision.label`)."""
        return self.id.label


def builtin(name: str) -> PolicyRef:
    """The reference of built-in team `name` (case-insensitive: `Forage` is `forage`).

    Raises:
        `PolicyNotFoundError`: no built-in of that name.
    """
    return PolicyRef(Revision(builtin_team(name).policy_id, BUILTIN_VERSION))


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
    return PolicyRef(Revision(f"{LOCAL_PREFIX}{folder.name}", folder_revision(folder)), path=folder)


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
