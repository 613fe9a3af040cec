"""NMMO Arena: the Space's entry point. Wires the UI; the work happens in the packages.

Until the matchmaker and leaderboard land, the app plays PvE stage-1 matches of the
example policies in the background and shows their results as they finish.
"""

from __future__ import annotations

import os
import threading
from itertools import count

import gradio as gr
import pandas as pd

from matchmaking.config import MatchConfig
from matchmaking.executor import default_workers, run_matches
from matchmaking.match import MatchSpec, policies_for
from matchmaking.policy import builtin, local
from matchmaking.config import PROJECT_ROOT
from matchmaking.pve import stage_opponents, summarize
from matchmaking.records import MatchResult

EXAMPLES = PROJECT_ROOT / "examples" / "policies"
HORIZON = int(os.environ.get("NMMO_ARENA_HORIZON", "1024"))

_results: list[MatchResult] = []
_lock = threading.Lock()


def _targets():
    return [local(folder) for folder in sorted(EXAMPLES.iterdir()) if (folder / "policy.py").is_file()] + [
        builtin("combat"),
        builtin("forage"),
    ]


def _play_forever() -> None:
    opponents = [builtin(name) for name in stage_opponents(1)]
    targets = _targets()
    for seed in count():
        specs = [
            MatchSpec(seed=seed, policies=policies_for(t, opponents), config=MatchConfig(horizon=HORIZON), stage=1)
            for t in targets
        ]
        for outcome in run_matches(specs, workers=min(default_workers(), len(specs))):
            if outcome.result is not None:
                with _lock:
                    _results.append(outcome.result)


def standings() -> pd.DataFrame:
    with _lock:
        results = list(_results)
    rows = []
    for policy_id in sorted({r.teams[0].policy_id for r in results}):
        s = summarize([r for r in results if r.teams[0].policy_id == policy_id], policy_id)
        rows.append(
            {
                "policy": policy_id,
                "matches": s.matches,
                "Top1Ratio": round(s.top1_ratio, 2),
                "mean achievement": round(s.mean_achievement, 1),
                **{task: round(v.points, 1) for task, v in s.per_task.items()},
            }
        )
    return pd.DataFrame(rows, columns=["policy", "matches", "Top1Ratio", "mean achievement", "travel", "forage", "equipment", "eliminate"])


def recent_matches() -> pd.DataFrame:
    with _lock:
        results = list(_results[-50:])
    rows = [
        {
            "match": r.match_id,
            "seed": r.seed,
            "map": r.map_id,
            "policy": r.teams[0].policy_id,
            "rank": r.teams[0].rank,
            "achievement": r.teams[0].achievement,
            "started": r.started_at,
        }
        for r in reversed(results)
    ]
    return pd.DataFrame(rows, columns=["match", "seed", "map", "policy", "rank", "achievement", "started"])


def build_app() -> gr.Blocks:
    with gr.Blocks(title="NMMO Arena") as demo:
        gr.Markdown("# NMMO Arena\nPvE stage 1 (3 Combat, 5 Forage, 7 Random built-in teams), played live in the background.")
        table = gr.Dataframe(standings, label="Standings")
        matches = gr.Dataframe(recent_matches, label="Recent matches")
        timer = gr.Timer(5)
        timer.tick(lambda: (standings(), recent_matches()), outputs=[table, matches])
    return demo


if __name__ == "__main__":
    threading.Thread(target=_play_forever, daemon=True, name="matches").start()
    build_app().launch(server_name=os.environ.get("GRADIO_SERVER_NAME", "0.0.0.0"))
