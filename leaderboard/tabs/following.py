"""How an open page follows the Space: one load event, then one refresh event only when
something it shows may have changed.

Why it is built this way (measured at 500 revisions and 200,000 matches, issue 39): on every
loading state of every event, Gradio 6's page copies (structuredClone) the value of every
component any event has ever updated, the 500-row tables among them. The pages had 17 load
events and two timers firing five events every 5 s, so copying was most of a page load and
kept the page's main thread busy while a replay played. Now:

- **One load.** Every view a page opens with is computed by a single `demo.load` (`wire`):
  the tables, the lines over the tabs, what the page's address asks for (`Following.opened`).
- **No event while nothing changes.** A timer that runs in the browser alone (no event, no
  copying) reads `VERSION_PATH`, a few bytes saying what every view depends on
  (`Following.version`); only when that changed does the page ask for a refresh, and the
  refresh sends only the views whose state or inputs changed, and of those only the outputs
  that differ from what the page has (`leaderboard.updates.only_changed`).
- **Served drawn.** The page's HTML already holds the latest draw of every view the load
  would draw with no address (`serve_soon`, `leaderboard.served`): its rows show as the page
  mounts, and the load, told which draw the page holds, sends only what differs from it.
- **A view's own controls** (a search box, a filter) draw that view at once, whole; a tab
  opened draws its views through the same comparison, so a value the load already computed
  is not computed again.

A refresh that read a control's value from before a visitor's change can answer after that
change's own event: the version changes at least every `HEAL_S` seconds, so such a page is
right again within that.
"""

from __future__ import annotations

import hashlib
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import gradio as gr
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from leaderboard import served
from leaderboard.updates import only_changed

#: Where a page reads the Space's version (`Following.version`), relative to the page.
VERSION_PATH = "arena/version"

#: Seconds between an open page's looks at the version (a match recorded reaches it within
#: this and the refresher's second).
LOOK_S = 2.0

#: The version changes at least this often, so a page a late refresh left behind is redrawn.
HEAL_S = 30.0

#: How many draws served in the page (`Following.serve_soon`) the load still recognizes: a
#: visitor's load follows its HTML by a second or so, and the served draw changes at most
#: once per standings update.
SERVED_KEPT = 8

#: The browser's look at the version: the text it answers, or the last one if the Space is
#: unreachable (a page that lost its Space keeps what it shows). Until the version moves past
#: the one the load was drawn at (`loaded`), it stays empty: setting it is what asks for a
#: refresh. While the load is still drawing it asks for nothing (for 20 s at most: a load
#: that failed does not leave the page unrefreshed). A Space launched without the
#: route says so on the console and in `window.__arenaVersionMissing`.
LOOK_JS = f"""async (last, loaded) => {{
  try {{
    const answer = await fetch("{VERSION_PATH}", {{cache: "no-store"}});
    if (answer.ok) {{
      const now = await answer.text();
      window.__arenaFirstLook = window.__arenaFirstLook || Date.now();
      if (!loaded && Date.now() - window.__arenaFirstLook < 20000) return last;  // the load is drawing
      return (!last && now === loaded) ? last : now;  // what the load drew: nothing to ask for
    }}
    if (!window.__arenaVersionMissing) console.error(`{VERSION_PATH} answered ${{answer.status}}: this page will not `
      + "follow the Space (launch it with leaderboard.pages.launch_options(demo))");
    window.__arenaVersionMissing = answer.status;
  }} catch (error) {{}}
  return last;
}}"""


#: An output an event leaves as it is (`gr.skip()`'s value).
SKIP = gr.skip()

#: The element id of the hidden box a link followed in the page writes its address's query in
#: (`leaderboard.pages.GO_JS`): its change draws what that address asks for.
GO_ELEM_ID = "page-address"

@dataclass(frozen=True)
class View:
    """One view of a page that follows the Space: `view(*inputs)` answers `outputs`.

    Args:
        view: what the outputs show, from the inputs' values.
        inputs: the components it reads (its filters, a chosen policy).
        outputs: the components it draws.
        first: the view at the page's load, if not `view` (the policy list sets the chosen
            policy at the load, and never after: a refresh's choice could be older than the visitor's).
        key: what else besides the standings and the statuses it depends on (the matches in
            flight, the queue), as a hashable value; part of the version every page reads.
        triggers: events that draw it at once (its controls' changes, a tab opened).
        lazy: not drawn at the load (unless the address sets one of its inputs), but by its
            first trigger (its tab opened), and refreshed only after that: a component any
            event has drawn is copied by Gradio's page on every later event, so a tab the
            visitor never opens costs nothing.
        concurrency_id: the queue its events share with other events into the same outputs.
        quiet: its triggers' events show no progress on its outputs and skip Gradio's queue.
            Gradio's page gives each output of an event a loading status as it starts and
            ends, and the table under one is drawn again each time: for the PvP table's own
            controls (a search, a sort, a page: answered in a fifth of a second) that was a
            quarter of a sort's time here (click to sorted rows, medians ~255 -> ~205 ms at 500
            revisions). A queued event is a join, a wait for the queue's next look (every 20 ms
            here: `leaderboard.pages.QUEUE_LOOK_S`) and its messages on the page's stream; one
            outside the queue is one request answered (two 200k Spaces side by side, 12 clicks
            each: click to sorted rows ~205 -> ~168 ms). Its order is kept by the page, which
            sends a control's next event once the last has answered (Gradio's `trigger_mode`).
    """

    view: Callable[..., tuple[Any, ...]]
    inputs: tuple[Any, ...]
    outputs: tuple[Any, ...]
    first: Callable[..., tuple[Any, ...]] | None = None
    key: Callable[[], Hashable] | None = None
    triggers: tuple[Any, ...] = ()
    lazy: bool = False
    concurrency_id: str | None = None
    quiet: bool = False


@dataclass
class Following:
    """The views of a page and what it opens with; `wire` makes its events.

    Args:
        state: what every view is a function of (`TabContext.state`: the standings' version,
            the statuses, the restore's progress).
    """

    state: Callable[[], Hashable]
    views: list[View] = field(default_factory=list)
    loads: list[tuple[Callable[[], tuple[Any, ...]], tuple[Any, ...]]] = field(default_factory=list)
    asks: tuple[Any, ...] = ()
    opened: Callable[[Mapping[str, str], bool], dict[Any, Any]] = lambda query, followed: {}
    """What an address asks for (`address`), from its query: the value of each component it sets."""
    heal_s: float = HEAL_S
    served: OrderedDict[str, tuple[tuple[Any, ...], tuple[Any, ...]]] = field(default_factory=OrderedDict, repr=False)
    """The draws served in the page, by token: each view's key and fingerprints (None: not served)."""
    addressed: OrderedDict[str, tuple[tuple[Any, ...], tuple[Any, ...]]] = field(default_factory=OrderedDict, repr=False)
    """The same for the pages of addresses (`drawn_for`), by token."""
    _demo: Callable[[], gr.Blocks | None] = field(default=lambda: None, repr=False)
    _serving: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _token: Any = field(default=None, repr=False)
    _unserved: bool = field(default=False, repr=False)  # this Gradio cannot serve a page drawn

    def follow(self, view: Callable[..., tuple[Any, ...]], *, outputs: Sequence[Any], inputs: Sequence[Any] = (),
               **options: Any) -> None:
        """Add a view (`View`'s arguments): drawn at the load, refreshed when what it depends on changed."""
        self.views.append(View(view, tuple(inputs), tuple(outputs), **options))

    def on_load(self, view: Callable[[], tuple[Any, ...]], outputs: Sequence[Any]) -> None:
        """Draw `outputs` with `view()` at each page's load only (what a visitor reloads to see again)."""
        self.loads.append((view, tuple(outputs)))

    def address(self, components: Sequence[Any], opened: Callable[[Mapping[str, str], bool], dict[Any, Any]]) -> None:
        """An address sets some of `components`: `opened(query, followed)` answers their values
        from the address's query (the others are left as they are), `followed` when it is a
        link followed in the page (`leaderboard.pages.GO_JS`) rather than the page's own address at its load. A
        view's input set so is drawn with that value."""
        self.asks, self.opened = tuple(components), opened

    def version(self) -> str:
        """What every page's views depend on now, as a short text: equal texts, nothing to
        redraw (the state, each view's `key`, and the `heal_s` period, `HEAL_S` by default)."""
        keys = (self.state(), tuple(v.key() for v in self.views if v.key is not None), int(time.time() // self.heal_s))
        return hashlib.blake2b(repr(keys).encode(), digest_size=8).hexdigest()

    def key(self, view: View, values: Sequence[Any]) -> tuple[Any, ...]:
        """What `view` was drawn from: the state, its key, its inputs (an empty box is None in
        a component's initial value and "" once the page sends it: the same here)."""
        return (self.state(), view.key() if view.key is not None else None, tuple("" if v is None else v for v in values))

    def route(self) -> Route:
        """The `VERSION_PATH` route (`leaderboard.pages.launch_options` serves it)."""

        async def version(request: Request) -> PlainTextResponse:
            return PlainTextResponse(self.version(), headers={"Cache-Control": "no-store"})

        return Route("/" + VERSION_PATH, version)

    def draw(self, view: View, last: Any, shown: Any, values: Sequence[Any], *, load: bool = False,
             refresh: bool = False) -> tuple[Any, ...]:
        """`view`'s outputs, then the fingerprints of what the page then shows and the key it
        was drawn from (read before drawing: a change meanwhile is drawn again): all skips
        where the key is `last` (nothing changed; at the `load`, the page's state is set to what
        it was served), or for a `refresh`, a lazy view not yet drawn. With `last` and `shown`
        None, the view drawn whole (the page served, an address's page, a link followed)."""
        key = self.key(view, values)
        if key == last or (refresh and view.lazy and last is None):
            return (*(gr.skip() for _ in view.outputs), *((shown, last) if load else (gr.skip(), gr.skip())))
        drawn = (view.first if load and view.first is not None else view.view)(*values)
        return (*only_changed(drawn, shown), key)

    def servable(self) -> list[int]:
        """The views served drawn in the page: those the load draws with no address (not
        lazy), whose outputs every visitor shares (no `gr.State`)."""
        return [i for i, v in enumerate(self.views) if not v.lazy and all(served.servable(c) for c in v.outputs)]

    def serve_soon(self) -> None:
        """Draw the page's servable views with their inputs as built, in the background, and
        serve the page with that draw in it if it changed (`leaderboard.served`); at most one
        draw at a time, none before `wire`, and none ever on a Gradio `served` does not
        support. Called for each request of the page (`served.ServeDrawn`): the visitor is
        served the draw as it stands, the next one the new."""
        if self._demo() is None or self._unserved or not self._serving.acquire(blocking=False):
            return

        def run() -> None:
            try:
                self._serve()
            except Exception:  # noqa: BLE001 - a page served undrawn still draws at its load
                served.log.exception("the page's views could not be drawn into it; it is served as built")
            finally:
                self._serving.release()

        threading.Thread(target=run, name="arena-serve-page", daemon=True).start()

    def _serve(self) -> None:
        demo = self._demo()
        if demo is None:
            return
        if not served.supported(demo):
            self._unserved = True
            return
        indexes = self.servable()
        values = {i: [getattr(c, "value", None) for c in self.views[i].inputs] for i in indexes}
        keys: list[Any] = [None] * len(self.views)
        prints: list[Any] = [None] * len(self.views)
        for i in indexes:
            keys[i] = self.key(self.views[i], values[i])  # read before drawing: a change meanwhile is redrawn
        latest = next(reversed(self.served.values()), None)
        if latest is not None and list(latest[0]) == keys:
            return
        drawn: dict[Any, Any] = {}
        for i in indexes:
            *outputs, prints[i], _ = self.draw(self.views[i], None, None, values[i], load=True)
            drawn.update(zip(self.views[i].outputs, outputs))
        token = hashlib.blake2b(repr(keys).encode(), digest_size=8).hexdigest()
        served.serve(demo, {**drawn, self._token: token})
        self.served[token] = (tuple(keys), tuple(prints))
        while len(self.served) > SERVED_KEPT:
            self.served.popitem(last=False)

    @property
    def serving(self) -> threading.Lock:
        """Held while the page's served draw changes: `drawn_for` must be called, and the
        page it draws for saved, holding it (`leaderboard.served.Addressed`), so that an
        address's draw and the page's own it is served with are one page."""
        return self._serving

    def asked_views(self, asked: Mapping[Any, Any]) -> Iterator[tuple[int, View, list[Any], list[Any], Any]]:
        """Each view whose inputs an address sets (`asked`: the value of each component it
        sets) drawn whole, with those values and its other inputs as built, as a page opened
        at that address shows it: its index, the view, its outputs, their fingerprints and
        the key it was drawn from."""
        for i, view in enumerate(self.views):
            if any(c in asked for c in view.inputs):
                *outputs, printed, key = self.draw(view, None, None, [asked.get(c, getattr(c, "value", None))
                                                                      for c in view.inputs], load=True)
                yield i, view, outputs, printed, key

    def drawn_for(self, asked: Mapping[Any, Any]) -> dict[Any, Any]:
        """The views whose inputs an address sets (`asked`: the value of each component it
        sets, as the load reads them) drawn with those values, lazy ones too, as the page of
        that address is served (`leaderboard.served.Addressed`): each output every visitor
        could be served, and the token that tells the page's load this draw and the page's
        own it is served with (`serve_soon`), so that the load sends only what differs. A
        policy's address then shows its page as the page mounts, not after the load (the
        load's join, a policy's page at 200,000 matches drawn, the answer applied: 0.3-0.5 s
        here). An output not served (a `gr.State`) is fingerprinted None: sent at the next draw
        that changes. Nothing where the page cannot be served drawn, or nothing is asked."""
        if self._demo() is None or self._unserved or self._token is None:
            return {}
        latest = next(reversed(self.served.values()), None)
        keys: list[Any] = list(latest[0]) if latest is not None else [None] * len(self.views)
        prints: list[Any] = list(latest[1]) if latest is not None else [None] * len(self.views)
        drawn: dict[Any, Any] = {}
        for i, view, outputs, printed, key in self.asked_views(asked):
            keys[i] = key
            kept = [served.servable(c) for c in view.outputs]
            drawn.update((c, v) for c, v, k in zip(view.outputs, outputs, kept) if k)
            prints[i] = [p if k else None for p, k in zip(printed, kept)]
        if not drawn:
            return {}
        token = "a" + hashlib.blake2b(repr((keys, prints)).encode(), digest_size=8).hexdigest()
        self.addressed[token] = (tuple(keys), tuple(prints))
        self.addressed.move_to_end(token)
        while len(self.addressed) > 4 * served.ADDRESSES_KEPT:  # a page kept longer than its token is drawn again
            self.addressed.popitem(last=False)
        return {**drawn, self._token: token}

    def wire(self, demo: gr.Blocks, *, look_s: float = LOOK_S) -> None:
        """Make the page's load, its browser-side look at the version, its refresh and its
        views' triggers. Call it once, after every view was added, outside any `gr.Tabs` (it
        adds `gr.State`s)."""
        views = self.views
        seen = [gr.State(None) for _ in views]  # the key each view was drawn from
        sent = [gr.State(None) for _ in views]  # the fingerprints of what it was sent
        inputs = _unique(c for v in views for c in v.inputs)
        outputs = _unique(c for v in views for c in v.outputs)
        loaded = _unique(c for _, outs in self.loads for c in outs if c not in outputs)
        asked_only = _unique(c for c in self.asks if c not in outputs and c not in loaded)

        def drawn_all(values: dict[Any, Any], lasts: Sequence[Any], shown: Sequence[Any], *, load: bool,
                      asked: Sequence[Any] = ()) -> tuple[Any, ...]:
            by_output: dict[Any, Any] = {c: gr.skip() for c in outputs}
            prints, keys = [gr.skip()] * len(views), [gr.skip()] * len(views)
            for i, view in enumerate(views):
                if load and view.lazy and not any(c in asked for c in view.inputs):
                    continue
                drawn = self.draw(view, lasts[i], shown[i], [values[c] for c in view.inputs], load=load, refresh=not load)
                by_output.update(zip(view.outputs, drawn[:-2]))
                prints[i], keys[i] = drawn[-2], drawn[-1]
            return (*(by_output[c] for c in outputs), *prints, *keys)

        def refresh(*values: Any) -> tuple[Any, ...]:
            n = len(views)
            return drawn_all(dict(zip(inputs, values[2 * n:])), values[:n], values[n:2 * n], load=False)

        def load(token: str, request: gr.Request) -> tuple[Any, ...]:
            """A visitor's page: every view but the lazy ones, drawn with what its address
            asks, each sent only where it differs from the draw the page was served with
            (`token`: `serve_soon`), and the version they were drawn at (read first: a change
            meanwhile is redrawn)."""
            at = self.version()
            asked = self.opened(dict(request.query_params) if request is not None else {}, False)
            values = {c: asked.get(c, getattr(c, "value", None)) for c in inputs}
            by_load: dict[Any, Any] = {}
            for view, outs in self.loads:
                by_load.update(zip(outs, view()))
            lasts, shown = self.served.get(token or "") or self.addressed.get(token or "") or \
                ((None,) * len(views), (None,) * len(views))
            views_drawn = drawn_all(values, lasts, shown, load=True, asked=list(asked))
            return (*views_drawn[:len(outputs)], *(by_load[c] for c in loaded),
                    *(asked.get(c, gr.skip()) for c in asked_only), *views_drawn[len(outputs):], at)

        def go(query: str) -> tuple[Any, ...]:
            """A link to one of the page's addresses followed in the page
            (`leaderboard.pages.GO_JS`): what the address asks set, and each view it sets an
            input of drawn, whole, with those values and its other inputs as built (as a page
            opened at that address shows it); the rest of the page as it is."""
            asked = self.opened(dict(parse_qsl(query.lstrip("?"))), True)
            by_output: dict[Any, Any] = {c: gr.skip() for c in outputs}
            prints, keys = [gr.skip()] * len(views), [gr.skip()] * len(views)
            reset: set[int] = set()  # the inputs of the views drawn: as the address sets them, or as built
            for i, view, drawn, printed, key in self.asked_views(asked):
                by_output.update(zip(view.outputs, drawn))
                prints[i], keys[i] = printed, key
                reset.update(id(c) for c in view.inputs)
            for c in outputs:  # an input a drawn view also sets (a pager's page), left as it was drawn
                if id(c) in reset and by_output[c] == SKIP:
                    by_output[c] = asked.get(c, getattr(c, "value", None))
            return (*(by_output[c] for c in outputs),
                    *(asked.get(c, getattr(c, "value", None)) if id(c) in reset or c in asked else gr.skip()
                      for c in set_by_go),
                    *prints, *keys)

        version = gr.Textbox("", visible=False, elem_id="page-version")  # its change asks for a refresh
        drawn_at = gr.Textbox("", visible=False, elem_id="page-loaded-version")  # no listener: setting it asks for nothing
        self._token = gr.Textbox("", visible=False, elem_id="page-served")  # which draw the page was served with
        # where the load, the refresh and a quiet view's events show their progress where nothing
        # waits on them: nowhere on screen. A refresh is the Space moving on, not the visitor
        # waiting (Gradio's page greyed every output it might redraw, every 2 s while matches
        # were recorded, and drew the tables under that status again as it started and ended);
        # the load greys only what the page was not served drawn (`servable`, and an address's
        # views: `drawn_for`).
        unseen = gr.Textbox("", visible=False, elem_id="page-progress")
        addressed = {i for i, v in enumerate(views) if any(c in self.asks for c in v.inputs)}
        served_outputs = {id(c) for i in {*self.servable(), *addressed} for c in views[i].outputs}
        waited = [c for c in [*outputs, *loaded, *asked_only] if id(c) not in served_outputs and served.servable(c)]
        demo.load(load, inputs=self._token, outputs=[*outputs, *loaded, *asked_only, *sent, *seen, drawn_at],
                  api_visibility="private", show_progress_on=waited or [unseen])
        self._demo = weakref.ref(demo)
        shared = next((v.concurrency_id for v in views if v.concurrency_id), None)
        address = gr.Textbox("", show_label=False, container=False, elem_id=GO_ELEM_ID, elem_classes=["arena-hidden"])
        set_by_go = _unique(c for c in [*inputs, *self.asks] if c not in outputs)
        address.change(go, inputs=address, outputs=[*outputs, *set_by_go, *sent, *seen], api_visibility="private",
                       concurrency_id=shared, show_progress_on=[unseen])
        timer = gr.Timer(look_s)
        timer.tick(None, inputs=[version, drawn_at], outputs=version, js=LOOK_JS)  # in the browser: no event, no copying
        version.change(refresh, inputs=[*seen, *sent, *inputs], outputs=[*outputs, *sent, *seen], api_visibility="private",
                       concurrency_id=shared, show_progress_on=[unseen])
        for i, view in enumerate(views):
            # A change of one of the view's own controls draws it whatever the page's state says
            # it shows, and sends it whole: the visitor changed what it shows. The load, the
            # refresh and such an event can run at once and write that state in any order (a
            # page served drawn is searched before its load answers; the load, drawing the
            # table as served, marked it so, and the cleared search then drew nothing, until
            # the standings changed). A tab opened draws only what differs (the load may have
            # drawn that tab already, for an address).
            controls = [t for t in view.triggers if _changes(t, view.inputs)]
            others = [t for t in view.triggers if not _changes(t, view.inputs)]
            for triggers, changed in ((controls, True), (others, False)):
                if triggers:
                    gr.on(triggers, lambda last, shown, *values, view=view, changed=changed:
                          self.draw(view, None if changed else last, None if changed else shown, values),
                          inputs=[seen[i], sent[i], *view.inputs], outputs=[*view.outputs, sent[i], seen[i]],
                          api_visibility="private", concurrency_id=view.concurrency_id,
                          show_progress_on=[unseen] if view.quiet else None, queue=not view.quiet)


def _changes(trigger: Any, inputs: Sequence[Any]) -> bool:
    """Whether `trigger` (an event listener, `component.change`) is a change of one of `inputs`."""
    return getattr(trigger, "event_name", "") in ("change", "input") and \
        any(getattr(trigger, "__self__", None) is c for c in inputs)


def _unique(components: Any) -> list[Any]:
    """`components` in order, each once."""
    found: dict[int, Any] = {}
    for c in components:
        found.setdefault(id(c), c)
    return list(found.values())
