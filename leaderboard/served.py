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

**A page's address** (`/?policy=...`, `/?tab=pve&q=...`, `arena.links`) is served as it asks:
its tab open, its controls set and the views they are inputs of drawn with them (`Addressed`,
`Following.drawn_for`), so the page mounts the asked tab, with the policy's page or the
table searched, rather than the first tab and switching and drawing after the load. A page
is saved once per address and served draw (a policy's page at 200,000 matches is ~0.2 s to
draw, paid by its first visitor only). Per-visit content goes through Gradio's own
per-address config, its deep links (`?deep_link=NAME` serves the components saved under
`deep_links/NAME/state.json` in its upload folder): `ServeDrawn` adds the link to the
request of an address.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import shutil
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qsl, urlencode

import gradio as gr
import orjson
from gradio.data_classes import BlocksConfigDict
from gradio.utils import get_upload_folder, is_prop_update
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from leaderboard.first_rows import with_first_rows

log = logging.getLogger(__name__)


def servable(component: Any) -> bool:
    """Whether `component`'s value can be served in the page: a component whose value every
    visitor shares (not a `gr.State`, whose value is each session's own), or a row or column
    (what a view sets of it, its visibility, is every visitor's)."""
    if isinstance(component, (gr.Row, gr.Column)):
        return True
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


#: How many addressed pages (`Addressed`) stay saved: the latest asked, over every address.
ADDRESSES_KEPT = 64

#: How many requests for an address's page not saved yet may draw it or wait to, and how long
#: one waits (one is drawn at a time: ~0.2 s for a policy's at 200,000 matches); any other is
#: served the page as built, which its load opens: a flood of distinct addresses costs one
#: draw at a time and holds a few of the server's threads, not all of them.
ADDRESS_WAITERS, ADDRESS_WAIT_S = 4, 2.0


class Addressed:
    """The page as an address asks for it, saved as a Gradio deep link: `link(query)` names it.

    Args:
        demo: the page (its config as `serve` last set it).
        asks: what an address's query sets, by component (`{}`: nothing, the page as it is):
            its controls, and the views it asks for drawn (`Following.drawn_for`).
        folder: where Gradio reads deep links (`deep_links` in its upload folder).
        serving: held while the page's served draw changes (`Following.serving`): a page is
            asked for and saved holding it, so that what it asks is drawn over the page it is
            saved with (`ADDRESS_WAITERS` wait for it at most, `ADDRESS_WAIT_S` each).
    """

    def __init__(self, demo: gr.Blocks, asks: Callable[[Mapping[str, str]], Mapping[Any, Any]],
                 folder: Path | None = None, serving: threading.Lock | None = None) -> None:
        self.demo, self.asks = weakref.ref(demo), asks  # a page's own entry must not keep it alive
        self.serving = serving if serving is not None else threading.Lock()
        self.folder = folder or Path(get_upload_folder()) / "deep_links"
        self._saved: OrderedDict[tuple[int, str], str | None] = OrderedDict()  # (draw, query) -> link
        self._config: Any = None  # the config the draw numbered `_draw` is
        self._draw = 0
        self._lock = threading.Lock()
        self._waiting = threading.BoundedSemaphore(ADDRESS_WAITERS)
        self._unsaved = False  # told once that a page could not be saved
        if not _SAVING:
            sweep(self.folder)
        _SAVING.add(self)

    def link(self, query: Mapping[str, str]) -> str | None:
        """The deep link of the page `query` asks for (saved if new), or None if it asks
        nothing this page sets, the page is not a dict of components (`supported`), or it is
        not saved yet and too many others wait for their pages (`ADDRESS_WAITERS`,
        `ADDRESS_WAIT_S`): served as built, its load opens it."""
        demo = self.demo()
        if demo is None:
            return None
        asked = urlencode(sorted(query.items()))
        with self._lock:
            saved = self._saved_for(getattr(demo, "config", None), asked)
        if saved:
            return saved[0]
        if not self._waiting.acquire(blocking=False):
            return None
        try:
            if not self.serving.acquire(timeout=ADDRESS_WAIT_S):
                return None
            try:
                return self._link(demo, query, asked)
            finally:
                self.serving.release()
        finally:
            self._waiting.release()

    def _saved_for(self, config: Any, asked: str) -> tuple[str | None] | None:
        """The link saved for the address `asked` over `config`, in a 1-tuple, if there is one."""
        if config is None or self._config is not config:
            return None
        key = (self._draw, asked)
        if key in self._saved:
            name = self._saved[key]
            if name is None or (self.folder / name / "state.json").exists():
                self._saved.move_to_end(key)
                return (name,)
        return None

    def _link(self, demo: gr.Blocks, query: Mapping[str, str], asked: str) -> str | None:
        """`link`'s work, holding the page's serving lock (this one's only over the saved
        links, so that a page saved is answered while another is drawn)."""
        with self._lock:
            config = getattr(demo, "config", None)
            if not isinstance(config, dict):
                return None
            if self._config is not config:  # a new draw served: an address is saved again when asked
                self._config, self._draw = config, self._draw + 1
            saved = self._saved_for(config, asked)
            if saved:
                return saved[0]
            key = (self._draw, asked)
        asks = {c: v for c, v in self.asks(query).items() if servable(c) or isinstance(c, gr.Tabs)}
        name = self._save(with_drawn(demo, asks)["components"]) if asks else None
        with self._lock:
            self._saved[key] = name
            while len(self._saved) > ADDRESSES_KEPT:
                _, old = self._saved.popitem(last=False)
                if old is not None and old not in self._saved.values():  # two addresses can ask for one page
                    shutil.rmtree(self.folder / old, ignore_errors=True)
        return name

    def _save(self, components: list[Any]) -> str:
        """Save `components` as a deep link; its name."""
        # as Gradio's own deep links are written (`/gradio_api/deep_link`), so that its reader
        # (orjson) reads them: json.dumps would write a State's infinite time to live as Infinity
        text = orjson.dumps(components, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_PASSTHROUGH_DATETIME, default=str)
        name = f"arena-{os.getpid()}-{hashlib.blake2b(text, digest_size=10).hexdigest()}"
        target = self.folder / name
        target.mkdir(parents=True, exist_ok=True)
        partial = target / f"state.json.{threading.get_ident()}"
        partial.write_bytes(text)
        partial.replace(target / "state.json")  # a reader sees the whole file or none
        return name

    def link_or_none(self, query: Mapping[str, str]) -> str | None:
        """`link(query)`, or None if the page could not be saved (the page is then served as
        built, and its load opens the address): said once, in a warning with the reason."""
        try:
            return self.link(query)
        except Exception as error:  # noqa: BLE001 - a page served undrawn is still the right page
            if not self._unsaved:
                self._unsaved = True
                log.warning("the page of an address (%s) could not be saved as a deep link in %s (%s: %s); addresses are "
                            "served as built and opened by their load", urlencode(sorted(query.items())), self.folder,
                            type(error).__name__, error, exc_info=True)
            return None

    def forget(self) -> None:
        """Remove every page this process saved (at its exit)."""
        with self._lock:
            for name in {n for n in self._saved.values() if n is not None}:
                shutil.rmtree(self.folder / name, ignore_errors=True)
            self._saved.clear()


def sweep(folder: Path) -> None:
    """Remove the pages saved in `folder` by processes no longer running (one killed has no
    exit to remove its own: `arena-<pid>-...`)."""
    try:
        saved = list(folder.glob("arena-*-*"))
    except OSError:
        return
    for page in saved:
        pid = page.name.split("-")[1]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(page, ignore_errors=True)
        except OSError:  # another user's process: running
            continue


#: Every `Addressed` of this process, whose saved pages are removed at its exit.
_SAVING: weakref.WeakSet[Addressed] = weakref.WeakSet()


@atexit.register
def _forget_saved() -> None:
    for addressed in list(_SAVING):
        addressed.forget()


class ServeDrawn:
    """ASGI middleware: a request for the page itself (`/`, any query) calls `redraw` (which
    must not block: `Following.serve_soon` draws in the background) before Gradio answers
    it with the config as it stands; a request of an address (`addressed`) is answered with
    the page that address asks for (`Addressed`: a deep link added to its query); the page
    whose address asks for nothing carries its `first_rows` in its HTML
    (`leaderboard.first_rows`). Gradio's own parameters (`__theme`: the Hub's page of a Space
    opens it at `/?__theme=system`, `light` or `dark`) ask for nothing."""

    def __init__(self, app: ASGIApp, redraw: Callable[[], None], addressed: Addressed | None = None,
                 first_rows: Callable[[], str] | None = None) -> None:
        self.app, self.redraw, self.addressed, self.first_rows = app, redraw, addressed, first_rows

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in ("GET", "HEAD") and \
                scope["path"].rstrip("/") == scope.get("root_path", "").rstrip("/"):
            self.redraw()
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
            asked = {k: v for k, v in query.items() if not k.startswith("__")}
            if self.addressed is not None and asked and "deep_link" not in asked:
                name = await run_in_threadpool(self.addressed.link_or_none, asked)  # it may draw and save a page
                if name is not None:
                    scope = {**scope, "query_string": urlencode({**query, "deep_link": name}).encode()}
            if not asked and scope["method"] == "GET" and self.first_rows is not None:
                send = with_first_rows(send, self.first_rows, theme=query.get("__theme", ""))
        await self.app(scope, receive, send)
