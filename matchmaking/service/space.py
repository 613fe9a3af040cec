"""Starting the Arena: its Hub, history, statuses, executor and matchmaker, wired together.

`Arena.start(settings)` is all `app.py` needs. With no Hub configured it starts the
embedded local Hub (`localhub`) on the data folder and, when that Hub is empty, seeds it
with example submissions: the three example policies and the built-in teams packaged as
repos, so that a fresh install fills its leaderboard with real matches, offline. It then
publishes the embedded Hub's address for `python -m matchmaking.submit`
(`matchmaking.hub.embedded`) and, given the Space's URL, registers the Space's webhook
with it, so a push is discovered at once (`matchmaking.hub.webhooks`).
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from huggingface_hub import HfApi
from huggingface_hub.utils import disable_progress_bars

from arena import PROJECT_ROOT
from arena.rules import builtin_team
from arena.settings import ArenaSettings
from history.index import HistoryIndex
from history.mirror import HubMirror
from history.remote import HubFiles
from history.restore import DatasetPull
from history.statuses import StatusLog
from history.store import HistoryStore
from history.writers import Writers, identity
from matchmaking.hub import embedded as embedded_hub
from matchmaking.hub.health import HubHealth
from matchmaking.hub.pushing import push_submission, submission_card
from matchmaking.hub.webhooks import PushReactor, WebhookReceiver, register, space_webhook_url, webhook_secret
from matchmaking.sandbox.host import protect_process, sandboxed_host, start_zygote
from matchmaking.sandbox.isolation import IsolationGate
from matchmaking.sandbox.leftovers import remove_stale_sandboxes
from matchmaking.service.executor import LocalExecutor, MatchExecutor, RayExecutor, default_workers
from matchmaking.service.live import LiveBoard
from matchmaking.service.matchmaker import Matchmaker
from matchmaking.teams.builtin import packaged_policy

if TYPE_CHECKING:
    from matchmaking.hub.embedded import LocalHub

log = logging.getLogger(__name__)

EXAMPLES = PROJECT_ROOT / "examples" / "policies"

#: Built-in teams packaged as submissions on the embedded Hub.
PACKAGED_BUILTINS = ("random", "forage", "combat", "coordinated", "elite")



def _self_test(gate: IsolationGate) -> None:
    """Run the isolation self-test and say its verdict once in the log."""
    report = gate.run()
    (log.info if report.holds else log.warning)("%s", report.line())


def seed_hub(api: HfApi, *, tag: str, owner: str = "nmmo-arena") -> list[str]:
    """Push the example and packaged built-in submissions that are missing, under `owner`
    (`ArenaSettings.seed_owner`). Returns their ids."""
    pushed = []
    entries: list[tuple[str, str, str, dict[str, str] | Path]] = []
    for folder in sorted(EXAMPLES.iterdir()):
        if (folder / "policy.py").is_file():
            doc = (folder / "policy.py").read_text().split('"""')[1].strip().splitlines()[0]
            entries.append((f"{owner}/example-{folder.name}", f"Example: {folder.name}", doc, folder))
    for name in PACKAGED_BUILTINS:
        entries.append(
            (f"{owner}/builtin-{name}", f"Built-in: {name}", builtin_team(name).description, {"policy.py": packaged_policy(name)})
        )
    for repo_id, name, description, content in entries:
        if api.repo_exists(repo_id):
            continue
        card = submission_card(tag, name, description)
        if isinstance(content, Path):
            push_submission(api, repo_id, folder=content, card=card, message=f"Seed {name}")
        else:
            push_submission(api, repo_id, files=content, card=card, message=f"Seed {name}")
        pushed.append(repo_id)
    return pushed


def _connect(settings: ArenaSettings, *, space_url: str | None, secret: str | None) -> tuple[LocalHub | None, HfApi, str]:
    """The Hub this Space talks to, and the setting that chose it: `NMMO_ARENA_HUB`'s, or the
    embedded one, started, seeded with the examples, its address published for `submit`
    and, given the Space's URL and a secret, its webhook registered."""
    if settings.hub_endpoint is not None:
        return None, HfApi(endpoint=settings.hub_endpoint, token=os.environ.get("HF_TOKEN")), "NMMO_ARENA_HUB"
    hub = embedded_hub.start_local_hub(settings)
    api = HfApi(endpoint=hub.endpoint, token=embedded_hub.secret_file(settings.local_hub_token_file))
    log.info("embedded Hub at %s", hub.endpoint)
    if settings.seed_examples:
        seeded = seed_hub(api, tag=settings.submission_tag, owner=settings.seed_owner)
        if seeded:
            log.info("seeded %d example submissions", len(seeded))
    embedded_hub.publish(settings, endpoint=hub.endpoint, space_url=space_url)
    if space_url and secret:
        url = space_webhook_url(space_url)
        # the embedded Hub is the Space's own: its webhook watches every namespace
        register(api, url=url, secret=secret, watched=[{"type": "user", "name": "*"}])
        log.info("webhook registered with the embedded Hub: pushes reach %s", url)
    return hub, api, "embedded: NMMO_ARENA_HUB unset"


@dataclass(frozen=True)
class _History:
    """The Space's side of the history dataset: its folder, statuses, writer and pull, and
    the index every reader reads it through."""

    store: HistoryStore
    statuses: StatusLog
    writers: Writers
    pull: DatasetPull
    index: HistoryIndex

    @classmethod
    def open(cls, settings: ArenaSettings, api: HfApi) -> _History:
        me = identity(settings.data_dir, settings.history_dir, ledger=settings.legacy_model_card_ledger)
        # replays and logs this folder does not hold (restored on an empty disk) are read from the dataset by range
        remote = HubFiles(settings.history_repo, endpoint=api.endpoint, token=api.token if isinstance(api.token, str) else None)
        store = HistoryStore(settings.history_dir, writer=me.writer, legacy=me.legacy, remote=remote)
        statuses = StatusLog(settings.status_log, writer=me.writer)
        writers = Writers(settings.history_dir, me.writer, ttl_s=settings.writer_ttl_s, recorded=store.waiting)
        pull = DatasetPull(store, api=api, repo_id=settings.history_repo, writers=writers, reload=[statuses.reload])
        # one read side for the matchmaker and the tables; during the first pull it waits for all of it
        index = HistoryIndex(store, ready=lambda: not pull.restoring())
        return cls(store, statuses, writers, pull, index)


def _executor(settings: ArenaSettings, api: HfApi, workers: int) -> MatchExecutor:
    """Where the matches are played: a Ray cluster (`NMMO_ARENA_RAY_ADDRESS`), or this
    machine's worker processes, each starting its sandbox zygote at once (its imports, about
    2 s, then overlap the worker's idle time, not the first match's set-up)."""
    if settings.ray_address:
        return RayExecutor(settings.ray_address, hub=api.endpoint, host_factory=sandboxed_host, isolation=settings.isolation)
    live = settings.data_dir / "live"
    LiveBoard(live).clear()  # reports a killed Space left: no match is in flight yet
    return LocalExecutor(workers, host_factory=sandboxed_host, live=live, prepare=start_zygote)


@dataclass
class Arena:
    """A running Arena: call `stop()` to end it."""

    settings: ArenaSettings
    api: HfApi
    store: HistoryStore
    index: HistoryIndex
    """The history read once, for the matchmaker and the leaderboard (`history.index`)."""
    statuses: StatusLog
    matchmaker: Matchmaker
    mirror: HubMirror
    health: HubHealth
    writers: Writers
    """This Space as one writer of the dataset, and who leads (`history.writers`)."""
    pull: DatasetPull
    """Brings the data folder up to the dataset (`history.restore`): at start, then after every push."""
    isolation: IsolationGate
    """The isolation self-test's verdict on this machine, and whether submitted code may run."""
    hub: LocalHub | None = None
    """The embedded Hub, when this Space runs its own (`NMMO_ARENA_HUB` unset)."""
    webhooks: WebhookReceiver | None = None
    """The webhook handler to mount on the Space (`matchmaking.hub.webhooks.launch`); None: polling only."""
    reactor: PushReactor | None = None
    restorer: threading.Thread | None = None
    _stopping: threading.Event = field(default_factory=threading.Event)
    _tried: threading.Event = field(default_factory=threading.Event)
    """Set once the first catch-up has been tried, whatever came of it."""

    @classmethod
    def start(cls, settings: ArenaSettings | None = None, *, schedule: bool = True, space_url: str | None = None) -> Arena:
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
        secret = webhook_secret(settings)
        hub, api, setting = _connect(settings, space_url=space_url, secret=secret)
        history = _History.open(settings, api)
        health = HubHealth(api.endpoint, setting=setting)

        def pushed(error: BaseException | None) -> None:
            if error is None:
                health.ok()
            else:
                health.failed(error, doing="history push")

        mirror = HubMirror(history.store, api=api, repo_id=settings.history_repo, every_minutes=settings.push_every_minutes,
                           report=pushed,
                           compact_every_minutes=settings.compact_minutes, writers=history.writers, pull=history.pull)
        workers = settings.workers or default_workers()
        gate = IsolationGate(settings.isolation)
        # the self-test runs beside the restore; nothing is played before both are done
        threading.Thread(target=_self_test, args=(gate,), daemon=True, name="isolation").start()
        matchmaker = Matchmaker(settings, api=api, store=history.store, index=history.index, statuses=history.statuses,
                                executor=_executor(settings, api, workers), mirror=mirror, health=health, workers=workers,
                                writers=history.writers, isolation=gate)
        receiver = reactor = None
        if secret:
            reactor = PushReactor(matchmaker.sync, then=lambda: matchmaker.wake("validate"))
            receiver = WebhookReceiver(secret, on_push=lambda push: reactor.push(push.repo_id))
        else:
            log.info("webhooks off (a real Hub and no NMMO_ARENA_WEBHOOK_SECRET): new pushes are found by polling "
                     "every %.0f s (NMMO_ARENA_SYNC_S)", settings.sync_every_s)
        arena = cls(settings, api, history.store, history.index, history.statuses, matchmaker, mirror, health,
                    history.writers, history.pull, gate, hub=hub, webhooks=receiver, reactor=reactor)
        arena.restorer = threading.Thread(target=arena._restore, args=(schedule,), daemon=True, name="restore")
        arena.restorer.start()
        if not schedule:  # the caller plays the rounds itself: on what the dataset holds, if it can be reached
            arena._tried.wait()
            gate.done.wait()
        return arena

    def _restore(self, schedule: bool) -> None:
        """Catch up with the dataset (retried while the Hub is away), then start the rounds:
        nothing is played before the Space knows what the dataset already holds."""
        wait = 2.0
        while not self._stopping.is_set():
            try:
                pulled = self.pull.run()
            except Exception as exc:  # noqa: BLE001 - an outage is reported on the operator line; retried
                if not self.health.failed(exc, doing="restoring the history"):
                    log.exception("restoring the history from %s failed; retried in %.0f s", self.settings.history_repo, wait)
                self._tried.set()
                self._stopping.wait(wait)
                wait = min(30.0, wait * 2)
                continue
            self.health.ok()
            if pulled.marked_pushed:  # this writer's files the dataset already holds: not pushed again
                self.mirror.mark_pushed(pulled.marked_pushed)
            # before anything else, what this writer recorded before a restart goes to the Hub:
            # without the matches another writer recorded meanwhile, in one shard, with its
            # heartbeat, which a writer started meanwhile reads to see that this one leads
            data = self.store.data
            self.store.reconcile(p.relative_to(data).as_posix() for p in pulled.marked_pushed if data in p.parents)
            self.store.flush()
            self.mirror.push_now()
            self._tried.set()
            break
        while not self.isolation.done.wait(0.5) and not self._stopping.is_set():
            pass
        if schedule and not self._stopping.is_set():
            self.matchmaker.start()

    def wait_restored(self, timeout: float | None = None) -> bool:
        """Wait for the first catch-up with the dataset; whether it is done."""
        return self.pull.done.wait(timeout)

    def restoring(self) -> str | None:
        """While the first catch-up runs, how far it has got (None once done)."""
        return None if self.pull.done.is_set() else self.pull.progress.line()

    def isolation_report(self) -> dict[str, Any] | None:
        """The isolation self-test's report (None while it runs): `/isolation` serves it."""
        report = self.isolation.report
        return None if report is None else report.to_dict()

    def operator_lines(self) -> list[str]:
        """What an operator should know now: the Hub's state, the restore while it runs,
        this Space's role among the dataset's writers, and any damaged state set aside."""
        pushed = self.mirror.last_push()
        hub = self.health.state(pending_files=self.mirror.pending(), last_push=pushed.age() if pushed else "no push yet")
        lines = [hub.line(), self.isolation.line(),
                 *self.matchmaker.executor.isolation_lines()]
        restoring = self.restoring()
        if restoring is not None:
            lines.append(restoring[:1].upper() + restoring[1:])
        elif self.writers.leader() != self.writers.writer:
            lines.append(f"This Space is writer {self.writers.writer} of {self.settings.history_repo}, a "
                         f"{self.writers.role()}.")
        return [*lines, *self.statuses.damaged, *self.store.damaged]

    def stop(self) -> None:
        """Stop cleanly: rounds, matches, then a last compaction and push of this writer's
        files with a heartbeat saying it stopped (the next writer leads at once)."""
        self._stopping.set()
        if self.reactor is not None:
            self.reactor.stop()
        self.matchmaker.stop()
        self.matchmaker.executor.close()
        if self.restorer is not None:
            self.restorer.join(timeout=30)
        self.mirror.stop(final=self.pull.done.is_set())
        if self.hub is not None:
            embedded_hub.withdraw(self.settings)
            self.hub.stop()
