"""What the Arena published on model cards, durably: JSON lines in the history dataset
(`modelcards/publications-<writer>.jsonl`, one file per writer, `history.journal`), so a
Space restarted on an empty disk knows its pull requests and opens no second one.

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

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.errors import DamagedFileError
from arena.revision import Revision
from history.journal import Journal
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

    published: dict[Revision, Published] = field(default_factory=dict)
    declined: dict[Revision, str] = field(default_factory=dict)
    """revision -> why it is never published."""
    pull_requests: dict[str, PullRequest] = field(default_factory=dict)
    """repo -> the pull request its results go to (gone once merged or closed)."""

    def apply(self, entry: dict[str, Any]) -> None:
        key = Revision(str(entry["repo_id"]), str(entry["revision"]))
        kind = entry["event"]
        if kind == "published":
            self.published[key] = Published(CardResults.from_dict(entry["results"]), float(entry["at"]))
            self.pull_requests[key.policy_id] = PullRequest(int(entry["pr_num"]), str(entry["pr_url"]), key.sha)
        elif kind == "declined":
            self.declined[key] = str(entry["reason"])
            current = self.pull_requests.get(key.policy_id)
            if current is not None and current.num == entry.get("pr_num"):
                del self.pull_requests[key.policy_id]
        elif kind == "merged":
            self.pull_requests.pop(key.policy_id, None)
        else:
            raise DamagedFileError(f"unknown ledger event {kind!r}")


class PublicationLedger:
    """The ledger, in every writer's JSON-lines file beside `path`, and its current state.

    Args:
        path (`Path`): the ledger's single-file name (`history/modelcards/publications.jsonl`
            in the dataset; the Arena's data folder held `model_cards.jsonl` before writers).
        writer (`str`, *optional*): this writer's id: its lines go to
            `publications-<writer>.jsonl` (None: to `path` itself).
    """

    def __init__(self, path: Path, *, writer: str | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.journal = Journal(self.path, writer=writer, order=lambda e: float(e.get("at", 0.0)))
        self._lock = threading.Lock()
        self._state = LedgerState()
        self._signature: tuple = ()
        self.reload()

    def reload(self) -> bool:
        """Read every writer's lines again if any file changed (another writer's pulled
        from the Hub); True if they had."""
        with self._lock:
            signature = self.journal.signature()
            if signature == self._signature:
                return False
            state = LedgerState()
            for entry in self.journal.read():
                try:
                    state.apply(entry)
                except (ValueError, KeyError, TypeError) as exc:
                    log.warning("model-card ledger %s: an entry was skipped (%s: %s)", self.path.parent, type(exc).__name__, exc)
            self._state, self._signature = state, signature
            return True

    @property
    def state(self) -> LedgerState:
        self.reload()
        return self._state

    def _append(self, entry: dict[str, Any]) -> None:
        self.reload()
        with self._lock:
            self.journal.append(entry)
            self._state.apply(entry)
            self._signature = self.journal.signature()

    def published(self, results: CardResults, *, pr: PullRequest, reason: str, at: float | None = None) -> None:
        self._append({"event": "published", "repo_id": results.id.policy_id, "revision": results.id.sha,
                      "at": time.time() if at is None else at, "results": results.to_dict(),
                      "pr_num": pr.num, "pr_url": pr.url, "reason": reason})

    def declined(self, revision: Revision, *, reason: str, pr_num: int | None = None) -> None:
        self._append({"event": "declined", "repo_id": revision.policy_id, "revision": revision.sha, "at": time.time(),
                      "reason": reason, "pr_num": pr_num})

    def merged(self, repo_id: str, pr: PullRequest) -> None:
        self._append({"event": "merged", "repo_id": repo_id, "revision": pr.revision, "at": time.time(),
                      "pr_num": pr.num, "pr_url": pr.url})
