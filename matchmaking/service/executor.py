"""Where matches run: local worker processes by default, Ray when one machine is not enough.

Matches are independent and CPU-bound, so they run one per worker process. Every
executor yields `MatchOutcome`s: a match that fails reports its error instead of a
result, so one broken match never loses the others. The same spec gives the same result
on every executor (the seed fixes the game; tested on a local Ray runtime).

- `run_matches`: one batch, then the workers go (the evaluation tool).
- `LocalExecutor`: a pool that lives as long as the matchmaker (no start-up per batch).
- `RayExecutor`: the matches as Ray tasks on an existing cluster (`ray.init(address)`),
  or on a local Ray runtime. Specs travel portable and each node fetches what it plays
  (`matchmaking.service.nodes`); the project's code travels as the job's runtime environment. A
  task whose node dies is played again by Ray on another node (`max_retries`), and its
  result arrives once.

Both are a `MatchExecutor`, the protocol the matchmaker plays its matches on.

A match lost to the platform carries its cause, classified where the failure is caught
(`classify`: a closed set, `history.incidents.Cause`), never parsed back out of its message:
the matchmaker records it as an incident and plays the match again (`history.incidents`).
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, CancelledError, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from arena.activity import LiveMatch
from arena.errors import InvalidArgumentError
from arena.logs import MatchLogs
from arena.replay import ReplayRecorder
from arena.schema import MatchResult
from history.incidents import Cause
from matchmaking.engine.match import HostFactory, MatchSpec, run_match
from matchmaking.service.live import Board, ClusterBoard, LiveBoard
from matchmaking.teams.factory import in_process_host

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MatchOutcome:
    """A finished match: its result, or why it produced none; when recorded, its replay
    (`arena.replay`) and its sandboxed teams' logs (`arena.logs`; None when every team
    played in the match process); `node`: the Ray node that played it ("" on this machine)."""

    spec: MatchSpec
    result: MatchResult | None = None
    error: str | None = None
    replay: bytes | None = None
    logs: bytes | None = None
    node: str = ""
    isolation: str = ""
    """On a Ray node: its isolation self-test's verdict (`IsolationReport.line`), if it ran."""
    cause: Cause | None = None
    """Why the platform lost it, with `error` (None with a result)."""


class MatchExecutor(Protocol):
    """Where the matchmaker plays its matches: `LocalExecutor` (worker processes on this
    machine) or `RayExecutor` (tasks on a Ray cluster)."""

    def run(self, specs: Iterable[MatchSpec]) -> Iterator[MatchOutcome]:
        """Play `specs`, yielding each outcome as it finishes: a match lost to the platform
        yields its error and its cause, and the others go on."""

    def in_flight(self) -> list[LiveMatch]:
        """The matches being played now, with their ticks (the "Now playing" list)."""

    def close(self) -> None:
        """Stop: matches queued or still playing are abandoned (never recorded)."""

    def isolation_lines(self) -> list[str]:
        """What the isolation self-test found on each other machine that plays matches (a
        Ray cluster's nodes), a line each for the operator; none where matches play here."""
        return []


# Ray's exceptions by name: Ray is optional, and this is read on machines without it.
_RAY_OUT_OF_MEMORY = {"OutOfMemoryError"}
_RAY_WORKER = {"WorkerCrashedError"}
_RAY_NODE = {"NodeDiedError", "LocalRayletDiedError", "ObjectLostError", "RayActorError", "TaskCancelledError"}


def classify(exc: BaseException, *, oom_killed: bool = False) -> Cause:
    """The cause of a match lost to `exc`, raised by the match or by the executor waiting for it.

    Args:
        exc (`BaseException`): what was raised.
        oom_killed (`bool`): the kernel's OOM killer killed a process meanwhile (`oom_kills`):
            a worker that died then ran out of memory.

    Returns:
        `Cause`: out of memory (a `MemoryError`, also as the cause of what was raised; Ray's
        `OutOfMemoryError`), a worker died (the pool broke, or was rebuilt with this match
        in it; Ray's `WorkerCrashedError`), a node lost (Ray's node and object losses), else
        an engine error.

    Example:
        >>> classify(MemoryError()).value, classify(BrokenProcessPool()).value, classify(KeyError("x")).value
        ('out-of-memory', 'worker-died', 'engine-error')
    """
    chain: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in chain:
        chain.append(link)
        link = link.__cause__ or link.__context__
    names = {cls.__name__ for e in chain for cls in type(e).__mro__}
    if any(isinstance(e, MemoryError) for e in chain) or names & _RAY_OUT_OF_MEMORY:
        return Cause.OUT_OF_MEMORY
    if isinstance(exc, (BrokenProcessPool, CancelledError)) or names & _RAY_WORKER:
        return Cause.OUT_OF_MEMORY if oom_killed else Cause.WORKER_DIED
    if names & _RAY_NODE:
        return Cause.NODE_LOST
    return Cause.ENGINE_ERROR


#: Where the kernel counts this machine's OOM kills (cgroup v2, then v1), first found.
_OOM_COUNTERS = (Path("/sys/fs/cgroup/memory.events"), Path("/sys/fs/cgroup/memory/memory.oom_control"))


def oom_kills() -> int | None:
    """Processes of this container the kernel's OOM killer has killed so far (None where
    no cgroup says): a worker that died while it rose ran out of memory."""
    for path in _OOM_COUNTERS:
        try:
            for line in path.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            continue
    return None


def play_outcome(spec: MatchSpec, host_factory: HostFactory, record: bool = False, board: Board | None = None,
                 node: str = "") -> MatchOutcome:
    """Play one match as the matchmaker does (replay and logs recorded if asked, its tick
    reported to `board`), owning every failure: an engine error becomes the outcome's error."""
    recorder, logs = (ReplayRecorder(), MatchLogs()) if record else (None, None)
    report, done = board.reporter(spec, node=node) if board is not None else (None, lambda: None)
    try:
        result = run_match(spec, host_factory=host_factory, recorder=recorder, logs=logs, progress=report)
    except Exception as exc:  # noqa: BLE001 - reported per match, the batch goes on
        return MatchOutcome(spec, error=f"{type(exc).__name__}: {exc}", cause=classify(exc))
    finally:
        done()
    return MatchOutcome(spec, result=result, replay=recorder.data if recorder else None, logs=logs.data if logs else None)


def _play_on_node(spec: MatchSpec, host_factory: HostFactory, record: bool, board: ClusterBoard | None,
                  isolation: str | None = None) -> MatchOutcome:
    """A Ray task: play a portable spec on whatever node Ray chose, from that node's cache.
    A spec that seats a submission first needs this node's isolation self-test
    (`matchmaking.sandbox.isolation.require`, once per worker process) to allow it under `isolation`."""
    import ray

    from matchmaking.sandbox.host import protect_process
    from matchmaking.sandbox.isolation import IsolationError, require
    from matchmaking.service.nodes import NodeCache

    protect_process()  # this worker's environment (Ray's token) stays unreadable to its sandboxes
    node = ray.get_runtime_context().get_node_id()
    verdict, sent = "", spec
    if isolation is not None and not all(p.is_builtin for p in spec.policies):
        try:
            report = require(isolation, where=f"node {node[:12]}")
        except IsolationError as exc:
            return MatchOutcome(spec, error=str(exc), node=node, isolation=str(exc), cause=Cause.NODE_REFUSED)
        verdict = report.line()
        if report.exposed:  # this node's own doubt: what its teams say is its operator's alone
            spec = dataclasses.replace(spec, config=dataclasses.replace(spec.config, withhold_policy_words=True))
    cache = NodeCache()
    try:
        playable = cache.localize(spec)
    except Exception as exc:  # noqa: BLE001 - a fetch that fails loses this match only
        return MatchOutcome(spec, error=f"cannot fetch on node {node[:12]}: {type(exc).__name__}: {exc}", node=node,
                            cause=Cause.NODE_REFUSED)
    return dataclasses.replace(play_outcome(playable, host_factory, record, board, node), spec=sent, node=node, isolation=verdict)


def default_workers() -> int:
    """One worker per CPU the process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def run_matches(
    specs: Iterable[MatchSpec],
    *,
    workers: int = 1,
    host_factory: HostFactory = in_process_host,
) -> Iterator[MatchOutcome]:
    """Play matches, `workers` at a time, yielding each as it finishes.

    With `workers=1` matches run in this process, one after another (no start-up cost,
    easy to debug); otherwise in a pool of fresh ("spawn") processes, so that no state of
    this process (threads, the UI, open sockets) leaks into a match.

    Args:
        specs (`Iterable[MatchSpec]`): the matches to play.
        workers (`int`): parallel worker processes.
        host_factory (`HostFactory`): how teams are hosted (must be picklable for workers > 1).

    Yields:
        `MatchOutcome`: in completion order.
    """
    if workers < 1:
        raise InvalidArgumentError(f"`workers` must be at least 1, got {workers}.")
    specs = list(specs)
    if workers == 1 or len(specs) <= 1:
        for spec in specs:
            yield play_outcome(spec, host_factory)
        return
    executor = LocalExecutor(min(workers, len(specs)), host_factory=host_factory, record_replays=False)
    try:
        yield from executor.run(specs)
    finally:
        executor.close()


def _exit_code(process: multiprocessing.process.BaseProcess, deadline: float) -> int | None:
    """`process`'s exit code, waiting until `deadline` (monotonic) for it to be reaped.

    A big process killed takes a moment to be reaped, and the broken pool's own thread
    reaps its workers too: whichever of the two waits second sees no child and, for a
    moment, no exit code, so the code is polled rather than read once.
    """
    process.join(max(0.0, deadline - time.monotonic()))
    while process.exitcode is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return process.exitcode


class LocalExecutor(MatchExecutor):
    """A persistent pool of `workers` fresh ("spawn") processes on this machine."""

    def __init__(self, workers: int = 1, *, host_factory: HostFactory = in_process_host, record_replays: bool = True,
                 live: Path | None = None, prepare: Callable[[], object] | None = None):
        """`record_replays`: record every match's replay and its sandboxed teams' logs; `live`:
        the folder where matches in flight report their tick (`matchmaking.service.live`), if any;
        `prepare`: called in each worker process as it starts, before any match (a picklable
        module-level function: the Space starts the sandbox zygote there, `start_zygote`)."""
        if workers < 1:
            raise InvalidArgumentError(f"`workers` must be at least 1, got {workers}.")
        self.workers = workers
        self.prepare = prepare
        self.host_factory = host_factory
        self.record_replays = record_replays
        self.live = live
        self._pool: ProcessPoolExecutor | None = None
        self._oom_kills: int | None = None
        """The kernel's OOM kills when the pool started (`oom_kills`)."""
        self._broken: tuple[ProcessPoolExecutor | None, str, bool] = (None, "", False)
        """The pool that broke last, its dead workers in words, and whether the OOM killer struck."""

    def _ensure(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=self.prepare)
            self._oom_kills = oom_kills()
        return self._pool

    def _lost(self, spec: MatchSpec, exc: BaseException, pool: ProcessPoolExecutor) -> MatchOutcome:
        """The outcome of a match whose worker died (or that `pool`, broken, took with it),
        with the dead worker named and the cause classified."""
        if self._broken[0] is not pool:  # the first match lost with this pool: name its dead
            dead, deadline = [], time.monotonic() + 5.0
            for pid, process in sorted((pool._processes or {}).items()):  # no public accessor
                code = _exit_code(process, deadline)
                if code is not None and code < 0 and -code != signal.SIGTERM:  # the others the pool terminated
                    dead.append(f"worker {pid} killed by {signal.Signals(-code).name}")
                elif code not in (None, 0, -signal.SIGTERM):
                    dead.append(f"worker {pid} exited with {code}")
            now = oom_kills()
            oom = now is not None and self._oom_kills is not None and now > self._oom_kills
            self._broken = (pool, "; ".join([*dead, *(["the kernel's OOM killer killed a process"] if oom else [])]), oom)
        _, dead_workers, oom = self._broken
        why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return MatchOutcome(spec, error=f"worker failed: {why}" + (f" ({dead_workers})" if dead_workers else ""),
                            cause=classify(exc, oom_killed=oom))

    def run(self, specs: Iterable[MatchSpec]) -> Iterator[MatchOutcome]:
        """Play `specs`, yielding outcomes as they finish."""
        pool = self._ensure()
        board = LiveBoard(self.live) if self.live is not None else None
        spec_of = {pool.submit(play_outcome, spec, self.host_factory, self.record_replays, board): spec for spec in specs}
        pending = set(spec_of)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                try:
                    yield future.result()
                except Exception as exc:  # noqa: BLE001 - a worker died: the pool is rebuilt
                    outcome = self._lost(spec_of[future], exc, pool)
                    if self._pool is pool:  # not a new pool another round started meanwhile
                        self.close()
                    yield outcome

    def in_flight(self) -> list[LiveMatch]:
        """The matches being played now, with their ticks (none without a `live` folder)."""
        return LiveBoard(self.live).matches() if self.live is not None else []

    def worker_pids(self) -> list[int]:
        """Process ids of the pool's workers (none before the first match)."""
        return [] if self._pool is None else sorted((self._pool._processes or {}).keys())  # no public accessor

    def close(self) -> None:
        """Stop at once: queued matches are cancelled, running ones abandoned (unfinished
        matches are never recorded, and PvE plans them again after a restart)."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            processes = list((pool._processes or {}).values())  # the executor offers no terminate()
            pool.shutdown(wait=False, cancel_futures=True)
            for process in processes:
                process.terminate()
            for process in processes:
                process.join(timeout=5)


class RayExecutor(MatchExecutor):
    """Matches as Ray tasks, one CPU each, on any node of a cluster.

    Each spec is sent portable (`matchmaking.service.nodes.portable`: submissions named by repo id,
    sha and `hub`); the node fetches and checks them into its own cache and runs the teams'
    sandboxes itself. The project's code reaches the nodes as the job's runtime environment
    (`working_dir`); the nodes need the requirements installed (docs/matchmaker.md, "Matches on a Ray
    cluster").

    Args:
        address (`str`, *optional*): an existing cluster (`"ray://host:10001"`, `"host:6379"`
            or `"auto"`); None or `"local"` starts a local Ray runtime with `num_cpus` CPUs.
        hub (`str`): the endpoint nodes fetch submissions from (the Space's Hub).
        num_cpus (`int`, *optional*): CPUs of a local runtime.
        max_retries (`int`): how many times Ray plays a match again whose node or worker died.
        live (`bool`): matches report their tick while they play, to an actor of the cluster
            (`matchmaking.service.live.ClusterBoard`), for `in_flight()`.
        resources (`dict`, *optional*): custom resources each match asks for, on top of its
            CPU (`ray start --resources`): to play only on the nodes that declare them.
        isolation (`str`, *optional*): the Space's `NMMO_ARENA_ISOLATION`: each node runs
            its own isolation self-test before it plays a submission, and refuses under
            `strict` where file or network isolation is missing (None: no check).
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        hub: str = "",
        num_cpus: int | None = None,
        host_factory: HostFactory = in_process_host,
        record_replays: bool = True,
        live: bool = True,
        max_retries: int = 3,
        resources: dict[str, float] | None = None,
        isolation: str | None = None,
    ):
        import ray  # optional: only needed when Ray is configured

        from arena import PROJECT_ROOT
        from matchmaking.service.nodes import runtime_env

        self.ray = ray
        self.hub = hub
        self.host_factory = host_factory
        self.record_replays = record_replays
        self.isolation = isolation
        self.node_isolation: dict[str, str] = {}
        """Each node's isolation verdict, as its first match that seated a submission said."""
        if not ray.is_initialized():
            options: dict = {"runtime_env": runtime_env(PROJECT_ROOT), "log_to_driver": False}
            if address in (None, "local"):  # "local": never a cluster a `ray start` left on this machine
                ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, **options)
            else:
                ray.init(address=address, **options)
        self._play = ray.remote(num_cpus=1, max_retries=max_retries, retry_exceptions=False,
                                resources=resources or {})(_play_on_node)
        self.board = ClusterBoard.start() if live else None

    def in_flight(self) -> list[LiveMatch]:
        """The matches being played on the cluster now, with their nodes and ticks."""
        return self.board.matches() if self.board is not None else []

    def run(self, specs: Iterable[MatchSpec]) -> Iterator[MatchOutcome]:
        """Play `specs` on the cluster, yielding outcomes as they finish.

        Raises:
            `NotPortableError`: a spec holds a local folder (before any match starts).
        """
        from matchmaking.service.nodes import portable

        specs = list(specs)
        sent = [portable(spec, self.hub) for spec in specs]
        spec_of = {self._play.remote(p, self.host_factory, self.record_replays, self.board, self.isolation): spec
                   for p, spec in zip(sent, specs)}
        pending = list(spec_of)
        while pending:
            done, pending = self.ray.wait(pending, num_returns=1)
            for ref in done:
                try:
                    outcome = self.ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - retries exhausted: this match only is lost
                    yield MatchOutcome(spec_of[ref], error=f"Ray task failed: {type(exc).__name__}: {exc}", cause=classify(exc))
                else:
                    if outcome.isolation and outcome.node not in self.node_isolation:
                        self.node_isolation[outcome.node] = outcome.isolation
                        holds = outcome.isolation.startswith("Isolation holds")
                        (log.info if holds else log.warning)("Ray node %s: %s", outcome.node[:12], outcome.isolation)
                    yield dataclasses.replace(outcome, spec=spec_of[ref])

    def isolation_lines(self) -> list[str]:
        """Each node's isolation verdict, as its first match that seated a submission said."""
        return [f"Ray node {node[:12]}: {line}" for node, line in sorted(self.node_isolation.items())]

    def close(self) -> None:
        if self.ray.is_initialized():
            self.ray.shutdown()
