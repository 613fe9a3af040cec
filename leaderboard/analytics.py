"""The Analytics tab: each policy's strategy, read from its replays (the paper's Fig. 7-9).

`AnalyticsKeeper` owns an `arena.analytics.Analytics` accumulator over a history folder:
`update(rows)` reads only the replays of matches it has not seen (the refresher calls it
in the background, `leaderboard.refresher`), and saves the accumulator to its cache file
(atomically) so a restart reads nothing twice. Pages and the `/analytics` API only format
what it holds; the one thing read per view is the replay of the match whose trajectories
are asked for.

`analytics_tab(...)` builds the tab inside `leaderboard.pages.build`, `analytics_json` is
the API's answer (keys in docs/operators.md, "Analytics").
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from arena import replay as replay_format
from arena.analytics import CAUSES, Analytics, PolicyAnalytics, trajectories
from arena.errors import ArenaError, DamagedFileError
from arena.files import write_atomically
from arena.rules import MATCH
from arena.schema import TASK_NAMES
from history.index import TeamRows, plain_values
from history.store import HistoryReader

log = logging.getLogger(__name__)

#: Replays read per update at most (a full match's takes ~55 ms to decode and analyse): a
#: long backlog (a first start over a big history) is worked off across refreshes, a few
#: seconds each, and the standings never wait for it.
PER_UPDATE = 50

#: Matches looked at per update at most. Those without a replay (most of a restored history,
#: every match of a synthetic one) are marked without a read, so a backlog of them is worked
#: off 10,000 a refresh (about 0.1 s of CPU), not `PER_UPDATE`: 200,000 in 20 refreshes.
SCAN_PER_UPDATE = 10_000

#: Matches whose rows are taken from the history at a time while the next batch is looked for.
WINDOW_MATCHES = 256

#: Why a match without a replay is not looked at again.
NO_REPLAY = "no replay recorded"

#: Seconds between saves of the accumulator while a backlog of matches without replays is
#: worked off (one with a replay added is saved at once): each save writes the whole of it.
SAVE_EVERY_S = 60.0

#: Matches offered in the trajectory chooser (the newest).
MATCH_CHOICES = 200

#: Tiles listed in the API's `visits.top`.
TOP_TILES = 20

CAUSE_LABELS = {
    "starved": "starved", "dehydrated": "dehydrated", "starved_and_dehydrated": "starved and dehydrated",
    "npc": "killed by an NPC", "player": "killed by a player", "other": "other",
}

#: Tile colours, as the replay viewer draws them (`leaderboard/static/viewer.js`), by nmmo material id.
MATERIAL_COLORS = {
    0: "#101010", 1: "#2f6fd6", 2: "#5c9e3a", 3: "#7aa34c", 4: "#2d7a2a", 5: "#7b7b7b",
    6: "#5a4e44", 7: "#b08d57", 8: "#6b4e2e", 9: "#1f5e1f", 10: "#9c7fd1", 11: "#c6a6ff",
    12: "#8fae5a", 13: "#6fd67a", 14: "#0e3e8e", 15: "#43b0e0",
}

#: Team colours of the trajectory plot (the replay viewer's hues, `hsl(i * 360 / 16, 85%, 55%)`).
TEAM_COLORS = ["#ef4444", "#f59e0b", "#eab308", "#84cc16", "#22c55e", "#10b981", "#14b8a6", "#06b6d4",
               "#0ea5e9", "#3b82f6", "#6366f1", "#8b5cf6", "#a855f7", "#d946ef", "#ec4899", "#f43f5e"]

EMPTY_NOTE = ("No replay analysed yet. Every recorded match's replay is read once, in the background, as it "
              "arrives: a policy's tile visits, trajectories, deaths and alive members appear here after its first "
              "match with a replay.")


class _Unlisted(ArenaError):
    """Which matches have a replay could not be read (`HistoryReader.replays_among` failed)."""


class AnalyticsKeeper:
    """The analytics of a history folder, kept up to date one new replay at a time.

    Args:
        store: the history whose replays are read.
        cache: folder of the saved accumulator (`analytics.npz`); None keeps it in memory.
        per_update: replays read per `update` at most.
        scan_per_update: matches looked at per `update` at most, with a replay or without.
    """

    def __init__(self, store: HistoryReader, *, cache: Path | None = None, per_update: int = PER_UPDATE,
                 scan_per_update: int = SCAN_PER_UPDATE):
        self.store = store
        self.path = None if cache is None else Path(cache) / "analytics.npz"
        self.per_update = per_update
        self.scan_per_update = max(per_update, scan_per_update)
        self._unlisted = ""
        """Why the last look for which matches have a replay failed ("": it did not; logged once)."""
        self.reads = 0
        """Replays read so far (what the tests count)."""
        self.backlog = 0
        """Matches left for later updates by the last one (about: counted from the rows)."""
        self._rows_done = 0
        """Rows from the first whose matches are all added or skipped (`_next_batch`)."""
        self._last_done: Any = None
        """The match id of the last of those rows (to notice rows read anew)."""
        self._lock = threading.Lock()  # the accumulator, between the refresher and the pages
        self._updating = threading.Lock()  # one update at a time: a replay is read once
        self._saved_at = 0.0
        self.book = Analytics()
        if self.path is not None and self.path.exists():
            try:
                self.book = Analytics.from_bytes(self.path.read_bytes())
            except ValueError as exc:
                log.warning("analytics cache %s unreadable (%s): the replays are read again", self.path, exc)

    def update(self, rows: TeamRows | pd.DataFrame) -> int:
        """Add the replays of the matches in `rows` (history rows with a `player` column)
        not added yet, oldest first; returns how many were added."""
        with self._updating:
            return self._update(rows)

    def _update(self, rows: TeamRows | pd.DataFrame) -> int:
        rows = TeamRows.of(rows)
        if rows.empty:
            return 0
        try:
            fresh, order, without, cursor = self._next_batch(rows)
        except _Unlisted as exc:  # nothing marked: the next update asks again
            if str(exc) != self._unlisted:
                log.warning("analytics: which matches have a replay could not be read (%s); asked again at every "
                            "refresh", exc)
            self._unlisted = str(exc)
            return 0
        self._unlisted = ""
        with self._lock:
            for match_id in without:
                self.book.skipped[match_id] = NO_REPLAY
        added = 0
        for match_id, teams in (fresh.groupby("match_id", sort=False) if order else ()):
            players = dict(zip(teams["slot"].astype(int), teams["player"]))
            first = teams.iloc[0]
            # Read as a bystander: a damaged replay is skipped and logged here, and left in place
            # for the history's checked reads (the viewer quarantines it when it is opened, and
            # tells the visitor and the operator that it is damaged rather than missing).
            data = self.store.replay_bytes(match_id, started_at=str(first["started_at"]))
            self.reads += data is not None
            try:
                decoded = None if data is None else replay_format.read(data)
            except DamagedFileError as exc:
                with self._lock:
                    self.book.skip(match_id, str(exc))
                continue
            with self._lock:
                if decoded is None:
                    self.book.skipped[match_id] = NO_REPLAY
                elif self.book.add(match_id, decoded[0], decoded[1], players, map_id=int(first["map_id"]), horizon=int(first["horizon"])):
                    added += 1
        self._rows_done, self._last_done = cursor  # every match before it is now added or skipped
        left = (len(rows) - self._rows_done) // MATCH.num_teams
        self.backlog = max(0, left)
        if (order or without) and (added or time.monotonic() - self._saved_at >= SAVE_EVERY_S or not self.backlog):
            self.save()
        return added

    def _next_batch(self, rows: TeamRows) -> tuple[pd.DataFrame, list[str], list[str], tuple[int, Any]]:
        """The next matches not added yet, oldest first: the rows of up to `per_update` with a
        replay and their ids, the ids of those without one met before the next with one (up
        to `scan_per_update` matches in all), and the cursor once they are handled: (rows from
        the first whose matches are then all added or skipped, the match id of the last of
        those rows).

        Why a cursor: the history's rows only grow at their end, a match's rows together,
        so the matches before `_rows_done` are all added or skipped and each update reads
        only the rows after it, a window at a time (a day's shard of a restored history is
        50,000 rows: reading all of them to take 50 matches cost a restored Space most of its
        idle CPU). If the rows before the cursor changed (a history read anew), it starts
        again from the first row. Why ask which have a replay first: a restored history's
        matches mostly have none, and looking for each one's in turn, 50 a refresh, kept a
        Space busy for an hour after a restore of 200,000 matches.

        Raises:
            `_Unlisted`: which matches have a replay cannot be read (the Hub dataset cannot be
                listed): none may then be marked as without one.
        """
        total = len(rows)
        if self._rows_done > total or (self._rows_done and self._row_at(rows, self._rows_done - 1) != self._last_done):
            self._rows_done, self._last_done = 0, None
        window = WINDOW_MATCHES * MATCH.num_teams
        batch: list[pd.DataFrame] = []
        order: list[str] = []
        without: list[str] = []
        cursor: tuple[int, Any] = (self._rows_done, self._last_done)
        offset, done = 0, False
        for chunk in rows:
            end = offset + len(chunk)
            if end <= cursor[0]:
                offset = end
                continue
            start = cursor[0] - offset
            while start < len(chunk) and not done:
                part = chunk.iloc[start:start + window]
                ids = part["match_id"].to_numpy(dtype=object)
                stop = len(part)
                if start + stop < len(chunk):  # the window's last match may go on past it: left for the next
                    stop = int(np.argmax(ids == ids[-1])) or stop
                ids = ids[:stop]
                # each match's start, in row order (values, not `astype(str)`: that converts every
                # category of the column, one per match of the history, on each window)
                starts = dict(zip(ids.tolist(), part["started_at"].iloc[:stop].to_numpy(dtype=object).tolist()))
                with self._lock:
                    unknown = [(m, str(at)) for m, at in starts.items() if not self.book.knows(m)]
                try:
                    recorded = self.store.replays_among(unknown) if unknown else set()
                except Exception as exc:  # noqa: BLE001 - the Hub's client raises many kinds: none may mark a match
                    raise _Unlisted(f"{type(exc).__name__}: {exc}") from exc
                taken: list[str] = []
                for match_id, _ in unknown:
                    if match_id in recorded and len(order) >= self.per_update:  # left for the next update
                        stop, done = int(np.argmax(ids == match_id)), True
                        break
                    if match_id in recorded:
                        taken.append(match_id)
                        order.append(match_id)
                    else:
                        without.append(match_id)
                    if len(order) + len(without) >= self.scan_per_update:
                        stop, done = int(np.flatnonzero(ids == match_id)[-1]) + 1, True
                        break
                if taken:
                    batch.append(part.iloc[:stop][np.isin(ids[:stop], taken)])
                if stop:
                    start += stop
                    cursor = (offset + start, ids[stop - 1])
            offset = end
            if done:
                break
        if not batch:
            return pd.DataFrame(), [], without, cursor
        fresh = pd.concat([plain_values(b) for b in batch], ignore_index=True).sort_values(["started_at", "match_id", "slot"])
        return fresh, list(dict.fromkeys(fresh["match_id"])), without, cursor

    @staticmethod
    def _row_at(rows: TeamRows, index: int) -> Any:
        """The match id of row `index` of `rows`."""
        offset = 0
        for chunk in rows:
            if index < offset + len(chunk):
                return chunk["match_id"].iloc[index - offset]
            offset += len(chunk)
        return None

    def save(self) -> None:
        if self.path is None:
            return
        with self._lock:
            data = self.book.to_bytes()
        write_atomically(self.path, data)
        self._saved_at = time.monotonic()

    def player(self, player: str) -> PolicyAnalytics | None:
        """A copy of one player's analytics (None if none of its matches was analysed)."""
        with self._lock:
            found = self.book.players.get(player)
            if found is None:
                return None
            return PolicyAnalytics(
                player=found.player, visits=None if found.visits is None else found.visits.copy(),
                team_frames=found.team_frames, teams=found.teams, deaths=dict(found.deaths),
                alive_sum=found.alive_sum.copy(), alive_count=found.alive_count.copy(),
                field_sum=found.field_sum.copy(), field_count=found.field_count.copy(),
                matches=list(found.matches), maps=dict(found.maps),
            )

    def players(self) -> list[str]:
        with self._lock:
            return sorted(self.book.players)

    def terrain(self, map_id: int) -> np.ndarray | None:
        with self._lock:
            return self.book.terrain.get(map_id)

    def trajectories(self, match_id: str, slots: list[int]) -> dict[int, dict[int, list[list[int]]]]:
        """The paths of the members of `slots` in one match, from its replay (read now).

        Raises:
            `DamagedFileError`: the replay cannot be decoded.
        """
        data = self.store.replay(match_id)
        if data is None:
            return {}
        header, arrays = replay_format.read(data)
        return trajectories(header, arrays, slots)


# -- what the tab and the API show ----------------------------------------------------------

def task_profile(rows: TeamRows | pd.DataFrame, player: str) -> dict[str, dict[str, float]]:
    """Mean points per task of `player`'s teams, and of the field: every other team in the
    same matches (the opponents it actually met), all tracks."""
    rows = TeamRows.of(rows)
    mine = rows.of_player(player)
    field = rows.opponents(player)

    def means(frame: pd.DataFrame) -> dict[str, float]:
        return {task: round(float(frame[f"{task}_points"].mean()), 3) if len(frame) else 0.0 for task in TASK_NAMES}

    return {"policy": means(mine), "field": means(field)}


def slots_of(rows: TeamRows | pd.DataFrame, player: str, match_id: str) -> list[int]:
    match = TeamRows.of(rows).of_match(match_id)
    picked = match[match["player"] == player] if len(match) else match
    return sorted(int(s) for s in picked["slot"])


def analytics_json(keeper: AnalyticsKeeper | _NoAnalytics, rows: TeamRows | pd.DataFrame, player: str, match_id: str = "") -> dict[str, Any]:
    """The `/analytics` answer for one player (keys: docs/operators.md, "Analytics")."""
    found = keeper.player(player or "")
    out: dict[str, Any] = {"player": player, "analysed": 0, "matches": [], "team_frames": 0,
                           "visits": {"shape": [0, 0], "top": []}, "deaths": {c: 0 for c in CAUSES},
                           "alive": [], "alive_field": [], "tasks": task_profile(rows, player or ""),
                           "trajectories": {"match_id": "", "members": {}}}
    if found is None:
        return out
    visits = found.visits if found.visits is not None else np.zeros((0, 0), np.int64)
    total = max(int(visits.sum()), 1)
    top = np.argsort(visits, axis=None)[::-1][:TOP_TILES]
    out.update(
        analysed=len(found.matches), matches=list(found.matches), team_frames=found.team_frames,
        visits={"shape": list(visits.shape), "total": int(visits.sum()),
                "top": [[int(i // visits.shape[1]), int(i % visits.shape[1]), round(int(visits.flat[i]) / total, 5)]
                        for i in top if visits.flat[i] > 0]},
        deaths=dict(found.deaths),
        alive=[round(float(v), 4) for v in found.alive_mean()],
        alive_field=[round(float(v), 4) for v in found.field_mean()],
    )
    chosen = match_id if match_id in found.matches else (found.matches[-1] if found.matches else "")
    if chosen:
        try:
            paths = keeper.trajectories(chosen, slots_of(rows, player, chosen))
        except DamagedFileError:
            paths = {}
        members = {str(agent): path for team in paths.values() for agent, path in team.items()}
        out["trajectories"] = {"match_id": chosen, "members": members}
    return out


def _terrain_rgb(tiles: np.ndarray, *, dim: float, gray: bool = False) -> np.ndarray:
    """The map's tiles in the replay viewer's colours, darkened (and grey, under a heatmap)."""
    lut = np.zeros((256, 3), np.float64)
    for material, color in MATERIAL_COLORS.items():
        lut[material] = [int(color[i:i + 2], 16) for i in (1, 3, 5)]
    if gray:
        lut[:] = lut @ np.array([0.3, 0.59, 0.11])[:, None]
    return (lut[tiles] * dim).astype(np.uint8)


def _map_layout(fig: Any, title: str, size: int) -> Any:
    fig.update_layout(title=title, height=560, margin=dict(l=40, r=20, t=50, b=40), plot_bgcolor="#101010")
    fig.update_xaxes(range=[-0.5, size - 0.5], title="column", constrain="domain")
    fig.update_yaxes(range=[size - 0.5, -0.5], title="row", scaleanchor="x")
    return fig


def visits_figure(found: PolicyAnalytics, tiles: np.ndarray | None, map_id: int) -> Any:
    """Tile visits per team and frame, log-scaled, over the terrain of the policy's most played map."""
    import plotly.graph_objects as go

    visits = found.visits if found.visits is not None else np.zeros((1, 1))
    share = visits / max(found.team_frames, 1)
    z = np.where(visits > 0, np.log10(np.where(visits > 0, share, 1)), np.nan)
    fig = go.Figure()
    if tiles is not None and tiles.shape == visits.shape:
        fig.add_trace(go.Image(z=_terrain_rgb(tiles, dim=0.55, gray=True), hoverinfo="skip"))
    low = float(np.nanmin(z)) if np.isfinite(z).any() else -3.0
    ticks = list(range(int(np.floor(low)), 1))
    fig.add_trace(go.Heatmap(
        z=z, colorscale="YlOrRd", zmin=low, zmax=max(0.0, float(np.nanmax(z)) if np.isfinite(z).any() else 0.0),
        colorbar=dict(title="members per<br>team-frame", tickvals=ticks, ticktext=[f"{10.0 ** t:g}" for t in ticks]),
        hovertemplate="row %{y}, col %{x}<br>log10 %{z:.2f}<extra></extra>",
    ))
    maps = sum(found.maps.values())
    terrain = f"terrain of map {map_id} ({found.maps.get(map_id, 0)} of {maps} matches)" if tiles is not None else "no terrain"
    return _map_layout(fig, f"Tile visits over {len(found.matches)} matches (log scale; {terrain})", visits.shape[0])


def trajectories_figure(paths: dict[int, dict[int, list[list[int]]]], tiles: np.ndarray | None, match_id: str) -> Any:
    """Each member's path in one match: a line from its spawn (circle) to its last tile (x if it died)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    if tiles is not None:
        fig.add_trace(go.Image(z=_terrain_rgb(tiles, dim=0.6), hoverinfo="skip"))
    last_tick = max((p[-1][0] for team in paths.values() for p in team.values() if p), default=0)
    for slot, team in sorted(paths.items()):
        color = TEAM_COLORS[slot % len(TEAM_COLORS)]  # the replay viewer's colour of that slot
        for k, (agent, path) in enumerate(sorted(team.items())):
            if not path:
                continue
            t, r, c = np.array(path).T
            end = "x" if t[-1] < last_tick else "square"
            fig.add_trace(go.Scatter(
                x=c, y=r, mode="lines", name=f"team {slot}", legendgroup=str(slot), showlegend=k == 0,
                line=dict(width=2, color=color), customdata=t,
                hovertemplate="tick %{customdata}: row %{y}, col %{x}<extra>" + f"team {slot}, agent {agent}</extra>",
            ))
            fig.add_trace(go.Scatter(
                x=[c[0], c[-1]], y=[r[0], r[-1]], mode="markers", legendgroup=str(slot), showlegend=False, hoverinfo="skip",
                marker=dict(symbol=["circle", end], size=[8, 11], color=color, line=dict(width=1, color="#ffffff")),
            ))
    size = tiles.shape[0] if tiles is not None else 160
    return _map_layout(fig, f"Trajectories in match {match_id} (circle: spawn, x: death, square: alive at the end)", size)


def tasks_figure(profile: dict[str, dict[str, float]]) -> Any:
    import plotly.graph_objects as go

    tasks = list(TASK_NAMES)
    fig = go.Figure([
        go.Bar(name="this policy", x=tasks, y=[profile["policy"][t] for t in tasks], text=[f"{profile['policy'][t]:.1f}" for t in tasks]),
        go.Bar(name="field (others in its matches)", x=tasks, y=[profile["field"][t] for t in tasks], text=[f"{profile['field'][t]:.1f}" for t in tasks]),
    ])
    fig.update_layout(barmode="group", title="Mean points per task, against the field", yaxis_title="points", height=380,
                      margin=dict(l=50, r=20, t=50, b=40))
    return fig


def deaths_figure(found: PolicyAnalytics) -> Any:
    import plotly.graph_objects as go

    counts = [found.deaths.get(c, 0) for c in CAUSES]
    fig = go.Figure(go.Bar(x=[CAUSE_LABELS[c] for c in CAUSES], y=counts, text=counts, textposition="outside", cliponaxis=False,
                           marker_color=["#c98b2e", "#2f6fd6", "#7a5cc9", "#2e9e5c", "#d64545", "#888888"]))
    fig.update_yaxes(range=[0, max(counts + [1]) * 1.15])
    fig.update_layout(title=f"Cause of death ({sum(counts)} deaths in {found.teams} team-matches)", yaxis_title="members",
                      height=380, margin=dict(l=50, r=20, t=50, b=40))
    return fig


def alive_figure(found: PolicyAnalytics) -> Any:
    import plotly.graph_objects as go

    mine, field = found.alive_mean(), found.field_mean()
    fig = go.Figure([
        go.Scatter(y=mine, mode="lines", name="this policy", line=dict(width=3)),
        go.Scatter(y=field, mode="lines", name="field (others in its matches)", line=dict(dash="dash")),
    ])
    fig.update_layout(title="Alive members per team over the ticks (mean)", xaxis_title="tick", yaxis_title="members alive",
                      height=380, margin=dict(l=50, r=20, t=50, b=40))
    return fig


def analytics_tab(follow: Callable[..., None], keeper: AnalyticsKeeper | None, rows: Callable[[], TeamRows]) -> None:
    """The Analytics tab (call inside a `gr.Tabs`): its components, events and the `/analytics` API.

    Args:
        follow: how the page keeps a view up to date (`TabContext.follow`): the policy list
            is drawn at each load and whenever the keeper has analysed another policy.
        keeper: the analytics (None: the tab only shows its empty note).
        rows: the latest history rows with their `player` column (`Standings.teams`).
    """
    import gradio as gr

    active: AnalyticsKeeper | _NoAnalytics = keeper if keeper is not None else _NoAnalytics()

    def choices() -> list[str]:
        return active.players()

    def view(player: str) -> tuple[Any, ...]:
        found = active.player(player or "")
        if found is None:
            return (gr.Markdown(EMPTY_NOTE, visible=True), "", None, gr.Dropdown(choices=[], value=None), None, None, None, None)
        table = rows()
        map_id = max(found.maps, key=lambda m: found.maps[m]) if found.maps else 0
        tiles = active.terrain(map_id)
        summary = (f"**{player}**: {len(found.matches)} matches analysed from their replays ({found.teams} team appearances, "
                   f"{found.team_frames} team-frames).")
        matches = list(reversed(found.matches))[:MATCH_CHOICES]
        return (gr.Markdown(visible=False), summary, visits_figure(found, tiles, map_id),
                gr.Dropdown(choices=matches, value=matches[0] if matches else None),
                tasks_figure(task_profile(table, player)), deaths_figure(found), alive_figure(found), None)

    def paths(player: str, match_id: str) -> Any:
        found = active.player(player or "")
        if found is None or not match_id or match_id not in found.matches:
            return None
        table = rows()
        try:
            tracks = active.trajectories(match_id, slots_of(table, player, match_id))
        except DamagedFileError:
            return None
        map_ids = table.of_match(match_id)["map_id"]
        return trajectories_figure(tracks, active.terrain(int(map_ids.iloc[0])) if len(map_ids) else None, match_id)

    def analytics(player: str, match_id: str = "") -> dict:
        """How a policy plays, from its replays: where its agents go, points per task against
        the field, causes of death, members alive over time, and one match's trajectories.

        Args:
            player: the revision, `owner/name@sha`, or `builtin:NAME`.
            match_id: one of its matches for the trajectories ("" for its latest).
        """
        return analytics_json(active, rows(), player, match_id or "")

    with gr.Tab("Analytics", id="analytics") as tab:
        gr.Markdown("How a policy plays, from its replays (the paper's Fig. 7-9): where its agents go, how they move in one "
                    "match, how it scores on each task against the teams it met, how its agents die, and how many stay alive.")
        chooser = gr.Dropdown(choices=[], value=None, label="Policy", elem_id="analytics-choice", allow_custom_value=True)
        note = gr.Markdown(EMPTY_NOTE, visible=True, elem_id="analytics-empty")
        summary = gr.Markdown(elem_id="analytics-summary")
        visits = gr.Plot(label="Tile visits", elem_id="analytics-visits")
        match = gr.Dropdown(choices=[], value=None, label="Match (trajectories)", elem_id="analytics-match", allow_custom_value=True)
        tracks = gr.Plot(label="Trajectories", elem_id="analytics-trajectories")
        with gr.Row():
            tasks = gr.Plot(label="Per-task profile", elem_id="analytics-tasks")
            deaths = gr.Plot(label="Cause of death", elem_id="analytics-deaths")
        alive = gr.Plot(label="Alive members", elem_id="analytics-alive")
        gr.Markdown("Deaths: killed by a player or an NPC when nmmo logged the kill, else starved (food bar empty), "
                    "dehydrated (water bar empty) or both, as the bars stood on the tick before; other if nothing explains it. "
                    "Visits count every alive member's tile on every tick, divided by the team-frames analysed. The field is "
                    "every other team in the same matches.")
        gr.api(analytics, api_name="analytics")  # inside the tab: a gr.Tabs holds only tabs
    outputs = [note, summary, visits, match, tasks, deaths, alive, tracks]
    chooser.change(view, inputs=chooser, outputs=outputs, api_visibility="private")
    match.change(paths, inputs=[chooser, match], outputs=tracks, api_visibility="private")

    def listed(chosen: str) -> tuple[Any]:
        """The list; the first policy chosen while none is (never another: a refresh's
        choice could be older than the visitor's)."""
        found = choices()
        return (gr.Dropdown(choices=found, value=found[0]) if found and not chosen else gr.Dropdown(choices=found),)

    follow(listed, inputs=[chooser], outputs=[chooser], key=lambda: tuple(choices()), triggers=[tab.select], lazy=True)


class _NoAnalytics:
    """Stands in for a keeper when the app runs without analytics: nothing analysed."""

    def players(self) -> list[str]:
        return []

    def player(self, player: str) -> None:
        return None

    def terrain(self, map_id: int) -> None:
        return None

    def trajectories(self, match_id: str, slots: list[int]) -> dict:
        return {}
