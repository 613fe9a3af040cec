"""Finding submissions on the Hub, checking their format, and downloading them.

Everything goes through `huggingface_hub` (the same code path for huggingface.co and the
embedded local Hub): `list_models(filter=TAG)` finds repos tagged for the Arena (or a
webhook names one repo that was pushed: `discover_repo`), each is pinned to the commit sha
seen at that moment, `model_info(files_metadata=True)` gives its files and sizes so that
oversized or malformed repos are rejected *before* anything is downloaded, and
`snapshot_download(revision=sha)` fetches exactly that commit.

The format and size checks are functions of the (path, size) list alone, so that a
participant's folder is checked by the same code before it is pushed
(`matchmaking.submit`) as the repo is after.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from huggingface_hub import HfApi, snapshot_download
from huggingface_hub.errors import RepositoryNotFoundError

from arena.lifecycle import SubmissionInfo
from arena.policies import POLICY_FILE
from arena.revision import Revision
from arena.untrusted import DESCRIPTION_CHARS, NAME_CHARS, bounded

#: Model-card keys read for display.
_CARD_NAME_KEYS = ("team_name", "team", "model_name")


@dataclass(frozen=True)
class Submission:
    """One revision of a submission, as seen on the Hub."""

    id: Revision
    """The repo, pinned to the commit seen."""
    author: str
    last_modified: str
    files: tuple[tuple[str, int], ...] = ()
    """(path, size in bytes) of every file at that commit."""
    team_name: str = ""
    description: str = ""
    card: dict[str, Any] = field(default_factory=dict)
    content: str = ""
    """Digest of the policy's files (`policy_content`): same digest, same policy."""

    @property
    def size_bytes(self) -> int:
        return sum(size for _, size in self.files)

    @property
    def display_name(self) -> str:
        return self.team_name or self.id.policy_id

    def info(self) -> SubmissionInfo:
        """What the status log keeps of it."""
        return SubmissionInfo(author=self.author, team_name=self.display_name, description=self.description,
                              last_modified=self.last_modified, size_mb=round(self.size_bytes / 2**20, 3), files=self.files,
                              content=self.content)


def discover(api: HfApi, *, tag: str) -> list[Submission]:
    """Every model repo tagged `tag`, pinned to its current commit.

    Args:
        api (`HfApi`): client pointed at the Hub (or the local Hub).
        tag (`str`): the Arena's submission tag.

    Returns:
        `list[Submission]`: sorted by repo id.
    """
    found = []
    for model in api.list_models(filter=tag):
        info = api.model_info(model.id, revision=model.sha, files_metadata=True) if model.sha else api.model_info(model.id, files_metadata=True)
        found.append(_submission(info))
    return sorted(found, key=lambda s: s.id)


def discover_repo(api: HfApi, repo_id: str, *, tag: str) -> Submission | None:
    """One model repo, pinned to its current commit, if it exists and is tagged `tag`
    (what a webhook's push needs: no listing of every submission)."""
    try:
        info = api.model_info(repo_id, files_metadata=True)
    except RepositoryNotFoundError:
        return None
    return _submission(info) if tag in (info.tags or []) else None


#: The card metadata that keeps a repo's revision active past its owner's limit
#: (`nmmo_arena: {keep: true}`; docs/rules.md, "Fair play"; read by `kept_active`).
KEEP_KEY = ("nmmo_arena", "keep")


def kept_active(api: HfApi, repo_id: str) -> bool:
    """Whether the repo's card, as it is now, asks the Arena to keep its revision active when
    a newer one of the same owner would retire it. A card edit needs no new validation, so
    it is read from the Hub when the question arises. Raises what the Hub raises."""
    info = api.model_info(repo_id)
    card = dict(info.card_data.to_dict()) if info.card_data is not None else {}
    section = card.get(KEEP_KEY[0])
    return isinstance(section, dict) and section.get(KEEP_KEY[1]) is True


#: The model card: a commit that changes only it (an edited description, or the Arena's own
#: results pull request merged) leaves the policy as it was.
CARD_FILE = "README.md"


def policy_content(blobs: Iterable[tuple[str, str | None]]) -> str:
    """A digest of a commit's policy files, from (path, blob id) pairs: every file but the
    model card. "" if any blob id is unknown (then no two commits are taken as the same)."""
    pairs = sorted((path, blob) for path, blob in blobs if path != CARD_FILE)
    if any(not blob for _, blob in pairs):
        return ""
    return hashlib.sha256(json.dumps(pairs).encode()).hexdigest()[:32]


def _submission(info: Any) -> Submission:
    """A `Submission` from the Hub's `ModelInfo` of one commit."""
    card = dict(info.card_data.to_dict()) if info.card_data is not None else {}
    name = bounded(next((str(card[k]) for k in _CARD_NAME_KEYS if card.get(k)), ""), NAME_CHARS, one_line=True)
    return Submission(
        id=Revision(info.id, str(info.sha)),
        author=info.author or info.id.split("/")[0],
        last_modified=info.last_modified.isoformat() if info.last_modified else "",
        files=tuple(sorted((s.rfilename, int(s.size or 0)) for s in (info.siblings or []))),
        team_name=name,
        description=bounded(str(card.get("description", "")), DESCRIPTION_CHARS),
        card=card,
        content=policy_content((s.rfilename, getattr(s, "blob_id", None)) for s in (info.siblings or [])),
    )


def format_problem(files: Iterable[tuple[str, int]]) -> str:
    """Why a repo (or folder) with these (path, size) files cannot be played, in words that
    say what to fix; "" if fine."""
    names = {path for path, _ in files}
    if POLICY_FILE not in names:
        nested = sorted(p for p in names if p.endswith("/" + POLICY_FILE))
        hint = f" (found {nested[0]}: move it to the root)" if nested else ""
        return (
            f"No {POLICY_FILE} at the root of the repository{hint}. A submission's root must hold "
            f"{POLICY_FILE} defining `class Team` with __init__(self, team_id, env_config) and act(self, observations)."
        )
    return ""


def size_problem(files: Iterable[tuple[str, int]], max_mb: float) -> str:
    """Why a repo (or folder) with these (path, size) files is too large for this Space (its
    own limit, `NMMO_ARENA_MAX_MB`); "" if not."""
    files = list(files)
    size_mb = sum(size for _, size in files) / 2**20
    if size_mb > max_mb:
        largest = max(files, key=lambda f: f[1])
        return (
            f"The repository is {size_mb:.1f} MB, over the {max_mb:g} MB limit for submissions "
            f"(largest file: {largest[0]}, {largest[1] / 2**20:.1f} MB). Remove what the policy does not load."
        )
    return ""


def download(api: HfApi, revision: Revision, root: Path) -> Path:
    """Fetch a Hub revision's files into `root/OWNER/NAME/SHA` (reused if already complete)."""
    target = root / revision.policy_id / revision.sha
    complete = target / ".complete"
    if complete.exists():
        return target
    if target.exists():
        shutil.rmtree(target)  # a download cut short earlier
    snapshot_download(
        revision.policy_id,
        revision=revision.sha,
        local_dir=target,
        endpoint=api.endpoint,
        token=api.token,
    )
    complete.touch()
    return target
