"""The Space's pages: Gradio wiring of the tables, plots and the replay viewer.

Each callback only reads the latest `Standings` (kept fresh in the background by
`leaderboard.refresher.StandingsRefresher`) and formats it with `leaderboard.tables`, so every
page answers quickly. Named API endpoints (`/pvp_table`, `/pve_table`, `/submissions`,
`/matches`, `/policy`, `/now_playing`) make the same data available through `gradio_client`.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping

import gradio as gr
import pandas as pd

from arena.activity import LiveMatch, QueueEntry
from arena.rules import BUILTIN_TEAMS, MATCH, PVE
from arena.schema import player_id
from arena.scoring import tier_table
from arena.settings import ArenaSettings
from arena.submitting import how_to_submit
from history.audits import AuditSummary
from leaderboard import tables
from leaderboard.refresher import StandingsRefresher
from leaderboard.viewer import replay_viewer

REFRESH_S = 10.0


def builtin_references() -> pd.DataFrame:
    """The built-in teams, what they are, and where they play."""
    return pd.DataFrame(
        [
            {
                "Built-in": team.policy_id,
                "Kind": team.kind,
                "What it is": team.description,
                "PvE stages": ", ".join(str(s) for s, names in PVE.stages.items() if team.name in names) or "-",
                "Anchor rating": "-" if team.anchor is None else f"{team.anchor:.2f}",
            }
            for team in BUILTIN_TEAMS
        ]
    )


def _stage_kinds(scripted: list[int], learned: list[int]) -> str:
    """`Stages 1 and 3 are played by scripted teams only; stage 2 also by a learned one.`"""
    def named(stages: list[int]) -> str:
        numbers = [str(n) for n in stages]
        listed = numbers[0] if len(numbers) == 1 else ", ".join(numbers[:-1]) + " and " + numbers[-1]
        return ("Stage " if len(stages) == 1 else "Stages ") + listed

    text = f"{named(scripted)} {'is' if len(scripted) == 1 else 'are'} played by **scripted** teams only" if scripted else ""
    if learned:
        text += ("; " + named(learned).lower() + " also" if text else named(learned)) + " by a **learned** team (a trained network)"
    return text + "."


def about_markdown(settings: ArenaSettings, *, hub_url: str) -> str:
    """The About / Submit tab: how to submit, the rules as this Space runs them, the data."""
    tag, history_repo = settings.submission_tag, settings.history_repo
    learned = [s for s in PVE.stages if "learned" in PVE.kinds(s)]
    scripted = [s for s in PVE.stages if s not in learned]
    rows = "\n".join(
        f"| {r['task']} | {r['measure']} | {r['easy (4)']} | {r['medium (10)']} | {r['hard (21)']} |" for r in tier_table()
    )
    return f"""
## Submit a policy
Push a model repo tagged **`{tag}`** whose root holds `policy.py` with `class Team`
(`__init__(self, team_id, env_config)`, `act(self, observations) -> actions`); see the
README for the full contract and examples:

{how_to_submit(settings, hub_url=hub_url)}

The Arena finds it, validates it in a sandbox (the Submissions tab says why if it is
rejected), plays PvE: {settings.pve_matches_per_stage} matches a stage against built-in teams
(a Top1Ratio of {settings.next_stage_top1:g} opens the next stage), and qualifies it for PvP at a
mean Achievement of {settings.qualify_achievement:g} in stage 1. PvP pools {MATCH.num_teams} qualified
policies ({settings.pairing} pairing).

## Rules
{MATCH.num_teams} teams of {MATCH.team_size} agents, {MATCH.map_size}x{MATCH.map_size} maps,
{settings.match_horizon} ticks, Neural MMO 2.x with every game system.
A team's Achievement is the sum over four tasks of its highest tier reached by any member:

| Task | Measured as | Easy (4) | Medium (10) | Hard (21) |
|---|---|---|---|---|
{rows}

PvE opponents: {"; ".join(f"stage {s}: {PVE.describe(s)} ({PVE.kinds(s)})" for s in PVE.stages)}.
{_stage_kinds(scripted, learned)}

## Data
Every match is in the dataset [`{history_repo}`]({hub_url.rstrip('/')}/datasets/{history_repo}),
one row per team per match; every rating here is computed from it alone:
`datasets.load_dataset("{history_repo}")`.
"""


def audit_markdown(summary: AuditSummary | None, settings: ArenaSettings) -> str:
    """The About tab's reproducibility note: the audits' tally and every match that did
    not reproduce, with its first difference."""
    how = ("Any recorded match can be played again from its record: `python -m matchmaking.rerun MATCH_ID` "
           "(same seed, line-up and revisions, same nmmo and Arena versions) says whether it comes out identical.")
    if not settings.audit_minutes:
        return f"## Reproducibility\n{how} This Space does not audit itself (`NMMO_ARENA_AUDIT_MINUTES=0`)."
    if summary is None:
        return f"## Reproducibility\n{how}"
    lines = [f"## Reproducibility\n{how} In idle time this Space reruns one recorded match every "
             f"{settings.audit_minutes:g} minutes at most: **{summary.line}**"
             + (f"; {summary.other_version} not audited: other version." if summary.other_version else ".")]
    for audit in summary.failed:
        d = audit.difference or {}
        lines.append(f"- `{audit.match_id}` ({audit.track or 'match'}, audited {audit.audited_at}): first difference at "
                     f"`{d.get('path')}`, recorded `{d.get('recorded')}`, rerun `{d.get('rerun')}`")
    return "\n".join(lines)


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


def _empty_note(frame: pd.DataFrame, text: str) -> Any:
    """The note under a table: shown only while the table is empty."""
    return gr.Markdown(text, visible=frame.empty)


def build(data: StandingsRefresher, settings: ArenaSettings | None = None, *,
          operator: Callable[[], list[str]] = list,
          live: Callable[[], list[LiveMatch]] = list,
          queue: Callable[[], Mapping[tuple[str, str], QueueEntry]] = dict,
          audits: Callable[[], AuditSummary | None] = lambda: None) -> gr.Blocks:
    """The Blocks app over `data`, describing the rules as `settings` run them.

    Args:
        data: the standings, kept fresh in the background.
        settings: the rules the Space runs with (their values appear in the prose).
        operator: the operator's status lines (the Hub, damaged files).
        live: the matches in flight (`matchmaking.live`).
        queue: each revision's place in the PvE queue and its forecast (`Matchmaker.queue`).
        audits: what the audits of recorded matches found (`Matchmaker.audit_summary`).
    """
    settings = settings or ArenaSettings()
    hub_url = data.hub_url
    empty = {k: v.format(qualify=settings.qualify_achievement, tag=settings.submission_tag) for k, v in EMPTY.items()}

    def latest_players() -> set[str]:
        return {player_id(s.repo_id, s.revision) for s in data.statuses() if s.latest}

    def pvp_table(search: str = "", older: bool = False, min_matches: float = 0) -> pd.DataFrame:
        latest = None if older else (latest_players() or None)
        table = tables.pvp_table(data.standings(), hub_url=hub_url, latest=latest, search=search or "",
                                 costs=tables.step_costs(data.statuses()))
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
        teams = data.standings().teams
        if not len(teams):
            return []
        order = {p: i for i, p in enumerate(tables.ranked_players(data.standings()))}
        return sorted(set(teams["player"]), key=lambda p: (order.get(p, len(order)), p))

    def policy(player: str) -> tuple[Any, ...]:
        frames = tables.policy_frames(data.standings(), player or "")
        note = empty["policy"] if not player else empty["rating"] if frames["trajectory"].empty else ""
        return (frames["trajectory"], frames["tasks"], frames["recent"], frames["head_to_head"],
                gr.Markdown(note, visible=bool(note)))

    with gr.Blocks(title="NMMO Arena") as demo:
        gr.Markdown(
            f"# NMMO Arena\nNeural MMO policies ranked in free-for-all matches of {MATCH.num_teams} teams of {MATCH.team_size}, "
            "as in the IJCAI 2022 challenge. Tables refresh every few seconds from the match history."
        )
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
                gr.Markdown(
                    "**What each rating answers.** TrueSkill (mu - 3 sigma, as in the paper): how good is it, cautiously, "
                    "given the matches so far in the order they came? MLE: the order-free maximum-likelihood strength, with "
                    "a bootstrap 95% interval; Rank is 1 + the number of policies whose interval lies entirely above this "
                    "one's, so ranks are shared where intervals overlap. Elo: the 16-team match read as pairwise duels. "
                    "Built-ins are the fixed anchors. Click a column to sort."
                )
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
                policy_note = gr.Markdown(visible=False, elem_id="policy-empty")
                rating_plot = gr.LinePlot(x="time", y="mu", title="TrueSkill mu over PvP matches", elem_id="policy-rating")
                task_plot = gr.BarPlot(x="task", y="points", color="track", title="Mean points per task", elem_id="policy-tasks")
                recent = gr.Dataframe(label="Recent matches", elem_id="policy-recent", interactive=False)
                h2h = gr.Dataframe(label="Head-to-head (share of matches ranked above the opponent)", elem_id="policy-h2h", interactive=False)
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
                viewer = replay_viewer(data.store.replay, logs=data.store.logs)
            with gr.Tab("About / Submit", id="about"):
                gr.Markdown(about_markdown(settings, hub_url=hub_url))
                gr.Markdown(lambda: audit_markdown(audits(), settings), elem_id="about-audits")

        filters = [f_policy, f_track, f_stage, f_since, f_until]
        pvp_inputs = [search, older, min_matches]

        def pvp_view(*args: Any) -> tuple[pd.DataFrame, Any]:
            table = pvp_table(*args)
            return table, gr.Markdown(visible=table.empty and not any(args[:1]) and not (len(args) > 2 and args[2]))

        def matches_view(*values: str) -> tuple[pd.DataFrame, Any]:
            table = matches(*values)
            return table, gr.Markdown(visible=table.empty and not any(values))

        search.change(pvp_table, inputs=pvp_inputs, outputs=pvp, api_name="pvp_table")
        older.change(pvp_table, inputs=pvp_inputs, outputs=pvp, api_name=False)
        min_matches.change(pvp_table, inputs=pvp_inputs, outputs=pvp, api_name=False)
        for box in filters:
            box.change(matches_view, inputs=filters, outputs=[match_list, matches_empty], api_name=False)

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
        policy_outputs = [rating_plot, task_plot, recent, h2h, policy_note]
        chooser.change(policy, inputs=chooser, outputs=policy_outputs, api_name="policy")

        def on_load() -> tuple[Any, ...]:
            """What each visitor's page starts with (values are computed per page load, never
            frozen at build time): which empty notes show, and the policy to open on."""
            choices = players()
            return (gr.Markdown(visible=pvp_table().empty), gr.Markdown(visible=pve_table().empty),
                    gr.Markdown(visible=submissions().empty), gr.Markdown(visible=matches().empty),
                    gr.Dropdown(choices=choices, value=(choices or [None])[0]))

        demo.load(on_load, outputs=[pvp_empty, pve_empty, subs_empty, matches_empty, chooser], api_name=False).then(
            policy, inputs=chooser, outputs=policy_outputs, api_name=False)

        def refresh(search_text: str, show_older: bool, at_least: float, chosen: str, *values: str):
            table, note = pvp_view(search_text, show_older, at_least)
            pve_now = pve_table()
            found, found_note = matches_view(*values)
            choices = players()
            return (table, note, pve_now, gr.Markdown(visible=pve_now.empty), found, found_note,
                    gr.Dropdown(choices=choices, value=chosen or (choices or [None])[0]))

        timer.tick(refresh, inputs=[*pvp_inputs, chooser, *filters],
                   outputs=[pvp, pvp_empty, pve, pve_empty, match_list, matches_empty, chooser], api_name=False)

        def refresh_live():
            table = submissions()
            return table, gr.Markdown(visible=table.empty), now_playing(), operator_markdown(operator())

        fast.tick(refresh_live, outputs=[subs, subs_empty, playing, status], api_name=False)

        def open_replay(evt: gr.SelectData, frame: pd.DataFrame):
            row = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
            chosen = str(frame.iloc[row]["Match"])
            return chosen, {"match_id": chosen}, gr.Tabs(selected="replay")

        match_list.select(open_replay, inputs=match_list, outputs=[match_id, viewer, tabs], api_name=False)
        show.click(lambda m: {"match_id": (m or "").strip()}, inputs=match_id, outputs=viewer, api_name=False)
    return demo


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
