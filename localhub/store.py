"""The storage behind the local Hub: repos, commits and file contents on disk.

A small content-addressed store, laid out like a bare git repository's essentials:

    ROOT/objects/ab/<blob sha1>              file contents, shared by every repo
    ROOT/{models,datasets}/OWNER/NAME/
        repo.json                            id, type, creation time
        refs.json                            {"main": "<sha>", "refs/pr/1": "<sha>", ...}
        commits/<commit sha>.json            parents, message, date, and the full file tree
        discussions/<num>.json               a discussion or pull request and its events
    ROOT/webhooks.json                       registered webhooks (`localhub.webhooks`)

A commit records the whole tree (path -> blob id and size), so any revision can be read
without walking history. Blob ids are git's (`sha1("blob <size>\\0" + content)`), which is
what the Hub reports as a file's `oid` and what `huggingface_hub` checks downloads
against. Every file is written to a temporary name and renamed into place, and a branch
moves only after its commit is on disk: a crash leaves the last complete commit.

Pull requests are the Hub's: a discussion flagged as a pull request, numbered with the
repo's discussions, whose changes live on the ref `refs/pr/<num>` (commits go there like
to a branch, files are read there like at any revision); merging it makes its changes
main's (a fast-forward when main has not moved, else a merge commit; the same file
changed on both sides is a conflict).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from html import escape as html_escape
from pathlib import Path
from typing import Any

import yaml

from arena.errors import ArenaError
from arena.files import write_atomically
from arena.records import Record

REPO_TYPES = ("model", "dataset")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_SHA = re.compile(r"^[0-9a-f]{40}$")

#: Where a pull request's changes live: `refs/pr/<num>`, as on the Hub.
PR_REF_PREFIX = "refs/pr/"

#: What a discussion or pull request can be: drafts and merges are pull requests' only.
DISCUSSION_STATUSES = ("open", "closed", "merged", "draft")


class HubError(ArenaError):
    """A request the store cannot satisfy; `code` is the Hub's `X-Error-Code`."""

    status = 400
    code = ""


class RepoNotFound(HubError):
    status, code = 404, "RepoNotFound"


class RevisionNotFound(HubError):
    status, code = 404, "RevisionNotFound"


class EntryNotFound(HubError):
    status, code = 404, "EntryNotFound"


class RepoExists(HubError):
    status, code = 409, ""


class StaleParent(HubError):
    status, code = 412, ""


class BadRequest(HubError):
    status, code = 400, ""


class DiscussionNotFound(HubError):
    status, code = 404, ""


class MergeConflict(HubError):
    status, code = 409, ""


def git_blob_id(content: bytes) -> str:
    """The id git (and the Hub) gives a file's content."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def object_id(kind: str, name: str) -> str:
    """A stable 24-hex id for a repo or user, shaped like the Hub's own (MongoDB) ids."""
    return hashlib.sha1(f"{kind}/{name}".encode()).hexdigest()[:24]


def now_iso() -> str:
    """UTC now in the only date format `huggingface_hub` parses (`...Z`)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


def card_metadata(readme: bytes) -> dict[str, Any]:
    """The YAML front matter of a README (model card), or {} if it has none or it is broken."""
    text = readme.decode("utf-8", errors="replace")
    match = re.match(r"^---\s*\n(.*?)\n---\s*(\n|$)", text, re.S)
    if not match:
        return {}
    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class Commit:
    """One commit of a repo: its id, parents, message, date and full file tree."""

    id: str
    parents: tuple[str, ...]
    title: str
    message: str
    date: str
    author: str
    files: Mapping[str, Mapping[str, Any]]  # path -> {"oid", "size"}
    card: Mapping[str, Any] = field(default_factory=dict)

    @property
    def tags(self) -> list[str]:
        tags = self.card.get("tags") or []
        return [str(t) for t in tags] if isinstance(tags, list) else [str(tags)]


@dataclass(frozen=True)
class Discussion(Record):
    """A discussion or pull request of one repo, with its events in order.

    `events` are the Hub's own event records (`comment`, `commit`, `status-change`), as
    `huggingface_hub.community.deserialize_event` reads them. A pull request's changes are
    on `refs/pr/<num>`, from `base_commit` of branch `base`.
    """

    num: int
    title: str
    author: str
    created_at: str
    is_pull_request: bool
    status: str
    events: tuple[Mapping[str, Any], ...] = ()
    base: str | None = None
    base_commit: str | None = None
    merge_commit: str | None = None

    @property
    def ref(self) -> str | None:
        return f"{PR_REF_PREFIX}{self.num}" if self.is_pull_request else None


@dataclass(frozen=True)
class Repo:
    """A repo's identity (`owner/name`, type) and where it lives."""

    repo_type: str
    repo_id: str
    path: Path
    created_at: str

    @property
    def uid(self) -> str:
        """The repo's id in API answers and webhook payloads (`_id`, `repo.id`)."""
        return object_id(self.repo_type, self.repo_id)


class HubStore:
    """Repos, commits and blobs under one folder. Safe for the threads of one server."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    # -- repos ---------------------------------------------------------------------------
    def _repo_dir(self, repo_type: str, repo_id: str) -> Path:
        if repo_type not in REPO_TYPES:
            raise BadRequest(f"Unknown repo type {repo_type!r}; use one of {', '.join(REPO_TYPES)}.")
        parts = repo_id.split("/")
        if len(parts) != 2 or not all(_NAME.match(p) for p in parts):
            raise BadRequest(f"Invalid repo id {repo_id!r}: expected 'owner/name' of letters, digits, '.', '_', '-'.")
        return self.root / f"{repo_type}s" / parts[0] / parts[1]

    def _lock(self, key: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(key, threading.Lock())

    def create_repo(self, repo_type: str, repo_id: str) -> Repo:
        """Create an empty repo with an initial commit; `RepoExists` if it is there."""
        path = self._repo_dir(repo_type, repo_id)
        with self._lock(str(path)):
            if (path / "repo.json").exists():
                raise RepoExists(f"You already created this {repo_type} repo")
            created = now_iso()
            write_atomically(path / "repo.json", json.dumps({"id": repo_id, "type": repo_type, "createdAt": created}).encode())
            first = self._write_commit(path, parents=(), title="initial commit", message="", author="", files={}, card={})
            write_atomically(path / "refs.json", json.dumps({"main": first.id}).encode())
        return Repo(repo_type, repo_id, path, created)

    def repo(self, repo_type: str, repo_id: str) -> Repo:
        path = self._repo_dir(repo_type, repo_id)
        try:
            info = json.loads((path / "repo.json").read_text())
        except FileNotFoundError:
            raise RepoNotFound(f"Repository Not Found for url: {repo_type}s/{repo_id}.") from None
        return Repo(repo_type, repo_id, path, info["createdAt"])

    def repos(self, repo_type: str) -> Iterable[Repo]:
        base = self.root / f"{repo_type}s"
        if not base.is_dir():
            return
        for owner in sorted(p for p in base.iterdir() if p.is_dir()):
            for name in sorted(p for p in owner.iterdir() if p.is_dir()):
                if (name / "repo.json").exists():
                    yield self.repo(repo_type, f"{owner.name}/{name.name}")

    # -- revisions -----------------------------------------------------------------------
    def refs(self, repo: Repo) -> dict[str, str]:
        return json.loads((repo.path / "refs.json").read_text())

    def commit(self, repo: Repo, revision: str = "main") -> Commit:
        """The commit a branch name or commit sha names."""
        sha = self.refs(repo).get(revision)
        if sha is None:
            if not _SHA.match(revision) or not (repo.path / "commits" / f"{revision}.json").exists():
                raise RevisionNotFound(f"Invalid rev id: {revision}")
            sha = revision
        data = json.loads((repo.path / "commits" / f"{sha}.json").read_text())
        return Commit(
            id=sha,
            parents=tuple(data["parents"]),
            title=data["title"],
            message=data["message"],
            date=data["date"],
            author=data["author"],
            files=data["files"],
            card=data.get("card", {}),
        )

    def history(self, repo: Repo, revision: str = "main") -> list[Commit]:
        """Commits reachable from `revision`, newest first (first parents only)."""
        commits = [self.commit(repo, revision)]
        while commits[-1].parents:
            commits.append(self.commit(repo, commits[-1].parents[0]))
        return commits

    # -- contents ------------------------------------------------------------------------
    def blob_path(self, oid: str) -> Path:
        return self.root / "objects" / oid[:2] / oid

    def read(self, repo: Repo, revision: str, path: str) -> tuple[Commit, Mapping[str, Any], Path]:
        """(commit, entry, file on disk) of `path` at `revision`; `EntryNotFound` if absent."""
        commit = self.commit(repo, revision)
        entry = commit.files.get(path)
        if entry is None:
            raise EntryNotFound(f"{path} does not exist at revision {commit.id}")
        return commit, entry, self.blob_path(entry["oid"])

    def put_blob(self, content: bytes) -> str:
        oid = git_blob_id(content)
        path = self.blob_path(oid)
        if not path.exists():
            write_atomically(path, content)
        return oid

    # -- commits -------------------------------------------------------------------------
    def commit_changes(
        self,
        repo: Repo,
        *,
        branch: str,
        title: str,
        message: str,
        author: str,
        additions: Mapping[str, bytes],
        deletions: Iterable[str] = (),
        deleted_folders: Iterable[str] = (),
        parent: str | None = None,
    ) -> Commit:
        """Apply file additions and deletions on top of `branch` as one new commit.

        Raises:
            `StaleParent`: `parent` was given and the branch has moved since.
        """
        with self._lock(str(repo.path)):
            refs = self.refs(repo)
            if branch not in refs:
                raise RevisionNotFound(f"Invalid rev id: {branch}")
            head = self.commit(repo, refs[branch])
            if parent and not head.id.startswith(parent.lower()):
                raise StaleParent("A commit has happened since. Please refresh and try again.")
            files = dict(head.files)
            for path in deletions:
                if files.pop(path, None) is None:
                    raise EntryNotFound(f"Cannot delete {path}: it does not exist")
            for folder in deleted_folders:
                prefix = folder.rstrip("/") + "/"
                for path in [p for p in files if p.startswith(prefix)]:
                    del files[path]
            for path, content in additions.items():
                _check_path(path)
                files[path] = {"oid": self.put_blob(content), "size": len(content)}
            card = dict(head.card)
            if "README.md" in additions:
                card = card_metadata(additions["README.md"])
            elif "README.md" not in files:
                card = {}
            commit = self._write_commit(repo.path, parents=(head.id,), title=title, message=message, author=author, files=files, card=card)
            refs[branch] = commit.id
            write_atomically(repo.path / "refs.json", json.dumps(refs).encode())
            if branch.startswith(PR_REF_PREFIX):
                self._add_commit_event(repo, int(branch[len(PR_REF_PREFIX):]), commit)
            return commit

    def _write_commit(self, path: Path, *, parents: tuple[str, ...], title: str, message: str, author: str, files: Mapping[str, Any], card: Mapping[str, Any]) -> Commit:
        date = now_iso()
        data = {"parents": list(parents), "title": title, "message": message, "date": date, "author": author, "files": dict(files), "card": dict(card)}
        body = json.dumps(data, sort_keys=True).encode()
        sha = hashlib.sha1(b"commit %d\0" % len(body) + body).hexdigest()
        write_atomically(path / "commits" / f"{sha}.json", body)
        return Commit(id=sha, parents=parents, title=title, message=message, date=date, author=author, files=dict(files), card=dict(card))


    # -- discussions and pull requests -------------------------------------------------
    def discussions(self, repo: Repo) -> list[Discussion]:
        """Every discussion and pull request of the repo, newest first."""
        folder = repo.path / "discussions"
        if not folder.is_dir():
            return []
        found = [self._read_discussion(path) for path in folder.glob("*.json")]
        return sorted(found, key=lambda d: d.num, reverse=True)

    def discussion(self, repo: Repo, num: int) -> Discussion:
        path = repo.path / "discussions" / f"{num}.json"
        if not path.exists():
            raise DiscussionNotFound(f"Discussion {num} not found on {repo.repo_id}.")
        return self._read_discussion(path)

    def create_discussion(
        self, repo: Repo, *, title: str, description: str, author: str, pull_request: bool,
        status: str | None = None, base: str = "main", base_commit: str | None = None,
    ) -> Discussion:
        """Open a discussion, or a pull request from `base` (at `base_commit`, default its
        head) whose ref starts there. A pull request opened empty is a draft, as on the Hub."""
        title = title.strip()
        if not 3 <= len(title) <= 200:
            raise BadRequest("The title must be 3 to 200 characters long.")
        with self._lock(str(repo.path)):
            numbers = [d.num for d in self.discussions(repo)]
            num = max(numbers, default=0) + 1
            start = None
            if pull_request:
                refs = self.refs(repo)
                if base not in refs:
                    raise RevisionNotFound(f"Invalid rev id: {base}")
                start = self.commit(repo, base_commit).id if base_commit else refs[base]
                refs[f"{PR_REF_PREFIX}{num}"] = start
                write_atomically(repo.path / "refs.json", json.dumps(refs).encode())
            discussion = Discussion(
                num=num, title=title, author=author, created_at=now_iso(), is_pull_request=pull_request,
                status=status or ("draft" if pull_request else "open"),
                events=(_event("comment", author, {"edited": False, "hidden": False, "latest": {"raw": description, "html": html_escape(description), "updatedAt": now_iso(), "author": {"name": author}}}),),
                base=base if pull_request else None, base_commit=start,
            )
            self._write_discussion(repo, discussion)
            return discussion

    def comment(self, repo: Repo, num: int, *, author: str, text: str) -> Mapping[str, Any]:
        """Add a comment; returns its event."""
        if not text.strip():
            raise BadRequest("A comment cannot be empty.")
        event = _event("comment", author, {"edited": False, "hidden": False, "latest": {"raw": text, "html": html_escape(text), "updatedAt": now_iso(), "author": {"name": author}}})
        with self._lock(str(repo.path)):
            self._append_event(repo, num, event)
        return event

    def change_status(self, repo: Repo, num: int, *, status: str, author: str, comment: str = "") -> Mapping[str, Any]:
        """Close or reopen a discussion or pull request (a merged one stays merged)."""
        if status not in ("open", "closed"):
            raise BadRequest(f"Invalid status {status!r}: a discussion can be set 'open' or 'closed'.")
        with self._lock(str(repo.path)):
            current = self.discussion(repo, num)
            if current.status == "merged":
                raise BadRequest("This pull request is merged: its status cannot change.")
            if comment.strip():
                self._append_event(repo, num, _event("comment", author, {"edited": False, "hidden": False, "latest": {"raw": comment, "html": html_escape(comment), "updatedAt": now_iso(), "author": {"name": author}}}))
            event = _event("status-change", author, {"status": status})
            self._append_event(repo, num, event, status=status)
        return event

    def merge(self, repo: Repo, num: int, *, author: str, comment: str = "") -> Commit:
        """Merge a pull request into its base branch; returns the base's new head.

        Raises:
            `BadRequest`: not an open pull request.
            `MergeConflict`: a file it changes was changed differently on the base since.
        """
        with self._lock(str(repo.path)):
            pr = self.discussion(repo, num)
            if not pr.is_pull_request or pr.status not in ("open", "draft"):
                raise BadRequest(f"Discussion {num} is not an open pull request (status {pr.status}).")
            refs = self.refs(repo)
            ref, base = pull_ref(pr), _pull_base(pr)
            head = self.commit(repo, refs[ref])
            target = self.commit(repo, refs[base])
            if target.id == pr.base_commit or target.id == head.id:  # the base has not moved: fast-forward
                merged = head
            else:
                files = self._merged_files(repo, pr, head, target)
                readme = files.get("README.md")
                card = card_metadata(self.blob_path(readme["oid"]).read_bytes()) if readme else {}
                merged = self._write_commit(repo.path, parents=(target.id, head.id), title=f"Merge {pr.ref}: {pr.title}",
                                            message=comment, author=author, files=files, card=card)
            refs[base] = merged.id
            write_atomically(repo.path / "refs.json", json.dumps(refs).encode())
            if comment.strip():
                self._append_event(repo, num, _event("comment", author, {"edited": False, "hidden": False, "latest": {"raw": comment, "html": html_escape(comment), "updatedAt": now_iso(), "author": {"name": author}}}))
            self._append_event(repo, num, _event("status-change", author, {"status": "merged"}), status="merged", merge_commit=merged.id)
            return merged

    def conflicts(self, repo: Repo, pr: Discussion) -> list[str]:
        """Files a pull request and its base branch both changed, differently, since it started."""
        if not pr.is_pull_request or pr.status == "merged":
            return []
        refs = self.refs(repo)
        base = self.commit(repo, pull_base_commit(pr)).files
        head, target = self.commit(repo, refs[pull_ref(pr)]).files, self.commit(repo, refs[_pull_base(pr)]).files
        changed = {p for p in set(base) | set(head) if base.get(p) != head.get(p)}
        return sorted(p for p in changed if base.get(p) != target.get(p) and head.get(p) != target.get(p))

    def _merged_files(self, repo: Repo, pr: Discussion, head: Commit, target: Commit) -> dict[str, Any]:
        clashes = self.conflicts(repo, pr)
        if clashes:
            raise MergeConflict(f"Cannot merge {pr.ref}: conflicting changes in {', '.join(clashes)}. Update the pull request from {pr.base} first.")
        base = self.commit(repo, pull_base_commit(pr)).files
        files = dict(target.files)
        for path in set(base) | set(head.files):
            if base.get(path) == head.files.get(path):
                continue
            if path in head.files:
                files[path] = head.files[path]
            else:
                files.pop(path, None)
        return files

    def _add_commit_event(self, repo: Repo, num: int, commit: Commit) -> None:
        """A commit pushed to `refs/pr/<num>` shows in that pull request (caller holds the lock)."""
        try:
            self._append_event(repo, num, _event("commit", commit.author, {"subject": commit.title, "oid": commit.id}))
        except DiscussionNotFound:
            pass  # a ref named like a pull request's without its discussion: nothing to show

    def _append_event(self, repo: Repo, num: int, event: Mapping[str, Any], **changes: Any) -> None:
        current = self.discussion(repo, num)
        self._write_discussion(repo, replace(current, events=(*current.events, event), **changes))

    def _write_discussion(self, repo: Repo, discussion: Discussion) -> None:
        write_atomically(repo.path / "discussions" / f"{discussion.num}.json",
                         json.dumps(discussion.to_dict(), sort_keys=True).encode())

    @staticmethod
    def _read_discussion(path: Path) -> Discussion:
        return Discussion.from_dict(json.loads(path.read_text()))


def _event(kind: str, author: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """One event of a discussion, in the Hub's shape."""
    return {"id": secrets.token_hex(12), "type": kind, "createdAt": now_iso(), "author": {"name": author}, "data": dict(data)}


def _check_path(path: str) -> None:
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise BadRequest(f"Invalid path in repo: {path!r}")


def pull_ref(pr: Discussion) -> str:
    """A pull request's ref (`refs/pr/N`); a discussion has none."""
    if pr.ref is None:
        raise BadRequest(f"Discussion {pr.num} is not a pull request.")
    return pr.ref


def _pull_base(pr: Discussion) -> str:
    if pr.base is None:
        raise BadRequest(f"Discussion {pr.num} is not a pull request (it has no base branch).")
    return pr.base


def pull_base_commit(pr: Discussion) -> str:
    if pr.base_commit is None:
        raise BadRequest(f"Discussion {pr.num} is not a pull request (it has no base commit).")
    return pr.base_commit
