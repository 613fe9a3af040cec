"""An append-only JSON-lines log that several writers share without ever overwriting one
another: the form of the status log, the audit log and the model-card ledger.

Why not one file: a Space's disk is wiped on restart, and during a rebuild two containers
run side by side. With one `statuses.jsonl` in the dataset, the second writer's first push
replaced the first writer's file with its own events (they survived only in git history).
So each writer appends only to a file of its own, named with its id
(`statuses-w0123456789ab.jsonl`, `history.writers`), and readers take the union of every
writer's file in the folder: the file of the layout before writers (`statuses.jsonl`), as
the dataset still holds it, is read like any other and never written again.

A record is one JSON object per line, written whole in one `write` of an `O_APPEND`
descriptor and fsynced. A line that does not parse (torn by a crash) is skipped and named
once in `damaged`; a new line never glues onto a torn one. The union drops exact
duplicates (the same record in two files: a migration's copy of the single file, or a
file restored from the Hub beside its local original), then orders records by their time
(`order`), stably, so each writer's own order is kept among equal times.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from arena.errors import DamagedFileError

log = logging.getLogger(__name__)

#: Orders a record among the union's (records whose key is equal keep their files' order).
Order = Callable[[dict[str, Any]], Any]


def own_file(path: Path, writer: str | None) -> Path:
    """The file `writer` appends to, for the journal whose single-file name is `path`
    (`submissions/statuses.jsonl` -> `submissions/statuses-<writer>.jsonl`; with no writer,
    `path` itself: a folder with one writer, as tests and tools use it)."""
    path = Path(path)
    return path if writer is None else path.with_name(f"{path.stem}-{writer}{path.suffix}")


class Journal:
    """The union of every writer's file of one journal, and the file this writer appends to.

    Args:
        path (`Path`): the journal's single-file name (`.../statuses.jsonl`): its folder,
            stem and suffix name every writer's file.
        writer (`str`, *optional*): this writer's id (None: append to `path` itself).
        order (`Order`, *optional*): the records' order in the union (default: as read).
    """

    def __init__(self, path: Path, *, writer: str | None = None, order: Order | None = None):
        self.path = Path(path)
        self.writer = writer
        self.own = own_file(self.path, writer)
        self.order = order
        self._pattern = re.compile(re.escape(self.path.stem) + r"(-[A-Za-z0-9_]+)?" + re.escape(self.path.suffix))
        self._lock = threading.Lock()
        self._reported: set[tuple[str, int]] = set()
        self.damaged: list[str] = []
        """One line per damaged line skipped, for the operator (each named once)."""

    def files(self) -> list[Path]:
        """Every writer's file of this journal in its folder, sorted by name."""
        folder = self.path.parent
        if not folder.is_dir():
            return []
        return sorted(folder / name for name in os.listdir(folder) if self._pattern.fullmatch(name))

    def signature(self) -> tuple[tuple[str, int, int], ...]:
        """Changes whenever any writer's file does (for rereading only when needed)."""
        found = []
        for path in self.files():
            try:
                stat = path.stat()
            except FileNotFoundError:
                continue
            found.append((path.name, stat.st_size, stat.st_mtime_ns))
        return tuple(found)

    def read(self) -> list[dict[str, Any]]:
        """Every record of every writer, each once, in `order`."""
        seen: set[str] = set()
        records: list[dict[str, Any]] = []
        for path in self.files():
            for record in self._records(path):
                key = json.dumps(record, sort_keys=True)
                if key not in seen:
                    seen.add(key)
                    records.append(record)
        if self.order is not None:
            records.sort(key=self.order)
        return records

    def _records(self, path: Path) -> Iterable[dict[str, Any]]:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return
        for number, line in enumerate(raw.split(b"\n"), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise DamagedFileError(f"a JSON {type(record).__name__}, not an object")
            except ValueError as exc:
                self._report(path, number, f"{type(exc).__name__}: {exc}")
                continue
            yield record

    def _report(self, path: Path, number: int, why: str) -> None:
        if (path.name, number) in self._reported:
            return
        self._reported.add((path.name, number))
        message = f"journal {path}: line {number} is damaged ({why}); skipped"
        self.damaged.append(message)
        log.warning(message)

    def append(self, record: dict[str, Any]) -> None:
        """Add one record to this writer's file, durably: one write of a whole line, then fsync."""
        line = (json.dumps(record, sort_keys=True) + "\n").encode()
        with self._lock:
            self.own.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.own, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":  # never glue a line to a torn one
                    line = b"\n" + line
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
