"""The in-browser replay viewer: a `gr.HTML` component with the project's own JavaScript.

No external CDN: the canvas drawing and the replay decoding are `static/viewer.js`
(`DecompressionStream` unpacks the gzip). The component's value is `{"match_id": ...}`;
setting it from Python (choosing a match) makes the JavaScript fetch that replay through
the component's server function `load_replay` and draw its first frame.

The value may also hold `"tick"`: the tick the replay opens at (`?match=ID&tick=N`,
`arena.links`); as it plays, the page's address follows the tick.

The viewer also shows the match's faults (from the replay: markers on the timeline, a
list per team) and its sandboxed teams' logs, through two more server functions:
`load_logs` (every team's stamped lines, to show the followed team's output at each tick)
and `log_text` (one team's log, or all of them, as the text file the viewer offers for
download). Both take only a match id (and a slot) and read only through the history
reader, which knows only recorded matches' files: no path ever comes from the browser.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import gradio as gr

from arena.errors import DamagedFileError
from arena.logs import TeamLog, render_text

STATIC = Path(__file__).resolve().parent / "static"

HTML = """
<div class="nr-viewer">
  <div class="nr-controls">
    <button class="nr-play" type="button">Play</button>
    <input class="nr-scrub" type="range" min="0" max="0" value="0" aria-label="tick">
    <span class="nr-tick">no replay loaded</span>
    <label>speed <select class="nr-speed">
      <option value="4">4 ticks/s</option><option value="16" selected>16 ticks/s</option>
      <option value="64">64 ticks/s</option><option value="256">256 ticks/s</option>
    </select></label>
    <label>follow <select class="nr-agent" aria-label="agent"></select></label>
    <label>jump to <select class="nr-jump-kind">
      <option value="kills">kills</option><option value="deaths">deaths</option><option value="tiers">tiers reached</option>
      <option value="faults">faults and timeouts</option>
    </select></label>
    <button class="nr-prev" type="button">previous</button>
    <button class="nr-next" type="button">next</button>
  </div>
  <div class="nr-timeline-row">
    <canvas class="nr-timeline" width="800" height="34" aria-label="timeline"></canvas>
    <span class="nr-legend">timeline, above: <span class="nr-key" style="color:#fff">|</span>kill
      <span class="nr-key" style="color:#888">|</span>death; below, faults:
      <span class="nr-key" style="color:#ff5252">▮</span>ERROR <span class="nr-key" style="color:#ffd740">▮</span>TIMEOUT
      <span class="nr-key" style="color:#40c4ff">▮</span>INVALID <span class="nr-key" style="color:#ff9100">▮</span>INIT
      <span class="nr-key" style="color:#ff1744">▮</span>CRASH <span class="nr-key" style="color:#e040fb">▮</span>MEMORY
      (click one to jump to it)</span>
  </div>
  <div class="nr-status">choose a match to replay</div>
  <div class="nr-views">
    <figure><canvas class="nr-overview" width="480" height="480"></canvas><figcaption>whole map: resources, team trajectories (click an agent to follow it)</figcaption></figure>
    <figure><canvas class="nr-closeup" width="360" height="360"></canvas><figcaption>close-up on the followed agent: fights (attacker to target, colour = style)</figcaption>
      <pre class="nr-fights"></pre></figure>
    <div class="nr-side"><pre class="nr-panel"></pre><table class="nr-teams"></table></div>
  </div>
  <div class="nr-bottom">
    <div class="nr-faults-box"><h4>Faults and timeouts, per team (click one to jump to its tick)</h4><div class="nr-faults">no replay loaded</div></div>
    <div class="nr-logs-box"><h4>Logs: what each sandboxed team wrote to stdout and stderr</h4><div class="nr-logs">no replay loaded</div>
      <pre class="nr-log-lines"></pre></div>
  </div>
</div>
"""

CSS = """
.nr-viewer { font-family: ui-monospace, monospace; font-size: 12px; }
.nr-controls { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin-bottom: 6px; }
.nr-scrub { width: 320px; }
.nr-views { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-start; }
.nr-views figure { margin: 0; }
.nr-views canvas { image-rendering: pixelated; border: 1px solid #444; background: #000; }
.nr-fights, .nr-panel { white-space: pre-wrap; margin: 4px 0; max-width: 380px; }
.nr-teams { border-collapse: collapse; }
.nr-teams td, .nr-teams th { padding: 1px 6px; text-align: right; }
.nr-teams td:nth-child(2) { text-align: left; max-width: 200px; overflow: hidden; white-space: nowrap; }
.nr-timeline-row { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin-bottom: 4px; }
.nr-timeline { border: 1px solid #444; background: #161616; cursor: pointer; }
.nr-bottom { display: flex; flex-wrap: wrap; gap: 16px; margin-top: 8px; align-items: flex-start; }
.nr-bottom h4 { margin: 2px 0 4px; font-size: 12px; }
.nr-faults-box { flex: 1 1 560px; max-height: 320px; overflow: auto; }
.nr-logs-box { flex: 1 1 420px; }
.nr-faults table { border-collapse: collapse; width: 100%; }
.nr-faults td, .nr-faults th { padding: 1px 6px; text-align: left; vertical-align: top; }
.nr-faults tr.nr-fault { cursor: pointer; }
.nr-faults tr.nr-fault:hover { background: rgba(128, 128, 128, 0.15); }
.nr-faults tr.nr-current, .nr-faults tr.nr-current:hover { background: rgba(0, 200, 83, 0.22); box-shadow: inset 3px 0 #00c853; }
.nr-key { background: #161616; padding: 0 3px; margin: 0 3px 0 2px; font-weight: bold; }
.nr-kind::before { content: "▮"; color: var(--kind); background: #161616; padding: 0 3px; margin-right: 4px; }
.nr-faults th.nr-team-head { padding-top: 6px; border-bottom: 1px solid #555; }
.nr-logs a { margin-right: 10px; }
.nr-log-lines { white-space: pre-wrap; max-height: 160px; overflow: auto; margin: 4px 0; max-width: 640px; }
"""


def replay_viewer(load: Callable[[str], bytes | None], logs: Callable[[str], list[TeamLog] | None] | None = None) -> gr.HTML:
    """The viewer component; `load(match_id)` returns a replay's bytes or None, and raises
    `DamagedFileError` for a replay that cannot be decoded; `logs(match_id)` returns the
    match's team logs or None (none recorded), and raises `DamagedFileError` the same way."""

    def read_logs(match_id: str) -> tuple[list[TeamLog] | None, str]:
        if logs is None or not match_id:
            return None, ""
        try:
            return logs(match_id), ""
        except DamagedFileError:
            return None, (f"The logs of match {match_id} are damaged and cannot be read; they were set aside for the "
                          "operator. The match's results and replay are unaffected.")

    def load_logs(args: dict) -> dict:
        match_id = str((args or {}).get("match_id", "")).strip()
        teams, error = read_logs(match_id)
        if error:
            return {"error": error}
        return {
            "match_id": match_id,
            "teams": [
                {**team.to_dict(), "filename": f"{match_id}-team{team.slot}.log"}
                for team in (teams or [])
            ],
        }

    def log_text(args: dict) -> dict:
        """One team's log (`slot`), or every team's (`slot` "all"), as downloadable text."""
        match_id = str((args or {}).get("match_id", "")).strip()
        slot = str((args or {}).get("slot", "all"))
        teams, error = read_logs(match_id)
        if error or not teams:
            return {"error": error or f"No logs recorded for match {match_id!r}."}
        if slot != "all":
            teams = [team for team in teams if str(team.slot) == slot]
            if not teams:
                return {"error": f"Team {slot} of match {match_id} has no log (built-in teams play in the match process)."}
        name = f"{match_id}-{'all' if slot == 'all' else 'team' + slot}.log"
        return {"filename": name, "text": render_text(match_id, teams)}

    def load_replay(args: dict) -> dict:
        match_id = str((args or {}).get("match_id", "")).strip()
        try:
            data = load(match_id) if match_id else None
        except DamagedFileError:
            return {"error": f"The replay of match {match_id} is damaged and cannot be played; it was set aside "
                             "for the operator. The match's results are unaffected."}
        if data is None:
            return {"error": f"No replay recorded for match {match_id!r}."}
        return {"match_id": match_id, "data": base64.b64encode(data).decode()}

    return gr.HTML(
        value={"match_id": ""},
        html_template=HTML,
        css_template=CSS,
        js_on_load=(STATIC / "viewer.js").read_text(),
        server_functions=[load_replay, load_logs, log_text],
        elem_id="replay-viewer",
        apply_default_css=False,
    )
