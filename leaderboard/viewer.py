"""The in-browser replay viewer: a `gr.HTML` component with the project's own JavaScript.

No external CDN: the canvas drawing and the replay decoding are `static/viewer.js`
(`DecompressionStream` unpacks the gzip). The component's value is `{"match_id": ...}`;
setting it from Python (choosing a match) makes the JavaScript fetch that replay through
the component's server function `load_replay` and draw its first frame.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Callable

import gradio as gr

from arena.errors import DamagedFileError

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
    </select></label>
    <button class="nr-prev" type="button">previous</button>
    <button class="nr-next" type="button">next</button>
  </div>
  <div class="nr-status">choose a match to replay</div>
  <div class="nr-views">
    <figure><canvas class="nr-overview" width="480" height="480"></canvas><figcaption>whole map: resources, team trajectories (click an agent to follow it)</figcaption></figure>
    <figure><canvas class="nr-closeup" width="360" height="360"></canvas><figcaption>close-up on the followed agent: fights (attacker to target, colour = style)</figcaption>
      <pre class="nr-fights"></pre></figure>
    <div class="nr-side"><pre class="nr-panel"></pre><table class="nr-teams"></table></div>
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
"""


def replay_viewer(load: Callable[[str], bytes | None]) -> gr.HTML:
    """The viewer component; `load(match_id)` returns a replay's bytes or None, and raises
    `DamagedFileError` for a replay that cannot be decoded."""

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
        server_functions=[load_replay],
        elem_id="replay-viewer",
        apply_default_css=False,
    )
