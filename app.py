"""NMMO Arena: the Space's entry point. It wires the parts together; they live in packages.

- `matchmaking.service.Arena` starts the Hub connection (or the embedded local Hub, seeded
  with example submissions), the match history, the submission statuses and the
  matchmaker's scheduled rounds (discover, validate, PvE, PvP, record, push).
- `leaderboard.refresher.StandingsRefresher` keeps the standings fresh from the history.
- `leaderboard.pages.build` is the Gradio UI over them.

Configuration is read from the environment (see `matchmaking.config.ArenaSettings`).
"""

from __future__ import annotations

import logging
import os

import gradio as gr

from arena.settings import ArenaSettings
from leaderboard.pages import build
from leaderboard.refresher import StandingsRefresher
from matchmaking.service import Arena


def main() -> None:
    logging.basicConfig(level=os.environ.get("NMMO_ARENA_LOG", "INFO"), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("apscheduler").setLevel(logging.ERROR)  # one line per job run is noise
    settings = ArenaSettings.from_env()
    arena = Arena.start(settings)
    data = StandingsRefresher(arena.store, statuses=arena.registry.states, hub_url=arena.api.endpoint)
    data.refresh()
    data.run_in_background()
    demo = build(data, settings)
    try:
        demo.launch(
            server_name=os.environ.get("GRADIO_SERVER_NAME", "0.0.0.0"),
            server_port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
        )
    finally:
        data.stop()
        arena.stop()


if __name__ == "__main__" and gr.NO_RELOAD:
    main()
