"""The Space's pages: Gradio wiring of the tables, plots and the replay viewer.

Each callback only reads the latest `Standings` (kept fresh in the background by
`leaderboard.refresher.StandingsRefresher`) and formats it with `leaderboard.tables`, so every
page answers quickly. Named API endpoints (`/pvp_table`, `/pve_table`, `/submissions`,
`/matches`, `/policy`, `/exposure`, `/settling`, `/now_playing`, `/head_to_head`, `/analytics`) make the same data available through `gradio_client`.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable, Mapping
from typing import Any

import gradio as gr
import pandas as pd

from arena.activity import LiveMatch, QueueEntry
from arena.revision import Revision
from arena.rules import MATCH
from arena.settings import ArenaSettings
from arena.settling import Settling
from history.audits import AuditSummary
from history.incidents import IncidentLog, incident_log_path
from leaderboard import exposure, meter, tables
from leaderboard.about import about_markdown, audit_markdown, builtin_references, incidents_markdown
from leaderboard.about_luck import luck_markdown
from leaderboard.analytics import analytics_tab
from leaderboard.refresher import StandingsRefresher
from leaderboard.viewer import replay_viewer

REFRESH_S = 10.0


def isolation_banner(report: Mapping[str, Any] | None) -> str:
    """The banner over every page while isolation is missing (`matchmaking.isolation`):
    red where submitted code runs anyway (`warn`), amber where it waits (`strict`);
    nothing while the self-test runs or where everything holds."""
    if not report or report.get("holds"):
        return ""
    missing = ", ".join(report.get("missing", []))
    if report.get("refuses_submitted_code"):
        color, text = ("#8a5a00", f"Isolation missing on this Space ({missing}): submitted code does not run here "
                       "(NMMO_ARENA_ISOLATION=strict). Submissions wait in the queue; the built-in teams play on.")
    else:
        color, text = ("#b00020", f"WARNING: isolation missing on this Space ({missing}), and submitted code runs anyway "
                       "(NMMO_ARENA_ISOLATION=warn). A submission could reach what this Space's user can.")
    return (f'<div role="alert" style="background:{color};color:#fff;padding:10px 14px;border-radius:6px;font-weight:600">'
            f"{html.escape(text)} Details: the <code>/isolation</code> endpoint, or <code>python -m matchmaking.isolation</code> "
            "on the host.</div>")


def operator_markdown(lines: list[str]) -> str:
    """The operator's line: the Hub's state and any damaged state set aside."""
    return "\n".join(f"- {line}" for line in lines)


#: Seconds between refreshes of what changes by the second: statuses, queue, matches in flight.
LIVE_REFRESH_S = 2.0

EMPTY = {
    "pvp": "No PvP matches yet. PvP starts once a revision qualifies in PvE (mean Achievement of {qualify:g} or more "
           "in stage 1); pools of 16 are filled with the anchor built-ins until 16 have qualified.",
    "pve": "No submission is in PvE yet. Push a policy (About / Submit): once validated it plays PvE stage 1 against "
           "built-in teams, and its figures appear here match by match.",
    "submissions": "No submission seen yet. Push a model repo tagged `{tag}` with a `policy.py` (About / Submit); "
                   "it shows here, `queued`, within seconds.",
    "matches": "No match recorded yet. Matches appear here as they finish; click one to replay it.",
    "policy": "No policy has played yet: its rating, task profile and rivals appear here after its first match.",
    "rating": "No PvP match for this policy yet: its TrueSkill over time appears after its first PvP match.",
}


#: The note under every table while the Space restores its state from the history dataset.
RESTORING = ("**This table is being restored from the history dataset**: {line}. The Space was restarted on an empty disk; "
             "everything the dataset holds comes back, and nothing is played again meanwhile.")

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


def overfitting_section(demo: gr.Blocks, timer: gr.Timer, points: Callable[[], pd.DataFrame]) -> None:
    """The PvP tab's overfitting plot and its line, refreshed on every page load and timer
    tick from `points` (`leaderboard.tables.overfitting_points`)."""
    gr.Markdown("### PvE against PvP on held-out maps")
    plot = gr.Plot(elem_id="overfitting-plot", show_label=False, visible=False)
    note = gr.Markdown(elem_id="overfitting-note")

    def view() -> tuple[Any, str]:
        frame = points()
        figure = overfitting_figure(frame) if len(frame) else None
        return gr.Plot(value=figure, visible=figure is not None), overfitting_markdown(frame)

    demo.load(view, outputs=[plot, note], api_visibility="private")
    timer.tick(view, outputs=[plot, note], api_visibility="private")


def _empty_note(frame: pd.DataFrame, text: str) -> Any:
    """The note under a table: shown only while the table is empty."""
    return gr.Markdown(text, visible=frame.empty)


def build(data: StandingsRefresher, settings: ArenaSettings | None = None, *,
          operator: Callable[[], list[str]] = list,
          live: Callable[[], list[LiveMatch]] = list,
          queue: Callable[[], Mapping[Revision, QueueEntry]] = dict,
          audits: Callable[[], AuditSummary | None] = lambda: None,
          restoring: Callable[[], str | None] = lambda: None,
          isolation: Callable[[], Mapping[str, Any] | None] = lambda: None) -> gr.Blocks:
    """The Blocks app over `data`, describing the rules as `settings` run them.

    Args:
        data: the standings, kept fresh in the background.
        settings: the rules the Space runs with (their values appear in the prose).
        operator: the operator's status lines (the Hub, damaged files).
        live: the matches in flight (`matchmaking.service.live`).
        queue: each revision's place in the PvE queue and its forecast (`Matchmaker.queue`).
        audits: what the audits of recorded matches found (`Matchmaker.audit_summary`).
        restoring: while the Space restores its state from the history dataset, how far it
            has got (`Arena.restoring`); None once done. Meanwhile the tables say they are
            restoring rather than empty.
        isolation: the isolation self-test's report (`IsolationReport.to_dict`; None while it
            runs): served at `/isolation`, and a banner while a mechanism is missing.
    """
    settings = settings or ArenaSettings()
    hub_url = data.hub_url
    incident_log = IncidentLog(incident_log_path(settings.history_dir))  # read only: the union of every writer's file
    empty = {k: v.format(qualify=settings.qualify_achievement, tag=settings.submission_tag) for k, v in EMPTY.items()}

    def note(kind: str, frame: pd.DataFrame, *, filtered: bool = False) -> Any:
        """The note under a table: while restoring, how far the restore has got; otherwise
        the empty note, shown only while the table is empty and unfiltered."""
        line = restoring()
        if line is not None:
            return gr.Markdown(RESTORING.format(line=line), visible=True)
        return gr.Markdown(empty[kind], visible=frame.empty and not filtered)

    def latest_players() -> set[str]:
        return {s.id.player for s in data.statuses() if s.latest}

    def started(match_id: str) -> str | None:
        """A rated match's start (its replay is then read from its day's bundles at once)."""
        summary = data.standings().match_summary
        if not len(summary):
            return None
        hit = summary.loc[summary["Match"] == match_id, "Started"]
        return str(hit.iloc[0]) if len(hit) else None

    def settling() -> dict[str, Settling]:
        """The meter of every qualified revision (`leaderboard.meter`)."""
        return meter.meter(data.standings(), data.statuses(), pairing=settings.pairing)

    def pvp_table(search: str = "", older: bool = False, min_matches: float = 0) -> pd.DataFrame:
        latest = None if older else (latest_players() or None)
        table = tables.pvp_table(data.standings(), hub_url=hub_url, latest=latest, search=search or "",
                                 costs=tables.step_costs(data.statuses()), settling=meter.meter_texts(settling()))
        return table[table["Matches"] >= (min_matches or 0)].reset_index(drop=True) if len(table) else table

    def pve_table() -> pd.DataFrame:
        return tables.pve_table(data.standings(), data.statuses(), hub_url=hub_url)

    def submissions() -> pd.DataFrame:
        return tables.submissions_table(data.statuses(), hub_url=hub_url, queue=queue())

    def now_playing() -> str:
        return tables.now_playing(live(), hub_url=hub_url, now=time.time())

    def matches(policy: str = "", track: str = "", stage: str = "", since: str = "", until: str = "") -> pd.DataFrame:
        return tables.matches_table(
            data.standings(), policy=policy or "", track=track or "", stage=int(stage) if stage else None, since=since or "", until=until or ""
        )

    def players() -> list[str]:
        """Every player, the PvP leaderboard's order first, then the rest by name."""
        standings = data.standings()
        order = {p: i for i, p in enumerate(tables.ranked_players(standings))}
        return sorted(standings.teams.players(), key=lambda p: (order.get(p, len(order)), p))

    def policy(player: str) -> tuple[Any, ...]:
        standings = data.standings()
        frames = tables.policy_frames(standings, player or "")
        note = empty["policy"] if not player else empty["rating"] if frames["trajectory"].empty else ""
        # the exposure ledger: what the figures above rest on (`leaderboard.exposure`)
        ledger = exposure.revision_exposure(standings.teams, player) if player else None
        shown = exposure.exposure_frames(ledger) if ledger else {}
        line = exposure.exposure_markdown(ledger) if ledger else exposure.EMPTY
        return (frames["trajectory"], frames["tasks"], frames["recent"], frames["head_to_head"],
                gr.Markdown(note, visible=bool(note)), line,
                *(gr.Dataframe(value=shown[k] if k in shown else pd.DataFrame(), visible=k in shown and not shown[k].empty)
                  for k in ("tracks", "seats", "opponents")),
                meter.meter_markdown(settling().get(player or "")))

    with gr.Blocks(title="NMMO Arena") as demo:
        gr.Markdown(
            f"# NMMO Arena\nNeural MMO policies ranked in free-for-all matches of {MATCH.num_teams} teams of {MATCH.team_size}, "
            "as in the IJCAI 2022 challenge. Tables refresh every few seconds from the match history."
        )
        banner = gr.HTML(lambda: isolation_banner(isolation()), elem_id="isolation-banner")
        status = gr.Markdown(lambda: operator_markdown(operator()), elem_id="operator-status")
        playing = gr.Markdown(now_playing, elem_id="now-playing")
        timer = gr.Timer(REFRESH_S)
        fast = gr.Timer(LIVE_REFRESH_S)
        with gr.Tabs() as tabs:
            with gr.Tab("PvP leaderboard", id="pvp"):
                with gr.Row():
                    search = gr.Textbox(label="Search policy or author", elem_id="pvp-search")
                    older = gr.Checkbox(label="Include superseded revisions", value=False, elem_id="pvp-older")
                    min_matches = gr.Number(label="At least this many matches", value=0, precision=0, elem_id="pvp-min-matches")
                pvp = gr.Dataframe(pvp_table, datatype=tables.kinds(tables.PVP_COLUMNS), elem_id="pvp-table", interactive=False,
                                   wrap=True, column_widths=tables.widths(tables.PVP_COLUMNS), pinned_columns=2)
                pvp_empty = gr.Markdown(empty["pvp"], visible=False, elem_id="pvp-empty")
                pvp_source = gr.Markdown(lambda: tables.source_line(data.standings()), elem_id="pvp-source")
                gr.Markdown(RATINGS_MARKDOWN + "\n\nBuilt-ins are the fixed anchors. Click a column to sort.", elem_id="pvp-ratings-help")
                overfitting_section(demo, timer, lambda: tables.overfitting_points(data.standings(), latest=latest_players() or None))
            head_to_head_tab(data, demo=demo, timer=timer)
            with gr.Tab("PvE", id="pve"):
                pve = gr.Dataframe(pve_table, datatype=tables.kinds(tables.PVE_COLUMNS), elem_id="pve-table", interactive=False,
                                   wrap=True, column_widths=tables.widths(tables.PVE_COLUMNS))
                pve_empty = gr.Markdown(empty["pve"], visible=False, elem_id="pve-empty")
                gr.Markdown(
                    f"Top1Ratio: share of a stage's matches the policy won (ties at the top included). A stage ends after "
                    f"{settings.pve_matches_per_stage} matches, or as soon as its bars are decided (a Top1Ratio of "
                    f"{settings.next_stage_top1:g} opens the next stage; in stage 1 a mean Achievement of "
                    f"{settings.qualify_achievement:g} qualifies for PvP). Per-task figures are on the Policy tab."
                )
                gr.Markdown("Built-in teams: the references PvE is played against (the Kind column says which are scripted and which learned):")
                gr.Dataframe(builtin_references(), elem_id="builtin-table", interactive=False, wrap=True,
                             column_widths=["200px", "90px", "580px", "100px", "110px"])
            with gr.Tab("Submissions", id="submissions"):
                subs = gr.Dataframe(submissions, datatype=tables.kinds(tables.SUBMISSION_COLUMNS), elem_id="submissions-table",
                                    interactive=False, wrap=True, column_widths=tables.widths(tables.SUBMISSION_COLUMNS))
                subs_empty = gr.Markdown(empty["submissions"], visible=False, elem_id="submissions-empty")
                gr.Markdown(
                    "Queue: the PvE order is the earliest stage first (stage 1 decides qualification), then the fewest "
                    "matches played in it (revisions take turns, and a new one goes first until it has caught up), then "
                    "the earliest push. Verdict in: when its current stage should end, from the durations of recent "
                    "matches (a stage decided early ends sooner)."
                )
            with gr.Tab("Policy", id="policy"):
                chooser = gr.Dropdown(choices=[], value=None, label="Policy",
                                      elem_id="policy-choice", allow_custom_value=True)
                policy_settling = gr.Markdown(elem_id="policy-settling")
                policy_note = gr.Markdown(visible=False, elem_id="policy-empty")
                rating_plot = gr.LinePlot(x="time", y="mu", title="TrueSkill mu over PvP matches", elem_id="policy-rating")
                task_plot = gr.BarPlot(x="task", y="points", color="track", title="Mean points per task", elem_id="policy-tasks")
                recent = gr.Dataframe(label="Recent matches", elem_id="policy-recent", interactive=False)
                h2h = gr.Dataframe(label="Head-to-head (share of matches ranked above the opponent)", elem_id="policy-h2h", interactive=False)
                gr.Markdown("### Exposure: what these figures rest on", elem_id="policy-exposure-title")
                exposure_note = gr.Markdown(elem_id="policy-exposure-note")
                exposure_tracks = gr.Dataframe(label="Matches, opponents and maps per track", elem_id="policy-exposure",
                                               interactive=False, visible=False)
                exposure_seats = gr.Dataframe(label="Seats dealt: spawn edge and slot", elem_id="policy-exposure-seats",
                                              interactive=False, visible=False)
                exposure_opponents = gr.Dataframe(label="Opponents: matches together, seats faced, share of the opponent seats",
                                                  elem_id="policy-exposure-opponents", interactive=False, visible=False)
            analytics_tab(demo, data.analytics, lambda: data.standings().teams, refresh_s=REFRESH_S)
            with gr.Tab("Matches", id="matches"):
                with gr.Row():
                    f_policy = gr.Textbox(label="Policy contains", elem_id="matches-policy")
                    f_track = gr.Dropdown(choices=["", "pve", "pvp"], value="", label="Track", elem_id="matches-track")
                    f_stage = gr.Dropdown(choices=["", "1", "2", "3"], value="", label="PvE stage", elem_id="matches-stage")
                    f_since = gr.Textbox(label="Since (YYYY-MM-DD)", elem_id="matches-since")
                    f_until = gr.Textbox(label="Until (YYYY-MM-DD)", elem_id="matches-until")
                match_list = gr.Dataframe(matches, elem_id="matches-table", interactive=False, wrap=True)
                matches_empty = gr.Markdown(empty["matches"], visible=False, elem_id="matches-empty")
                gr.Markdown("Select a match to replay it.")
            with gr.Tab("Replay", id="replay"):
                with gr.Row():
                    match_id = gr.Textbox(label="Match id", elem_id="replay-match")
                    show = gr.Button("Replay", elem_id="replay-load")
                viewer = replay_viewer(lambda m: data.store.replay(m, started_at=started(m)),
                                       logs=lambda m: data.store.logs(m, started_at=started(m)))
            with gr.Tab("About / Submit", id="about"):
                gr.Markdown(about_markdown(settings, hub_url=hub_url))
                # computed in the background by the refresher; a page load only formats it
                gr.Markdown(lambda: luck_markdown(data.luck()), elem_id="about-luck")
                gr.Markdown(lambda: audit_markdown(audits(), settings), elem_id="about-audits")
                gr.Markdown(lambda: incidents_markdown(incident_log.read()), elem_id="about-incidents")

        filters: list[Any] = [f_policy, f_track, f_stage, f_since, f_until]
        pvp_inputs = [search, older, min_matches]

        def pvp_view(*args: Any) -> tuple[pd.DataFrame, Any]:
            table = pvp_table(*args)
            return table, note("pvp", table, filtered=bool(any(args[:1]) or (len(args) > 2 and args[2])))

        def matches_view(*values: str) -> tuple[pd.DataFrame, Any]:
            table = matches(*values)
            return table, note("matches", table, filtered=any(values))

        search.change(pvp_table, inputs=pvp_inputs, outputs=pvp, api_name="pvp_table")
        older.change(pvp_table, inputs=pvp_inputs, outputs=pvp, api_visibility="private")
        min_matches.change(pvp_table, inputs=pvp_inputs, outputs=pvp, api_visibility="private")
        for box in filters:
            box.change(matches_view, inputs=filters, outputs=[match_list, matches_empty], api_visibility="private")

        def api_matches(policy: str = "", track: str = "", stage: str = "", since: str = "", until: str = "") -> dict:
            return _json(matches(policy, track, stage, since, until))

        def api_pve() -> dict:
            return _json(pve_table())

        def api_submissions() -> dict:
            return _json(submissions())

        def api_now_playing() -> list[dict]:
            return [m.to_dict() for m in live()]

        gr.api(api_matches, api_name="matches")
        gr.api(api_pve, api_name="pve_table")
        gr.api(api_submissions, api_name="submissions")
        gr.api(api_now_playing, api_name="now_playing")

        counted: dict[str, Any] = {}  # every revision's exposure totals, kept until the rows change

        def api_exposure(revision: str = "") -> dict:
            """The exposure ledger (`leaderboard.exposure.exposure_json`): of a revision (`repo@sha`, or a
            built-in's name), of each revision of a policy (`repo`), or, with "", every revision's totals."""
            teams = data.standings().teams
            if counted.get("teams") is not teams:
                counted.update(teams=teams, totals=exposure.exposure_totals(teams))
            return exposure.exposure_json(teams, revision or "", totals=counted["totals"])

        gr.api(api_exposure, api_name="exposure")

        def api_settling() -> list[dict]:
            """The settling meter of every qualified revision, the least settled first
            (`leaderboard.meter.meter_records`)."""
            return meter.meter_records(settling())

        gr.api(api_settling, api_name="settling")

        def api_isolation() -> dict:
            """The isolation self-test's report on this machine ({"state": "running"} until it ends)."""
            return dict(isolation() or {"state": "running"})

        gr.api(api_isolation, api_name="isolation")
        policy_outputs = [rating_plot, task_plot, recent, h2h, policy_note,
                          exposure_note, exposure_tracks, exposure_seats, exposure_opponents, policy_settling]
        chooser.change(policy, inputs=chooser, outputs=policy_outputs, api_name="policy")

        def on_load() -> tuple[Any, ...]:
            """What each visitor's page starts with (values are computed per page load, never
            frozen at build time): which empty notes show, and the policy to open on."""
            choices = players()
            return (note("pvp", pvp_table()), note("pve", pve_table()),
                    note("submissions", submissions()), note("matches", matches()),
                    gr.Dropdown(choices=choices, value=choices[0] if choices else None))

        demo.load(on_load, outputs=[pvp_empty, pve_empty, subs_empty, matches_empty, chooser], api_visibility="private").then(
            policy, inputs=chooser, outputs=policy_outputs, api_visibility="private")

        def refresh(search_text: str, show_older: bool, at_least: float, chosen: str, *values: str):
            table, note_ = pvp_view(search_text, show_older, at_least)
            pve_now = pve_table()
            found, found_note = matches_view(*values)
            choices = players()
            return (table, note_, tables.source_line(data.standings()), pve_now, note("pve", pve_now),
                    found, found_note, gr.Dropdown(choices=choices, value=chosen or (choices[0] if choices else None)))

        timer.tick(refresh, inputs=[*pvp_inputs, chooser, *filters],
                   outputs=[pvp, pvp_empty, pvp_source, pve, pve_empty, match_list, matches_empty, chooser], api_visibility="private")

        def refresh_live():
            table = submissions()
            return (table, note("submissions", table), now_playing(), operator_markdown(operator()),
                    isolation_banner(isolation()))

        fast.tick(refresh_live, outputs=[subs, subs_empty, playing, status, banner], api_visibility="private")

        def open_replay(evt: gr.SelectData, frame: pd.DataFrame):
            row = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
            chosen = str(frame.iloc[row]["Match"])
            return chosen, {"match_id": chosen}, gr.Tabs(selected="replay")

        match_list.select(open_replay, inputs=match_list, outputs=[match_id, viewer, tabs], api_visibility="private")
        show.click(lambda m: {"match_id": (m or "").strip()}, inputs=match_id, outputs=viewer, api_visibility="private")
    return demo


# -- Head to head tab ------------------------------------------------------------------------

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

#: The Head to head tab's note while no PvP pair has met.
H2H_EMPTY = ("No PvP matches yet, so no pair has met. Once qualified policies play PvP, every pair's record fills "
             "this map match by match, the clear cycles (if any) are listed, and each policy gets its Nash average.")


def head_to_head_tab(data: StandingsRefresher, *, demo: gr.Blocks, timer: gr.Timer) -> None:
    """The "Head to head" tab (id `head_to_head`) and the `/head_to_head` API: a heatmap of
    every pair's share (the best `tables.HEATMAP_TOP` by MLE), the clear cycles, the Nash
    average table, and what each rating answers. Refreshed with the other tables."""

    def view() -> tuple[Any, ...]:
        standings = data.standings()
        heatmap = tables.heatmap_html(standings)
        nash = tables.nash_table(standings)
        return (gr.HTML(heatmap, visible=bool(heatmap)), gr.Markdown(tables.heatmap_caption(standings), visible=bool(heatmap)),
                tables.cycles_markdown(standings.head_to_head), nash, gr.Markdown(visible=not heatmap))

    with gr.Tab("Head to head", id="head_to_head"):
        empty = gr.Markdown(H2H_EMPTY, visible=False, elem_id="h2h-empty")
        heatmap = gr.HTML("", elem_id="h2h-heatmap")
        caption = gr.Markdown(elem_id="h2h-caption")
        cycles = gr.Markdown(elem_id="h2h-cycles")
        nash = gr.Dataframe(label="Nash average (weight: the player's share of the equilibrium mix)", elem_id="h2h-nash",
                            interactive=False)
        gr.Markdown(RATINGS_MARKDOWN, elem_id="h2h-ratings-help")

        def api_head_to_head(player: str = "") -> dict:
            """Every player, every ordered pair that met (only those naming `player`, if given),
            the clear cycles and the Nash average."""
            return tables.head_to_head_json(data.standings().head_to_head, player=player or "")

        gr.api(api_head_to_head, api_name="head_to_head")  # inside the Tab: a Tabs block takes only tabs
    outputs = [heatmap, caption, cycles, nash, empty]
    demo.load(view, outputs=outputs, api_visibility="private")
    timer.tick(view, outputs=outputs, api_visibility="private")


#: Page CSS (Gradio 6 takes it at `launch(css=CSS)`): table headers wrap between words, never
#: inside one (a squeezed header went one letter per line).
CSS = """
.table-wrap th, .table-wrap th * { word-break: normal !important; overflow-wrap: normal !important; hyphens: none; }
#now-playing { font-size: 0.95em; }
"""


def _json(frame: pd.DataFrame) -> dict:
    """A table as `{"headers": [...], "data": [[...], ...]}`, the way a Dataframe answers."""
    clean = frame.astype(object).where(frame.notna(), None)
    return {"headers": [str(c) for c in frame.columns], "data": clean.values.tolist()}
