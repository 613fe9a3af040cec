"""The PvP table's first rows in the HTML of the page `/`, before Gradio's script starts.

Why (issue 39, measured at 500 revisions and 200,000 matches in Chromium): Gradio's start
(its scripts fetched, parsed and mounted) took 1.0-1.8 s here before its table showed a row,
for a bare Gradio app serving nothing but that table as well (`bench.ui_scale`'s
`gradio_floor_ms`); its server-side rendering, which would remove the wait, needs Node 24
and a second server. So the page `/` carries the table's first page as a plain HTML table
(`FirstRows`), laid over the page from the document's first paint until the frame Gradio's
own table has its rows. It is drawn from the config Gradio mounts (the same rows), its
links plain links: a browser without scripts, a crawler or a link preview reads the
leaderboard too. `leaderboard.served.ServeDrawn` inserts it (`with_first_rows`).
"""

from __future__ import annotations

import html
import logging
import threading
import weakref
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

import gradio as gr
from markdown_it import MarkdownIt
from starlette.concurrency import run_in_threadpool
from starlette.types import Send

log = logging.getLogger(__name__)

#: The first failure to draw the first rows, once said (`with_first_rows`).
_FAILED: list[Exception] = []

#: The element id of the first rows drawn in the page's HTML (`FirstRows`).
FIRST_ROWS_ID = "arena-first-rows"

#: How Markdown cells are drawn there: CommonMark, raw HTML shown as text (what a policy's
#: name holds is never markup), links as links.
_MARKDOWN = MarkdownIt("commonmark", {"html": False})


def cell_html(value: Any, kind: str) -> str:
    """One cell of a served table as HTML: a Markdown cell rendered (`_MARKDOWN`), any other
    escaped; a missing number (NaN, None) empty."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    text = str(value)
    return _MARKDOWN.renderInline(text) if kind == "markdown" else html.escape(text)


def table_html(props: Mapping[str, Any]) -> str:
    """A `gr.Dataframe`'s served props (its value's headers and rows, its column kinds) as a
    plain HTML table; "" with no row. Pure."""
    value = props.get("value") or {}
    headers, rows = list(value.get("headers") or []), list(value.get("data") or [])
    if not headers or not rows:
        return ""
    kinds = list(props.get("datatype") or [])
    kinds = kinds if isinstance(kinds, list) and len(kinds) == len(headers) else ["str"] * len(headers)
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f'<td class="{"n" if k == "number" else "t"}">{cell_html(v, k)}</td>'
                                    for v, k in zip(row, kinds)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


#: What the first rows look like: over the page as it starts, in Gradio's own colours (from
#: the page's template: `--bg`, `--col`), the system's light or dark unless the address
#: names one (`?__theme=light` or `dark`: class `light` or `dark`, `with_first_rows`).
FIRST_ROWS_CSS = """
#ID { position: fixed; inset: 0; z-index: 2147483000; overflow: auto; padding: 16px 32px; background: var(--bg);
  color: var(--col); font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
#ID a { color: #2563eb; }
@media (prefers-color-scheme: dark) { #ID { background: var(--bg-dark); color: var(--col-dark); } #ID a { color: #60a5fa; } }
#ID.dark { background: var(--bg-dark); color: var(--col-dark); } #ID.dark a { color: #60a5fa; }
#ID.light { background: var(--bg); color: var(--col); } #ID.light a { color: #2563eb; }
#ID h1 { font-size: 28px; margin: 8px 0; } #ID p { margin: 4px 0 16px; opacity: 0.75; }
#ID table { border-collapse: collapse; font-size: 13px; }
#ID th, #ID td { padding: 8px; border-bottom: 1px solid rgba(128, 128, 128, 0.3); text-align: left; vertical-align: top; }
#ID td { white-space: nowrap; } #ID td.n { font-variant-numeric: tabular-nums; }
"""


#: When the first rows go: in the first frame Gradio's table (`#TABLE`) has a row (looked
#: for at each frame, before it is painted), or after `GIVE_UP_MS` (a table the load emptied).
#: A script in the block itself, so that it looks from the first frame on, whenever Gradio's
#: own scripts run (a CSS `body:has(#TABLE .virtual-row)` rule would have the browser check
#: every node Gradio adds against it; a look a frame is one query). Without scripts they stay:
#: the page is then that table, its links plain links.
FIRST_ROWS_JS = """(() => { const rows = document.getElementById("ROWS_ID"), until = performance.now() + GIVE_UP_MS;
  const look = (now) => (document.querySelector("#TABLE .virtual-row") || now > until) ? rows.remove() : requestAnimationFrame(look);
  requestAnimationFrame(look); })();"""
GIVE_UP_MS = 15_000


class FirstRows:
    """The first rows of the table `elem_id` as a served page holds them, as HTML for the
    page's `<body>` (`with_first_rows`); drawn once per served config
    (`leaderboard.served.serve` makes a new one).

    Args:
        demo: the page (its config as `serve` last set it).
        elem_id: the table's element id (the first tab's: what a page opened at `/` shows).
        note: the line over the table while the page starts.
    """

    def __init__(self, demo: gr.Blocks, elem_id: str, note: str) -> None:
        self.demo, self.elem_id, self.note = weakref.ref(demo), elem_id, note
        self._drawn: tuple[Any, str] = (None, "")  # (the config, its first rows)
        self._lock = threading.Lock()

    def __call__(self) -> str:
        """The first rows of the page as served now; "" when the table has none (or this
        Gradio keeps no config dict: `leaderboard.served.supported`)."""
        demo = self.demo()
        config = getattr(demo, "config", None)
        with self._lock:
            if self._drawn[0] is config:
                return self._drawn[1]
        drawn = self.draw(config, getattr(demo, "title", "")) if isinstance(config, dict) else ""
        with self._lock:
            self._drawn = (config, drawn)
        return drawn

    def draw(self, config: Mapping[str, Any], title: str) -> str:
        """`config`'s table as the block `__call__` serves."""
        props: Mapping[str, Any] = next((c.get("props", {}) for c in config.get("components", [])
                                         if c.get("props", {}).get("elem_id") == self.elem_id), {})
        table = table_html(props)
        if not table:
            return ""
        style = FIRST_ROWS_CSS.replace("#ID", f"#{FIRST_ROWS_ID}")
        script = FIRST_ROWS_JS.replace("ROWS_ID", FIRST_ROWS_ID).replace("#TABLE", f"#{self.elem_id}") \
            .replace("GIVE_UP_MS", str(GIVE_UP_MS))
        return (f'<div id="{FIRST_ROWS_ID}" aria-busy="true"><style>{style}</style>'
                f"<h1>{html.escape(title)}</h1><p>{html.escape(self.note)}</p>{table}</div><script>{script}</script>")


def inserted(page: bytes, block: str) -> bytes:
    """`page` (an HTML document) with `block` first in its `<body>`; as it is without one."""
    start = page.find(b"<body", max(0, page.find(b"</head>")))
    end = page.find(b">", start) if start >= 0 else -1
    return page if end < 0 else page[:end + 1] + block.encode() + page[end + 1:]


def with_first_rows(send: Send, first_rows: Callable[[], str], theme: str = "") -> Send:
    """`send`, the page it answers with `first_rows()` inserted (`inserted`), in `theme`'s
    colours (Gradio's `__theme`: "light", "dark", else the system's), its length set to
    match; any other answer (an error, not HTML) as it is. Where `first_rows` fails, the
    page goes as Gradio made it, and the log says why (once)."""
    started: dict[str, Any] = {}
    body = bytearray()

    async def sending(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            kind = dict(message.get("headers", [])).get(b"content-type", b"")
            if message.get("status") == 200 and kind.startswith(b"text/html"):
                started.update(message)
                return
        elif message["type"] == "http.response.body" and started:
            body.extend(message.get("body", b""))
            if message.get("more_body", False):
                return
            try:
                block = await run_in_threadpool(first_rows)
            except Exception as error:  # noqa: BLE001 - the page without its first rows is still the page
                if not _FAILED:
                    _FAILED.append(error)
                    log.warning("the PvP table's first rows could not be drawn into the page (%s: %s); pages are "
                                "served without them", type(error).__name__, error, exc_info=True)
                block = ""
            if theme in ("light", "dark"):
                block = block.replace(f'<div id="{FIRST_ROWS_ID}"', f'<div id="{FIRST_ROWS_ID}" class="{theme}"', 1)
            page = inserted(bytes(body), block)
            headers = [(k, v) for k, v in started.get("headers", []) if k != b"content-length"]
            await send({**started, "headers": [*headers, (b"content-length", str(len(page)).encode())]})
            await send({"type": "http.response.body", "body": page})
            return
        await send(message)

    return sending
