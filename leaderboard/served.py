"""The page a visitor is served comes with its views already drawn in it.

Why (issue 39, measured at 500 revisions and 200,000 matches in Chromium): a Gradio page
mounts its components from the config embedded in its HTML, then asks for its load event
(join the queue, wait for the answer, apply it). That second half took 0.4-0.7 s of the
1.4-2.4 s before the PvP rows showed. Gradio 6 has no setting for a value drawn per visit
into the served config (a callable `value` is a load event too), so `serve` writes the
latest draw of the page's views into `Blocks.config`, the dict Gradio's `/` and `/config`
routes copy for each visitor, as one new dict: a request reads either the old one or the
new one, never half of each.

What it writes is each output's config entry as Gradio's own per-session state makes it
for an update (`BlocksConfig.config_for_block` over a copy of the component built with the
new arguments), so the page mounts exactly as if the load had drawn it.
`leaderboard.tabs.following` decides what to serve and how the load then sends only what
differs; `ServeDrawn` asks for a fresh draw when a visitor opens the page.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, cast

import gradio as gr
from gradio.data_classes import BlocksConfigDict
from gradio.utils import is_prop_update
from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger(__name__)


def servable(component: Any) -> bool:
    """Whether `component`'s value can be served in the page: a component whose value every
    visitor shares (not a `gr.State`, whose value is each session's own)."""
    return isinstance(component, gr.components.Component) and not component.stateful


def entry_args(value: Any) -> dict[str, Any]:
    """The arguments a view's output sets: an update's (a component returned, or a
    `gr.update`/`gr.skip` dict: nothing), or the value alone."""
    if isinstance(value, gr.blocks.Block):
        return dict(value.constructor_args)
    if is_prop_update(value):
        return {k: v for k, v in value.items() if k != "__type__"}
    return {"value": value}


def with_drawn(demo: gr.Blocks, drawn: Mapping[Any, Any]) -> BlocksConfigDict:
    """`demo.config` with each component of `drawn` set as its value there says (a value,
    or an update's arguments), as a new dict: components not in `drawn` or skipped keep
    their entries (the same objects)."""
    config = demo.config
    entries: dict[int, dict[str, Any]] = {}
    for block, value in drawn.items():
        args = entry_args(value)
        if not args:
            continue
        copy = type(block)(**{**block.constructor_args, **args, "render": False})
        entries[block._id] = {"props": demo.default_config.config_for_block(block._id, [], copy)["props"]}
    components = [{**c, **entries[c["id"]]} if c.get("id") in entries else c for c in config["components"]]
    return cast(BlocksConfigDict, {**config, "components": components})


def supported(demo: gr.Blocks) -> bool:
    """Whether this Gradio keeps `demo`'s page as the dict of components `with_drawn` was
    written for; if not (a Gradio upgrade changed it), says so once, in a warning: pages then
    mount empty and draw at their load, as before."""
    config = getattr(demo, "config", None)
    if isinstance(config, dict) and isinstance(config.get("components"), list):
        return True
    log.warning("this Gradio (%s) keeps no config dict of components: pages are served without their views "
                "drawn in (leaderboard.served)", gr.__version__)
    return False


def serve(demo: gr.Blocks, drawn: Mapping[Any, Any]) -> None:
    """Serve `demo`'s page with `drawn` in it (`with_drawn`); only where `supported`."""
    demo.config = with_drawn(demo, drawn)


class ServeDrawn:
    """ASGI middleware: a request for the page itself (`/`, any query) calls `redraw` (which
    must not block: `Following.serve_soon` draws in the background) before Gradio answers
    it with the config as it stands."""

    def __init__(self, app: ASGIApp, redraw: Callable[[], None]) -> None:
        self.app, self.redraw = app, redraw

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in ("GET", "HEAD") and \
                scope["path"].rstrip("/") == scope.get("root_path", "").rstrip("/"):
            self.redraw()
        await self.app(scope, receive, send)
