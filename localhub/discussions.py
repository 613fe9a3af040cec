"""The embedded Hub's discussions and pull requests: their HTTP routes.

`DiscussionRoutes` is a mixin of `localhub.server.LocalHubApp`, kept in its own module
so that the file and commit endpoints stay apart from these. It serves what
`huggingface_hub.HfApi` calls, in the JSON shapes it reads:

| Client call | Route |
|---|---|
| `get_repo_discussions` | `GET /api/{models,datasets}/OWNER/NAME/discussions?p=&type=&status=&author=` |
| `get_discussion_details` | `GET .../discussions/<num>?diff=1` |
| `create_discussion`, `create_pull_request` | `POST .../discussions` |
| `comment_discussion` | `POST .../discussions/<num>/comment` |
| `change_discussion_status` | `POST .../discussions/<num>/status` |
| `merge_pull_request` | `POST .../discussions/<num>/merge` |

The storage and the rules (numbering, drafts, merges, conflicts) are `localhub.store`'s.
"""

from __future__ import annotations

import difflib
import json
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from localhub.store import (
    DISCUSSION_STATUSES,
    BadRequest,
    Discussion,
    HubError,
    HubStore,
    Repo,
    pull_base_commit,
    pull_ref,
)

#: Discussions per page of a repo's discussion list (the Hub's).
DISCUSSIONS_PAGE = 50

#: The list's status filters (the client's `DISCUSSION_STATUS`) and the statuses each keeps.
_STATUS_FILTERS = {"all": DISCUSSION_STATUSES, "open": ("open", "draft"), "closed": ("closed", "merged")}


class _NoRoute(HubError):
    status, code = 404, ""


class DiscussionRoutes:
    """Discussions and pull requests: the routes under `/api/.../OWNER/NAME/discussions`.

    Kept apart from the file and commit endpoints (a mixin of `LocalHubApp`); the JSON
    shapes are those `huggingface_hub.HfApi` reads (`Discussion`, `DiscussionWithDetails`,
    `deserialize_event`).
    """

    store: HubStore

    # provided by `LocalHubApp`, which mixes these routes in
    def _authorize(self, request: Request) -> str:
        raise NotImplementedError

    def _url_prefix(self, request: Request, repo: Repo) -> str:
        raise NotImplementedError

    async def _discussion_route(self, request: Request, repo: Repo, args: list[str]) -> Response:
        method = request.method
        if not args:
            if method == "GET":
                return self.list_discussions(request, repo)
            if method == "POST":
                return await self.create_discussion(request, repo)
        elif args[0].isdigit():
            num, rest = int(args[0]), args[1:]
            if not rest and method == "GET":
                return self.discussion_details(request, repo, num)
            if len(rest) == 1 and method == "POST" and rest[0] in ("comment", "status", "merge"):
                author = self._authorize(request)
                body = await _json_or_empty(request)
                if rest[0] == "comment":
                    event = self.store.comment(repo, num, author=author, text=str(body.get("comment", "")))
                    return JSONResponse({"newMessage": event})
                if rest[0] == "status":
                    event = self.store.change_status(repo, num, status=str(body.get("status", "")), author=author,
                                                     comment=str(body.get("comment", "")))
                    return JSONResponse({"newStatus": event})
                self.store.merge(repo, num, author=author, comment=str(body.get("comment", "")))
                return JSONResponse({"success": True})
        raise _NoRoute(f"No API route {request.url.path}")

    def _discussion_json(self, repo: Repo, discussion: Discussion) -> dict[str, Any]:
        return {
            "num": discussion.num,
            "title": discussion.title,
            "status": discussion.status,
            "author": {"name": discussion.author},
            "createdAt": discussion.created_at,
            "isPullRequest": discussion.is_pull_request,
            "repo": {"name": repo.repo_id, "type": repo.repo_type},
        }

    def list_discussions(self, request: Request, repo: Repo) -> Response:
        """One page (`p`) of the repo's discussions, newest first, filtered as the Hub does
        by `type` (`discussion`, `pull_request`, `all`), `status` (`open`, drafts included;
        `closed`, merged included; `all`), `author` and `search`."""
        query = {k: v[0] for k, v in parse_qs(request.url.query).items()}
        kind, status = query.get("type", "all"), query.get("status", "all")
        if kind not in ("all", "discussion", "pull_request"):
            raise BadRequest(f"Invalid type {kind!r}: use discussion, pull_request or all.")
        if status not in _STATUS_FILTERS:
            raise BadRequest(f"Invalid status {status!r}: use {', '.join(_STATUS_FILTERS)}.")
        found = [
            d for d in self.store.discussions(repo)
            if (kind == "all" or d.is_pull_request == (kind == "pull_request"))
            and d.status in _STATUS_FILTERS[status]
            and d.author == query.get("author", d.author)
            and query.get("search", "").lower() in d.title.lower()
        ]
        start = int(query.get("p", "0")) * DISCUSSIONS_PAGE
        return JSONResponse({
            "discussions": [self._discussion_json(repo, d) for d in found[start : start + DISCUSSIONS_PAGE]],
            "count": len(found),
            "start": start,
            "numClosedDiscussions": sum(d.status in ("closed", "merged") for d in found),
        })

    def discussion_details(self, request: Request, repo: Repo, num: int) -> Response:
        discussion = self.store.discussion(repo, num)
        data = self._discussion_json(repo, discussion) | {"events": list(discussion.events)}
        if discussion.is_pull_request:
            data["changes"] = {"base": f"refs/heads/{discussion.base}"}
            if discussion.merge_commit:
                data["changes"]["mergeCommitId"] = discussion.merge_commit
            data["filesWithConflicts"] = self.store.conflicts(repo, discussion)
            if parse_qs(request.url.query).get("diff", ["0"])[0] == "1":
                data["diff"] = self._diff(repo, discussion)
        return JSONResponse(data)

    def _diff(self, repo: Repo, pr: Discussion) -> str:
        """A unified diff of the pull request's text files against where it started."""
        before = self.store.commit(repo, pull_base_commit(pr)).files
        after = self.store.commit(repo, pr.merge_commit or self.store.refs(repo)[pull_ref(pr)]).files
        chunks = []
        for path in sorted(set(before) | set(after)):
            if before.get(path) == after.get(path):
                continue
            old, new = (self.store.blob_path(side[path]["oid"]).read_bytes().decode("utf-8", "replace").splitlines(keepends=True)
                        if path in side else [] for side in (before, after))
            chunks.append("".join(difflib.unified_diff(old, new, fromfile=f"a/{path}", tofile=f"b/{path}")))
        return "".join(chunks)

    async def create_discussion(self, request: Request, repo: Repo) -> Response:
        author = self._authorize(request)
        body = await _json_or_empty(request)
        discussion = self.store.create_discussion(
            repo, title=str(body.get("title", "")), description=str(body.get("description", "")), author=author,
            pull_request=bool(body.get("pullRequest", False)),
        )
        return JSONResponse({"num": discussion.num, "url": f"{self._url_prefix(request, repo)}/discussions/{discussion.num}",
                             "pullRequest": discussion.is_pull_request})


async def _json_or_empty(request: Request) -> dict[str, Any]:
    """The request's JSON object body; {} for none (the client posts `null` for no comment)."""
    raw = await request.body()
    body = json.loads(raw) if raw.strip() else None
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise BadRequest("Expected a JSON object.")
    return body
