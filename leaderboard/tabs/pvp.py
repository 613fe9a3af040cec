"""The "PvP leaderboard" tab (id `pvp`): the PvP table and its filters, what each rating
answers, the overfitting plot (PvE standing against PvP standing on held-out maps); the
`/pvp_table` and `/settling` endpoints."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gradio as gr
import pandas as pd

from leaderboard import meter, tables
from leaderboard.tabs.context import TabContext, TableTab, frame_json, pager, shown, view_controls

#: One line per rating: the question it answers (under the PvP table and on Head to head).
RATINGS_MARKDOWN = """**What each rating answers.**
- **TrueSkill** (the column: mu - 3 sigma, the paper's conservative score): how good is it *at least*, almost surely, given the matches so far in the order they came? New policies start low and rise as sigma shrinks.
- **mu** and **sigma**: TrueSkill's best guess of its strength, and how unsure that guess still is.
- **MLE** (Plackett-Luce, anchored on the built-ins; 95% bootstrap interval): how strong is it, from every match at once, order-free, on a scale that means the same next month? **Rank** is 1 + the number of policies whose interval lies entirely above this one's, so ranks are shared where intervals overlap.
- **Elo**: how does it fare with each 16-team match read as its pairwise duels, matches in order, the recent weighing as much as the old?
- **Nash avg** (Balduzzi et al. 2018): how well does it do against the toughest mix of the field, the maximum-entropy Nash equilibrium of the head-to-head game? 0 for the policies in that mix, negative below; beating many similar weak policies does not raise it.
- **Held-out** (Plackett-Luce point estimate on held-out maps only): how strong is it on maps no participant saw in advance?
- **PvE vs PvP**: does it stand better against the built-ins on published maps than against the field on held-out ones (PvP rank minus PvE rank; `far` when the gap is large)?
- **Settling**: is its rank settled yet (95% interval at most 1 unit wide), and if not, about how many more PvP matches it needs and how long that takes at the current rate? Newcomers get the first seats until it is."""

#: The note under the PvP table while it is empty.
EMPTY = ("No PvP matches yet. PvP starts once a revision qualifies in PvE (mean Achievement of {qualify:g} or more "
         "in stage 1); pools of 16 are filled with the anchor built-ins until 16 have qualified.")

#: The overfitting plot labels every point up to this many policies, beyond only the far ones.
LABEL_ALL_UP_TO = 25


def overfitting_figure(points: pd.DataFrame) -> Any:
    """PvE standing (x) against held-out PvP standing (y), rank 1 at the origin, the
    diagonal drawn; policies far from it in red and named (all named in a small field;
    every point says who it is on hover). A plotly figure (plotly is a runtime dependency
    of the Space, matplotlib only a development one)."""
    import plotly.graph_objects as go

    top = max(int(points[["pve_rank", "pvp_rank"]].to_numpy().max()) if len(points) else 1, 2)
    label_all = len(points) <= LABEL_ALL_UP_TO
    figure = go.Figure()
    figure.add_trace(go.Scatter(x=[0.5, top + 0.5], y=[0.5, top + 0.5], mode="lines", name="same standing",
                                line={"color": "#999999", "dash": "dash", "width": 1}, hoverinfo="skip"))
    for far, name, color, size in ((False, "near the diagonal", "#4c72b0", 10), (True, "far from it", "#c44e52", 13)):
        group = points[points["far"].astype(bool) == far]
        figure.add_trace(go.Scatter(
            x=group["pve_rank"], y=group["pvp_rank"], name=name, mode="markers+text" if (far or label_all) else "markers",
            text=group["label"], textposition="top right", textfont={"color": color if far else "#404040", "size": 11},
            marker={"color": color, "size": size},
            customdata=group[["gap", "pve_achievement", "held_out_rating"]].to_numpy(),
            hovertemplate="%{text}<br>PvE rank %{x} (stage-1 mean %{customdata[1]:.1f})<br>"
                          "PvP rank %{y} (held-out rating %{customdata[2]:.2f})<br>gap %{customdata[0]:+d}<extra></extra>",
        ))
    axis = {"range": [0.5, top + 0.5], "dtick": 1 if top <= 20 else None, "zeroline": False}
    figure.update_layout(
        title={"text": "Overfitting: PvE standing against PvP standing on held-out maps", "font": {"size": 14}},
        xaxis={**axis, "range": [0.5, top + 1.2], "title": {"text": "PvE standing (rank by stage-1 mean Achievement, published maps)"}},
        yaxis={**axis, "title": {"text": "PvP standing (rank by MLE rating, held-out maps)"}},
        legend={"orientation": "h", "y": -0.22}, height=560, margin={"t": 50, "l": 60, "r": 20, "b": 40},
        template="plotly_white",
    )
    return figure


def overfitting_markdown(points: pd.DataFrame) -> str:
    """The line under the overfitting plot: who is far from the diagonal, or why it is empty."""
    from leaderboard.standings import far_threshold

    if points.empty:
        return ("No policy has both a PvE stage-1 result and PvP results on held-out maps yet: each point of this plot "
                "is a policy's PvE rank against its PvP rank on held-out maps, and appears once it has both.")
    limit = far_threshold(len(points))
    far = points[points["far"].astype(bool)]
    if far.empty:
        return f"No policy is far from the diagonal (|PvP rank - PvE rank| >= {limit} of {len(points)} policies ranked in both)."
    named = "; ".join(f"**{r.label}** (PvE {r.pve_rank}, PvP {r.pvp_rank}: "
                      f"{'better in PvE' if r.gap > 0 else 'better in PvP'})" for r in far.itertuples())
    return f"Far from the diagonal (|PvP rank - PvE rank| >= {limit} of {len(points)} policies): {named}."


def overfitting_section(page: TabContext, points: Callable[[], pd.DataFrame]) -> None:
    """The PvP tab's overfitting plot and its line, drawn from `points`
    (`leaderboard.tables.overfitting_points`) at the load and whenever the standings change."""
    gr.Markdown("### PvE against PvP on held-out maps")
    plot = gr.Plot(elem_id="overfitting-plot", show_label=False, visible=False)
    note = gr.Markdown(elem_id="overfitting-note")

    def view() -> tuple[Any, str]:
        frame = points()
        figure = overfitting_figure(frame) if len(frame) else None
        line = tables.FITTING if page.data.standings().fitting else overfitting_markdown(frame)
        return gr.Plot(value=figure, visible=figure is not None), line

    page.follow(view, outputs=[plot, note])


def pvp_tab(page: TabContext) -> TableTab:
    """The tab's components and endpoints; its table drawn from its filters, with the line
    saying which shards it was computed from."""
    data = page.data

    def pvp_table(search: str = "", older: bool = False, min_matches: float = 0, owner: str = "",
                  settled: str = "") -> pd.DataFrame:
        """The PvP table as `api_pvp_table` describes it."""
        def whole() -> pd.DataFrame:
            latest = None if older else (page.latest_players() or None)
            return tables.pvp_table(data.standings(), hub_url=data.hub_url, latest=latest,
                                    costs=tables.step_costs(data.statuses()), settling=meter.meter_texts(page.settling()))

        table = page.kept("pvp_table", whole, bool(older))
        if len(table):
            table = table[table["Matches"] >= (min_matches or 0)]
        return tables.viewed(table, tables.TableView(search or "", owner or "", "", settled or ""), ("Policy", "Author"))

    with gr.Tab("PvP leaderboard", id="pvp"):
        controls = view_controls("pvp", tables.PVP_COLUMNS, search_label="Search policy or author", settled=True)
        with gr.Row():
            older = gr.Checkbox(label="Include superseded revisions", value=False, elem_id="pvp-older")
            min_matches = gr.Number(label="At least this many matches", value=0, precision=0, elem_id="pvp-min-matches")
        pvp = gr.Dataframe(pd.DataFrame(columns=[c.name for c in tables.PVP_COLUMNS]), datatype=tables.kinds(tables.PVP_COLUMNS), elem_id="pvp-table", elem_classes=["arena-paged"], interactive=False,
                           wrap=True, column_widths=tables.widths(tables.PVP_COLUMNS), pinned_columns=2)
        paging = pager("pvp")
        pvp_empty = gr.Markdown(page.filled(EMPTY), visible=False, elem_id="pvp-empty")
        pvp_source = gr.Markdown(elem_id="pvp-source")
        gr.Markdown(RATINGS_MARKDOWN + "\n\nBuilt-ins are the fixed anchors. Click a column's header to sort the whole "
                    f"table by it (a second click: the other way); {tables.PAGE_ROWS} rows a page.",
                    elem_id="pvp-ratings-help")
        overfitting_section(page, lambda: tables.overfitting_points(data.standings(), latest=page.latest_players() or None))
    filters = [*controls.inputs, older, min_matches, *paging.inputs]

    def pvp_view(*values: Any) -> tuple[Any, ...]:
        """A page of the table as its filters, order and page ask, the note under it, which
        rows it holds, the page number if it had to move, whether its pager shows, the line
        saying what it was computed from."""
        view = controls.view(*values[:-4])
        older_too, at_least, sort, at = values[-4:]
        rows = pvp_table(view.search, older_too, at_least, view.owner, view.settled)
        shown_rows, *paged = paging.view(tables.viewed(rows, tables.TableView(columns=view.columns), ()), sort, at)
        filtered = bool(view.search or view.owner or view.settled or at_least)
        return (shown(shown_rows, tables.PVP_COLUMNS), page.note(EMPTY, shown_rows, filtered=filtered), *paged,
                tables.source_line(data.standings()))

    page.follow(pvp_view, inputs=filters, outputs=[pvp, pvp_empty, *paging.outputs, pvp_source],
                triggers=[c.change for c in filters], quiet=True)

    def api_settling() -> list[dict]:
        """The settling meter of every qualified revision, the least settled first: whether
        its PvP rank is settled (95% interval at most one rank wide), and if not, about how
        many more matches and how long it needs."""
        return meter.meter_records(page.settling())

    page.api(api_settling, "settling")
    def api_pvp_table(search: str = "", older: bool = False, min_matches: float = 0, owner: str = "",
                      settled: str = "") -> dict:
        """The PvP leaderboard, best first: rank, policy, author, TrueSkill, mu, sigma, the
        order-free rating (MLE) with its 95% interval and position range, matches played,
        and how settled each rank is (as {"headers": [...], "data": [[...], ...]}).

        Args:
            search: keep the rows whose policy or author contains this text ("" for all).
            older: include revisions superseded by a newer push of the same repo.
            min_matches: keep the policies with at least this many PvP matches.
            owner: keep the revisions of this Hub account ("arena": the built-in anchors; "" for all).
            settled: "settled" or "provisional": keep the policies whose rank is (not yet) settled ("" for all).
        """
        return frame_json(pvp_table(search, older, min_matches, owner, settled))

    page.api(api_pvp_table, "pvp_table")
    return TableTab(pvp, inputs=tuple(filters), controls=controls)
