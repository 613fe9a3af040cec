"""Where matches run: local worker processes by default, Ray when one machine is not enough.

Matches are independent and CPU-bound, so they run one per worker process. Every
executor yields `MatchOutcome`s: a match that fails reports its error instead of a
result, so one broken match never loses the others. The same spec gives the same result
on every executor (the seed fixes the game; tested on a local Ray runtime).

- `run_matches`: one batch, then the workers go (the evaluation tool).
- `LocalExecutor`: a pool that lives as long as the matchmaker (no start-up per batch).
- `RayExecutor`: the matches as Ray tasks on an existing cluster (`ray.init(address)`),
  or on a local Ray runtime; the project must be importable on every node.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from arena.logs import MatchLogs
from arena.replay import ReplayRecorder
from arena.schema import MatchResult
from matchmaking.live import LiveBoard
from matchmaking.match import HostFactory, MatchSpec, in_process_host, run_match


@dataclass(frozen=True)
class MatchOutcome:
    """A finished match: its result, or why it produced none; when recorded, its replay
    (`arena.replay`) and its sandboxed teams' logs (`arena.logs`; None when every team
    played in the match process)."""

    spec: MatchSpec
    result: MatchResult | None = None
    error: str | None = None
    replay: bytes | None = None
    logs: bytes | None = None


def _play(spec: MatchSpec, host_factory: HostFactory, record: bool = False, live: Path | None = None) -> MatchOutcome:
    recorder, logs = (ReplayRecorder(), MatchLogs()) if record else (None, None)
    report, done = LiveBoard(live).reporter(spec) if live is not None else (None, lambda: None)
    try:
        result = run_match(spec, host_factory=host_factory, recorder=recorder, logs=logs, progress=report)
    except Exception as exc:  # noqa: BLE001 - reported per match, the batch goes on
        return MatchOutcome(spec, error=f"{type(exc).__name__}: {exc}")
    finally:
        done()
    return MatchOutcome(spec, result=result, replay=recorder.data if recorder else None, logs=logs.data if logs else None)


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
        raise ValueError(f"`workers` must be at least 1, got {workers}.")
    specs = list(specs)
    if workers == 1 or len(specs) <= 1:
        for spec in specs:
            yield _play(spec, host_factory)
        return
    executor = LocalExecutor(min(workers, len(specs)), host_factory=host_factory, record_replays=False)
    try:
        yield from executor.run(specs)
    finally:
        executor.close()


class LocalExecutor:
    """A persistent pool of `workers` fresh ("spawn") processes on this machine."""

    def __init__(self, workers: int = 1, *, host_factory: HostFactory = in_process_host, record_replays: bool = True,
                 live: Path | None = None):
        """`record_replays`: record every match's replay and its sandboxed teams' logs; `live`:
        the folder where matches in flight report their tick (`matchmaking.live`), if any."""
        if workers < 1:
            raise ValueError(f"`workers` must be at least 1, got {workers}.")
        self.workers = workers
        self.host_factory = host_factory
        self.record_replays = record_replays
        self.live = live
        self._pool: ProcessPoolExecutor | None = None

    def _ensure(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"))
        return self._pool

    def run(self, specs: Iterable[MatchSpec]) -> Iterator[MatchOutcome]:
        """Play `specs`, yielding outcomes as they finish."""
        pool = self._ensure()
        spec_of = {pool.submit(_play, spec, self.host_factory, self.record_replays, self.live): spec for spec in specs}
        pending = set(spec_of)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                try:
                    yield future.result()
                except Exception as exc:  # noqa: BLE001 - a worker died: the pool is rebuilt
                    self.close()
                    yield MatchOutcome(spec_of[future], error=f"worker failed: {type(exc).__name__}: {exc}")

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


class RayExecutor:
    """Matches as Ray tasks, one CPU each.

    Args:
        address (`str`, *optional*): an existing cluster (`"ray://host:10001"` or
            `"auto"`); None starts a local Ray runtime with `num_cpus` CPUs.
        num_cpus (`int`, *optional*): CPUs of a local runtime.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: int | None = None,
        host_factory: HostFactory = in_process_host,
        record_replays: bool = True,
        live: Path | None = None,
    ):
        import ray  # optional: only needed when Ray is configured

        from arena import PROJECT_ROOT

        self.ray = ray
        self.host_factory = host_factory
        self.record_replays = record_replays
        self.live = live
        """Folder for tick reports: only seen by the Space when the nodes share its disk."""
        if not ray.is_initialized():
            runtime_env = {"env_vars": {"PYTHONPATH": str(PROJECT_ROOT)}}
            if address is None:
                ray.init(num_cpus=num_cpus, runtime_env=runtime_env, include_dashboard=False, log_to_driver=False)
            else:
                ray.init(address=address, runtime_env=runtime_env, log_to_driver=False)
        self._play = ray.remote(num_cpus=1, max_retries=0)(_play)

    def run(self, specs: Iterable[MatchSpec]) -> Iterator[MatchOutcome]:
        spec_of = {self._play.remote(spec, self.host_factory, self.record_replays, self.live): spec for spec in specs}
        pending = list(spec_of)
        while pending:
            done, pending = self.ray.wait(pending, num_returns=1)
            for ref in done:
                try:
                    yield self.ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - a node or worker died
                    yield MatchOutcome(spec_of[ref], error=f"Ray task failed: {type(exc).__name__}: {exc}")

    def close(self) -> None:
        if self.ray.is_initialized():
            self.ray.shutdown()
