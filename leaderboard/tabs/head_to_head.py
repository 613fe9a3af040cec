"""The "Head to head" tab: every pair's record, the clear cycles, the Nash average; `/head_to_head`."""

from __future__ import annotations

from typing import Any

import gradio as gr

from leaderboard import tables
from leaderboard.tabs.context import TabContext
from leaderboard.tabs.pvp import RATINGS_MARKDOWN

#: The Head to head tab's note while no PvP pair has met.
H2H_EMPTY = ("No PvP matches yet, so no pair has met. Once qualified policies play PvP, every pair's record fills "
             "this map match by match, the clear cycles (if any) are listed, and each policy gets its Nash average.")


def head_to_head_tab(page: TabContext) -> None:
    """The "Head to head" tab (id `head_to_head`) and the `/head_to_head` API: a heatmap of
    every pair's share (the best `tables.HEATMAP_TOP` by MLE), the clear cycles, the Nash
    average table, and what each rating answers. Refreshed with the other tables."""
    data = page.data

    def view() -> tuple[Any, ...]:
        standings = data.standings()
        heatmap, nash = page.kept("head_to_head", lambda: (tables.heatmap_html(standings), tables.nash_table(standings)))
        return (gr.HTML(heatmap, visible=bool(heatmap)), gr.Markdown(tables.heatmap_caption(standings), visible=bool(heatmap)),
                tables.cycles_markdown(standings.head_to_head), nash,
                gr.Markdown(tables.FITTING if standings.fitting else H2H_EMPTY, visible=not heatmap))

    with gr.Tab("Head to head", id="head_to_head") as tab:
        empty = gr.Markdown(H2H_EMPTY, visible=False, elem_id="h2h-empty")
        heatmap = gr.HTML("", elem_id="h2h-heatmap")
        caption = gr.Markdown(elem_id="h2h-caption")
        cycles = gr.Markdown(elem_id="h2h-cycles")
        nash = gr.Dataframe(label="Nash average (weight: the player's share of the equilibrium mix)", elem_id="h2h-nash",
                            interactive=False)
        gr.Markdown(RATINGS_MARKDOWN, elem_id="h2h-ratings-help")

        def api_head_to_head(player: str = "", offset: int = 0, limit: int = tables.PAIRS_PAGE) -> dict:
            """Every player, the ordered pairs that met (the share of their matches in which
            the first ranked above the second) a page at a time, the clear cycles and the
            Nash average.

            Args:
                player: keep only the pairs naming this revision (`owner/name@sha` or
                    `builtin:NAME`; "" for all).
                offset: the first pair of the page (the last answer's `next_offset`).
                limit: pairs in the page, at most 10,000 (`pairs_total` says how many there are).
            """
            return tables.head_to_head_json(data.standings().head_to_head, player=player or "",
                                            offset=offset or 0, limit=limit or tables.PAIRS_PAGE)

        api_head_to_head.__name__ = "head_to_head"  # its MCP tool's name (as `TabContext.api` names them)
        gr.api(api_head_to_head, api_name="head_to_head")  # inside the Tab: a Tabs block takes only tabs
    page.follow(view, outputs=[heatmap, caption, cycles, nash, empty], triggers=[tab.select], lazy=True)
