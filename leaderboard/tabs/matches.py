"""The "Matches" tab (id `matches`): every recorded match, filtered by policy, track, stage
and dates (a click replays one: `leaderboard.tabs.replay`); the `/matches` endpoint."""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from leaderboard import tables
from leaderboard.tabs.context import TabContext, TableTab, frame_json

#: The note under the Matches table while it is empty.
EMPTY = "No match recorded yet. Matches appear here as they finish; click one to replay it."


def matches_tab(page: TabContext) -> TableTab:
    """The tab's components and endpoint; its table refreshed by `build` from its filters."""
    data = page.data

    def matches(policy: str = "", track: str = "", stage: str = "", since: str = "", until: str = "") -> pd.DataFrame:
        return tables.matches_table(
            data.standings(), policy=policy or "", track=track or "", stage=int(stage) if stage else None, since=since or "", until=until or ""
        )

    def matches_view(*values: str) -> tuple[pd.DataFrame, Any]:
        table = matches(*values)
        return table, page.note(EMPTY, table, filtered=any(values))

    with gr.Tab("Matches", id="matches"):
        with gr.Row():
            f_policy = gr.Textbox(label="Policy contains", elem_id="matches-policy")
            f_track = gr.Dropdown(choices=["", "pve", "pvp", "validation"], value="", label="Track", elem_id="matches-track")
            f_stage = gr.Dropdown(choices=["", "1", "2", "3"], value="", label="PvE stage", elem_id="matches-stage")
            f_since = gr.Textbox(label="Since (YYYY-MM-DD)", elem_id="matches-since")
            f_until = gr.Textbox(label="Until (YYYY-MM-DD)", elem_id="matches-until")
        match_list = gr.Dataframe(matches, elem_id="matches-table", interactive=False, wrap=True)
        matches_empty = gr.Markdown(page.filled(EMPTY), visible=False, elem_id="matches-empty")
        gr.Markdown("Select a match to replay it.")
    filters: list[Any] = [f_policy, f_track, f_stage, f_since, f_until]
    for box in filters:
        box.change(matches_view, inputs=filters, outputs=[match_list, matches_empty], api_visibility="private")

    def api_matches(policy: str = "", track: str = "", stage: str = "", since: str = "", until: str = "") -> dict:
        return frame_json(matches(policy, track, stage, since, until))

    page.api(api_matches, "matches")
    return TableTab(match_list, matches_empty, matches_view, inputs=tuple(filters))
