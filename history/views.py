"""Parquet views of the dataset's JSON-lines logs, so that the dataset card's configs can name them.

Why: `datasets` (and the Hub's dataset viewer with it) builds every config of a repo with the
one builder the first config's files choose: parquet, for the team rows. The status log and
the incident log are JSON lines by design (append-only, one event a line, each writer its
own file: `history.statuses`, `history.incidents`), so the `statuses` and `incidents`
configs read these views of them instead: one parquet file per log file, of fixed columns,

    tables/statuses-<writer>.parquet     one row per status event (STATUSES_SCHEMA)
    tables/incidents-<writer>.parquet    one row per match the platform lost (INCIDENTS_SCHEMA)

A view is derived: the Arena never reads it, and it is rewritten from its log (whole, to a
temporary name, then renamed) before each push when the log is newer. The logs stay the
record; a line that does not parse is left out here as the logs' readers leave it out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa

from arena.files import write_atomically
from history.store.layout import parquet_writer

#: Where the views are, inside the history folder.
FOLDER = "tables"

#: One status event: who, what, when, why; the rest of the event (submission, measurements,
#: PvE figures, ...) as its JSON in `details`.
STATUSES_SCHEMA = pa.schema([
    ("repo_id", pa.string()), ("revision", pa.string()), ("status", pa.string()), ("reason", pa.string()),
    ("at", pa.float64()), ("time", pa.string()), ("cause", pa.string()), ("details", pa.string()),
])

#: One lost match attempt (`history.incidents.Incident`).
INCIDENTS_SCHEMA = pa.schema([
    ("match_id", pa.string()), ("failed_at", pa.string()), ("track", pa.string()), ("stage", pa.int64()),
    ("seed", pa.int64()), ("submissions", pa.list_(pa.string())), ("cause", pa.string()), ("message", pa.string()),
    ("attempt", pa.int64()), ("max_attempts", pa.int64()), ("replanned", pa.bool_()), ("node", pa.string()),
    ("schema_version", pa.int64()),
])

#: Each view: the log folder, the log files' prefix, the schema, the row maker.
_STATUS_KEYS = {"repo_id", "revision", "status", "reason", "at", "cause"}


def _status_row(event: dict[str, Any]) -> dict[str, Any]:
    at = float(event.get("at") or 0.0)
    details = {k: v for k, v in event.items() if k not in _STATUS_KEYS}
    return {
        "repo_id": str(event["repo_id"]), "revision": str(event["revision"]), "status": str(event["status"]),
        "reason": str(event.get("reason") or ""), "at": at,
        "time": datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="seconds"),
        "cause": None if event.get("cause") is None else str(event["cause"]),
        "details": json.dumps(details, sort_keys=True) if details else None,
    }


def _incident_row(line: dict[str, Any]) -> dict[str, Any]:
    row = {name: line.get(name) for name in INCIDENTS_SCHEMA.names}
    row["submissions"] = [str(s) for s in line.get("submissions") or []]
    row["node"] = str(line.get("node") or "")
    row["schema_version"] = int(line.get("schema_version") or 1)
    return row


_VIEWS = {
    "statuses": ("submissions", "statuses", STATUSES_SCHEMA, _status_row),
    "incidents": ("incidents", "incidents", INCIDENTS_SCHEMA, _incident_row),
}


def table(kind: str, lines: Iterable[bytes | str]) -> pa.Table:
    """The view `kind` (`statuses` or `incidents`) of a log's lines; lines that are not an
    event of that log are left out."""
    _, _, schema, row = _VIEWS[kind]
    rows = []
    for line in lines:
        try:
            rows.append(row(json.loads(line)))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # a torn or foreign line: its log's reader names it (`history.statuses`)
    return pa.Table.from_pylist(rows, schema=schema)


def view_path(root: Path, log: Path) -> Path:
    """Where the view of the log file `log` goes (`tables/<log's name>.parquet`)."""
    return Path(root) / FOLDER / f"{log.stem}.parquet"


def refresh(root: Path, *, writer: str | None) -> list[Path]:
    """Rewrite the views of `writer`'s logs (every log's with no writer, as in a folder
    with one writer) that are older than their log; the views written.

    A log with no event has no view: the config then finds no file (datasets says so).
    """
    root = Path(root)
    written = []
    for kind, (folder, prefix, _, _) in _VIEWS.items():
        pattern = f"{prefix}-{writer}.jsonl" if writer else f"{prefix}*.jsonl"
        for log in sorted((root / folder).glob(pattern)):
            if log.name.endswith(".damaged.jsonl"):
                continue  # lines set apart, never events
            view = view_path(root, log)
            try:
                if view.exists() and view.stat().st_mtime_ns > log.stat().st_mtime_ns:
                    continue
                rows = table(kind, log.read_bytes().splitlines())
            except FileNotFoundError:
                continue
            if not rows.num_rows:
                continue
            view.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(view, parquet_writer(rows))
            written.append(view)
    return written
