"""How a match reaches a node of a Ray cluster that shares nothing with the Space.

A worker node has none of the Space's folders: not its downloads, not its map cache, not
its project checkout. So a match travels as a *portable* spec, in which every submission
is named by Hub repo id, commit sha and Hub endpoint (`PolicyRef.hub`), never by a path
(`portable`). On the node, `NodeCache.localize` fetches each revision through
`huggingface_hub` into the node's own cache, pinned to its sha, and checks every file
against the Hub's record of that commit (size, and git blob id or LFS sha256) before a
sandbox may load it; maps are generated into the node's cache too. The Arena's code
reaches the nodes as a Ray runtime environment (`runtime_env`: the project folder as
`working_dir`, shipped by Ray itself), not through the driver's `PYTHONPATH`.

The node's credentials are its own: a spec carries no token. `huggingface_hub` on the node
reads the node's `HF_TOKEN` (only needed for private repos); sandboxed teams never see it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from filelock import FileLock
from huggingface_hub import HfApi
from huggingface_hub.hf_api import RepoFile

from arena.errors import NotPortableError, SubmissionIntegrityError
from arena.policies import POLICY_FILE, PolicyRef
from matchmaking.engine.match import MatchSpec
from matchmaking.hub.discovery import download

#: The environment variable naming a node's cache (default: `<tmp>/nmmo-arena-node`).
NODE_CACHE_ENV = "NMMO_ARENA_NODE_CACHE"

#: What of the project folder is not shipped to the nodes: local state, caches, the
#: environment itself (nodes install the requirements), and what only developers run.
SHIPPED_EXCLUDES = [".git", ".venv", "data", ".cache", "**/__pycache__", ".pytest_cache", "tests", ".ci", "*.egg-info"]


def portable(spec: MatchSpec, hub: str) -> MatchSpec:
    """`spec` with every submission named by repo id, sha and `hub`, and no path of this
    machine (built-ins need nothing).

    Raises:
        `NotPortableError`: a policy is a local folder, which no other machine can fetch.
    """
    refs = []
    for ref in spec.policies:
        if ref.is_builtin:
            refs.append(ref)
        elif ref.policy_id.startswith("local:"):
            raise NotPortableError(
                f"{ref.policy_id} is a folder of this machine, which the nodes of a Ray cluster cannot fetch. "
                "Push it to the Hub (`python -m matchmaking.submit FOLDER --repo OWNER/NAME`) and play the repo, "
                "or play it on local workers (unset NMMO_ARENA_RAY)."
            )
        else:
            refs.append(PolicyRef(ref.id, path=None, hub=ref.hub or hub))
    return dataclasses.replace(spec, policies=tuple(refs), config=dataclasses.replace(spec.config, cache_dir=None))


def node_cache_root() -> Path:
    """This node's cache folder (`NMMO_ARENA_NODE_CACHE`, else under the node's temp folder)."""
    return Path(os.environ.get(NODE_CACHE_ENV) or Path(tempfile.gettempdir()) / "nmmo-arena-node")


def git_blob_id(path: Path) -> str:
    """The id git gives a file's content (`sha1("blob <size>\\0" + content)`), which the
    Hub reports for every file not stored in LFS."""
    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def integrity_problem(folder: Path, files: list[RepoFile]) -> str:
    """Why `folder` is not exactly the commit whose files the Hub lists; "" if it is."""
    if not any(f.path == POLICY_FILE for f in files):
        return f"the commit has no {POLICY_FILE}"
    for f in files:
        local = folder / f.path
        if not local.is_file():
            return f"{f.path} is missing"
        if local.stat().st_size != f.size:
            return f"{f.path} is {local.stat().st_size} bytes, the Hub says {f.size}"
        if f.lfs is not None:
            if _sha256(local) != f.lfs.sha256:
                return f"{f.path} does not match its LFS sha256"
        elif f.blob_id and git_blob_id(local) != f.blob_id:
            return f"{f.path} does not match its git blob id"
    return ""


class NodeCache:
    """The revisions and maps one node has fetched, under `root`: `submissions/OWNER/NAME/SHA`
    (each checked once, then marked) and `maps/` (`MatchConfig.cache_dir`)."""

    def __init__(self, root: Path | None = None):
        self.root = Path(root) if root is not None else node_cache_root()
        self.submissions = self.root / "submissions"

    def fetch(self, ref: PolicyRef) -> Path:
        """The checked folder of `ref`'s commit, fetched from `ref.hub` if not yet here.

        Matches on the same node share the cache: one process fetches while the others wait.

        Raises:
            `SubmissionIntegrityError`: what arrived is not the commit the Hub lists (the
                folder is removed, so the next match fetches it again).
        """
        target = self.submissions / ref.policy_id / ref.id.sha
        checked = target / ".checked"
        if checked.is_file():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(target) + ".lock"):
            if checked.is_file():
                return target
            api = HfApi(endpoint=ref.hub or None)  # the node's own token, from its environment
            download(api, ref.id, self.submissions)
            files = [f for f in api.list_repo_tree(ref.policy_id, revision=ref.id.sha, recursive=True)
                     if isinstance(f, RepoFile)]
            problem = integrity_problem(target, files)
            if problem:
                shutil.rmtree(target, ignore_errors=True)
                raise SubmissionIntegrityError(
                    f"{ref.id.policy_id}@{ref.id.short} fetched from {api.endpoint} is not the commit the Hub lists: "
                    f"{problem}. It was removed from this node's cache ({self.root}); the next match fetches it again."
                )
            checked.touch()
        return target

    def localize(self, spec: MatchSpec) -> MatchSpec:
        """`spec` as this node plays it: every submission at its folder in this cache, maps
        generated into this cache."""
        refs = tuple(ref if ref.is_builtin or ref.path is not None else
                     dataclasses.replace(ref, path=self.fetch(ref)) for ref in spec.policies)
        return dataclasses.replace(spec, policies=refs, config=dataclasses.replace(spec.config, cache_dir=self.root))


def runtime_env(project_root: Path) -> dict[str, Any]:
    """The Ray runtime environment that ships this project's code to every node."""
    return {"working_dir": str(project_root), "excludes": SHIPPED_EXCLUDES}
