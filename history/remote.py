"""One match's replay or logs read straight from the Hub dataset, by HTTP Range.

For a reader without the Space's folder (anyone with the dataset's id). A match's file is
either still loose (`replays/loose/<id[:2]>/<id>.<writer>.replay`, `<id>.replay` before
writers, or `replays/<id>.replay` in the flat layout) or in a bundle of the day the match started (`replays/YYYY/MM/DD/*.bundle`,
`history.bundle`): the day comes from the match's `started_at`, so a reader lists one
folder, reads each bundle's head (its index) and then the one entry, a few small requests
however large the bundle, through `HfFileSystem` (the unmodified client).

Example:
    >>> hub = HubFiles("nmmo-arena/match-history")  # doctest: +SKIP
    >>> data = hub.replay("0b6d...", started_at="2026-12-01T10:15:00+00:00")  # doctest: +SKIP
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

from huggingface_hub.errors import EntryNotFoundError

from history import bundle
from history.store import LOGS, MATCH_ID, REPLAYS, FileKind, day_folder


class HubFiles:
    """Per-match files of a history dataset on the Hub.

    Args:
        repo_id (`str`): the dataset (`owner/name`).
        fs (`HfFileSystem`, *optional*): the client (made from `endpoint` and `token` if not given).
        endpoint (`str`, *optional*): the Hub, for a client made here.
        token (`str`, *optional*): a token, for a client made here (reading a public dataset needs none).
        revision (`str`, *optional*): a commit or branch (default: main).
        listing_ttl_s (`float`, *optional*): how long a folder's listing is reused. Reading
            many matches in turn (the analytics working through a restored history) lists
            each day's folder once rather than once per match; a bundle's index is kept
            for good (a bundle is never rewritten).
    """

    def __init__(self, repo_id: str, *, fs: Any = None, endpoint: str | None = None, token: str | None = None,
                 revision: str | None = None, listing_ttl_s: float = 10.0):
        if fs is None:
            from huggingface_hub import HfFileSystem

            fs = HfFileSystem(endpoint=endpoint, token=token)
        self.fs = fs
        self.repo_id = repo_id
        self.revision = revision
        self.requests = 0
        """Files opened or folders listed so far (each one or two HTTP requests)."""
        self.listing_ttl_s = listing_ttl_s
        self._listings: dict[str, tuple[float, list[str]]] = {}
        self._loose_files: dict[str, tuple[float, dict[str, str]]] = {}
        self._indexes: OrderedDict[str, bundle.BundleIndex] = OrderedDict()

    def _ls(self, folder: str) -> list[str]:
        """The files of a folder of the dataset ([] for none), listed again after `listing_ttl_s`."""
        now = time.monotonic()
        kept = self._listings.get(folder)
        if kept is not None and now - kept[0] < self.listing_ttl_s:
            return kept[1]
        self.requests += 1
        try:
            names = list(self.fs.ls(self._path(folder), detail=False, refresh=True))
        except FileNotFoundError:
            names = []
        if len(self._listings) > 1024:
            self._listings.clear()
        self._listings[folder] = (now, names)
        return names

    def _loose(self, kind: FileKind) -> dict[str, str]:
        """The dataset's loose files of `kind`, by match id: one recursive listing (compaction
        leaves few), listed again after `listing_ttl_s`."""
        now = time.monotonic()
        kept = self._loose_files.get(kind.folder)
        if kept is None or now - kept[0] >= self.listing_ttl_s:
            self.requests += 1
            try:
                names = sorted(self.fs.find(self._path(f"{kind.folder}/loose"), detail=False, refresh=True), reverse=True)
            except FileNotFoundError:
                names = []
            kept = (now, {n.rsplit("/", 1)[-1].split(".", 1)[0]: n for n in names if n.endswith(kind.suffix)})
            self._loose_files[kind.folder] = kept
        return kept[1]

    def _path(self, relative: str) -> str:
        at = f"@{self.revision}" if self.revision else ""
        return f"datasets/{self.repo_id}{at}/{relative}"

    def replay(self, match_id: str, *, started_at: str) -> bytes | None:
        """A match's replay bytes as recorded (unchecked: `arena.replay.read` checks them);
        None if the dataset has none for it."""
        return self._find(REPLAYS, match_id, started_at)

    def logs(self, match_id: str, *, started_at: str) -> bytes | None:
        """A match's team logs as recorded (`arena.logs.read` reads them); None if none."""
        return self._find(LOGS, match_id, started_at)

    def has(self, kind: FileKind, match_id: str, *, started_at: str) -> bool:
        """Whether the dataset holds a file of `kind` for the match, read from the same cached
        listings and bundle indexes as a read, without opening the file (the analytics ask it
        of every match of a restored history: most have no replay)."""
        return self._locate(kind, match_id, started_at, read=False) is not None

    def _find(self, kind: FileKind, match_id: str, started_at: str) -> bytes | None:
        found = self._locate(kind, match_id, started_at, read=True)
        return found if isinstance(found, bytes) else None

    def _locate(self, kind: FileKind, match_id: str, started_at: str, *, read: bool) -> bytes | str | None:
        """The match's file (its bytes if `read`, else its name on the Hub); None if none."""
        if not MATCH_ID.fullmatch(match_id or ""):
            return None
        day = day_folder(started_at)
        if day is not None:  # bundled: compaction leaves nothing loose for long
            for name in sorted(self._ls(f"{kind.folder}/{day}"), reverse=True):
                if not name.endswith(".bundle"):
                    continue
                known = self._indexes.get(name)
                if known is not None:
                    if match_id not in known:
                        continue  # a bundle's index, read once, says it is not there
                    if not read:
                        return name
                self.requests += 1
                with self.fs.open(name, "rb", block_size=bundle.HEAD_BYTES, cache_type="none") as f:
                    index = bundle.read_index(f)  # one request reads the index and (when read) the entry
                    self._indexes[name] = index
                    while len(self._indexes) > 256:
                        self._indexes.popitem(last=False)
                    if match_id in index:
                        return bundle.read_entry(f, index, match_id) if read else name
        flat = kind.flat(match_id)  # the layout before loose folders: listed with the kind's folder
        flat_here = flat.rsplit("/", 1)[-1] in {n.rsplit("/", 1)[-1] for n in self._ls(kind.folder)}
        if not read:  # every loose file in one listing: asked of many matches, most have none
            return self._loose(kind).get(match_id) or (self._path(flat) if flat_here else None)
        # loose: named by the match, then (since writers) by the writer that recorded it
        names = self._ls(f"{kind.folder}/loose/{match_id[:2]}")
        found = [n for n in sorted(names) if n.rsplit("/", 1)[-1].startswith(f"{match_id}.") and n.endswith(kind.suffix)]
        if flat_here:
            found.append(self._path(flat))
        for name in found:
            self.requests += 1
            try:
                with self.fs.open(name, "rb", block_size=0) as f:
                    return f.read()
            except (FileNotFoundError, EntryNotFoundError):
                continue
        return None
