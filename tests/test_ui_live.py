"""Live tables: a match recorded while a page is open reaches it without a reload, from the
local store (no flush, no push), and an open page with nothing new redraws nothing."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
from playwright.sync_api import expect

from arena.lifecycle import Status
from arena.rules import stage_opponents
from arena.settings import ArenaSettings
from arena.simulation import play
from history.statuses import StatusLog
from history.store import HistoryStore
from leaderboard.refresher import StandingsRefresher
from leaderboard.tabs.context import TabContext
from tests_support import UI_WAIT_MS, free_port, record_lifecycle, serve_app

pytestmark = pytest.mark.browser

NEWCOMER = "nina/live"
SHA = "a" * 40


def pve_match(index: int, seed: int = 0):
    """A synthetic PvE stage-1 match of NEWCOMER against the stage's built-ins."""
    lineup = [NEWCOMER, *(f"builtin:{n}" for n in stage_opponents(1))]
    played = play(lineup, [3.0] + [0.0] * 15, rng=np.random.default_rng(seed), index=index, track="pve")
    teams = tuple(replace(t, revision=SHA) if t.policy_id == NEWCOMER else t for t in played.teams)
    return replace(played, teams=teams, stage=1, match_id=f"live-{index:04d}")


def test_a_match_recorded_reaches_the_open_page_without_a_reload(browser, tmp_path):
    """A match recorded (the write-ahead log only) reaches an open page's tables, and the
    refresh that brings it shows no loading status on them (`Following.wire`)."""
    store = HistoryStore(tmp_path / "history")
    statuses = StatusLog(tmp_path / "statuses.jsonl")
    record_lifecycle(statuses, NEWCOMER, SHA, Status.EVALUATING, "validated")
    data = StandingsRefresher(store, statuses=statuses.states, hub_url="http://hub.example", bootstrap=0)
    data.refresh()
    data.run_in_background()  # the Space's cadence
    demo, url = serve_app(data)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        page.goto(url)
        page.get_by_role("tab", name="PvE").click()
        table = page.locator("#pve-table")
        expect(table).to_contain_text(NEWCOMER, timeout=UI_WAIT_MS)
        expect(table).to_contain_text("0 / 0 / 0")  # evaluating, nothing played yet
        page.wait_for_timeout(500)  # the tab's own event, greying its table while it draws, is over
        page.evaluate("""() => { window.__greyed = [];
          new MutationObserver((changes) => { for (const c of changes) if (c.target.classList.contains("pending"))
            window.__greyed.push(c.target.id || c.target.className); })
            .observe(document.body, {subtree: true, attributes: true, attributeFilter: ["class"]}); }""")
        store.record(pve_match(0))  # the write-ahead log only: neither flushed into a shard nor pushed
        expect(table).to_contain_text("1 / 0 / 0", timeout=UI_WAIT_MS)
        assert page.evaluate("window.__greyed") == []  # the Space moving on greys nothing on the page
        page.get_by_role("tab", name="Matches").click()
        expect(page.locator("#matches-table")).to_contain_text("live-0000", timeout=UI_WAIT_MS)
    finally:
        context.close()
        data.stop()
        demo.close()


def test_an_open_page_redraws_only_when_something_changed(browser, tmp_path):
    """`TabContext.follow`: an open page reads the Space's version in the browser and asks for
    a refresh only when it moved; the refresh compares the standings' version, the statuses
    and the inputs with what the page was drawn from, and skips the view while they are the
    same. No event at all reaches the Space while nothing changes."""
    store = HistoryStore(tmp_path / "history")
    data = StandingsRefresher(store, hub_url="http://hub.example", bootstrap=0)
    data.refresh()
    context_ = TabContext(data, ArenaSettings(data_dir=tmp_path / "data"), lambda: None)
    calls: list[float] = []

    def view() -> tuple[str]:
        calls.append(time.monotonic())
        return (f"drawn {len(calls)} times",)

    with gr.Blocks() as demo:
        shown = gr.Markdown(elem_id="shown")
        context_.follow(view, outputs=[shown])
        context_.following.heal_s = 3600  # no healing redraw during the test
        context_.following.wire(demo, look_s=0.2)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                app_kwargs={"routes": [context_.following.route()]})
    context = browser.new_context()
    try:
        page = context.new_page()
        events: list[str] = []
        page.on("request", lambda r: events.append(r.url) if "queue/join" in r.url else None)
        page.goto(f"http://127.0.0.1:{port}/")
        page.locator("#shown", has_text="drawn 1 times").wait_for(timeout=UI_WAIT_MS)
        time.sleep(2.0)  # ten looks at the version with nothing new
        assert len(calls) == 1 and len(events) == 1, events  # the load, and nothing since
        store.record(pve_match(1))
        data.refresh()  # a new version of the standings: the next tick draws
        page.locator("#shown", has_text="drawn 2 times").wait_for(timeout=UI_WAIT_MS)
        assert len(calls) == 2
    finally:
        context.close()
        demo.close()


def test_the_page_is_served_with_its_views_drawn_in(browser, tmp_path):
    """`Following.serve_soon` (`leaderboard.served`): a visit draws the page's views into the
    page Gradio serves, so the next visitor sees them before any event answers (here the
    queue is cut off), and that visitor's load, told which draw it holds, draws nothing
    again. Once the standings change, the page served is the old draw until redrawn, and its
    load sends the new one."""
    import urllib.request

    from starlette.middleware import Middleware

    from leaderboard.served import ServeDrawn

    store = HistoryStore(tmp_path / "history")
    data = StandingsRefresher(store, hub_url="http://hub.example", bootstrap=0)
    data.refresh()
    context_ = TabContext(data, ArenaSettings(data_dir=tmp_path / "data"), lambda: None)
    calls: list[int] = []

    def view() -> tuple[str, object]:
        calls.append(data.version)
        return f"drawn at version {data.version}", gr.Markdown("the note", visible=True)

    loads = iter(range(1, 100))
    with gr.Blocks() as demo:
        shown = gr.Markdown(elem_id="shown")
        note = gr.Markdown(elem_id="note", visible=False)
        loaded = gr.Markdown(elem_id="loaded")  # says the load answered (it answers all its outputs at once)
        context_.follow(view, outputs=[shown, note])
        context_.on_load(lambda: (f"load {next(loads)} answered",), [loaded])
        context_.following.wire(demo)
    following = context_.following
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                app_kwargs={"routes": [following.route()],
                            "middleware": [Middleware(ServeDrawn, redraw=following.serve_soon)]})

    def served_after_a_visit(count: int) -> None:
        urllib.request.urlopen(url, timeout=30).read()
        deadline = time.monotonic() + UI_WAIT_MS / 1000
        while len(following.served) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(following.served) == count

    try:
        served_after_a_visit(1)
        first = data.version
        assert calls == [first]
        cut_off = browser.new_context()
        page = cut_off.new_page()
        page.route("**/queue/join*", lambda route: route.abort())  # no event can answer this page
        page.goto(url)
        expect(page.locator("#shown")).to_have_text(f"drawn at version {first}", timeout=UI_WAIT_MS)
        expect(page.locator("#note")).to_have_text("the note")  # an update's arguments (visible) served too
        cut_off.close()

        context = browser.new_context()
        page = context.new_page()
        page.goto(url)
        expect(page.locator("#loaded")).to_have_text("load 1 answered", timeout=UI_WAIT_MS)  # the load ran,
        assert calls == [first]  # and drew nothing: the page held it
        context.close()

        store.record(pve_match(2))
        data.refresh()
        assert data.version != first
        context = browser.new_context()
        page = context.new_page()
        page.goto(url)  # served the old draw (this visit asks for the new one), its load sends the new
        expect(page.locator("#shown")).to_have_text(f"drawn at version {data.version}", timeout=UI_WAIT_MS)
        context.close()
        served_after_a_visit(2)
    finally:
        demo.close()


def test_a_draw_served_in_the_page_sets_only_what_each_output_says():
    """`leaderboard.served.with_drawn`: a value sets the value, an update its arguments (the
    rest as the component was built), a skip nothing; a session's `gr.State` is never served."""
    from leaderboard import served

    with gr.Blocks() as demo:
        text = gr.Markdown("as built", elem_id="text")
        other = gr.Markdown("untouched")
        state = gr.State(1)
    demo.config = demo.get_config_file()

    def props(config: dict, component) -> dict:
        return next(c for c in config["components"] if c["id"] == component._id)["props"]

    assert not served.servable(state) and served.servable(text)
    assert props(served.with_drawn(demo, {text: "new"}), text)["value"] == "new"
    hidden = props(served.with_drawn(demo, {text: gr.Markdown(visible=False)}), text)
    assert (hidden["value"], hidden["visible"], hidden["elem_id"]) == ("as built", False, "text")
    skipped = served.with_drawn(demo, {text: gr.skip(), other: "changed"})
    assert props(skipped, text) is props(demo.config, text) and props(skipped, other)["value"] == "changed"
    assert served.supported(demo)
    served.serve(demo, {text: "served"})
    assert props(demo.config, text)["value"] == "served"


def test_an_address_is_saved_with_the_views_it_asks_for_drawn_and_an_unwritable_folder_is_told_once(tmp_path, caplog):
    """`leaderboard.served.Addressed` over `Following.drawn_for`: an address's page holds its
    control's value and the view that control is an input of drawn with it (never a session's
    `gr.State`), and a token the load knows that draw by; saved once per address and draw.
    Where the deep links cannot be written, the page is served as built, said once."""
    from leaderboard import served
    from leaderboard.tabs.following import Following

    drawn: list[str] = []
    with gr.Blocks() as demo:
        chosen = gr.Textbox("", elem_id="chosen")
        shown = gr.Markdown(elem_id="shown")
        session = gr.State("")
        page = Following(state=lambda: 0)
        page.follow(lambda c: (drawn.append(c) or f"page of {c}", c), inputs=[chosen], outputs=[shown, session])
        page.wire(demo)
    demo.config = demo.get_config_file()
    page._serve()  # the page's own draw, as a visit asks for it (this view, with a session's State, is not in it)

    def asks(query):
        return {chosen: query["p"], **page.drawn_for({chosen: query["p"]})} if "p" in query else {}

    addressed = served.Addressed(demo, asks, folder=tmp_path / "links", serving=page.serving)
    name = addressed.link({"p": "alice"})
    assert name is not None and addressed.link({"p": "alice"}) == name and drawn == ["alice"]
    components = {c["id"]: c for c in __import__("json").loads((tmp_path / "links" / name / "state.json").read_text())}
    assert components[chosen._id]["props"]["value"] == "alice"
    assert components[shown._id]["props"]["value"] == "page of alice"
    token = components[page._token._id]["props"]["value"]
    keys, prints = page.addressed[token]
    assert keys[0] == page.key(page.views[0], ["alice"]) and prints[0][1] is None  # the State: sent by the next change
    assert addressed.link({"q": "x"}) is None  # asks nothing this page sets

    (tmp_path / "file").write_text("not a folder")
    broken = served.Addressed(demo, asks, folder=tmp_path / "file" / "links", serving=page.serving)
    with caplog.at_level("WARNING", logger="leaderboard.served"):
        assert broken.link_or_none({"p": "bob"}) is None and broken.link_or_none({"p": "carol"}) is None
    told = [r for r in caplog.records if "could not be saved" in r.getMessage()]
    assert len(told) == 1 and "served as built" in told[0].getMessage()

    dead = next(pid for pid in range(4_000_000, 4_100_000) if not Path(f"/proc/{pid}").exists())
    (tmp_path / "links" / f"arena-{dead}-0a").mkdir()  # a page of a process killed before its exit
    served.sweep(tmp_path / "links")
    assert not (tmp_path / "links" / f"arena-{dead}-0a").exists() and (tmp_path / "links" / name / "state.json").exists()


def test_a_flood_of_new_addresses_draws_one_page_at_a_time_and_serves_the_others_as_built(tmp_path, monkeypatch):
    """`leaderboard.served.Addressed` under many addresses at once: one page is drawn at a
    time; at most `ADDRESS_WAITERS` requests draw or wait, each at most `ADDRESS_WAIT_S`; any
    other is answered at once with no page (served as built: its load opens the address);
    a page already saved is answered while another is drawn. No figure of time is asserted
    but a generous bound on what would otherwise wait 60 s."""
    import threading

    from leaderboard import served

    monkeypatch.setattr(served, "ADDRESS_WAITERS", 2)
    monkeypatch.setattr(served, "ADDRESS_WAIT_S", 60.0)
    with gr.Blocks() as demo:
        chosen = gr.Textbox("", elem_id="chosen")
    demo.config = demo.get_config_file()
    drawing: list[str] = []
    opened = threading.Event()
    opened.set()

    def asks(query):
        drawing.append(query["p"])
        assert opened.wait(60)
        return {chosen: query["p"]}

    serving = threading.Lock()
    addressed = served.Addressed(demo, asks, folder=tmp_path / "links", serving=serving)
    saved = addressed.link({"p": "saved"})
    assert saved is not None
    opened.clear()
    links: dict[str, str | None] = {}
    first = threading.Thread(target=lambda: links.update(a=addressed.link({"p": "a"})))
    first.start()
    while drawing[-1:] != ["a"]:
        time.sleep(0.01)
    waiter = threading.Thread(target=lambda: links.update(b=addressed.link({"p": "b"})))
    waiter.start()
    while addressed._waiting._value > 0:  # b has taken the last place to wait
        time.sleep(0.01)
    started = time.monotonic()
    assert addressed.link({"p": "c"}) is None  # no place to wait: answered at once, not after a's draw
    assert time.monotonic() - started < 30 and first.is_alive() and waiter.is_alive()
    assert addressed.link({"p": "saved"}) == saved  # saved already: answered while a is drawn
    opened.set()
    first.join(60)
    waiter.join(60)
    assert links["a"] is not None and links["b"] is not None and drawing == ["saved", "a", "b"]  # c drew nothing

    monkeypatch.setattr(served, "ADDRESS_WAIT_S", 0.2)
    with serving:  # the page's own draw, longer than a request waits
        assert addressed.link({"p": "d"}) is None
    assert drawing[-1] == "b" and addressed.link({"p": "d"}) is not None and drawing[-1] == "d"



def test_a_controls_change_is_told_from_a_tab_opened():
    """`following._changes` reads which component a listener is of from Gradio's bound event
    methods: a change of a view's own control draws it whole (the stuck search), a tab opened
    compares. A Gradio that renamed what it reads would make every trigger compare again."""
    from leaderboard.tabs.following import _changes

    with gr.Blocks():
        box, other = gr.Textbox(), gr.Textbox()
        with gr.Tabs():
            with gr.Tab("x") as tab:
                pass
    assert _changes(box.change, [box]) and _changes(box.input, [other, box])
    assert not _changes(other.change, [box]) and not _changes(tab.select, [box])


def test_a_gradio_whose_page_cannot_be_served_drawn_is_told_once_and_never_drawn_for(caplog):
    """A Gradio whose config is not the dict of components `leaderboard.served` was written
    for: the page is served as built, with one warning, and its views are not drawn for it
    (on each visit, as they were before the check came first)."""
    from leaderboard.tabs.following import Following

    calls = []
    with gr.Blocks() as demo:
        text = gr.Markdown("as built")
        page = Following(state=lambda: 0)
        page.follow(lambda: (calls.append(1) or "drawn",), outputs=[text])
        page.wire(demo)
    demo.config = None  # what an upgraded Gradio might keep instead
    with caplog.at_level("WARNING", logger="leaderboard.served"):
        for _ in range(3):
            page.serve_soon()
            with page._serving:  # the background draw, if any, is over
                pass
    assert calls == [] and not page.served
    assert [r.getMessage() for r in caplog.records].count(caplog.records[0].getMessage()) == 1
    assert "served without their views drawn in" in caplog.records[0].getMessage()


def test_the_pvp_tables_own_controls_redraw_it_without_a_loading_status(tmp_path):
    """`View.quiet`: the events of the PvP table's search, filters, sort and page show their
    progress on a hidden component only (a loading status on the table draws it again at each
    event's start and end), and skip Gradio's queue; the other tabs' tables keep both. The
    refresh that follows the Space shows its progress on that hidden component too, and the
    page's load on what the page is not served drawn only."""
    from leaderboard.pages import build

    data = StandingsRefresher(HistoryStore(tmp_path / "history"), hub_url="http://hub.example", bootstrap=0)
    data.refresh()
    demo = build(data)
    config = demo.get_config_file()
    ids = {c["props"].get("elem_id"): c["id"] for c in config["components"]}

    def event_of(elem_id: str) -> dict:
        return next(d for d in config["dependencies"] if [ids[elem_id], "change"] in [list(t) for t in d["targets"]]
                    and ids["pvp-table" if elem_id.startswith("pvp") else "pve-table"] in d["outputs"])

    for control in ("pvp-search", "pvp-sort", "pvp-page", "pvp-owner"):
        assert event_of(control)["show_progress_on"] == [ids["page-progress"]], control
        assert event_of(control)["queue"] is False, control  # answered by its own request
    assert not event_of("pve-search").get("show_progress_on") and event_of("pve-search")["queue"] is not False
    refresh = next(d for d in config["dependencies"] if [ids["page-version"], "change"] in [list(t) for t in d["targets"]])
    assert refresh["show_progress_on"] == [ids["page-progress"]]  # the Space moving on greys nothing
    load = next(d for d in config["dependencies"] if any(t[1] == "load" for t in d["targets"]) and d["backend_fn"])
    greyed = set(load["show_progress_on"])  # what the page was not served drawn, and only that
    assert ids["about-ladder"] in greyed  # drawn by each load (`on_load`)
    assert not greyed & {ids["policy-heading"], ids["pve-table"]}  # an address's views are served drawn
    assert not greyed & {ids["pvp-table"], ids["pvp-source"], ids["now-playing"]}
