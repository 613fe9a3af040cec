"""A local server speaking the Hugging Face Hub's HTTP API, for the unmodified client.

The Arena's embedded default: with no Hub account and no network, `huggingface_hub`
(`HfApi(endpoint=...)`, `snapshot_download`, `CommitScheduler`, `HfFileSystem`) and
`datasets` talk to this server exactly as they would to huggingface.co, the way MinIO
stands in for S3. It implements what those clients use (see the route table in
`handle`), answers errors with the Hub's `X-Error-Code` headers (the client maps errors by
them), and stores everything in a `HubStore` on disk, so it survives restarts.

Uploads are always "regular" (inline in the commit), so neither Xet nor LFS is needed.
Writes need a token when one is configured; reads are open.

Discussions and pull requests (`/api/{models,datasets}/OWNER/NAME/discussions...`) are
served for `HfApi.get_repo_discussions`, `get_discussion_details`, `create_discussion`,
`create_pull_request`, `comment_discussion`, `change_discussion_status` and
`merge_pull_request`; a commit with `create_pr=1` opens a pull request and answers its
URL, and `refs/pr/<num>` is a revision like any other (commits, downloads, repo info).

Webhooks (the settings API and the payloads sent on every commit) are `localhub.webhooks`.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from arena.errors import HubStartError
from localhub import evals
from localhub.discussions import DiscussionRoutes
from localhub.store import (
    PR_REF_PREFIX,
    BadRequest,
    Commit,
    EntryNotFound,
    HubError,
    HubStore,
    Repo,
    RepoExists,
    card_metadata,
    pull_ref,
)
from localhub.webhooks import Webhooks

_TYPES = {"models": "model", "datasets": "dataset"}
PAGE_SIZE = 1000


def _error(exc: HubError, **headers: str) -> JSONResponse:
    if exc.code:
        headers["X-Error-Code"] = exc.code
    headers["X-Error-Message"] = str(exc)
    return JSONResponse({"error": str(exc)}, status_code=exc.status, headers=headers)


class LocalHubApp(DiscussionRoutes):
    """The ASGI application: one catch-all route, dispatched on the raw path (the client
    sends revisions and folder paths with `/` encoded as `%2F`)."""

    def __init__(self, store: HubStore, *, write_token: str | None = None, page_size: int = PAGE_SIZE,
                 webhooks: Webhooks | None = None):
        self.store = store
        self.write_token = write_token
        self.page_size = page_size
        self.webhooks = webhooks or Webhooks(store.root)
        self.app = Starlette(routes=[Route("/{path:path}", self.handle, methods=["GET", "HEAD", "POST", "PUT", "DELETE"])])

    async def __call__(self, scope, receive, send):
        await self.app(scope, receive, send)

    # -- dispatch ------------------------------------------------------------------------
    async def handle(self, request: Request) -> Response:
        parts = request.scope.get("raw_path", request.url.path.encode()).decode().split("?")[0].strip("/").split("/")
        try:
            return await self._route(request, parts)
        except HubError as exc:
            return _error(exc)

    async def _route(self, request: Request, parts: list[str]) -> Response:
        method = request.method
        if parts[:1] == ["api"]:
            rest = parts[1:]
            if rest == ["repos", "create"] and method == "POST":
                return await self.create_repo(request)
            if rest == ["validate-yaml"] and method == "POST":
                return JSONResponse({"errors": [], "warnings": []})
            if rest == ["whoami-v2"]:
                return self.whoami(request)
            if rest[:2] == ["settings", "webhooks"]:  # webhooks reveal their secrets: token only
                self._authorize(request)
                return await self.webhooks.handle(request, [unquote(p) for p in rest[2:]])
            if len(rest) == 1 and rest[0] in _TYPES and method == "GET":
                return self.list_repos(request, _TYPES[rest[0]])
            if len(rest) >= 3 and rest[0] in _TYPES:
                repo = self.store.repo(_TYPES[rest[0]], f"{unquote(rest[1])}/{unquote(rest[2])}")
                return await self._repo_route(request, repo, rest[3:])
            return _error(_NotFound(f"No API route {request.url.path}"))
        # file downloads: /[datasets/]owner/name/resolve/rev/path...
        kind = "model"
        if parts[:1] == ["datasets"]:
            kind, parts = "dataset", parts[1:]
        if len(parts) >= 5 and parts[2] == "resolve" and method in ("GET", "HEAD"):
            repo = self.store.repo(kind, f"{unquote(parts[0])}/{unquote(parts[1])}")
            return self.resolve(request, repo, unquote(parts[3]), unquote("/".join(parts[4:])))
        if len(parts) == 2 and method == "GET":  # a repo's page, where the leaderboard links
            return self.repo_page(request, self.store.repo(kind, f"{unquote(parts[0])}/{unquote(parts[1])}"))
        return _error(_NotFound(f"Not found: {request.url.path}"))

    def repo_page(self, request: Request, repo: Repo) -> Response:
        """A minimal human page for a repo: its latest commit, files and model card."""
        commit = self.store.commit(repo)
        prefix = self._url_prefix(request, repo)
        rows = "".join(
            f'<li><a href="{prefix}/resolve/{commit.id}/{html.escape(path)}">{html.escape(path)}</a> ({entry["size"]} bytes)</li>'
            for path, entry in sorted(commit.files.items())
        )
        readme = ""
        if "README.md" in commit.files:
            readme = html.escape(self.store.blob_path(commit.files["README.md"]["oid"]).read_text(errors="replace"))
        body = (
            f"<!doctype html><title>{html.escape(repo.repo_id)}</title><h1>{html.escape(repo.repo_id)}</h1>"
            f"<p>{repo.repo_type} repo on the Arena's local Hub; commit <code>{commit.id}</code> ({commit.date}): "
            f"{html.escape(commit.title)}</p><ul>{rows}</ul><pre>{readme}</pre>"
        )
        return Response(body, media_type="text/html")

    async def _repo_route(self, request: Request, repo: Repo, rest: list[str]) -> Response:
        method = request.method
        if not rest and method == "GET":
            return self.repo_info(request, repo, "main")
        head, args = rest[0], [unquote(p) for p in rest[1:]]
        if head == "leaderboard" and not args and method == "GET" and repo.repo_type == "dataset":
            return self.leaderboard(request, repo)
        if head == "revision" and args and method == "GET":
            return self.repo_info(request, repo, args[0])
        if head == "tree" and args and method == "GET":
            return self.tree(request, repo, args[0], "/".join(args[1:]))
        if head == "paths-info" and args and method == "POST":
            return await self.paths_info(request, repo, args[0])
        if head == "preupload" and args and method == "POST":
            self._authorize(request)
            return await self.preupload(request, repo, args[0])
        if head == "commit" and args and method == "POST":
            self._authorize(request)
            return await self.create_commit(request, repo, args[0])
        if head == "commits" and args and method == "GET":
            return self.list_commits(request, repo, args[0])
        if head == "refs" and method == "GET":
            refs = self.store.refs(repo)
            return JSONResponse(
                {
                    "branches": [{"name": n, "ref": f"refs/heads/{n}", "targetCommit": sha} for n, sha in refs.items()
                                 if not n.startswith(PR_REF_PREFIX)],
                    "converts": [],
                    "tags": [],
                    "pullRequests": [{"name": n[len("refs/"):], "ref": n, "targetCommit": sha} for n, sha in refs.items()
                                     if n.startswith(PR_REF_PREFIX)],
                }
            )
        if head == "discussions":
            return await self._discussion_route(request, repo, args)
        return _error(_NotFound(f"No API route {request.url.path}"))

    # -- helpers -------------------------------------------------------------------------
    def _authorize(self, request: Request) -> str:
        """The caller's name; raises 401 when a token is configured and not presented."""
        header = request.headers.get("authorization", "")
        token = header[7:] if header.lower().startswith("bearer ") else ""
        if self.write_token is not None and token != self.write_token:
            raise _Unauthorized("Invalid credentials in Authorization header: writing needs the Space's token.")
        return "arena" if token else "anonymous"

    @staticmethod
    def _base(request: Request) -> str:
        return str(request.base_url).rstrip("/")

    def _url_prefix(self, request: Request, repo: Repo) -> str:
        return f"{self._base(request)}/{'datasets/' if repo.repo_type == 'dataset' else ''}{repo.repo_id}"

    def _repo_json(self, repo: Repo, commit: Commit, *, blobs: bool) -> dict[str, Any]:
        siblings = []
        for path, entry in sorted(commit.files.items()):
            item: dict[str, Any] = {"rfilename": path}
            if blobs:
                item.update(size=entry["size"], blobId=entry["oid"])
            siblings.append(item)
        data = {
            "_id": repo.uid,
            "id": repo.repo_id,
            "author": repo.repo_id.split("/")[0],
            "sha": commit.id,
            "lastModified": commit.date,
            "createdAt": repo.created_at,
            "private": False,
            "gated": False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": commit.tags,
            "siblings": siblings,
        }
        if commit.card:
            data["cardData"] = dict(commit.card)
        if repo.repo_type == "model":
            data["modelId"] = repo.repo_id
        return data

    def _paginate(self, request: Request, items: list[Any], limit: int | None = None) -> JSONResponse:
        query = parse_qs(request.url.query)
        start = int(query.pop("cursor", ["0"])[0])
        size = min(self.page_size, limit) if limit else self.page_size
        page = items[start : start + size]
        headers = {}
        if start + size < len(items) and not (limit and start + size >= limit):
            query["cursor"] = [str(start + size)]
            headers["Link"] = f'<{self._base(request)}{request.url.path}?{urlencode(query, doseq=True)}>; rel="next"'
        return JSONResponse(page, headers=headers)

    def _notify(self, request: Request, repo: Repo, *, scope: str, action: str,
                updated_refs: Iterable[tuple[str, str | None, str | None]] = ()) -> None:
        """Tell the webhooks watching `repo` (delivered in the background: never waits)."""
        main = self.store.commit(repo)
        self.webhooks.repo_changed(repo, scope=scope, action=action, base_url=self._base(request), head_sha=main.id,
                                   tags=main.tags, updated_refs=updated_refs)

    # -- endpoints -----------------------------------------------------------------------
    async def create_repo(self, request: Request) -> Response:
        caller = self._authorize(request)
        body = await request.json()
        kind = body.get("type") or "model"
        owner = body.get("organization") or caller
        repo_id = f"{owner}/{body.get('name', '')}"
        prefix = "datasets/" if kind == "dataset" else ""
        url = f"{self._base(request)}/{prefix}{repo_id}"
        try:
            repo = self.store.create_repo(kind, repo_id)
        except RepoExists as exc:
            return JSONResponse({"error": str(exc), "url": url}, status_code=409)
        self._notify(request, repo, scope="repo", action="create")
        return JSONResponse({"url": url, "name": repo_id})

    def whoami(self, request: Request) -> Response:
        name = self._authorize(request)
        return JSONResponse({"type": "user", "name": name, "fullname": name, "orgs": [], "auth": {"type": "access_token"}})

    def list_repos(self, request: Request, kind: str) -> Response:
        query = parse_qs(request.url.query)
        filters = query.get("filter", [])
        author = query.get("author", [None])[0]
        search = query.get("search", [None])[0]
        items = []
        for repo in self.store.repos(kind):
            commit = self.store.commit(repo)
            if author and repo.repo_id.split("/")[0] != author:
                continue
            if search and search.lower() not in repo.repo_id.lower():
                continue
            if any(f not in commit.tags for f in filters):
                continue
            items.append(self._repo_json(repo, commit, blobs=False))
        sort = query.get("sort", [None])[0]
        if sort in ("lastModified", "createdAt"):
            items.sort(key=lambda item: item[sort], reverse=query.get("direction", ["-1"])[0] == "-1")
        limit = int(query["limit"][0]) if "limit" in query else None
        return self._paginate(request, items, limit)

    def repo_info(self, request: Request, repo: Repo, revision: str) -> Response:
        query = parse_qs(request.url.query)
        blobs = query.get("blobs", ["false"])[0] == "true"
        commit = self.store.commit(repo, revision)
        data = self._repo_json(repo, commit, blobs=blobs)
        if "evalResults" in query.get("expand", []):
            data["evalResults"] = evals.entries(self.store, commit)
        return JSONResponse(data)

    def leaderboard(self, request: Request, repo: Repo) -> Response:
        task = parse_qs(request.url.query).get("task_id", [None])[0]
        board = evals.leaderboard(self.store, repo, task_id=task)
        if board is None:
            return _error(_NotFound(f"{repo.repo_id} declares no benchmark (no eval.yaml at its root): it has no leaderboard"))
        return JSONResponse(board)

    @staticmethod
    def _entries(commit: Commit, prefix: str, recursive: bool) -> list[dict[str, Any]]:
        base = prefix.strip("/")
        if base and base in commit.files:  # listing a file gives the file itself
            entry = commit.files[base]
            return [{"type": "file", "path": base, "oid": entry["oid"], "size": entry["size"]}]
        lead = f"{base}/" if base else ""
        files, folders = [], set()
        for path, entry in commit.files.items():
            if not path.startswith(lead):
                continue
            rest = path[len(lead):].split("/")
            for depth in range(1, len(rest)):
                if recursive or depth == 1:
                    folders.add(lead + "/".join(rest[:depth]))
            if recursive or len(rest) == 1:
                files.append({"type": "file", "path": path, "oid": entry["oid"], "size": entry["size"]})
        if base and not files and not folders:
            raise EntryNotFound(f"{base} does not exist at revision {commit.id}")
        dirs = [{"type": "directory", "path": f, "oid": hashlib.sha1(f"{commit.id}:{f}".encode()).hexdigest(), "size": 0} for f in sorted(folders)]
        return dirs + sorted(files, key=lambda e: e["path"])

    def tree(self, request: Request, repo: Repo, revision: str, path: str) -> Response:
        recursive = parse_qs(request.url.query).get("recursive", ["false"])[0] == "true"
        commit = self.store.commit(repo, revision)
        return self._paginate(request, self._entries(commit, path, recursive))

    async def paths_info(self, request: Request, repo: Repo, revision: str) -> Response:
        form = parse_qs((await request.body()).decode())
        commit = self.store.commit(repo, revision)
        expand = form.get("expand", ["false"])[0] == "true"
        found = []
        for path in form.get("paths", []):
            path = path.strip("/")
            if path in commit.files:
                entry = commit.files[path]
                found.append({"type": "file", "path": path, "oid": entry["oid"], "size": entry["size"]})
            elif any(p.startswith(path + "/") for p in commit.files):
                found.append({"type": "directory", "path": path, "oid": hashlib.sha1(f"{commit.id}:{path}".encode()).hexdigest(), "size": 0})
            else:
                continue
            if expand:
                found[-1]["lastCommit"] = {"id": commit.id, "title": commit.title, "date": commit.date}
        return JSONResponse(found)

    async def preupload(self, request: Request, repo: Repo, revision: str) -> Response:
        body = await request.json()
        commit = self.store.commit(repo, revision)
        files = []
        for item in body.get("files", []):
            current = commit.files.get(item["path"])
            files.append({"path": item["path"], "uploadMode": "regular", "shouldIgnore": False, "oid": current["oid"] if current else None})
        return JSONResponse({"files": files, "commitOid": commit.id})

    async def create_commit(self, request: Request, repo: Repo, branch: str) -> Response:
        author = self._authorize(request)
        header: dict[str, Any] = {}
        additions: dict[str, bytes] = {}
        deletions, folders = [], []
        for line in (await request.body()).splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            key, value = item.get("key"), item.get("value", {})
            if key == "header":
                header = value
            elif key == "file":
                if value.get("encoding", "base64") != "base64":
                    raise BadRequest("Only base64-encoded file contents are supported.")
                additions[value["path"]] = base64.b64decode(value["content"])
            elif key == "deletedFile":
                deletions.append(value["path"])
            elif key == "deletedFolder":
                folders.append(value["path"])
            else:
                raise BadRequest(f"Unsupported commit operation {key!r}: this local Hub stores every file inline.")
        title = header.get("summary", "") or "Upload files"
        parent = header.get("parentCommit")
        pull_request = None
        if parse_qs(request.url.query).get("create_pr", ["0"])[0] == "1":
            pull_request = self.store.create_discussion(
                repo, title=title, description=header.get("description", "") or title, author=author,
                pull_request=True, status="open", base=branch, base_commit=parent,
            )
            branch, parent = pull_ref(pull_request), None
        commit = self.store.commit_changes(
            repo,
            branch=branch,
            title=title,
            message=header.get("description", ""),
            author=author,
            additions=additions,
            deletions=deletions,
            deleted_folders=folders,
            parent=parent,
        )
        ref = branch if branch.startswith("refs/") else f"refs/heads/{branch}"
        self._notify(request, repo, scope="repo.content", action="update",
                     updated_refs=[(ref, commit.parents[0] if commit.parents else None, commit.id)])
        answer = {"success": True, "commitOid": commit.id, "commitUrl": f"{self._url_prefix(request, repo)}/commit/{commit.id}"}
        if pull_request is not None:
            answer["pullRequestUrl"] = f"{self._url_prefix(request, repo)}/discussions/{pull_request.num}"
        return JSONResponse(answer)

    def list_commits(self, request: Request, repo: Repo, revision: str) -> Response:
        items = [
            {"id": c.id, "authors": [{"user": c.author or "arena"}], "date": c.date, "title": c.title, "message": c.message}
            for c in self.store.history(repo, revision)
        ]
        return self._paginate(request, items)

    def resolve(self, request: Request, repo: Repo, revision: str, path: str) -> Response:
        try:
            commit, entry, blob = self.store.read(repo, revision, path)
        except EntryNotFound as exc:
            return _error(exc, **{"X-Repo-Commit": self.store.commit(repo, revision).id})
        size = int(entry["size"])
        headers = {
            "X-Repo-Commit": commit.id,
            "ETag": f'"{entry["oid"]}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
        }
        span = _byte_range(request.headers.get("range"), size)
        if request.method == "HEAD":
            return Response(status_code=200, headers=headers | {"Content-Length": str(size)})
        data = blob.read_bytes()
        if span is None:
            return Response(data, status_code=200, headers=headers)
        start, end = span
        if start >= size:
            return Response(status_code=416, headers={"Content-Range": f"bytes */{size}"})
        headers["Content-Range"] = f"bytes {start}-{end}/{size}"
        return Response(data[start : end + 1], status_code=206, headers=headers)


def _byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """(first, last) byte of a `Range: bytes=a-b` header, or None for the whole file."""
    if not header or not header.startswith("bytes="):
        return None
    first, _, last = header[6:].split(",")[0].partition("-")
    if not first:  # suffix range: the last N bytes
        return max(0, size - int(last)), size - 1
    return int(first), min(int(last), size - 1) if last else size - 1


class _NotFound(HubError):
    status, code = 404, ""


class _Unauthorized(HubError):
    status, code = 401, ""


class LocalHub:
    """A running local Hub: `LocalHub(root).start()` serves `root` on a free local port.

    Example:
        >>> import tempfile
        >>> from huggingface_hub import HfApi
        >>> folder = tempfile.TemporaryDirectory()
        >>> hub = LocalHub(folder.name).start()
        >>> list(HfApi(endpoint=hub.endpoint).list_models(filter="nmmo-arena"))
        []
        >>> hub.stop()
        >>> folder.cleanup()
    """

    def __init__(self, root: str | Path, *, host: str = "127.0.0.1", port: int = 0, write_token: str | None = None, page_size: int = PAGE_SIZE):
        self.store = HubStore(root)
        self.app = LocalHubApp(self.store, write_token=write_token, page_size=page_size)
        self.host, self.port = host, port
        self.server: uvicorn.Server | None = None
        self.thread: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 10.0) -> LocalHub:
        config = uvicorn.Config(self.app, host=self.host, port=self.port, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True, name="localhub")
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise HubStartError(f"The local Hub did not start on {self.host}:{self.port}.")
            time.sleep(0.02)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.should_exit = True
            if self.thread is not None:
                self.thread.join(timeout=10)
            self.server = None
        self.app.webhooks.close()


__all__ = ["LocalHub", "LocalHubApp", "card_metadata"]
