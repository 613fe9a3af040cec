"""The About tab's prose, and the built-in teams' table: the rules as this Space runs them,
how to submit, the reproducibility audits, and the matches lost to the platform.

Pure formatting of what the Space knows (its settings, the audit summary, the incident
log); the About and PvE tabs (`leaderboard.tabs`) place them. The luck figures are `leaderboard.about_luck`'s.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import pandas as pd

from arena.lifecycle import RevisionState, Status
from arena.rules import BUILTIN_TEAMS, MATCH, PVE
from arena.scoring import tier_table
from arena.settings import ArenaSettings
from arena.submitting import how_to_submit
from history.audits import AuditSummary
from history.incidents import MAX_ATTEMPTS, Incident, attempts, latest


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
Arena's `docs/participants.md` for the full contract and examples:

{how_to_submit(settings, hub_url=hub_url)}

The Arena finds it, validates it in a sandbox (the Submissions tab says why if it is
rejected), plays PvE: {settings.pve_matches_per_stage} matches a stage against built-in teams
(a Top1Ratio of {settings.next_stage_top1:g} opens the next stage), and qualifies it for PvP at a
mean Achievement of {settings.qualify_achievement:g} in stage 1. PvP pools {MATCH.num_teams} qualified
policies ({settings.pairing} pairing), one **single match** per pool, each rated on its own.

PvE, validation and `python -m matchmaking.evaluate` play the **published** maps (ids 1-256: anyone
can generate them and reproduce a PvE result); PvP plays **held-out** maps, generated from this
Space's secret, that no participant has seen in advance. The PvP table's Held-out and PvE vs PvP
columns, and the plot under it, show who stands better on the published maps than on the held-out ones.

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

The dataset is this Space's state; its disk is only a cache. A Space restarted on an empty
disk (a restart, a rebuild, waking from sleep) takes back from the dataset every match,
status, audit and model-card publication before it plays, and plays no match the dataset
holds. What a wiped disk loses is what had not been pushed yet: at most the last
{settings.push_every_minutes:g} minutes of play (`NMMO_ARENA_PUSH_MINUTES`); a clean stop pushes
it first. A Space with persistent storage keeps even that with `NMMO_ARENA_DATA=/data`.
"""


def _ago(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s ago"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min ago"
    if seconds < 172_800:
        return f"{seconds / 3600:.1f} h ago"
    return f"{seconds / 86_400:.0f} days ago"


def ladder_markdown(summary: pd.DataFrame, statuses: Iterable[RevisionState], *, now: float, paused: str | None) -> str:
    """Whether the ladder is alive: the last rated (PvP) match, the oldest revision still
    waiting for its verdict, and why play is paused if it is. `summary` is the standings'
    match summary (`Match`, `Track`, `Started`, newest first)."""
    pvp = summary.loc[summary["Track"] == "pvp", "Started"] if len(summary) else pd.Series(dtype=object)
    last = pd.Timestamp(str(pvp.max())) if len(pvp) else None
    rated = ("no rated match yet" if last is None else
             f"the last rated match started {_ago(now - last.timestamp())} ({last.strftime('%Y-%m-%d %H:%M UTC')})")
    waiting = [s for s in statuses if s.latest and s.status in (Status.QUEUED, Status.VALIDATING, Status.EVALUATING)]
    oldest = min(waiting, key=lambda s: s.first_seen, default=None)
    queue = ("no revision is waiting for a verdict" if oldest is None else
             f"the oldest revision waiting for its verdict, {oldest.id.policy_id}@{oldest.id.short}, was pushed "
             f"{_ago(now - oldest.first_seen)} ({oldest.status.value})")
    state = f"**Play is paused**: {paused}." if paused else "Play is running."
    return f"### Is the ladder alive?\n\n{state} {rated[0].upper() + rated[1:]}; {queue}."


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


#: Incidents the About tab lists (the whole log is in the dataset, `incidents/`).
INCIDENTS_SHOWN = 20


def _cell(text: str, limit: int = 160) -> str:
    """Text safe in one Markdown table cell, cut to `limit` characters."""
    text = " ".join(text.split()).replace("|", "\\|").replace("`", "'")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def incidents_markdown(incidents: list[Incident]) -> str:
    """The About tab's matches lost to the platform: the rule, the tally by cause, and the
    latest incidents with their causes, apart from the teams' own faults."""
    lines = ["## Matches lost to the platform",
             "A match this Space loses itself (its worker process or cluster node died, it ran out of memory, an "
             "error inside the engine) is **never rated**: nothing of it is recorded, it does not count as played, "
             f"and it is played again, the same match, up to {MAX_ATTEMPTS} attempts in all. A team's own faults "
             "(a policy that crashes, times out, exceeds its memory or answers invalid actions) are not listed here: "
             "they are part of its matches, which are rated, and are shown in each match's replay.", ""]
    if not incidents:
        lines.append("None: no match has been lost to the platform.")
        return "\n".join(lines)
    causes = ", ".join(f"{cause} {n}" for cause, n in sorted(Counter(i.cause.value for i in incidents).items()))
    given_up = sum(1 for i in incidents if not i.replanned)
    matches = len(attempts(incidents))
    lines += [f"**{len(incidents)} attempt{'s' * (len(incidents) != 1)} lost, of {matches} match{'es' * (matches != 1)}** ({causes})"
              + (f"; {given_up} given up." if given_up else "; none given up."),
              "", "| When (UTC) | Match | Track | Cause | What happened | Then |", "|---|---|---|---|---|---|"]
    for incident in latest(incidents, INCIDENTS_SHOWN):
        track = f"PvE stage {incident.stage}" if incident.track == "pve" else incident.track.upper() or "-"
        if incident.track == "pve" and incident.submissions:
            track += f" of {incident.submissions[0][:incident.submissions[0].find('@') + 13]}"  # revision: 12 digits
        lines.append(f"| {incident.failed_at.replace('T', ' ')[:19]} | `{incident.match_id}` | {_cell(track, 80)} | "
                     f"**{incident.cause.value}**: {incident.cause.meaning} | {_cell(incident.message)} | {incident.line} |")
    return "\n".join(lines)
