"""Hub webhooks into the Space: a push becomes a `queued` status in seconds, not a minute.

The Hub POSTs a JSON payload to the Space on every change of a repo the webhook watches,
with the webhook's secret in the `X-Webhook-Secret` header (Hub docs, "Webhooks"). This
module receives it and reacts; the scheduled discovery (`sync`, every `NMMO_ARENA_SYNC_S`)
stays as the fallback for anything a webhook missed.

- **Receiving** is `huggingface_hub`'s `WebhooksServer`, made for Spaces: it wraps the
  Gradio Blocks, mounts the handler at `/webhooks/hub` on Gradio's FastAPI app, and
  checks the secret before the handler runs (a missing header is answered 401, a wrong
  one 403, and nothing else happens: those requests never reach this module, so they are
  not in its log). It works unchanged under Gradio 6 (checked: its
  `launch` calls `Blocks.launch(prevent_thread_lock=True)` and adds the route to the app
  that returns). The body is parsed with its `WebhookPayload` model: a malformed payload
  is answered 400, naming the fields at fault.
- **Reacting**: a payload saying a model repo's `main` moved (`event.scope` `repo.content`,
  action `update` or `create`) hands the repo to `PushReactor`, one background thread that
  discovers just the pushed repos (bursts coalesced into one look at the Hub), queues their
  new revisions and wakes the validation round. The HTTP handler never waits for the Hub.
- **Registering**: on the embedded Hub the Space registers its own webhook at start
  (`register`, through the real `HfApi.create_webhook`); on huggingface.co the operator
  does it once in the Hub's settings (docs/matchmaker.md, "Webhooks").

The secret is `NMMO_ARENA_WEBHOOK_SECRET`; on the embedded default it is made on the first
start into `DATA/webhook-secret`. With a real Hub and no secret, no webhook route is
mounted (an open one would let anyone make the Space call the Hub) and polling does it all.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from huggingface_hub import HfApi, WebhookPayload, WebhookWatchedItem
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse

from arena.files import secret_file
from arena.settings import ArenaSettings

log = logging.getLogger(__name__)

#: Where the Space receives webhooks (`WebhooksServer` mounts every webhook under /webhooks/).
WEBHOOK_NAME = "hub"
WEBHOOK_PATH = f"/webhooks/{WEBHOOK_NAME}"
#: Scopes and actions of a payload that mean "new commits on this repo" (a narrower scope
#: the Hub may add later, `repo.content.x`, counts as its parent, as the Hub docs advise).
CONTENT_SCOPE = "repo.content"
CONTENT_ACTIONS = ("update", "create")
MAIN_REF = "refs/heads/main"


def webhook_secret(settings: ArenaSettings) -> str | None:
    """The secret webhooks must present: the setting, else (embedded Hub only) the data
    folder's generated one; None with a real Hub and no setting (webhooks off)."""
    if settings.webhook_secret:
        return settings.webhook_secret
    if settings.hub_endpoint is None:
        return secret_file(settings.webhook_secret_file)
    return None


@dataclass(frozen=True)
class Push:
    """What a webhook says the Arena must look at: new commits on a model repo's main."""

    repo_id: str
    revision: str | None
    """The new sha of `main`, when the payload gives it."""


def push_of(payload: WebhookPayload) -> Push | None:
    """The push a payload reports, or None for every other event (datasets, Spaces,
    discussions, settings, and commits that leave `main` where it was, like a pull
    request's)."""
    scope = payload.event.scope
    if payload.repo.type != "model" or payload.event.action not in CONTENT_ACTIONS:
        return None
    if scope != CONTENT_SCOPE and not scope.startswith(CONTENT_SCOPE + "."):
        return None
    refs = payload.updatedRefs
    if refs is None:  # no refs given: the Hub said "content changed"; look at main
        return Push(payload.repo.name, None)
    main = [r for r in refs if r.ref == MAIN_REF and r.newSha]
    return Push(payload.repo.name, main[0].newSha) if main else None


def _fields_at_fault(exc: ValidationError) -> str:
    problems = [f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()[:5]]
    more = f" (and {len(exc.errors()) - 5} more)" if len(exc.errors()) > 5 else ""
    return "; ".join(problems) + more


class PushReactor:
    """Discovers pushed repos in one background thread, so the webhook's handler returns at
    once; repos pushed while a discovery runs are taken together by the next one.

    Args:
        discover: queues the new revisions of the named repos; returns how many.
        then: called after a discovery that queued something (wakes the validation round).
    """

    def __init__(self, discover: Callable[[set[str]], int], *, then: Callable[[], None] = lambda: None):
        self._discover = discover
        self._then = then
        self._pending: set[str] = set()
        self._wake = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="webhook-pushes", daemon=True)
        self._thread.start()

    def push(self, repo_id: str) -> None:
        """Look at `repo_id` soon (never blocks)."""
        with self._wake:
            self._pending.add(repo_id)
            self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                self._wake.wait_for(lambda: self._pending or self._stopped)
                if self._stopped:
                    return
                batch, self._pending = self._pending, set()
            try:
                if self._discover(batch):
                    self._then()
            except Exception:  # noqa: BLE001 - one failed look must not stop the next; polling catches up
                log.exception("discovering pushed repos %s failed; the scheduled discovery will look again", sorted(batch))

    def stop(self) -> None:
        with self._wake:
            self._stopped = True
            self._wake.notify()
        self._thread.join(timeout=10)


class WebhookReceiver:
    """The handler of `/webhooks/hub`: parse, log one line, hand a push on, answer."""

    def __init__(self, secret: str, *, on_push: Callable[[Push], None]):
        self.secret = secret
        self.on_push = on_push

    async def receive(self, request: Request) -> JSONResponse:
        """One webhook (its secret already checked by `WebhooksServer`)."""
        body = await request.body()
        try:
            payload = WebhookPayload.model_validate_json(body)
        except ValidationError as exc:
            why = _fields_at_fault(exc)
            log.warning("webhook refused: malformed payload (%s)", why)
            return JSONResponse({"error": f"Not a Hub webhook payload (version 3): {why}."}, status_code=400)
        push = push_of(payload)
        if push is None:
            outcome = "nothing to do"
        else:
            outcome = "discovering it now" + (f" (main at {push.revision[:12]})" if push.revision else "")
            self.on_push(push)
        log.info("webhook %s: %s %s on %s %s: %s", payload.webhook.id, payload.event.scope, payload.event.action,
                 payload.repo.type, payload.repo.name, outcome)
        return JSONResponse({"accepted": push is not None})


def launch(demo: Any, receiver: WebhookReceiver | None, **launch_kwargs: Any) -> None:
    """Serve the Gradio app `demo`, with the webhook route when there is a `receiver`.

    `launch_kwargs` go to `Blocks.launch` (`server_name`, `server_port`,
    `prevent_thread_lock`, ...). Blocks unless `prevent_thread_lock=True`.
    """
    if receiver is None:
        demo.launch(**launch_kwargs)
        return
    from huggingface_hub import WebhooksServer

    with warnings.catch_warnings():  # WebhooksServer is marked experimental; we pin huggingface_hub
        warnings.simplefilter("ignore", UserWarning)
        server = WebhooksServer(ui=demo, webhook_secret=receiver.secret)
    server.add_webhook(WEBHOOK_NAME)(receiver.receive)
    launch_kwargs.setdefault("share", False)  # WebhooksServer shares a local app through a tunnel by default
    server.launch(**launch_kwargs)


def register(api: HfApi, *, url: str, secret: str, watched: Iterable[dict[str, str]]) -> str:
    """Make sure the Hub sends its repo events to `url` with `secret` (one webhook per URL:
    an existing one is updated, so restarts do not pile them up). Returns its id."""
    items: list[dict[Any, Any] | WebhookWatchedItem] = list(watched)
    for hook in api.list_webhooks():
        if hook.url == url:
            api.update_webhook(hook.id, url=url, watched=items, domains=["repo"], secret=secret)
            if hook.disabled:
                api.enable_webhook(hook.id)
            return hook.id
    return api.create_webhook(url=url, watched=items, domains=["repo"], secret=secret).id


def space_webhook_url(space_url: str) -> str:
    """The webhook URL of a Space served at `space_url`."""
    return space_url.rstrip("/") + WEBHOOK_PATH
