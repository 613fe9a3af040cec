"""What the Arena published on model cards, durably: a JSON-lines file in the data folder.

The publisher's memory across restarts: the figures and time of each revision's last
publication (so a restart never republishes what is already there), the pull request
each repo's results go to, and the revisions never to publish again. One line per
event, appended and fsynced:

| `event` | Written when | Effect |
|---|---|---|
| `published` | a commit with the results landed on the pull request | last figures and time of the revision; the repo's pull request |
| `declined` | the card opts out, or the owner closed the pull request carrying this revision's results | the revision is never published again |
| `merged` | the owner merged the pull request | the next publication opens a new one |

A line that does not parse (torn by a crash mid-write) is skipped with a warning: the
worst it loses is one publication's record, and the next round finds the pull request
on the Hub and sees its card already carries those results.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modelcards.publications import CardResults, Published

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PullRequest:
    """The Arena's pull request on a repo: its number, address, and whose results it carries."""

    num: int
    url: str
    revision: str


@dataclass
class LedgerState:
    """The ledger's lines applied in order."""

    published: dict[tuple[str, str], Published] = field(default_factory=dict)
    declined: dict[tuple[str, str], str] = field(default_factory=dict)
    """(repo, revision) -> why it is never published."""
    pull_requests: dict[str, PullRequest] = field(default_factory=dict)
    """repo -> the pull request its results go to (gone once merged or closed)."""

    def apply(self, entry: dict[str, Any]) -> None:
        key = (str(entry["repo_id"]), str(entry["revision"]))
        kind = entry["event"]
        if kind == "published":
            self.published[key] = Published(CardResults.from_dict(entry["results"]), float(entry["at"]))
            self.pull_requests[key[0]] = PullRequest(int(entry["pr_num"]), str(entry["pr_url"]), key[1])
        elif kind == "declined":
            self.declined[key] = str(entry["reason"])
            current = self.pull_requests.get(key[0])
            if current is not None and current.num == entry.get("pr_num"):
                del self.pull_requests[key[0]]
        elif kind == "merged":
            self.pull_requests.pop(key[0], None)
        else:
            raise ValueError(f"unknown ledger event {kind!r}")


class PublicationLedger:
    """The ledger file at `path` and its current state."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._state = LedgerState()
        if self.path.exists():
            for number, line in enumerate(self.path.read_bytes().split(b"\n"), start=1):
                if not line.strip():
                    continue
                try:
                    self._state.apply(json.loads(line))
                except (ValueError, KeyError, TypeError) as exc:
                    log.warning("model-card ledger %s: line %d skipped (%s: %s)", self.path, number, type(exc).__name__, exc)

    @property
    def state(self) -> LedgerState:
        return self._state

    def _append(self, entry: dict[str, Any]) -> None:
        with self._lock:
            with open(self.path, "ab") as f:
                if f.tell() and not self._ends_with_newline():
                    f.write(b"\n")  # never glue a new line to a torn one
                f.write(json.dumps(entry, sort_keys=True).encode() + b"\n")
                f.flush()
                os.fsync(f.fileno())
            self._state.apply(entry)

    def _ends_with_newline(self) -> bool:
        with open(self.path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) == b"\n"

    def published(self, results: CardResults, *, pr: PullRequest, reason: str, at: float | None = None) -> None:
        self._append({"event": "published", "repo_id": results.repo_id, "revision": results.revision,
                      "at": time.time() if at is None else at, "results": results.to_dict(),
                      "pr_num": pr.num, "pr_url": pr.url, "reason": reason})

    def declined(self, repo_id: str, revision: str, *, reason: str, pr_num: int | None = None) -> None:
        self._append({"event": "declined", "repo_id": repo_id, "revision": revision, "at": time.time(),
                      "reason": reason, "pr_num": pr_num})

    def merged(self, repo_id: str, pr: PullRequest) -> None:
        self._append({"event": "merged", "repo_id": repo_id, "revision": pr.revision, "at": time.time(),
                      "pr_num": pr.num, "pr_url": pr.url})
