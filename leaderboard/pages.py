"""The Space's pages: Gradio wiring of the tables, plots and the replay viewer.

Each callback only reads the latest `Standings` (kept fresh in the background by
`leaderboard.refresher.StandingsRefresher`) and formats it with `leaderboard.tables`, so every
page answers quickly. Named API endpoints (`/pvp_table`, `/pve_table`, `/submissions`,
`/matches`, `/policy`) make the same data available through `gradio_client`.
"""

from __future__ import annotations

from typing import Any, Callable

import gradio as gr
import pandas as pd

from arena.rules import BUILTIN_TEAMS, MATCH, PVE
from arena.schema import player_id
from arena.scoring import tier_table
from arena.settings import ArenaSettings
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

```bash
hf upload YOUR-USER/YOUR-TEAM ./your-team .
```

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


def operator_markdown(lines: list[str]) -> str:
    """The operator's line: the Hub's state and any damaged state set aside."""
    return "\n".join(f"- {line}" for line in lines)


def build(data: StandingsRefresher, settings: ArenaSettings | None = None, *,
          operator: Callable[[], list[str]] = list) -> gr.Blocks:
    """The Blocks app over `data`, describing the rules as `settings` run them; `operator()`
    gives the lines of the operator's status (the Hub, damaged files)."""
    settings = settings or ArenaSettings()
    hub_url = data.hub_url

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
        return tables.submissions_table(data.statuses(), hub_url=hub_url)

    def matches(policy: str = "", track: str = "", stage: str = "", since: str = "", until: str = "") -> pd.DataFrame:
        return tables.matches_table(
            data.standings(), policy=policy or "", track=track or "", stage=int(stage) if stage else None, since=since or "", until=until or ""
        )

    def players() -> list[str]:
        return sorted(set(data.standings().teams["player"])) if len(data.standings().teams) else []

    def policy(player: str) -> tuple[Any, ...]:
        frames = tables.policy_frames(data.standings(), player or "")
        return frames["trajectory"], frames["tasks"], frames["recent"], frames["head_to_head"]

    with gr.Blocks(title="NMMO Arena") as demo:
        gr.Markdown(
            f"# NMMO Arena\nNeural MMO policies ranked in free-for-all matches of {MATCH.num_teams} teams of {MATCH.team_size}, "
            "as in the IJCAI 2022 challenge. Tables refresh every few seconds from the match history."
        )
        status = gr.Markdown(lambda: operator_markdown(operator()), elem_id="operator-status")
        timer = gr.Timer(REFRESH_S)
        with gr.Tabs() as tabs:
            with gr.Tab("PvP leaderboard", id="pvp"):
                with gr.Row():
                    search = gr.Textbox(label="Search policy or author", elem_id="pvp-search")
                    older = gr.Checkbox(label="Include superseded revisions", value=False, elem_id="pvp-older")
                    min_matches = gr.Number(label="At least this many matches", value=0, precision=0, elem_id="pvp-min-matches")
                pvp = gr.Dataframe(
                    pvp_table, datatype=[c.kind for c in tables.PVP_COLUMNS], elem_id="pvp-table", interactive=False, wrap=True
                )
                gr.Markdown(
                    "Rank: 1 + the number of policies whose 95% interval lies entirely above this one's (ranks are shared where "
                    "intervals overlap). TrueSkill is mu - 3 sigma, as in the paper; MLE is the order-free maximum-likelihood "
                    "rating with a bootstrap interval; built-ins are fixed anchors. Click a column to sort."
                )
            with gr.Tab("PvE", id="pve"):
                pve = gr.Dataframe(pve_table, elem_id="pve-table", interactive=False, wrap=True)
                gr.Markdown("Built-in teams: the references PvE is played against (the Kind column says which are scripted and which learned):")
                gr.Dataframe(builtin_references(), elem_id="builtin-table", interactive=False, wrap=True)
            with gr.Tab("Submissions", id="submissions"):
                subs = gr.Dataframe(submissions, elem_id="submissions-table", interactive=False, wrap=True)
            with gr.Tab("Policy", id="policy"):
                chooser = gr.Dropdown(choices=players(), label="Policy", elem_id="policy-choice", allow_custom_value=True)
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
                gr.Markdown("Select a match to replay it.")
            with gr.Tab("Replay", id="replay"):
                with gr.Row():
                    match_id = gr.Textbox(label="Match id", elem_id="replay-match")
                    show = gr.Button("Replay", elem_id="replay-load")
                viewer = replay_viewer(data.store.replay, logs=data.store.logs)
            with gr.Tab("About / Submit", id="about"):
                gr.Markdown(about_markdown(settings, hub_url=hub_url))

        filters = [f_policy, f_track, f_stage, f_since, f_until]
        pvp_inputs = [search, older, min_matches]
        search.change(pvp_table, inputs=pvp_inputs, outputs=pvp, api_name="pvp_table")
        older.change(pvp_table, inputs=pvp_inputs, outputs=pvp, api_name=False)
        min_matches.change(pvp_table, inputs=pvp_inputs, outputs=pvp, api_name=False)
        for box in filters:
            box.change(matches, inputs=filters, outputs=match_list, api_name=False)
        def api_matches(policy: str = "", track: str = "", stage: str = "", since: str = "", until: str = "") -> dict:
            return _json(matches(policy, track, stage, since, until))

        def api_pve() -> dict:
            return _json(pve_table())

        def api_submissions() -> dict:
            return _json(submissions())

        gr.api(api_matches, api_name="matches")
        gr.api(api_pve, api_name="pve_table")
        gr.api(api_submissions, api_name="submissions")
        chooser.change(policy, inputs=chooser, outputs=[rating_plot, task_plot, recent, h2h], api_name="policy")

        def refresh(search_text: str, show_older: bool, at_least: float, *values: str):
            return (
                pvp_table(search_text, show_older, at_least),
                pve_table(),
                submissions(),
                matches(*values),
                gr.Dropdown(choices=players()),
                operator_markdown(operator()),
            )

        timer.tick(refresh, inputs=[*pvp_inputs, *filters], outputs=[pvp, pve, subs, match_list, chooser, status], api_name=False)

        def open_replay(evt: gr.SelectData, frame: pd.DataFrame):
            row = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
            chosen = str(frame.iloc[row]["Match"])
            return chosen, {"match_id": chosen}, gr.Tabs(selected="replay")

        match_list.select(open_replay, inputs=match_list, outputs=[match_id, viewer, tabs], api_name=False)
        show.click(lambda m: {"match_id": (m or "").strip()}, inputs=match_id, outputs=viewer, api_name=False)
    return demo


def _json(frame: pd.DataFrame) -> dict:
    """A table as `{"headers": [...], "data": [[...], ...]}`, the way a Dataframe answers."""
    clean = frame.astype(object).where(frame.notna(), None)
    return {"headers": [str(c) for c in frame.columns], "data": clean.values.tolist()}
