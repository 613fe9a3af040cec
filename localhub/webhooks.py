"""The embedded Hub's webhooks: the settings API, who watches what, and delivery.

huggingface.co lets a user register webhooks (`HfApi.create_webhook`, `list_webhooks`,
`get_webhook`, `update_webhook`, `enable_webhook`, `disable_webhook`, `delete_webhook`,
all under `/api/settings/webhooks`), each watching users, organisations or single repos,
and POSTs a JSON payload (webhook version 3) to the webhook's URL on every change of a
watched repo, with the webhook's secret in the `X-Webhook-Secret` header. This module is
that, for the local Hub, so the Arena's reaction to a push is tested over real HTTP with
the unmodified client on both ends (`HfApi` to register, `huggingface_hub.WebhookPayload`
to parse what arrives).

What is watched, as on the Hub:

| watched item | fires for |
|---|---|
| `{"type": "user"\\|"org", "name": N}` | every repo whose owner (namespace) is N |
| `{"type": "model"\\|"dataset"\\|"space", "name": "owner/name"}` | that repo |
| `{"type": "user"\\|"org", "name": "*"}` | every repo: the local stand-in for the "all repos" switch the Hub's staff turn on for a webhook on request (Hub docs, Webhooks FAQ) |

Events sent: `repo.content` / `update` on every commit (with `updatedRefs`), and `repo` /
`create` when a repo is created. Delivery never holds the request that caused it: each
payload goes to a small thread pool, is retried on a connection failure, a timeout or a
5xx answer (after 1, 2 and 4 s), and is logged and dropped after the last attempt; a 4xx
answer (the receiver refused it, e.g. a wrong secret) is logged at once and not retried.
Webhooks are kept in `ROOT/webhooks.json` beside the repos, so they survive restarts.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from arena.files import write_atomically
from arena.records import Format, Record
from localhub.store import BadRequest, HubError, Repo, object_id

log = logging.getLogger(__name__)

#: Types a watched item may have (`huggingface_hub.WebhookWatchedItem`), and the domains.
WATCH_TYPES = ("user", "org", "model", "dataset", "space")
DOMAINS = ("repo", "discussion")
#: A watched user/org named this stands for every namespace (see the module's table).
EVERYONE = "*"
#: The payload format the Hub sends today (`WebhookPayloadWebhook.version`).
PAYLOAD_VERSION = 3


class WebhookNotFound(HubError):
    status, code = 404, ""


@dataclass(frozen=True)
class WatchedItem:
    """One thing a webhook watches: a user or org by name, or a repo by `owner/name`."""

    type: str
    name: str


@dataclass(frozen=True)
class Webhook(Record):
    """A registered webhook, in the Hub's terms (`huggingface_hub.WebhookInfo`); its dict is
    what the settings API answers for it, and what the registry's file keeps."""

    id: str
    url: str
    watched: tuple[WatchedItem, ...]
    domains: tuple[str, ...] = DOMAINS
    secret: str | None = None
    disabled: bool = False

    FORMAT = Format(layout=("id", "url", "job", "watched", "domains", "secret", "disabled"))

    @property
    def job(self) -> None:
        """The job a Hub webhook may run instead of calling a URL: none here."""
        return None

    def watches(self, repo_type: str, repo_id: str, domain: str = "repo") -> bool:
        """Whether an event of `domain` on this repo is sent to this webhook."""
        if self.disabled or domain not in self.domains:
            return False
        owner = repo_id.split("/")[0]
        for item in self.watched:
            if item.type in ("user", "org") and item.name in (owner, EVERYONE):
                return True
            if item.type == repo_type and item.name == repo_id:
                return True
        return False


def _watched(items: Any) -> tuple[WatchedItem, ...]:
    if not isinstance(items, list):
        raise BadRequest("`watched` must be a list of {type, name} items.")
    found = []
    for item in items:
        if not isinstance(item, dict) or item.get("type") not in WATCH_TYPES or not isinstance(item.get("name"), str) or not item["name"]:
            raise BadRequest(f"Invalid watched item {item!r}: expected {{\"type\": one of {', '.join(WATCH_TYPES)}, \"name\": \"...\"}}.")
        found.append(WatchedItem(item["type"], item["name"]))
    return tuple(found)


def _domains(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or any(d not in DOMAINS for d in value):
        raise BadRequest(f"Invalid `domains` {value!r}: a non-empty list of {', '.join(DOMAINS)}.")
    return tuple(value)


def _url(value: Any) -> str:
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise BadRequest(f"Invalid webhook `url` {value!r}: an http:// or https:// URL.")
    return value


def _secret(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not value.isascii():
        raise BadRequest("The webhook `secret` must be ASCII text (the Hub sends it as an HTTP header).")
    return value


def repo_payload(
    webhook: Webhook,
    *,
    scope: str,
    action: str,
    repo: Repo,
    base_url: str,
    head_sha: str | None,
    tags: Iterable[str],
    updated_refs: Iterable[tuple[str, str | None, str | None]] = (),
) -> dict[str, Any]:
    """The Hub's payload for a repo event, as its Webhooks guide documents it.

    Args:
        scope (`str`): `repo` (created, deleted ...) or `repo.content` (new commits).
        action (`str`): `create`, `update`, ...
        head_sha (`str`, *optional*): the sha of `main` after the change.
        updated_refs: (ref, old sha, new sha) of each reference the change moved.
    """
    prefix = {"model": "", "dataset": "datasets/", "space": "spaces/"}[repo.repo_type]
    api = {"model": "models", "dataset": "datasets", "space": "spaces"}[repo.repo_type]
    payload: dict[str, Any] = {
        "event": {"action": action, "scope": scope},
        "repo": {
            "type": repo.repo_type,
            "name": repo.repo_id,
            "id": repo.uid,
            "private": False,
            "url": {"web": f"{base_url}/{prefix}{repo.repo_id}", "api": f"{base_url}/api/{api}/{repo.repo_id}"},
            "headSha": head_sha,
            "tags": list(tags),
            "owner": {"id": object_id("user", repo.repo_id.split("/")[0])},
        },
        "webhook": {"id": webhook.id, "version": PAYLOAD_VERSION},
    }
    refs = [{"ref": ref, "oldSha": old, "newSha": new} for ref, old, new in updated_refs]
    if refs:
        payload["updatedRefs"] = refs
    return payload


class WebhookRegistry:
    """The registered webhooks, kept in one JSON file (written atomically)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._hooks: dict[str, Webhook] = {}
        if self.path.exists():
            self._hooks = {h.id: h for h in map(Webhook.from_dict, json.loads(self.path.read_text()))}

    def _save(self) -> None:
        write_atomically(self.path, json.dumps([h.to_dict() for h in self._hooks.values()], indent=1).encode())

    def all(self) -> list[Webhook]:
        with self._lock:
            return list(self._hooks.values())

    def get(self, webhook_id: str) -> Webhook:
        with self._lock:
            if webhook_id not in self._hooks:
                raise WebhookNotFound(f"Webhook {webhook_id} not found.")
            return self._hooks[webhook_id]

    def put(self, webhook: Webhook) -> Webhook:
        with self._lock:
            self._hooks[webhook.id] = webhook
            self._save()
        return webhook

    def delete(self, webhook_id: str) -> None:
        with self._lock:
            if self._hooks.pop(webhook_id, None) is None:
                raise WebhookNotFound(f"Webhook {webhook_id} not found.")
            self._save()


@dataclass
class WebhookDelivery:
    """Sends payloads in background threads, retrying what failed for want of an answer."""

    attempts: int = 4
    first_wait_s: float = 1.0
    timeout_s: float = 10.0
    _pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(4, thread_name_prefix="localhub-webhook"))

    def send(self, webhook: Webhook, payload: dict[str, Any]) -> Future:
        """Queue one delivery; returns at once (the future answers the final HTTP status, or 0)."""
        return self._pool.submit(self._deliver, webhook, json.dumps(payload).encode())

    def _deliver(self, webhook: Webhook, body: bytes) -> int:
        headers = {"Content-Type": "application/json", "User-Agent": "nmmo-arena-localhub/webhooks"}
        if webhook.secret:
            headers["X-Webhook-Secret"] = webhook.secret
        problem = ""
        for attempt in range(1, self.attempts + 1):
            request = urllib.request.Request(webhook.url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                    return answer.status
            except urllib.error.HTTPError as exc:
                if exc.code < 500 and exc.code not in (408, 429):  # refused: sending it again changes nothing
                    log.warning("webhook %s: %s refused the payload with HTTP %d: %s", webhook.id, webhook.url, exc.code,
                                exc.read()[:300].decode(errors="replace"))
                    return exc.code
                problem = f"HTTP {exc.code}"
            except (OSError, urllib.error.URLError) as exc:  # refused connection, timeout, name not resolved
                problem = f"{type(exc).__name__}: {exc}"
            if attempt < self.attempts:
                time.sleep(self.first_wait_s * 2 ** (attempt - 1))
        log.warning("webhook %s: delivery to %s failed %d times (last: %s); payload dropped", webhook.id, webhook.url,
                    self.attempts, problem)
        return 0

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class Webhooks:
    """The local Hub's webhooks: the settings API's handlers and the events it sends."""

    def __init__(self, root: Path, *, delivery: WebhookDelivery | None = None):
        self.registry = WebhookRegistry(Path(root) / "webhooks.json")
        self.delivery = delivery or WebhookDelivery()

    # -- events ----------------------------------------------------------------------------
    def repo_changed(self, repo: Repo, *, scope: str, action: str, base_url: str, head_sha: str | None,
                     tags: Iterable[str], updated_refs: Iterable[tuple[str, str | None, str | None]] = ()) -> list[Future]:
        """Send the event to every webhook watching the repo; never waits for a delivery."""
        tags, updated_refs = list(tags), list(updated_refs)
        return [
            self.delivery.send(hook, repo_payload(hook, scope=scope, action=action, repo=repo, base_url=base_url,
                                                  head_sha=head_sha, tags=tags, updated_refs=updated_refs))
            for hook in self.registry.all()
            if hook.watches(repo.repo_type, repo.repo_id)
        ]

    # -- the settings API (/api/settings/webhooks...) ----------------------------------------
    async def handle(self, request: Request, rest: list[str]) -> Response:
        """Route `/api/settings/webhooks/REST`; the caller has been authorized already."""
        method = request.method
        if not rest:
            if method == "GET":
                return JSONResponse([h.to_dict() for h in self.registry.all()])
            if method == "POST":
                return self._answer(self._create(await self._body(request)))
        elif len(rest) == 1:
            if method == "GET":
                return self._answer(self.registry.get(rest[0]))
            if method == "POST":
                return self._answer(self._update(self.registry.get(rest[0]), await self._body(request)))
            if method == "DELETE":
                self.registry.delete(rest[0])
                return JSONResponse({})
        elif len(rest) == 2 and rest[1] in ("enable", "disable") and method == "POST":
            hook = self.registry.get(rest[0])
            return self._answer(self.registry.put(replace(hook, disabled=rest[1] == "disable")))
        raise WebhookNotFound(f"No webhook route {method} {request.url.path}")

    @staticmethod
    def _answer(hook: Webhook) -> JSONResponse:
        return JSONResponse({"webhook": hook.to_dict()})

    @staticmethod
    async def _body(request: Request) -> dict[str, Any]:
        try:
            body = json.loads(await request.body() or b"{}")
        except ValueError:
            raise BadRequest("The request body is not JSON.") from None
        if not isinstance(body, dict):
            raise BadRequest("The request body must be a JSON object.")
        return body

    def _create(self, body: dict[str, Any]) -> Webhook:
        if "jobSourceId" in body:
            raise BadRequest("This local Hub runs no Jobs: create the webhook with a `url`.")
        hook = Webhook(
            id=secrets.token_hex(12),
            url=_url(body.get("url")),
            watched=_watched(body.get("watched")),
            domains=_domains(body.get("domains", list(DOMAINS))),
            secret=_secret(body.get("secret")),
        )
        return self.registry.put(hook)

    def _update(self, hook: Webhook, body: dict[str, Any]) -> Webhook:
        changes: dict[str, Any] = {"watched": _watched(body.get("watched", []))}  # the client always sends it
        if "url" in body:
            changes["url"] = _url(body["url"])
        if "domains" in body:
            changes["domains"] = _domains(body["domains"])
        if "secret" in body:
            changes["secret"] = _secret(body["secret"])
        return self.registry.put(replace(hook, **changes))

    def close(self) -> None:
        self.delivery.close()
