"""NMMO Arena: the Space's entry point. It wires the parts together; they live in packages.

- `arena.settings.ArenaSettings` reads and checks every setting from the environment,
  before anything starts (a bad value stops here, with a message that names it).
- `matchmaking.service.Arena` starts the Hub connection (or the embedded local Hub, seeded
  with example submissions), the match history, the submission statuses and the
  matchmaker's scheduled rounds (discover, validate, PvE, PvP, record, push).
- `leaderboard.refresher.StandingsRefresher` keeps the standings fresh from the history,
  and the per-policy analytics from its replays (`leaderboard.analytics`, saved under
  DATA/cache/analytics so a restart reads only the replays recorded since).
- `leaderboard.pages.build` is the Gradio UI over them, served with the Hub's webhook
  route (`/webhooks/hub`) when webhooks are on (`matchmaking.webhooks.launch`).
- `modelcards.publisher.ModelCardPublisher` publishes qualified submissions' results to
  their model cards (one pull request per repo), after the standings, in the background.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from typing import Any

from arena.errors import SettingsError
from arena.settings import ArenaSettings


def model_card_publisher(settings: ArenaSettings, api: Any, refresher: Any, statuses: Any, *, writer: str | None = None,
                         leads: Any = None) -> Any:
    """The model-card publisher over the Space's standings and statuses (None when
    `NMMO_ARENA_MODEL_CARDS` is off). It writes with the Space's own Hub client and token,
    its ledger in the history dataset (this writer's file), and publishes only while this
    Space leads the dataset's writers (`leads`)."""
    if not settings.model_cards:
        return None
    from modelcards.ledger import PublicationLedger
    from modelcards.publications import PublishRule
    from modelcards.publisher import ModelCardPublisher

    return ModelCardPublisher(
        api=api, standings=refresher.standings, statuses=statuses.states,
        ledger=PublicationLedger(settings.model_card_ledger, writer=writer), dataset=settings.history_repo,
        rule=PublishRule(min_interval_s=60.0 * settings.model_cards_minutes), leads=leads,
    )


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> int:
    try:
        settings = ArenaSettings.from_env()
    except SettingsError as exc:
        print(exc, file=sys.stderr)
        return 2
    logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # the Hub client's: one line per request
    logging.getLogger("apscheduler").setLevel(logging.ERROR)  # one line per job run is noise
    # the Hub client logs every retry and failed push; the Arena's Hub status says it once
    logging.getLogger("huggingface_hub").setLevel(logging.CRITICAL)

    from leaderboard.analytics import AnalyticsKeeper
    from leaderboard.pages import CSS, build
    from leaderboard.refresher import StandingsRefresher
    from matchmaking.service import Arena
    from matchmaking.webhooks import launch

    host = os.environ.get("GRADIO_SERVER_NAME", "0.0.0.0")
    port = int(os.environ.get("GRADIO_SERVER_PORT", "7860"))
    arena = Arena.start(settings, space_url=f"http://{'127.0.0.1' if host in ('0.0.0.0', '::', '') else host}:{port}")
    analytics = AnalyticsKeeper(arena.store, cache=settings.data_dir / "cache" / "analytics")
    data = StandingsRefresher(arena.store, statuses=arena.statuses.states, hub_url=arena.api.endpoint, analytics=analytics,
                              published=arena.mirror.published,
                              luck_horizon=settings.match_horizon, ready=arena.pull.done.is_set)
    data.refresh()
    data.run_in_background()
    publisher = model_card_publisher(settings, arena.api, data, arena.statuses, writer=arena.writers.writer,
                                     leads=arena.writers.leads)
    if publisher is not None:
        publisher.run_in_background(settings.model_cards_every_s)
    def restoring() -> str | None:
        """How far the restore has got, until the tables include every shard it brought."""
        line = arena.restoring()
        if line is None and not data.covers(arena.pull.foreign):
            line = f"computing the tables from the {arena.pull.progress.matches_done:,} matches restored"
        return line

    demo = build(data, settings, operator=arena.operator_lines, live=arena.matchmaker.live, queue=arena.matchmaker.queue,
                 audits=arena.matchmaker.audit_summary, restoring=restoring, isolation=arena.isolation_report)
    # A Space is stopped with SIGTERM on every restart and rebuild: stop as on Ctrl-C, so the
    # last matches are pushed and the heartbeat says this writer stopped (the next one leads at once).
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        launch(demo, arena.webhooks, server_name=host, server_port=port, css=CSS)
    finally:
        if publisher is not None:
            publisher.stop()
        data.stop()
        arena.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
