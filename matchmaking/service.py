"""Starting the Arena: its Hub, history, statuses, executor and matchmaker, wired together.

`Arena.start(settings)` is all `app.py` needs. With no Hub configured it starts the
embedded local Hub (`localhub`) on the data folder and, when that Hub is empty, seeds it
with example submissions: the three example policies and the built-in teams packaged as
repos, so that a fresh install fills its leaderboard with real matches, offline. It then
publishes the embedded Hub's address for `python -m matchmaking.submit`
(`matchmaking.embedded_hub`) and, given the Space's URL, registers the Space's webhook
with it, so a push is discovered at once (`matchmaking.webhooks`).
"""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from huggingface_hub import HfApi
from huggingface_hub.utils import disable_progress_bars

from arena import PROJECT_ROOT
from arena.rules import builtin_team
from arena.settings import ArenaSettings
from history.mirror import HubMirror
from history.statuses import StatusLog
from history.store import HistoryStore
from matchmaking import embedded_hub
from matchmaking.executor import LocalExecutor, RayExecutor, default_workers
from matchmaking.hub import HubHealth
from matchmaking.live import LiveBoard
from matchmaking.matchmaker import Matchmaker
from matchmaking.sandbox.host import protect_process, remove_stale_sandboxes, sandboxed_host
from matchmaking.webhooks import PushReactor, WebhookReceiver, register, space_webhook_url, webhook_secret

log = logging.getLogger(__name__)

EXAMPLES = PROJECT_ROOT / "examples" / "policies"

#: Owner of the seeded example repos on the embedded Hub.
EXAMPLE_OWNER = "nmmo-arena"

#: Built-in teams packaged as submissions on the embedded Hub.
PACKAGED_BUILTINS = ("random", "forage", "combat", "coordinated", "elite")

_BUILTIN_POLICY = '''"""The Arena's built-in team `{name}`, packaged as a submission.

The Arena also plays it directly as `builtin:{name}` (a PvE opponent and rating anchor);
as a submission it goes through discovery, validation, the sandbox and PvE like any other.
"""

from matchmaking.builtin import builtin_factory

_make = builtin_factory("{name}")


class Team:
    def __init__(self, team_id, env_config):
        self._team = _make(team_id, env_config)
        self.reset = getattr(self._team, "reset", lambda: None)

    def act(self, observations):
        return self._team.act(observations)
'''


def _card(tag: str, name: str, description: str) -> str:
    front = yaml.safe_dump({"tags": [tag], "team_name": name, "description": description}, sort_keys=False)
    return f"---\n{front}---\n# {name}\n\n{description}\n"


def seed_hub(api: HfApi, *, tag: str) -> list[str]:
    """Push the example and packaged built-in submissions that are missing. Returns their ids."""
    pushed = []
    entries: list[tuple[str, str, str, dict[str, str] | Path]] = []
    for folder in sorted(EXAMPLES.iterdir()):
        if (folder / "policy.py").is_file():
            doc = (folder / "policy.py").read_text().split('"""')[1].strip().splitlines()[0]
            entries.append((f"{EXAMPLE_OWNER}/example-{folder.name}", f"Example: {folder.name}", doc, folder))
    for name in PACKAGED_BUILTINS:
        entries.append(
            (f"{EXAMPLE_OWNER}/builtin-{name}", f"Built-in: {name}", builtin_team(name).description, {"policy.py": _BUILTIN_POLICY.format(name=name)})
        )
    for repo_id, name, description, content in entries:
        if api.repo_exists(repo_id):
            continue
        api.create_repo(repo_id, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            staging = Path(tmp)
            if isinstance(content, Path):
                for file in content.iterdir():
                    if file.is_file():
                        (staging / file.name).write_bytes(file.read_bytes())
            else:
                for path, text in content.items():
                    (staging / path).write_text(text)
            (staging / "README.md").write_text(_card(tag, name, description))
            api.upload_folder(repo_id=repo_id, folder_path=staging, commit_message=f"Seed {name}")
        pushed.append(repo_id)
    return pushed


@dataclass
class Arena:
    """A running Arena: call `stop()` to end it."""

    settings: ArenaSettings
    api: HfApi
    store: HistoryStore
    statuses: StatusLog
    matchmaker: Matchmaker
    mirror: HubMirror
    health: HubHealth
    hub: Any = None
    webhooks: WebhookReceiver | None = None
    """The webhook handler to mount on the Space (`matchmaking.webhooks.launch`); None: polling only."""
    reactor: PushReactor | None = None

    @classmethod
    def start(cls, settings: ArenaSettings | None = None, *, schedule: bool = True, space_url: str | None = None) -> "Arena":
        """Start everything; with `schedule=False` the rounds are left to the caller.

        Args:
            space_url (`str`, *optional*): where the Space will serve its pages (and its
                webhook route); on the embedded Hub, its webhook is registered there.

        Raises:
            `SettingsError`: (from `ArenaSettings.from_env`) before anything has started.
        """
        settings = settings or ArenaSettings.from_env()
        disable_progress_bars()  # downloads happen in the background: no progress bars in the log
        protect_process()  # sandboxes must not read this process's environment via /proc
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(settings.data_dir, 0o700)
        removed = remove_stale_sandboxes()
        if removed:
            log.info("removed %d working folders and memory blocks left by killed team processes", removed)
        hub = None
        secret = webhook_secret(settings)
        if settings.hub_endpoint is None:
            hub = embedded_hub.start_local_hub(settings)
            api = HfApi(endpoint=hub.endpoint, token=embedded_hub.secret_file(settings.local_hub_token_file))
            log.info("embedded Hub at %s", hub.endpoint)
            if settings.seed_examples:
                seeded = seed_hub(api, tag=settings.submission_tag)
                if seeded:
                    log.info("seeded %d example submissions", len(seeded))
            embedded_hub.publish(settings, endpoint=hub.endpoint, space_url=space_url)
            if space_url and secret:
                url = space_webhook_url(space_url)
                # the embedded Hub is the Space's own: its webhook watches every namespace
                register(api, url=url, secret=secret, watched=[{"type": "user", "name": "*"}])
                log.info("webhook registered with the embedded Hub: pushes reach %s", url)
            setting = "embedded: NMMO_ARENA_HUB unset"
        else:
            api = HfApi(endpoint=settings.hub_endpoint, token=os.environ.get("HF_TOKEN"))
            setting = "NMMO_ARENA_HUB"
        store = HistoryStore(settings.history_dir)
        statuses = StatusLog(settings.status_log)
        health = HubHealth(api.endpoint, setting=setting)

        def pushed(error: BaseException | None) -> None:
            if error is None:
                health.ok()
            else:
                health.failed(error, doing="history push")

        mirror = HubMirror(store, api=api, repo_id=settings.history_repo, every_minutes=settings.push_every_minutes, report=pushed,
                           compact_every_minutes=settings.compact_minutes)
        health.pending = mirror.pending
        workers = settings.workers or default_workers()
        live = settings.data_dir / "live"
        LiveBoard(live).clear()  # reports a killed Space left: no match is in flight yet
        if settings.ray_address:
            executor: Any = RayExecutor(settings.ray_address, hub=api.endpoint, host_factory=sandboxed_host)
        else:
            executor = LocalExecutor(workers, host_factory=sandboxed_host, live=live)
        matchmaker = Matchmaker(settings, api=api, store=store, statuses=statuses, executor=executor, mirror=mirror,
                                health=health, workers=workers)
        if schedule:
            matchmaker.start()
        receiver = reactor = None
        if secret:
            reactor = PushReactor(matchmaker.sync, then=lambda: matchmaker.wake("validate"))
            receiver = WebhookReceiver(secret, on_push=lambda push: reactor.push(push.repo_id))
        else:
            log.info("webhooks off (a real Hub and no NMMO_ARENA_WEBHOOK_SECRET): new pushes are found by polling "
                     "every %.0f s (NMMO_ARENA_SYNC_S)", settings.sync_every_s)
        return cls(settings, api, store, statuses, matchmaker, mirror, health, hub, receiver, reactor)

    def operator_lines(self) -> list[str]:
        """What an operator should know now: the Hub's state, and any damaged state set aside."""
        return [self.health.state().line(), *self.statuses.damaged, *self.store.damaged]

    def stop(self) -> None:
        if self.reactor is not None:
            self.reactor.stop()
        self.matchmaker.stop()
        self.matchmaker.executor.close()
        self.mirror.stop()
        if self.hub is not None:
            embedded_hub.withdraw(self.settings)
            self.hub.stop()
