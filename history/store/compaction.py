"""Compaction's records: what one compaction writes and replaces (its journal), what a
run of them did, and the hook told each stage it reaches (the crash tests kill it there).

How compaction runs, step by step and why each step is safe, is in the package's docstring
(`history.store`, point 3); `HistoryStore.compact` carries it out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.records import Record
from history import bundle


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


#: Told each stage a compaction reaches, with its plan: "journal" (its journal written),
#: "writing" (each of its new files written), "written" (all of them), "published" and
#: "deleting" (half of the files they replace deleted). `HistoryStore(on_stage=...)`
#: installs one: the crash tests kill the process at a chosen stage, as a crash would
#: (`tests/scripts/compact_history.py`).
StageHook = Callable[[str, CompactionPlan], None]
