"""The leaderboard's tables: `Standings` (and statuses) in, display frames out. No Gradio.

Each table is declared once as a list of `Column`s; the functions fill them. They only
select, aggregate and format what `leaderboard.standings` computed, so they build fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from arena.activity import LiveMatch, QueueEntry
from arena.rules import ANCHORS
from arena.schema import TASK_NAMES, is_builtin, player_id
from leaderboard.standings import POINT_COLUMNS, Standings


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # gradio datatype: "str", "number", "markdown", "date"
    description: str
    width: str = "110px"
    """Its width on the page: numbers narrow, the policy link wider, reasons widest."""


def kinds(columns: Sequence[Column]) -> list[str]:
    return [c.kind for c in columns]


def widths(columns: Sequence[Column]) -> list[str]:
    return [c.width for c in columns]


PVP_COLUMNS = [
    Column("Rank", "number", "1 + number of policies whose 95% rating interval lies entirely above this one's"),
    Column("Policy", "markdown", "Hub repo and revision (built-ins are the fixed rating anchors)", "240px"),
    Column("Author", "str", "Owner of the repo"),
    Column("TrueSkill", "number", "mu - 3 sigma, the paper's conservative score"),
    Column("mu", "number", "TrueSkill mean"),
    Column("sigma", "number", "TrueSkill uncertainty"),
    Column("MLE", "number", "order-free maximum-likelihood rating (Plackett-Luce, anchored)"),
    Column("95% interval", "str", "bootstrap interval of the MLE rating", "120px"),
    Column("Position range", "str", "bootstrap 95% interval of the leaderboard position"),
    Column("Elo", "number", "Elo, a 16-team match read as pairwise duels"),
    Column("Matches", "number", "PvP matches played"),
    Column("Achievement", "number", "mean Achievement in PvP"),
    *[Column(task.capitalize(), "number", f"mean {task} points in PvP") for task in TASK_NAMES],
    Column("ms / tick", "number", "median time the team's act() took per tick in its validation (built-ins: blank)"),
]


def _link(policy_id: str, revision: str, hub_url: str) -> str:
    if is_builtin(policy_id):
        return f"{policy_id} (anchor)"
    return f"[{policy_id}]({hub_url.rstrip('/')}/{policy_id})@{revision[:7]}"


def ranked_players(standings: Standings) -> list[str]:
    """Rated PvP players, best first by TrueSkill's conservative score."""
    ratings = standings.trueskill.ratings
    return sorted((p for p in standings.pvp_players.index if p in ratings), key=lambda p: -ratings[p].conservative) \
        if len(standings.pvp_players) else []


def step_costs(statuses: Iterable) -> dict[str, float]:
    """Median ms per tick measured at validation, by player id (revisions validated)."""
    return {player_id(s.repo_id, s.revision): s.measurements.median_step_ms
            for s in statuses if s.measurements is not None and s.measurements.median_step_ms}


def pvp_table(standings: Standings, *, hub_url: str, latest: set[str] | None = None, search: str = "",
              costs: Mapping[str, float] | None = None) -> pd.DataFrame:
    """The PvP leaderboard, best first.

    Args:
        standings (`Standings`): computed from the history.
        hub_url (`str`): where repo links point.
        latest (`set[str]`, *optional*): player ids to show (each repo's latest revision);
            None shows every rated player.
        search (`str`): keep rows whose policy or author contains it (case-insensitive).
        costs (`Mapping[str, float]`, *optional*): ms per tick by player (`step_costs`).
    """
    costs = costs or {}
    agg = standings.pvp_players
    if agg.empty:
        return pd.DataFrame(columns=[c.name for c in PVP_COLUMNS])
    players = [p for p in agg.index if (latest is None or p in latest or p in ANCHORS)]
    agg = agg.loc[players]
    ts = standings.trueskill.ratings
    mle = standings.mle
    high = {p: mle[p].high for p in players if p in mle}
    table = pd.DataFrame(
        {
            "Policy": [_link(agg.at[p, "policy_id"], agg.at[p, "revision"], hub_url) for p in players],
            "Author": ["arena" if p in ANCHORS else agg.at[p, "policy_id"].split("/")[0] for p in players],
            "TrueSkill": [ts[p].conservative if p in ts else np.nan for p in players],
            "mu": [ts[p].mu if p in ts else np.nan for p in players],
            "sigma": [ts[p].sigma if p in ts else np.nan for p in players],
            "MLE": [mle[p].rating if p in mle else np.nan for p in players],
            "95% interval": [f"{mle[p].low:.2f} to {mle[p].high:.2f}" if p in mle else "" for p in players],
            "Position range": [f"{mle[p].rank_low}-{mle[p].rank_high}" if p in mle else "" for p in players],
            "Elo": [standings.elo.ratings.get(p, np.nan) for p in players],
            "Matches": agg["matches"].to_numpy(),
            "Achievement": agg["achievement"].to_numpy(),
            **{task.capitalize(): agg[task].to_numpy() for task in TASK_NAMES},
            "ms / tick": [costs.get(p, np.nan) for p in players],
        },
        index=players,
    )
    if mle:
        lows = np.array([mle[p].low if p in mle else -np.inf for p in players])
        table.insert(0, "Rank", [1 + int(np.sum(lows > high.get(p, np.inf))) for p in players])
        table = table.sort_values(["Rank", "MLE"], ascending=[True, False])
    else:
        table = table.sort_values("TrueSkill", ascending=False)
        table.insert(0, "Rank", range(1, len(table) + 1))
    if search:
        needle = search.lower()
        table = table[table["Policy"].str.lower().str.contains(needle, regex=False) | table["Author"].str.lower().str.contains(needle, regex=False)]
    return table.round(2).reset_index(drop=True)


def source_line(standings: Standings) -> str:
    """What the PvP table was computed from, in one line: the matches, and the shards to
    download to recompute it (`examples/recompute_ratings.py --through SHARD`)."""
    source = standings.source
    where = "published shards" if source.published else "local shards"
    if not source.shards:
        return (f"Computed from 0 matches: no {where} yet (matches are rated once they are in a shard"
                f"{' pushed to the Hub dataset' if source.published else ''}).")
    line = (f"Computed from {standings.matches:,} matches in the {where} through `{source.through}` "
            f"({standings.pvp_matches:,} PvP, {standings.rated_results:,} rated results: a duplicate set is one).")
    if not source.published:
        line += " Not yet confirmed in the Hub dataset."
    return line


PVE_COLUMNS = [
    Column("Policy", "markdown", "Hub repo and revision", "210px"),
    Column("Status", "str", "where the revision stands (Submissions tab: why)", "100px"),
    *[
        column
        for stage in (1, 2, 3)
        for column in (
            Column(f"Stage {stage} Top1Ratio", "number", f"share of stage-{stage} matches won", "100px"),
            Column(f"Stage {stage} Achievement", "number", f"mean Achievement in stage {stage}", "125px"),
        )
    ],
    Column("Matches per stage", "str", "matches played in stages 1, 2, 3 (fewer than 10 when a stage was decided early)", "110px"),
    Column("ms / tick", "number", "median time act() took per tick in validation", "80px"),
]


def pve_table(standings: Standings, statuses: Sequence, *, hub_url: str) -> pd.DataFrame:
    """Per latest revision: its status, and per PvE stage Top1Ratio, mean Achievement and
    matches played. Per-task figures are on the Policy tab."""
    per = standings.pve_stages
    out = []
    for state in statuses:
        if not state.latest:
            continue
        player = player_id(state.repo_id, state.revision)
        record: dict[str, object] = {
            "Policy": _link(state.repo_id, state.revision, hub_url),
            "Status": state.status.value,
            "ms / tick": state.measurements.median_step_ms if state.measurements and state.measurements.median_step_ms else np.nan,
        }
        for stage in (1, 2, 3):
            key = (player, stage)
            if key in per.index:
                record[f"Stage {stage} Top1Ratio"] = round(per.at[key, "top1"], 2)
                record[f"Stage {stage} Achievement"] = round(per.at[key, "mean"], 1)
            else:
                record[f"Stage {stage} Top1Ratio"] = record[f"Stage {stage} Achievement"] = np.nan
        record["Matches per stage"] = " / ".join(str(int(per.at[(player, st), "matches"])) if (player, st) in per.index else "0"
                                                  for st in (1, 2, 3))
        out.append(record)
    return pd.DataFrame(out, columns=[c.name for c in PVE_COLUMNS])


SUBMISSION_COLUMNS = [
    Column("Policy", "markdown", "Hub repo (a link to its page) and the revision's first 7 hex digits", "210px"),
    Column("Status", "str", "queued, validating, rejected, evaluating, qualified, evaluated or error", "105px"),
    Column("Reason", "str", "why, in words: what was measured, or what to fix", "350px"),
    Column("Queue", "str", "place in the PvE queue (earliest stage first, then round-robin)", "85px"),
    Column("Verdict in", "str", "estimated time to the end of its current PvE stage (stage 1: its PvP verdict)", "140px"),
    Column("Team", "str", "the model card's team name", "100px"),
    Column("Seen", "str", "when discovery first saw the revision (UTC)", "105px"),
    Column("Updated", "str", "its last change of status (UTC)", "105px"),
]


def _minutes(seconds: float) -> str:
    return "under a minute" if seconds < 60 else f"~{round(seconds / 60):d} min"


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def submissions_table(statuses: Iterable, *, hub_url: str, queue: Mapping[tuple[str, str], QueueEntry] | None = None
                      ) -> pd.DataFrame:
    """Every revision seen, newest first, with its status, the reason in words, and for
    those in PvE their place in the queue and the forecast of their verdict."""
    queue = queue or {}
    total = len(queue)
    rows = []
    for s in statuses:
        entry = queue.get((s.repo_id, s.revision))
        place = eta = ""
        if entry is not None:
            place = f"{_ordinal(entry.place)} of {total}"
            if entry.eta_s is None:
                eta = f"stage {entry.stage}: after the first match is timed"
            else:
                eta = f"stage {entry.stage}: {_minutes(entry.eta_s)} ({entry.matches_left} matches at most)"
        rows.append({
            "Policy": _link(s.repo_id, s.revision, hub_url),
            "Status": s.status.value + ("" if s.latest else " (superseded)"),
            "Reason": s.reason,
            "Queue": place,
            "Verdict in": eta,
            "Team": s.submission.team_name,
            "Seen": pd.Timestamp(s.first_seen, unit="s").strftime("%m-%d %H:%M:%S"),
            "Updated": pd.Timestamp(s.updated, unit="s").strftime("%m-%d %H:%M:%S"),
        })
    return pd.DataFrame(rows, columns=[c.name for c in SUBMISSION_COLUMNS])


def now_playing(live: Sequence[LiveMatch], *, hub_url: str, now: float) -> str:
    """The matches in flight, in markdown: track, the submissions in the line-up (linked),
    how many built-ins, the tick."""
    if not live:
        return ("**Now playing:** nothing at the moment. Matches start as soon as a submission is validated "
                "(PvE) or qualified (PvP).")
    lines = [f"**Now playing:** {len(live)} match{'es' if len(live) > 1 else ''}"]
    for m in live:
        subs = [p for p in m.lineup if not is_builtin(p)]
        named = ", ".join(_link(*p.split("@", 1), hub_url) for p in subs[:4]) + (f" and {len(subs) - 4} more" if len(subs) > 4 else "")
        builtins = len(m.lineup) - len(subs)
        what = f"PvE stage {m.stage}" if m.track == "pve" else m.track.upper()
        crowd = f"{builtins} built-in team{'s' if builtins != 1 else ''}"
        who = f"{named} against {crowd}" if named else crowd
        lines.append(f"- {what}: {who}; tick {m.tick} of {m.horizon} ({100 * m.tick // max(1, m.horizon)}%), "
                     f"{_minutes(max(0.0, now - m.started))} in · `{m.match_id}`")
    return "\n".join(lines)


def matches_table(
    standings: Standings,
    *,
    policy: str = "",
    track: str = "",
    stage: int | None = None,
    since: str = "",
    until: str = "",
    limit: int = 500,
) -> pd.DataFrame:
    """Recorded matches, newest first, filtered; the winner(s) and top score of each."""
    table = standings.match_summary
    if table.empty:
        return table
    keep = np.ones(len(table), dtype=bool)
    if track:
        keep &= (table["Track"] == track).to_numpy()
    if stage:
        keep &= (table["Stage"] == stage).to_numpy()
    if since:
        keep &= (table["Started"] >= since).to_numpy()
    if until:
        keep &= (table["Started"] <= until + "\uffff").to_numpy()
    if policy:
        needle = policy.lower()
        ids = [standings.policy_matches[p] for p in standings.policy_matches if needle in p.lower()]
        keep &= table["Match"].isin(np.concatenate(ids) if ids else []).to_numpy()
    return table[keep].head(limit).reset_index(drop=True)


def policy_frames(standings: Standings, player: str) -> dict[str, pd.DataFrame]:
    """A policy's page: rating over time, per-task means, recent matches, head-to-head."""
    rows = standings.teams
    mine = rows[rows["player"] == player]
    trajectory = pd.DataFrame(list(standings.trajectory.get(player, [])), columns=["time", "mu", "sigma"])
    if not trajectory.empty:
        trajectory["time"] = pd.to_datetime(trajectory["time"])
        trajectory["score"] = trajectory["mu"] - 3 * trajectory["sigma"]
    tasks = pd.DataFrame(
        [
            {"track": track, "task": task, "points": float(group[f"{task}_points"].mean())}
            for track, group in mine.groupby("track")
            for task in TASK_NAMES
        ],
        columns=["track", "task", "points"],
    )
    recent = (
        mine.sort_values("started_at", ascending=False)
        .head(20)[["match_id", "started_at", "track", "stage", "rank", "achievement", *POINT_COLUMNS]]
        .rename(columns={"match_id": "Match", "started_at": "Started", "track": "Track", "stage": "Stage", "rank": "Rank", "achievement": "Achievement",
                         **{f"{task}_points": task.capitalize() for task in TASK_NAMES}})
    )
    together = rows[rows["match_id"].isin(mine["match_id"]) & (rows["player"] != player)]
    mine_by_match = mine.drop_duplicates("match_id").set_index("match_id")["achievement"]
    pairs = together.assign(mine=together["match_id"].map(mine_by_match))
    pairs = pairs.assign(
        won=pairs["mine"] > pairs["achievement"],
        tied=pairs["mine"] == pairs["achievement"],
        diff=pairs["mine"] - pairs["achievement"],
    )
    h2h = (
        pairs.groupby("player")
        .agg(Matches=("match_id", "nunique"), Won=("won", "mean"), Tied=("tied", "mean"), **{"Score difference": ("diff", "mean")})
        .sort_values("Matches", ascending=False)
        .round(2)
        .reset_index()
        .rename(columns={"player": "Opponent"})
    )
    return {"trajectory": trajectory, "tasks": tasks, "recent": recent.reset_index(drop=True), "head_to_head": h2h}
