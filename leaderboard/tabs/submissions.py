"""The "Submissions" tab (id `submissions`): every revision seen, its status, its place in
the PvE queue; the `/submissions` endpoint."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import gradio as gr
import pandas as pd

from arena.activity import QueueEntry
from arena.lifecycle import Status
from arena.revision import Revision
from leaderboard import tables
from leaderboard.tabs.context import TabContext, TableTab, frame_json, shown, view_controls

#: The note under the Submissions table while it is empty.
EMPTY = ("No submission seen yet. Push a model repo tagged `{tag}` with a `policy.py` (About / Submit); "
         "it shows here, `queued`, within seconds.")


def submissions_tab(page: TabContext, queue: Callable[[], Mapping[Revision, QueueEntry]]) -> TableTab:
    """The tab's components and endpoint; its table redrawn as the statuses and the queue
    change. `queue` is each revision's place in the PvE queue and its forecast."""
    data = page.data

    def submissions() -> pd.DataFrame:
        return tables.submissions_table(data.statuses(), hub_url=data.hub_url, queue=queue())

    settings = page.settings

    def slots() -> pd.DataFrame:
        exempt = {settings.seed_owner, *(o.strip() for o in settings.owner_exempt.split(",") if o.strip())}
        return tables.owner_slots(data.statuses(), active=settings.owner_active, daily=settings.owner_daily,
                                  exempt=exempt, now=time.time())

    with gr.Tab("Submissions", id="submissions") as tab:
        controls = view_controls("submissions", tables.SUBMISSION_COLUMNS, search_label="Search policy, status, reason or team",
                                 statuses=[s.value for s in Status])
        subs = gr.Dataframe(pd.DataFrame(columns=[c.name for c in tables.SUBMISSION_COLUMNS]), datatype=tables.kinds(tables.SUBMISSION_COLUMNS), elem_id="submissions-table",
                            interactive=False, wrap=True, column_widths=tables.widths(tables.SUBMISSION_COLUMNS))
        subs_empty = gr.Markdown(page.filled(EMPTY), visible=False, elem_id="submissions-empty")
        gr.Markdown(
            "Queue: the order of the verdicts among the revisions in PvE: the earliest stage first (stage 1 decides "
            "qualification), the Arena's own seeded demos after every other revision, owners in turn (every owner's "
            "earliest revision before anyone's second, the owner with fewer waiting first), then the earliest push. Every revision's first match of a stage is played before anything else, so a new one "
            "has its first figure after one match. Verdict in: when its current stage should end, from the durations "
            "of recent matches (a stage decided early ends sooner)."
        )
        gr.Markdown(f"Each owner's slots: at most {page.settings.owner_active} revisions taking part at once and "
                    f"{page.settings.owner_daily} new ones validated a day (docs/rules.md, \"Fair play\"; 0: no limit).")
        owner_slots = gr.Dataframe(elem_id="owner-slots", interactive=False)
    tab.select(slots, outputs=owner_slots, api_visibility="private")

    def api_submissions() -> dict:
        """Every revision seen, newest first: its status, the reason in words, its place in the
        PvE queue and when its verdict is due (as {"headers": [...], "data": [[...], ...]})."""
        return frame_json(submissions())

    page.api(api_submissions, "submissions")

    def api_owner_slots() -> dict:
        """Each owner's slots: revisions taking part and new ones validated in the last 24
        hours, against the per-owner limits (docs/rules.md, "Fair play")."""
        return frame_json(slots())

    page.api(api_owner_slots, "owner_slots")

    def submissions_view(*values: Any) -> tuple[Any, Any]:
        view = controls.view(*values)
        table = tables.viewed(submissions(), view, ("Policy", "Status", "Reason", "Team"))
        return shown(table, tables.SUBMISSION_COLUMNS), page.note(EMPTY, table, filtered=view != tables.TableView())

    page.follow(submissions_view, inputs=controls.inputs, outputs=[subs, subs_empty], key=lambda: tables.queue_key(queue()),
                triggers=[tab.select, *(c.change for c in controls.inputs)], lazy=True)
    return TableTab(subs, inputs=tuple(controls.inputs), controls=controls)
