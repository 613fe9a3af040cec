"""What every tab reads: the latest standings, the Space's settings, and the note under a table.

The standings come from `leaderboard.refresher.StandingsRefresher` (kept fresh in the
background), so a callback only reads and formats them and every page answers quickly.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import gradio as gr
import pandas as pd

from arena.lifecycle import Status
from arena.settings import ArenaSettings
from arena.settling import Settling
from leaderboard import meter, tables
from leaderboard.refresher import StandingsRefresher
from leaderboard.tables import Column, TableView
from leaderboard.tabs.following import Following

T = TypeVar("T")

#: The note under every table while the Space restores its state from the history dataset.
RESTORING = ("**This table is being restored from the history dataset**: {line}. The Space was restarted on an empty disk; "
             "everything the dataset holds comes back, and nothing is played again meanwhile.")


@dataclass(frozen=True)
class TabContext:
    """The tabs' one view of the Space.

    Args:
        data: the standings, kept fresh in the background.
        settings: the rules the Space runs with (their values appear in the prose).
        restoring: while the Space restores its state from the history dataset, how far it
            has got; None once done.
        endpoints: the named API endpoints the tabs serve (`api`), by name.
    """

    data: StandingsRefresher
    settings: ArenaSettings
    restoring: Callable[[], str | None]
    endpoints: dict[str, Callable[..., Any]] = field(default_factory=dict)
    _kept: dict[str, OrderedDict[Any, Any]] = field(default_factory=dict, repr=False, compare=False)
    _keeping: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    _following: Following = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_following", Following(self.state))

    def state(self) -> tuple[Any, ...]:
        """What every table is a function of: the standings' version, each revision's status
        and the restore's progress (equal states: equal tables)."""
        return (self.data.version, tuple((s.id, s.status, s.updated, s.latest) for s in self.data.statuses()),
                self.restoring())

    def kept(self, name: str, build: Callable[[], T], *args: Any, slots: int = 1) -> T:
        """`build()`, computed once per `state()` and `args` and then kept, for the last
        `slots` values of `args` asked for: every visitor, search and timer tick of the same
        state reads the same whole table and only filters it (the PvP table of 500
        revisions, with its settling meter, is 0.4 s to build and a few milliseconds to
        filter; a policy's page ~0.15 s at 200,000 matches). The caller must not change
        what it gets. Two threads asking at once for a value not kept may both build it."""
        key = (self.state(), args)
        with self._keeping:
            kept = self._kept.setdefault(name, OrderedDict())
            if key in kept:
                kept.move_to_end(key)
                return kept[key]
        value = build()
        with self._keeping:
            kept[key] = value
            while len(kept) > slots:
                kept.popitem(last=False)
        return value

    def api(self, endpoint: Callable[..., Any], name: str) -> None:
        """Serve `endpoint` at `/name`, and as the MCP tool `name` (the Space serves its API
        as an MCP server, whose tools take their functions' names). `build` registers it after
        the tabs: `gr.api` inside a tab would put its components there and renumber every
        component after them (and with them the `value_<id>` names of unlabelled outputs in
        the API's description)."""
        endpoint.__name__ = name
        self.endpoints[name] = endpoint

    @property
    def following(self) -> Following:
        """The page's views and what it opens with (`leaderboard.tabs.following`)."""
        return self._following

    def follow(self, view: Callable[..., tuple[Any, ...]], *, outputs: Sequence[Any], inputs: Sequence[Any] = (),
               **options: Any) -> None:
        """Draw `view(*inputs)` into `outputs` at each page's load, and again whenever the
        standings, the statuses, the restore, its `key` or its inputs changed (only the
        outputs that changed travel). Options: `leaderboard.tabs.following.View`'s."""
        self._following.follow(view, outputs=outputs, inputs=inputs, **options)

    def on_load(self, view: Callable[[], tuple[Any, ...]], outputs: Sequence[Any]) -> None:
        """Draw `outputs` with `view()` at each page's load only."""
        self._following.on_load(view, outputs)

    def filled(self, text: str) -> str:
        """`text` with its `{qualify}` and `{tag}` filled in from the settings."""
        return text.format(qualify=self.settings.qualify_achievement, tag=self.settings.submission_tag)

    def note(self, empty: str, frame: pd.DataFrame, *, filtered: bool = False) -> Any:
        """The note under a table: while restoring, how far the restore has got; otherwise
        `empty` (filled in), shown only while the table is empty and unfiltered."""
        line = self.restoring()
        if line is not None:
            return gr.Markdown(RESTORING.format(line=line), visible=True)
        return gr.Markdown(self.filled(empty), visible=frame.empty and not filtered)

    def latest_players(self) -> set[str]:
        """The players of every submission's latest revision, but those withdrawn (their
        pages and matches stay; the tables' default view leaves them out)."""
        return {s.id.player for s in self.data.statuses() if s.latest and s.status is not Status.WITHDRAWN}

    def settling(self) -> dict[str, Settling]:
        """The meter of every qualified revision (`leaderboard.meter`), kept per state."""
        return self.kept("settling", lambda: meter.meter(self.data.standings(), self.data.statuses(),
                                                         pairing=self.settings.pairing))


@dataclass(frozen=True)
class TableTab:
    """What `leaderboard.pages.build` needs of a tab's table: the table (a click on a match
    opens its replay), its inputs (the Matches tab's first is its search) and its search,
    filters and columns, which the page's address sets. The tab draws it itself (`TabContext.follow`)."""

    table: gr.Dataframe
    inputs: tuple[Any, ...] = ()
    controls: ViewControls | None = None


def frame_json(frame: pd.DataFrame) -> dict:
    """A table as `{"headers": [...], "data": [[...], ...]}`, the way a Dataframe answers."""
    clean = frame.astype(object).where(frame.notna(), None)
    return {"headers": [str(c) for c in frame.columns], "data": clean.values.tolist()}


@dataclass(frozen=True)
class ViewControls:
    """A table's search, filters and column chooser (`view_controls`), in the order `inputs`
    gives them to a view; `view(*values)` reads them back as a `TableView`."""

    search: gr.Textbox
    owner: gr.Textbox
    columns: gr.CheckboxGroup
    every: tuple[str, ...]
    """The table's columns (all of them chosen: no choice)."""
    status: gr.Dropdown | None = None
    settled: gr.Dropdown | None = None

    @property
    def inputs(self) -> list[Any]:
        return [c for c in (self.search, self.owner, self.status, self.settled, self.columns) if c is not None]

    def view(self, *values: Any) -> TableView:
        named = dict(zip([c.elem_id for c in self.inputs], values))
        chosen = named.get(self.columns.elem_id) or ()
        return TableView(
            search=str(named.get(self.search.elem_id) or ""), owner=str(named.get(self.owner.elem_id) or ""),
            status=str(named.get(self.status.elem_id) or "") if self.status is not None else "",
            settled=str(named.get(self.settled.elem_id) or "") if self.settled is not None else "",
            columns=() if set(chosen) >= set(self.every) else tuple(chosen),
        )


def view_controls(tab: str, columns: Sequence[Column], *, search_label: str, statuses: Sequence[str] = (),
                  settled: bool = False) -> ViewControls:
    """The row of a table's search and filters, and its column chooser (every column shown
    by default), with element ids `<tab>-search`, `<tab>-owner`, `<tab>-status`,
    `<tab>-settled`, `<tab>-columns` (the page's address sets them: `arena.links`)."""
    with gr.Row():
        search = gr.Textbox(label=search_label, elem_id=f"{tab}-search", scale=2)
        owner = gr.Textbox(label="Owner (Hub account; arena: the built-ins)", elem_id=f"{tab}-owner")
        status = gr.Dropdown(choices=["", *statuses], value="", label="Status", elem_id=f"{tab}-status",
                             allow_custom_value=True) if statuses else None
        rank = gr.Dropdown(choices=list(tables.SETTLED_CHOICES), value="", label="Rank settled or provisional",
                           elem_id=f"{tab}-settled", allow_custom_value=True) if settled else None
    names = [c.name for c in columns]
    with gr.Accordion("Columns", open=False, elem_id=f"{tab}-columns-box"):
        chooser = gr.CheckboxGroup(choices=names, value=names, show_label=False, elem_id=f"{tab}-columns")
    return ViewControls(search, owner, chooser, tuple(names), status, rank)


@dataclass(frozen=True)
class Pager:
    """A paged table's order and page (`pager`): `view(frame, sort, page)` answers the page
    to show, the line saying which rows it holds, the page number if it had to move (past
    the last page: the last; else `gr.skip()`), and whether the row of them shows (only
    for more than one page: a table of a few rows, or of none under its note, has nothing
    to page through)."""

    sort: gr.Textbox
    """The column the table is ordered by (`-NAME`: descending; "" the table's own order), set
    by a click on a header (`leaderboard.pages.JS`)."""
    page: gr.Number
    line: gr.Markdown
    bar: gr.Row
    """The row of the page's controls and its line."""

    @property
    def inputs(self) -> list[Any]:
        return [self.sort, self.page]

    @property
    def outputs(self) -> list[Any]:
        return [self.line, self.page, self.bar]

    @staticmethod
    def view(frame: pd.DataFrame, sort: str, page: float | None) -> tuple[pd.DataFrame, str, Any, gr.Row]:
        rows, at, pages = tables.paged(tables.sorted_by(frame, sort or ""), page)
        return (rows, tables.page_line(at, pages, len(frame)), (at if at != int(page or 1) else gr.skip()),
                gr.Row(visible=pages > 1))


#: In the browser, as a paged table's sort box changes (a header's click, or the Space setting
#: it: a new policy's tables start in their own order): its header's arrow shows that order.
ARROWS_JS = """(sort) => {
  const name = (sort || "").replace(/^-/, "");
  document.querySelectorAll("#TABLE th.header-cell").forEach((th) => {
    if (sort && (th.querySelector("span.header") || th).textContent.trim() === name) {
      th.dataset.arenaSort = sort.startsWith("-") ? "descending" : "ascending";
    } else delete th.dataset.arenaSort;
  });
  return [];
}"""


def pager(tab: str) -> Pager:
    """The row under a paged table (element id `<tab>-table`, class `arena-paged`): previous
    and next, the page number (a reader may type one) and which rows are shown; and its
    hidden sort box, element ids `<tab>-prev`, `<tab>-page`, `<tab>-next`, `<tab>-rows`,
    `<tab>-sort`."""
    with gr.Row(equal_height=True, elem_classes=["arena-pager"], visible=False) as bar:
        back = gr.Button("◀ Previous", size="sm", scale=0, min_width=110, elem_id=f"{tab}-prev")
        page = gr.Number(value=1, precision=0, minimum=1, label="Page", scale=0, min_width=90, elem_id=f"{tab}-page")
        forward = gr.Button("Next ▶", size="sm", scale=0, min_width=90, elem_id=f"{tab}-next")
        line = gr.Markdown(elem_id=f"{tab}-rows")
    sort = gr.Textbox(value="", show_label=False, container=False, elem_id=f"{tab}-sort", elem_classes=["arena-hidden"])
    back.click(None, inputs=page, outputs=page, js="(page) => Math.max(1, (page || 1) - 1)")  # in the browser: the page's
    forward.click(None, inputs=page, outputs=page, js="(page) => (page || 1) + 1")  # change draws it
    sort.change(None, inputs=sort, js=ARROWS_JS.replace("TABLE", f"{tab}-table"))
    return Pager(sort, page, line, bar)


def shown(frame: pd.DataFrame, columns: Sequence[Column]) -> gr.Dataframe:
    """The table update for `frame` (its columns a choice of `columns`'): each shown column
    keeps its kind and width."""
    by_name = {c.name: c for c in columns}
    kept = [by_name[name] for name in frame.columns if name in by_name]
    return gr.Dataframe(value=frame, datatype=tables.kinds(kept), column_widths=tables.widths(kept))

