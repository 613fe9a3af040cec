"""The "Matches" tab (id `matches`): every recorded match, filtered by policy, track, stage
and dates (a click replays one: `leaderboard.tabs.replay`); the `/matches` endpoint."""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from arena.links import match_link
from leaderboard import tables
from leaderboard.tabs.context import TabContext, TableTab, frame_json

#: The note under the Matches table while it is empty.
EMPTY = "No match recorded yet. Matches appear here as they finish; click one to replay it."


def matches_tab(page: TabContext) -> TableTab:
    """The tab's components and endpoint; its table drawn from its filters."""
    data = page.data

    def matches(policy: str = "", track: str = "", stage: str = "", since: str = "", until: str = "") -> pd.DataFrame:
        return page.kept("matches", lambda: tables.matches_table(
            data.standings(), policy=policy or "", track=track or "", stage=int(stage) if stage else None, since=since or "",
            until=until or ""), policy, track, stage, since, until)

    def matches_view(*values: str) -> tuple[pd.DataFrame, Any]:
        table = matches(*values)
        return tables.matches_linked(table), page.note(EMPTY, table, filtered=any(values))

    with gr.Tab("Matches", id="matches") as tab:
        with gr.Row():
            f_policy = gr.Textbox(label="Policy contains", elem_id="matches-policy")
            f_track = gr.Dropdown(choices=["", "pve", "pvp", "validation"], value="", label="Track", elem_id="matches-track")
            f_stage = gr.Dropdown(choices=["", "1", "2", "3"], value="", label="PvE stage", elem_id="matches-stage")
            f_since = gr.Textbox(label="Since (YYYY-MM-DD)", elem_id="matches-since")
            f_until = gr.Textbox(label="Until (YYYY-MM-DD)", elem_id="matches-until")
        match_list = gr.Dataframe(elem_id="matches-table", interactive=False, wrap=True, datatype=tables.MATCHES_KINDS)
        matches_empty = gr.Markdown(page.filled(EMPTY), visible=False, elem_id="matches-empty")
        gr.Markdown("Click a match to replay it (its id is the replay's address), a winner to see its page.")
    filters: list[Any] = [f_policy, f_track, f_stage, f_since, f_until]
    page.follow(matches_view, inputs=filters, outputs=[match_list, matches_empty], triggers=[tab.select, *(c.change for c in filters)],
                lazy=True)

    def api_matches(policy: str = "", track: str = "", stage: str = "", since: str = "", until: str = "") -> dict:
        """Recorded matches, newest first (as {"headers": [...], "data": [[...], ...]}).

        Args:
            policy: keep the matches of policies whose name contains this text ("" for all).
            track: "pve", "pvp" or "validation" ("" for all).
            stage: a PvE stage, "1", "2" or "3" ("" for all).
            since: keep the matches started on or after this day, YYYY-MM-DD.
            until: keep the matches started on or before this day, YYYY-MM-DD.
        """
        return frame_json(matches(policy, track, stage, since, until))

    page.api(api_matches, "matches")

    def api_match(match_id: str) -> dict:
        """One recorded match: every team's row (policy, revision, Achievement, rank, tasks,
        survivors, faults), the address of its replay here and the command that plays it
        again on your machine.

        Args:
            match_id: the match's id (the first column of `matches`, or `?match=` in an address).
        """
        match_id = (match_id or "").strip()
        rows = data.standings().teams.of_match(match_id) if match_id else pd.DataFrame()
        if not len(rows):
            return {"match_id": match_id, "error": f"No recorded match has the id {match_id!r}: `matches` lists them."}
        return {"match_id": match_id, "replay": match_link("", match_id),  # relative to the Space's address
                "rerun": f"python -m matchmaking.rerun {match_id}", "teams": frame_json(rows)}

    page.api(api_match, "match")
    return TableTab(match_list, inputs=tuple(filters))
