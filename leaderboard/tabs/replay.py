"""The "Replay" tab (id `replay`): a match drawn from its replay, with its teams' logs
(`leaderboard.viewer`); a match clicked on the Matches tab opens here, and so does a page
opened at `?match=ID&tick=N` (`arena.links`; `leaderboard.pages` reads the address)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from leaderboard import tables
from leaderboard.tabs.context import TabContext
from leaderboard.viewer import replay_viewer


@dataclass(frozen=True)
class ReplayTab:
    """The match id box and the viewer it loads."""

    match_id: gr.Textbox
    viewer: gr.HTML

    def open_on_select(self, table: gr.Dataframe, opened_tab: gr.Textbox) -> None:
        """A match clicked in `table` (a column `Match`) opens here, the tab selected in the
        browser through `opened_tab` (`leaderboard.pages.OPEN_TAB_JS`: an event updating the
        Tabs would make Gradio's page copy every value inside them). Its value names the
        click (`replay@<ns>`), so a second click on the same match opens the tab again."""

        def open_replay(evt: gr.SelectData, frame: pd.DataFrame) -> tuple[Any, ...]:
            row = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
            chosen = tables.cell_text(frame.iloc[row]["Match"])
            return chosen, {"match_id": chosen}, f"replay@{time.monotonic_ns()}"

        table.select(open_replay, inputs=table, outputs=[self.match_id, self.viewer, opened_tab], api_visibility="private")


def replay_tab(page: TabContext) -> ReplayTab:
    """The tab's components: a match id, its button, the viewer."""
    data = page.data

    def started(match_id: str) -> str | None:
        """A rated match's start (its replay is then read from its day's bundles at once)."""
        summary = data.standings().match_summary
        if not len(summary):
            return None
        hit = summary.loc[summary["Match"] == match_id, "Started"]
        return str(hit.iloc[0]) if len(hit) else None

    with gr.Tab("Replay", id="replay"):
        with gr.Row():
            match_id = gr.Textbox(label="Match id", elem_id="replay-match")
            show = gr.Button("Replay", elem_id="replay-load")
        viewer = replay_viewer(lambda m: data.store.replay(m, started_at=started(m)),
                               logs=lambda m: data.store.logs(m, started_at=started(m)))
    show.click(lambda m: {"match_id": (m or "").strip()}, inputs=match_id, outputs=viewer, api_visibility="private")
    return ReplayTab(match_id, viewer)
