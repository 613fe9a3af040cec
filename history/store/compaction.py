"""Compaction's records: what one compaction writes and replaces (its journal), what a
run of them did, and the test hook that kills a compaction at a chosen stage.

How compaction runs, step by step and why each step is safe, is in the package's docstring
(`history.store`, point 3); `HistoryStore.compact` carries it out.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.records import Record
from history import bundle

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompactionPlan(Record):
    """One compaction: the files it writes and the files they replace (paths in the
    history folder, `/`-separated), as its journal records them."""

    name: str
    outputs: tuple[str, ...]
    inputs: tuple[str, ...]
    matches: int = 0



#: Makes a compaction's new files public before the files they replace are deleted (the
#: Hub mirror: one commit). Raises to stop the compaction; the next one finishes it.
Publish = Callable[[CompactionPlan], None]


@dataclass
class CompactionReport:
    """What one `compact()` did."""

    plans: list[CompactionPlan] = field(default_factory=list)
    finished: int = 0
    """Compactions killed earlier that this one completed."""

    @property
    def written(self) -> int:
        return sum(len(p.outputs) for p in self.plans)

    @property
    def replaced(self) -> int:
        return sum(len(p.inputs) for p in self.plans)


def bundle_writer(files: dict[str, Path]) -> Callable[[Any], None]:
    """Writes the bundle of `files` (match id -> loose file), reading them one at a time."""
    def write(f: Any) -> None:
        bundle.write(f, {m: path.stat().st_size for m, path in files.items()}, lambda m: files[m].read_bytes())
    return write


#: Test hook (`NMMO_ARENA_COMPACTION_HOOK=stage`): a compaction that reaches `stage`
#: ("journal": journal written; "writing": its first new file written; "written": all of
#: them; "published"; "deleting": half of what they replace deleted) kills its own
#: process there (SIGKILL), as a crash would.
HOOK = os.environ.get("NMMO_ARENA_COMPACTION_HOOK", "")


def hook(stage: str, plan: CompactionPlan) -> None:
    """Kill this process if the test hook names `stage`."""
    if stage == HOOK:
        log.warning("NMMO_ARENA_COMPACTION_HOOK=%s: killing this process in compaction %s", stage, plan.name)
        os.kill(os.getpid(), 9)
