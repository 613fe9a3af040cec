"""The "About / Submit" tab (id `about`): the rules as the Space runs them, how to submit,
whether the ladder is alive, how much of a result is luck, what the audits found, matches lost to the platform
(the prose is `leaderboard.about`'s and `leaderboard.about_luck`'s)."""

from __future__ import annotations

import time
from collections.abc import Callable

import gradio as gr

from history.audits import AuditSummary
from history.incidents import IncidentLog, incident_log_path
from leaderboard.about import about_markdown, audit_markdown, incidents_markdown, ladder_markdown
from leaderboard.about_luck import luck_markdown
from leaderboard.tabs.context import TabContext


def about_tab(page: TabContext, audits: Callable[[], AuditSummary | None],
              paused: Callable[[], str | None] = lambda: None) -> None:
    """The tab; `audits` is what the audits of recorded matches found (`Matchmaker.audit_summary`),
    `paused` why play is paused now (None: it runs)."""
    data, settings = page.data, page.settings
    incident_log = IncidentLog(incident_log_path(settings.history_dir))  # read only: the union of every writer's file
    with gr.Tab("About / Submit", id="about"):
        ladder = gr.Markdown(elem_id="about-ladder")
        gr.Markdown(about_markdown(settings, hub_url=data.hub_url))
        luck = gr.Markdown(elem_id="about-luck")
        audited = gr.Markdown(elem_id="about-audits")
        incidents = gr.Markdown(elem_id="about-incidents")

    def view() -> tuple[str, ...]:  # the luck is computed in the background by the refresher: a load only formats it
        return (ladder_markdown(data.standings().match_summary, data.statuses(), now=time.time(), paused=paused()),
                luck_markdown(data.luck()), audit_markdown(audits(), settings), incidents_markdown(incident_log.read()))

    page.on_load(view, [ladder, luck, audited, incidents])
