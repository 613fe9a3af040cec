"""Live tables: a match recorded while a page is open reaches it without a reload, from the
local store (no flush, no push), and an open page with nothing new redraws nothing."""

from __future__ import annotations

import time
from dataclasses import replace

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
        store.record(pve_match(0))  # the write-ahead log only: neither flushed into a shard nor pushed
        expect(table).to_contain_text("1 / 0 / 0", timeout=UI_WAIT_MS)
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
