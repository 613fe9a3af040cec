"""The "PvE" tab (id `pve`): each revision's stages against the built-in teams, and the
built-ins themselves; the `/pve_table` endpoint."""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from arena.lifecycle import Status
from leaderboard import tables
from leaderboard.about import builtin_references
from leaderboard.tabs.context import TabContext, TableTab, frame_json, shown, view_controls

#: The note under the PvE table while it is empty.
EMPTY = ("No submission is in PvE yet. Push a policy (About / Submit): once validated it plays PvE stage 1 against "
         "built-in teams, and its figures appear here match by match.")


def pve_tab(page: TabContext) -> TableTab:
    """The tab's components and endpoint; its table refreshed by `build`."""
    data, settings = page.data, page.settings

    def pve_table() -> pd.DataFrame:
        return page.kept("pve_table", lambda: tables.pve_table(data.standings(), data.statuses(), hub_url=data.hub_url))

    with gr.Tab("PvE", id="pve") as tab:
        controls = view_controls("pve", tables.PVE_COLUMNS, search_label="Search policy or status",
                                 statuses=[s.value for s in Status])
        pve = gr.Dataframe(pd.DataFrame(columns=[c.name for c in tables.PVE_COLUMNS]), datatype=tables.kinds(tables.PVE_COLUMNS), elem_id="pve-table", interactive=False,
                           wrap=True, column_widths=tables.widths(tables.PVE_COLUMNS))
        pve_empty = gr.Markdown(page.filled(EMPTY), visible=False, elem_id="pve-empty")
        gr.Markdown(
            f"Top1Ratio: share of a stage's matches the policy won (ties at the top included). A stage ends after "
            f"{settings.pve_matches_per_stage} matches, or as soon as its bars are decided (a Top1Ratio of "
            f"{settings.next_stage_top1:g} opens the next stage; in stage 1 a mean Achievement of "
            f"{settings.qualify_achievement:g} qualifies for PvP). Per-task figures are on the Policy tab."
        )
        gr.Markdown("Built-in teams: the references PvE is played against (the Kind column says which are scripted and which learned):")
        gr.Dataframe(builtin_references(), elem_id="builtin-table", interactive=False, wrap=True,
                     column_widths=["200px", "90px", "580px", "100px", "110px"])

    def api_pve() -> dict:
        """The PvE table: each revision's Top1Ratio and mean Achievement in each stage against
        the built-in teams, and its verdict (as {"headers": [...], "data": [[...], ...]})."""
        return frame_json(pve_table())

    page.api(api_pve, "pve_table")

    def pve_view(*values: Any) -> tuple[Any, Any]:
        view = controls.view(*values)
        table = tables.viewed(pve_table(), view, ("Policy", "Status"))
        return shown(table, tables.PVE_COLUMNS), page.note(EMPTY, table, filtered=view != tables.TableView())

    page.follow(pve_view, inputs=controls.inputs, outputs=[pve, pve_empty], triggers=[tab.select, *(c.change for c in controls.inputs)], lazy=True)
    return TableTab(pve, inputs=tuple(controls.inputs), controls=controls)
