"""Bundles: many matches' files (replays, or team logs) in one file, each read by range.

The history keeps one replay and one log file per match only until compaction packs
them (`history.store.HistoryStore.compact`): a Hub repo should hold fewer than 100,000
files, a folder fewer than 10,000 entries, and at 250 matches an hour one file per match
passes both within weeks. A bundle is written once and never changed, so a reader that
found it may read it at any time.

Layout (version 1), the index first so that one read of the head finds any entry:

    b"NMBUNDL1" | u32 count | u16 id width | count ids (ASCII, NUL-padded, sorted)
                | count x (u64 offset, u32 length) | the entries' bytes, in id order

all little-endian; offsets count from the start of the file. An entry is the file's
bytes as they were (a replay is `arena.replay`'s gzip, a log `arena.logs`' gzip), so
a reader checks it as it checks a loose file. The index of 1,000 matches is 32 KB: a
reader (local, or on the Hub by HTTP Range through `HfFileSystem`) reads `HEAD_BYTES`,
finds the id by binary search, and reads that one entry.
"""

from __future__ import annotations

import bisect
import io
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import BinaryIO

from arena.errors import DamagedFileError

MAGIC = b"NMBUNDL1"
_FIXED = struct.Struct("<8sIH")
_SPAN = struct.Struct("<QI")

#: Bytes read first from a bundle: its whole index up to about 2,000 entries.
HEAD_BYTES = 64 * 1024


def pack(entries: Mapping[str, bytes]) -> bytes:
    """The bundle of `entries` (match id -> file bytes).

    Example:
        >>> data = pack({"b": b"two", "a": b"one"})
        >>> index = BundleIndex.parse(data)
        >>> data[slice(*index.span("b"))]
        b'two'
    """
    sink = io.BytesIO()
    write(sink, {m: len(d) for m, d in entries.items()}, entries.__getitem__)
    return sink.getvalue()


def write(f: BinaryIO, sizes: Mapping[str, int], read: Callable[[str], bytes]) -> None:
    """Write the bundle of the entries whose sizes are `sizes` (match id -> bytes) to `f`,
    reading each entry's bytes with `read(match_id)` as it goes (one in memory at a time).

    Raises:
        `ValueError`: an entry's bytes are not as long as `sizes` said.
    """
    ids = sorted(sizes, key=str.encode)
    width = max((len(i.encode()) for i in ids), default=1)
    offset = _FIXED.size + len(ids) * (width + _SPAN.size)
    spans = []
    for match_id in ids:
        spans.append(_SPAN.pack(offset, sizes[match_id]))
        offset += sizes[match_id]
    f.write(_FIXED.pack(MAGIC, len(ids), width) + b"".join(i.encode().ljust(width, b"\0") for i in ids) + b"".join(spans))
    for match_id in ids:
        data = read(match_id)
        if len(data) != sizes[match_id]:
            raise DamagedFileError(f"entry {match_id} has {len(data)} bytes, not the {sizes[match_id]} its index says")
        f.write(data)


@dataclass(frozen=True)
class BundleIndex:
    """A bundle's index: which matches it holds, and where each one's bytes are (read
    in place: a binary search over the fixed-width ids, nothing parsed up front)."""

    head: bytes
    count: int
    width: int

    @staticmethod
    def head_size(head: bytes) -> int:
        """How many bytes of the file the index takes (at least the fixed part must be given).

        Raises:
            `DamagedFileError`: not a bundle.
        """
        if len(head) < _FIXED.size:
            raise DamagedFileError(f"not a bundle: {len(head)} bytes, shorter than its header")
        magic, count, width = _FIXED.unpack_from(head)
        if magic != MAGIC or width == 0:
            raise DamagedFileError(f"not a bundle (it starts with {magic!r}, not {MAGIC!r})")
        return _FIXED.size + count * (width + _SPAN.size)

    @classmethod
    def parse(cls, head: bytes) -> BundleIndex:
        """The index from the first `head_size` bytes (or more) of a bundle.

        Raises:
            `DamagedFileError`: not a bundle, or its index is cut short.
        """
        size = cls.head_size(head)
        if len(head) < size:
            raise DamagedFileError(f"the bundle's index is cut short ({len(head)} of {size} bytes)")
        _, count, width = _FIXED.unpack_from(head)
        return cls(bytes(head[:size]), count, width)

    def __len__(self) -> int:
        return self.count

    def __contains__(self, match_id: str) -> bool:
        return self.span(match_id) is not None

    def _id(self, k: int) -> bytes:
        start = _FIXED.size + k * self.width
        return self.head[start : start + self.width].rstrip(b"\0")

    def names(self) -> list[str]:
        return [self._id(k).decode() for k in range(self.count)]

    def span(self, match_id: str) -> tuple[int, int] | None:
        """(first byte, end byte) of `match_id`'s entry; None if the bundle lacks it."""
        key = match_id.encode()
        if len(key) > self.width:
            return None
        k = bisect.bisect_left(range(self.count), key, key=self._id)
        if k >= self.count or self._id(k) != key:
            return None
        offset, length = _SPAN.unpack_from(self.head, _FIXED.size + self.count * self.width + k * _SPAN.size)
        return offset, offset + length


def read_index(f: BinaryIO) -> BundleIndex:
    """The index of the open bundle `f` (two reads at most: `HEAD_BYTES`, then the rest).

    Raises:
        `DamagedFileError`: not a bundle, or cut short.
    """
    f.seek(0)
    head = f.read(HEAD_BYTES)
    size = BundleIndex.head_size(head)
    if size > len(head):
        head += f.read(size - len(head))
    return BundleIndex.parse(head)


def read_entry(f: BinaryIO, index: BundleIndex, match_id: str) -> bytes | None:
    """`match_id`'s bytes from the open bundle `f` (one ranged read); None if it lacks them.

    Raises:
        `DamagedFileError`: the bundle ends before the entry does.
    """
    span = index.span(match_id)
    if span is None:
        return None
    f.seek(span[0])
    data = f.read(span[1] - span[0])
    if len(data) != span[1] - span[0]:
        raise DamagedFileError(f"the bundle is cut short: entry {match_id} has {len(data)} of {span[1] - span[0]} bytes")
    return data
