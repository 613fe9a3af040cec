"""NMMO Arena: the Space's entry point. It wires the parts together; they live in packages.

- `arena.settings.ArenaSettings` reads and checks every setting from the environment,
  before anything starts (a bad value stops here, with a message that names it).
- `matchmaking.service.space.Arena` starts the Hub connection (or the embedded local Hub, seeded
  with example submissions), the match history, the submission statuses and the
  matchmaker's scheduled rounds (discover, validate, PvE, PvP, record, push).
- `leaderboard.refresher.StandingsRefresher` keeps the standings fresh from the history,
  and the per-policy analytics from its replays (`leaderboard.analytics`, saved under
  DATA/cache/analytics so a restart reads only the replays recorded since).
- `leaderboard.pages.build` is the Gradio UI over them, served with the Hub's webhook
  route (`/webhooks/hub`) when webhooks are on (`matchmaking.hub.webhooks.launch`).
- `modelcards.publisher.ModelCardPublisher` publishes qualified submissions' results to
  their model cards (one pull request per repo), after the standings, in the background.

`build_space(settings)` is that wiring, written once: the tests and the benchmarks start
the Space through it too. The heavy imports wait inside it, so that a bad setting is
reported at once.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING

from arena.errors import SettingsError
from arena.settings import ArenaSettings

if TYPE_CHECKING:  # the parts are imported when `build_space` starts them: a bad setting is reported first
    import gradio as gr
    from huggingface_hub import HfApi

    from history.statuses import StatusLog
    from leaderboard.refresher import StandingsRefresher
    from matchmaking.service.space import Arena
    from modelcards.publisher import ModelCardPublisher
    from modelcards.verdicts import VerdictPoster


def model_card_publisher(settings: ArenaSettings, api: HfApi, refresher: StandingsRefresher, statuses: StatusLog, *,
                         writer: str | None = None, leads: Callable[[], bool] | None = None,
                         space_url: str | None = None) -> ModelCardPublisher | None:
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
        rule=PublishRule(min_interval_s=60.0 * settings.model_cards_minutes), leads=leads, space_url=space_url,
    )


def verdict_poster(settings: ArenaSettings, arena: Arena, refresher: StandingsRefresher, *,
                   space_url: str | None) -> VerdictPoster | None:
    """The poster of verdicts to the submitters' repos (None when `NMMO_ARENA_VERDICT_DISCUSSIONS`
    is off): the Space's own Hub client, its ledger in the history dataset (this writer's
    file), posting only while this Space leads the dataset's writers."""
    if not settings.verdict_discussions:
        return None
    from modelcards.verdicts import VerdictLedger, VerdictPoster

    return VerdictPoster(api=arena.api, statuses=arena.statuses.states, standings=refresher.standings,
                         logs=arena.store.logs, ledger=VerdictLedger(settings.verdict_ledger, writer=arena.writers.writer),
                         space_url=space_url or "http://127.0.0.1:7860", qualify=settings.qualify_achievement,
                         leads=arena.writers.leads)


@dataclass
class Space:
    """The whole Space as `build_space` wires it: the Arena (Hub, matchmaker, history), the
    standings kept fresh from the history, and the model-card publisher. `serve` puts the
    pages (and the webhook route) on a port; `stop` ends everything it started."""

    settings: ArenaSettings
    arena: Arena
    standings: StandingsRefresher
    """The standings over the Arena's history index (shared with its matchmaker)."""
    publisher: ModelCardPublisher | None = None
    """None with `NMMO_ARENA_MODEL_CARDS` off."""
    verdicts: VerdictPoster | None = None
    """None with `NMMO_ARENA_VERDICT_DISCUSSIONS` off."""
    demo: gr.Blocks | None = None

    def restoring(self) -> str | None:
        """How far the restore has got, until the tables include every shard it brought."""
        line = self.arena.restoring()
        if line is None and not self.standings.covers(self.arena.pull.foreign):
            line = f"computing the tables from the {self.arena.pull.progress.matches_done:,} matches restored"
        return line

    def ui(self) -> gr.Blocks:
        """The Gradio pages over the standings, with the operator's lines, the matches in
        flight, the PvE queue, the audits, the restore and the isolation verdict."""
        from leaderboard.pages import build

        arena = self.arena
        return build(self.standings, self.settings, operator=arena.operator_lines, live=arena.matchmaker.live,
                     queue=arena.matchmaker.queue, audits=arena.matchmaker.audit_summary, restoring=self.restoring,
                     isolation=arena.isolation_report)

    def serve(self, *, host: str, port: int, block: bool = True, quiet: bool = False) -> gr.Blocks:
        """Serve the pages and the webhook route on `host:port`; blocks unless `block=False`."""
        from leaderboard.pages import launch_options
        from matchmaking.hub.webhooks import launch

        self.demo = self.ui()
        # mcp_server: the read endpoints are MCP tools too, at /gradio_api/mcp/ (docs/participants.md)
        launch(self.demo, self.arena.webhooks, server_name=host, server_port=port, **launch_options(self.demo),
               prevent_thread_lock=not block, quiet=quiet, mcp_server=True)
        return self.demo

    def stop(self) -> None:
        if self.demo is not None:
            self.demo.close()
        if self.publisher is not None:
            self.publisher.stop()
        if self.verdicts is not None:
            self.verdicts.stop()
        self.standings.stop()
        self.arena.stop()


def build_space(settings: ArenaSettings, *, space_url: str | None = None, schedule: bool = True,
                background: bool = True, bootstrap: int | None = None) -> Space:
    """Start the Space's parts and wire them: what `app.py`, the tests and the benchmarks run.

    Args:
        settings: every setting, already checked (`ArenaSettings.from_env`).
        space_url: where the pages will be served (the embedded Hub's webhook is registered there).
        schedule: run the matchmaker's rounds on its schedule (False: the caller runs them).
        background: refresh the standings, publish model cards and post verdicts in background
            threads (False: the caller calls `standings.refresh()`, `publisher.run_once()` and
            `verdicts.run_once()`).
        bootstrap: the Plackett-Luce fit's bootstrap resamples (None: the refresher's default;
            tests use fewer).
    """
    from leaderboard.analytics import AnalyticsKeeper
    from leaderboard.refresher import StandingsRefresher
    from leaderboard.standings.fits import fit_path
    from matchmaking.service.space import Arena

    arena = Arena.start(settings, schedule=schedule, space_url=space_url)
    analytics = AnalyticsKeeper(arena.store, cache=settings.data_dir / "cache" / "analytics")
    options = {} if bootstrap is None else {"bootstrap": bootstrap}
    standings = StandingsRefresher(arena.index, statuses=arena.statuses.states, hub_url=arena.api.endpoint,
                                   analytics=analytics, published=arena.mirror.published,
                                   luck_horizon=settings.match_horizon,
                                   publish_fit=(fit_path(arena.store.root, arena.writers.writer), arena.writers.writer),
                                   **options)
    standings.refresh()
    publisher = model_card_publisher(settings, arena.api, standings, arena.statuses, writer=arena.writers.writer,
                                     leads=arena.writers.leads, space_url=public_url() or space_url)
    verdicts = verdict_poster(settings, arena, standings, space_url=public_url() or space_url)
    if background:
        standings.run_in_background()
        if publisher is not None:
            publisher.run_in_background(settings.model_cards_every_s)
        if verdicts is not None:
            verdicts.run_in_background()
    return Space(settings, arena, standings, publisher, verdicts)


def public_url() -> str | None:
    """The Space's public address where the Hub says it (`SPACE_HOST` on a Hugging Face
    Space), for the links the Arena posts; None elsewhere."""
    host = os.environ.get("SPACE_HOST")
    return f"https://{host}" if host else None


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> int:
    from arena.memory import give_back_in_background, lean_allocators

    lean_allocators()  # before numpy and pyarrow are imported and the threads start
    give_back_in_background()
    try:
        settings = ArenaSettings.from_env()
    except SettingsError as exc:
        print(exc, file=sys.stderr)
        return 2
    logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # the Hub client's: one line per request
    logging.getLogger("apscheduler").setLevel(logging.ERROR)  # one line per job run is noise
    logging.getLogger("huggingface_hub").setLevel(logging.CRITICAL)

    host = os.environ.get("GRADIO_SERVER_NAME", "0.0.0.0")
    port = int(os.environ.get("GRADIO_SERVER_PORT", "7860"))
    space = build_space(settings, space_url=f"http://{'127.0.0.1' if host in ('0.0.0.0', '::', '') else host}:{port}")
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        space.serve(host=host, port=port)
    finally:
        space.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
