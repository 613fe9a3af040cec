"""What the Arena plays and rates: one exact version of one policy, a `Revision`.

Every layer passes the same value: discovery pins a Hub repo to a commit, the status log
records what happens to it, the matchmaker plans and pairs it, a `PolicyRef` adds where its
files are, and the leaderboard rates it. The records about a revision (`Submission`, what
the Hub says of it; `RevisionState`, where it stands; `PolicyRef`, where its files are)
each hold one.

A revision's text form, its *player* name, is the rated entity of every table and of the
history's derived columns: a built-in by name (`builtin:forage`: the Arena's own teams
have one version), a submission by repo and commit (`owner/name@sha`). `Revision.player`
writes it and `Revision.parse` reads it; no other module splits one (`tests/test_layout.py`).

Only the standard library here: the sandboxed team processes import it too.
"""

from __future__ import annotations

from dataclasses import dataclass

from arena.errors import InvalidArgumentError

#: Policy id prefix of the Arena's own teams (`builtin:forage`).
BUILTIN_PREFIX = "builtin:"

#: Policy id prefix of a folder played locally by the evaluation tool (`local:my-team`).
LOCAL_PREFIX = "local:"

#: The version of every built-in team (they change only with the Arena's own version).
BUILTIN_VERSION = "builtin"


def is_builtin(policy_id: str) -> bool:
    """Whether `policy_id` names one of the Arena's own teams."""
    return policy_id.startswith(BUILTIN_PREFIX)


def owner_of(policy_id: str) -> str | None:
    """Who entered `policy_id`: its repo's namespace (the Arena's per-owner rules: limits,
    turns in the queues, one seat per pool, clones); None for a built-in, which has no owner.

    Example:
        >>> owner_of("alice/team"), owner_of("builtin:forage")
        ('alice', None)
    """
    return None if is_builtin(policy_id) else policy_id.partition("/")[0]


def player_id(policy_id: str, sha: str) -> str:
    """The player name of a revision given as two columns (`Revision.player`), for the
    column-at-a-time readers that never build a `Revision` per row."""
    return policy_id if is_builtin(policy_id) else f"{policy_id}@{sha}"


@dataclass(frozen=True, order=True)
class Revision:
    """One exact version of one policy: the unit the Arena discovers, validates, plays and rates.

    Attributes:
        policy_id (`str`): a Hub repo id `owner/name`, `builtin:NAME` or `local:NAME`.
        sha (`str`): the exact version: a commit sha for a Hub repo, a content hash for a
            local folder (`arena.policies.folder_revision`), `builtin` for a built-in.
    """

    policy_id: str
    sha: str

    def __post_init__(self) -> None:
        if not self.policy_id or not self.sha or "@" in self.policy_id:
            raise InvalidArgumentError(
                f"A revision needs a policy id without '@' and a version, got {self.policy_id!r} at {self.sha!r}."
            )

    @classmethod
    def parse(cls, player: str) -> Revision:
        """The revision a player name stands for (`owner/name@sha`, or `builtin:NAME`).

        Raises:
            `InvalidArgumentError`: neither form.
        """
        if is_builtin(player):
            return cls(player, BUILTIN_VERSION)
        policy_id, at, sha = player.partition("@")
        if not at:
            raise InvalidArgumentError(f"{player!r} names no revision: write owner/name@sha, or builtin:NAME.")
        return cls(policy_id, sha)

    @property
    def is_builtin(self) -> bool:
        return is_builtin(self.policy_id)

    @property
    def player(self) -> str:
        """The rated entity's name: a built-in by name, anything else as `policy_id@sha`."""
        return player_id(self.policy_id, self.sha)

    @property
    def short(self) -> str:
        """The version shortened for logs and messages (12 characters)."""
        return self.sha[:12]

    @property
    def label(self) -> str:
        """Short name for tables: the id, with 7 characters of its version for non-built-ins."""
        return self.policy_id if self.is_builtin else f"{self.policy_id}@{self.sha[:7]}"

    def __str__(self) -> str:
        return self.player
