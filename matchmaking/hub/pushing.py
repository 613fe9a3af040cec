"""Pushing a submission to the Hub: its files, and the model card that tags it.

Every push of a submission goes through `push_submission`: the participants' `submit`
command, the seeding of the embedded Hub with the examples and the packaged built-ins, the
tests and the benchmarks. One commit each, through `huggingface_hub`'s `upload_folder`,
leaving out what the Arena never wants uploaded (Python's caches).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml
from huggingface_hub import HfApi

#: Never uploaded: what `upload_folder` leaves out anyway, plus Python's caches.
IGNORED = ["__pycache__", "*/__pycache__", "**/__pycache__/**", "*.pyc"]

#: The model card's file name.
CARD = "README.md"


def submission_card(tags: str | Sequence[str], name: str, description: str = "") -> str:
    """A submission's model card: its tags (the Arena's among them, or discovery passes it
    by), its team name and description."""
    front = yaml.safe_dump({"tags": [tags] if isinstance(tags, str) else list(tags), "team_name": name,
                            "description": description}, sort_keys=False)
    return f"---\n{front}---\n# {name}\n\n{description}\n"


def push_submission(api: HfApi, repo_id: str, *, folder: Path | None = None,
                    files: Mapping[str, str | bytes] | None = None, card: str | None = None,
                    message: str = "submit") -> str:
    """Create model repo `repo_id` if needed and push, as one commit, `folder`'s files, then
    `files` (path -> content) and `card` (the README) over them. Returns the commit's sha
    (the head's, when nothing changed: `upload_folder` makes no empty commit)."""
    api.create_repo(repo_id, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        staging = Path(tmp)
        if folder is not None:
            shutil.copytree(folder, staging, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for path, content in {**(files or {}), **({CARD: card} if card is not None else {})}.items():
            target = staging / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content.encode() if isinstance(content, str) else content)
        return api.upload_folder(repo_id=repo_id, folder_path=staging, commit_message=message, ignore_patterns=IGNORED).oid
