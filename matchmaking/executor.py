"""Where matches run: a pool of local worker processes (Ray joins in the matchmaker issue).

Matches are independent and CPU-bound, so they run one per worker process. A worker
that fails reports the failure as a `MatchOutcome` with an error instead of a result: one
broken match never loses the others.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Iterable, Iterator

from matchmaking.match import HostFactory, MatchSpec, in_process_host, run_match
from matchmaking.records import MatchResult


@dataclass(frozen=True)
class MatchOutcome:
    """A finished match: its result, or why it produced none."""

    spec: MatchSpec
    result: MatchResult | None = None
    error: str | None = None


def _play(spec: MatchSpec, host_factory: HostFactory) -> MatchOutcome:
    try:
        return MatchOutcome(spec, result=run_match(spec, host_factory=host_factory))
    except Exception as exc:  # noqa: BLE001 - reported per match, the batch goes on
        return MatchOutcome(spec, error=f"{type(exc).__name__}: {exc}")


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
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(specs)), mp_context=context) as pool:
        spec_of: dict[Future[MatchOutcome], MatchSpec] = {pool.submit(_play, spec, host_factory): spec for spec in specs}
        pending = set(spec_of)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                try:
                    yield future.result()
                except Exception as exc:  # noqa: BLE001 - a worker died (e.g. killed): report, go on
                    yield MatchOutcome(spec_of[future], error=f"worker failed: {type(exc).__name__}: {exc}")
