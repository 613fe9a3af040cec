"""Who writes the history dataset: each writer's id, its heartbeat, and which writer leads.

A Space's disk is wiped on every restart and, during a rebuild, the old and the new
container run side by side; a second Space or a Ray head may push to the same dataset.
So the dataset has writers, and three rules keep them from harming one another:

1. **Every file a writer creates carries its id** (`w` and 12 hex digits, made once per
   data folder and kept in `DATA/writer.json`): shards, bundles, its journals
   (`history.journal`) and its heartbeat. A writer pushes only files of its own, so no
   push can replace another writer's file. A wiped disk is a new writer: an id is never
   reused, so a restarted Space can never push a shorter copy of a file it wrote before.
2. **One leader decides the lifecycle.** Each writer keeps a heartbeat in the dataset,
   `writers/<id>.json` (when it started, when it last pushed, whether it stopped), written
   before each push. The leader is the live writer that started first: discovery,
   validation, PvE, audits and model cards are its work alone, so two writers never play
   the same owed PvE match nor record the same verdict twice. Every writer plays PvP
   (random line-ups: no two writers draw the same match). When the leader stops cleanly
   its last heartbeat says so and the next writer leads at its next pull; when it is
   killed, once its heartbeat is older than `ttl_s` (three pushes and a minute). Killed
   and restarted on its own disk before that, it goes on leading (its run's start is
   kept): the lead never passes to another writer while the old leader's last matches are
   only on its disk.
3. **Readers take the union**: every writer's shards and journals, each match and each
   event once (`history.store` and `history.journal` drop duplicates).
4. **Claims**: each heartbeat names the PvE matches its writer is playing or has recorded
   and not flushed (`claiming`), and no writer plays a match another live writer claims.

A writer does not lead before it has read the dataset's heartbeats (`history.restore`
marks `caught_up`), so a new container never takes the lead from a live old one.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from arena.errors import DamagedFileError
from arena.files import write_atomically
from arena.records import Record

log = logging.getLogger(__name__)

#: A writer's id, as every file it creates carries it.
WRITER_ID = re.compile(r"w[0-9a-f]{12}")

#: Where a data folder keeps its writer's identity (outside the dataset folder).
IDENTITY_FILE = "writer.json"

#: The journals of the layout before writers: (single file in the history folder, its writer's file name stem).
LEGACY_JOURNALS = ("submissions/statuses.jsonl", "audits/audits.jsonl")


@dataclass(frozen=True)
class Identity(Record):
    """This data folder's writer."""

    writer: str
    created_at: float
    legacy: bool = False
    """The folder held history from before writer ids: its files without a writer id in
    their names (flushed before the upgrade) are this writer's to compact."""


def _write_json(path: Path, data: dict) -> None:
    write_atomically(path, json.dumps(data, sort_keys=True))


def identity(data_dir: Path, history_dir: Path, *, ledger: Path | None = None) -> Identity:
    """This data folder's writer, made on its first start with writers.

    On that first start, a folder that already holds a history from before writers is
    migrated without losing an event: its single status and audit logs (and the model-card
    ledger `ledger`, which lived outside the dataset) are copied into this writer's own
    files; the single files are never written again (the dataset keeps its copy, and
    readers drop the events the two hold in common).
    """
    path = Path(data_dir) / IDENTITY_FILE
    if path.exists():
        data = json.loads(path.read_text())
        found = Identity.from_dict(data)
        if not WRITER_ID.fullmatch(found.writer):
            raise DamagedFileError(f"{path} names writer {found.writer!r}, not an id like w0123456789ab: delete the file "
                             "for a new one (a new writer loses nothing: its files are new)")
        return found
    history_dir = Path(history_dir)
    legacy = any((history_dir / folder).is_dir() and any((history_dir / folder).rglob("*.*"))
                 for folder in ("data", "replays", "logs", "wal"))
    made = Identity(f"w{secrets.token_hex(6)}", time.time(), legacy)
    for relative in LEGACY_JOURNALS:
        single = history_dir / relative
        if single.exists():
            _copy_into(single, single.with_name(f"{single.stem}-{made.writer}{single.suffix}"))
            legacy = True
    if ledger is not None and Path(ledger).exists():
        _copy_into(Path(ledger), history_dir / "modelcards" / f"publications-{made.writer}.jsonl")
    made = Identity(made.writer, made.created_at, legacy)
    _write_json(path, made.to_dict())
    if legacy:
        log.info("history in %s migrated to writer %s: the single status and audit logs are read, never written again",
                 history_dir, made.writer)
    return made


def _copy_into(source: Path, target: Path) -> None:
    """Copy a JSON-lines log, ending its last line if a crash left it open."""
    data = source.read_bytes()
    write_atomically(target, data if not data or data.endswith(b"\n") else data + b"\n")


@dataclass(frozen=True)
class Heartbeat(Record):
    """A writer's last word in the dataset (`writers/<id>.json`)."""

    writer: str
    started_at: float
    """When this run of the writer started (Unix time): the earliest live one leads."""
    at: float
    """When it last wrote this heartbeat (before a push)."""
    stopped: bool = False
    """It stopped cleanly: another writer may lead at once."""
    host: str = ""
    claims: tuple[str, ...] = ()
    """The PvE matches it was playing, or had recorded and not yet flushed, as it wrote
    this: no other writer plays them while it lives (`Writers.claimed_elsewhere`)."""



class Writers:
    """The dataset's writers as this writer knows them, and this writer's heartbeat.

    Args:
        history_dir (`Path`): the history folder (its `writers/` holds the heartbeats).
        writer (`str`): this writer's id.
        ttl_s (`float`): a heartbeat older than this is a dead writer's.
        clock (`Callable`, *optional*): now, in Unix seconds.
    """

    def __init__(self, history_dir: Path, writer: str, *, ttl_s: float, clock: Callable[[], float] = time.time,
                 recorded: Callable[[], Iterable[str]] = tuple):
        self.folder = Path(history_dir) / "writers"
        self.recorded = recorded
        """The matches this writer recorded and has not flushed yet (`HistoryStore.waiting`)."""
        self._playing: set[str] = set()
        self._claims_lock = threading.Lock()
        self.writer = writer
        self.ttl_s = ttl_s
        self.clock = clock
        self.started_at = self._term(clock())
        self.caught_up = threading.Event()
        """Set once the dataset's heartbeats have been read (`history.restore`): no lead before."""
        self._stopped = False

    @property
    def own(self) -> Path:
        return self.folder / f"{self.writer}.json"

    def _term(self, now: float) -> float:
        """When this writer's run started, as the lead counts it: a writer restarted on its
        own disk while its last heartbeat is still alive (killed, and back within `ttl_s`)
        goes on with the run it had, so it keeps the lead it held rather than handing it to
        a writer that started after it, before its own last matches are on the Hub; after a
        clean stop, or once its heartbeat is dead (another writer may lead by then), it
        starts a new run, the latest."""
        try:
            last = Heartbeat.from_dict(json.loads(self.own.read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            return now
        return last.started_at if not last.stopped and now - last.at <= self.ttl_s else now

    def beat(self, *, stopped: bool = False) -> Heartbeat:
        """Write this writer's heartbeat (before a push: the push publishes it)."""
        self._stopped = self._stopped or stopped
        with self._claims_lock:
            claims = tuple(sorted(self._playing | set(self.recorded())))
        beat = Heartbeat(self.writer, self.started_at, self.clock(), self._stopped, socket.gethostname(), claims)
        _write_json(self.own, beat.to_dict())
        return beat

    def heartbeats(self) -> list[Heartbeat]:
        """Every writer's last heartbeat in the folder (unreadable ones skipped)."""
        found = []
        for path in sorted(self.folder.glob("w*.json")) if self.folder.is_dir() else []:
            if not WRITER_ID.fullmatch(path.stem):
                continue
            try:
                found.append(Heartbeat.from_dict(json.loads(path.read_text())))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                log.warning("writer heartbeat %s unreadable (%s): that writer counts as gone", path.name, exc)
        return found

    def live(self, now: float | None = None) -> list[Heartbeat]:
        """The writers alive now (this one while it runs), earliest started first."""
        now = self.clock() if now is None else now
        alive = [b for b in self.heartbeats() if b.writer != self.writer and not b.stopped and now - b.at <= self.ttl_s]
        if not self._stopped:
            alive.append(Heartbeat(self.writer, self.started_at, now, False))
        return sorted(alive, key=lambda b: (b.started_at, b.writer))

    def leader(self, now: float | None = None) -> str | None:
        """The id of the writer that leads now (None once this one stopped and no other lives)."""
        alive = self.live(now)
        return alive[0].writer if alive else None

    def leads(self, now: float | None = None) -> bool:
        """Whether this writer leads: it has read the dataset's heartbeats and is the live
        writer that started first."""
        return self.caught_up.is_set() and self.leader(now) == self.writer

    @contextmanager
    def claiming(self, match_ids: Iterable[str]) -> Iterator[None]:
        """Claim the PvE matches `match_ids` while they are played: the heartbeats written
        meanwhile (before each push) name them, and no other writer plays them."""
        ids = set(match_ids)
        with self._claims_lock:
            self._playing |= ids
        try:
            yield
        finally:
            with self._claims_lock:
                self._playing -= ids

    def claimed_elsewhere(self, now: float | None = None) -> set[str]:
        """The matches other live writers claim (`Heartbeat.claims`): a writer that has just
        taken the lead does not play them while their claimer lives; a dead writer's claims
        die with it (its matches are then either in the dataset, or lost with its disk)."""
        return {m for b in self.live(now) if b.writer != self.writer for m in b.claims}

    def role(self) -> str:
        """`leader`, `follower (w... leads)` or `catching up`, for the operator line."""
        if not self.caught_up.is_set():
            return "catching up with the dataset"
        leader = self.leader()
        return "leader" if leader == self.writer else f"follower ({leader} leads: it plays PvE and validates; this one plays PvP)"
