"""A match's logs: what each sandboxed team wrote to stdout and stderr, line by line.

The runner captures a sandboxed team's two output streams for the whole match
(`matchmaking.sandbox.output`) and stamps every line with the tick during which it was
written and the stream it came from. Built-in teams run in the match process and have no
logs. Each team's output is capped per match (64 KiB by default, `MatchConfig.log_head_bytes`
and `log_tail_bytes`): `BoundedLog` keeps the first `HEAD_BYTES` (48 KiB) and the last
`TAIL_BYTES` (16 KiB), and between the two one gap that says how many bytes were dropped. The head shows how the team started and
what it says every tick; the tail shows what came right before its last fault or its
crash. Reading a flood costs the runner only the read: once the head is full, only the
last 16 KiB of each chunk are even split into lines.

Ticks are those of the match record's faults: 0 while the team is built (import,
`Team(...)`, `reset()`), `t` (1-based) while it decides tick `t`; output after the last
tick carries the last tick asked.

On disk (`history/store.py`, `logs/<match id>.json.gz` beside `replays/<match id>.replay`),
version 1: gzip of one JSON object

    {"version": 1, "match_id": "...",
     "teams": [{"slot": 3, "policy_id": "owner/name", "revision": "<sha>",
                "head_bytes": 49152, "tail_bytes": 16384,
                "total_bytes": N, "dropped_bytes": D, "gap_at": G or null,
                "lines": [[tick, "stdout" | "stderr", "text without its newline"], ...]}]}

with one entry per sandboxed team, in slot order (a team that printed nothing has no
lines). `gap_at` is the index in `lines` where `dropped_bytes` bytes were left out (null
when nothing was). `read` is the checked decoder; `render_text` is the downloadable form.
"""

from __future__ import annotations

import collections
import gzip
import json
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from arena.errors import DamagedFileError
from arena.records import Format, Record

VERSION = 1

#: Bytes of one team's output kept per match by default: the head and the tail below.
LOG_CAP_BYTES = 64 * 1024
TAIL_BYTES = 16 * 1024
HEAD_BYTES = LOG_CAP_BYTES - TAIL_BYTES

#: A line longer than this is kept as several lines of at most this many bytes (a policy
#: printing a megabyte without a newline must not hold a megabyte in a buffer).
MAX_LINE_BYTES = 2000

STREAMS = ("stdout", "stderr")


@dataclass(frozen=True)
class LogLine:
    """One line a team wrote: the tick it was written during, its stream, its text."""

    tick: int
    stream: str
    text: str

    FORMAT = Format(row=True)  # [tick, stream, text]: the file holds one per line written


@dataclass(frozen=True)
class TeamLog(Record):
    """One sandboxed team's output in one match, capped (see the module docstring)."""

    slot: int
    policy_id: str
    revision: str
    lines: tuple[LogLine, ...]
    total_bytes: int
    """Bytes the team wrote, both streams together."""
    dropped_bytes: int = 0
    """Bytes left out between the head and the tail."""
    gap_at: int | None = None
    """Index in `lines` where the dropped bytes were (None: nothing dropped)."""
    head_bytes: int = HEAD_BYTES
    """The cap this log was kept under: its first `head_bytes` ..."""
    tail_bytes: int = TAIL_BYTES
    """... and its last `tail_bytes`."""

    FORMAT = Format(layout=("slot", "policy_id", "revision", "head_bytes", "tail_bytes", "total_bytes", "dropped_bytes",
                            "gap_at", "lines"))  # the order of the module docstring's format

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TeamLog:
        """Read one team's entry of the file.

        Raises:
            `DamagedFileError`: a line of a stream other than stdout and stderr.
        """
        log = super().from_dict(data)
        for line in log.lines:
            if line.stream not in STREAMS:
                raise DamagedFileError(f"unknown stream {line.stream!r}")
        return log


class BoundedLog:
    """Turns a team's raw output into stamped lines, keeping at most `head + tail` bytes.

    Pure (no I/O): `feed` the bytes read from a stream with the tick they belong to, then
    `close`. A line's tick is the tick during which its first byte was read.

    Example:
        >>> log = BoundedLog(head_bytes=8, tail_bytes=8)
        >>> log.feed("stdout", 1, b"one\\ntwo\\nthree\\nfour\\n")
        >>> [(l.tick, l.text) for l in log.close(slot=0, policy_id="p", revision="r").lines]
        [(1, 'one'), (1, 'two'), (1, 'four')]
    """

    def __init__(self, *, head_bytes: int = HEAD_BYTES, tail_bytes: int = TAIL_BYTES, max_line_bytes: int = MAX_LINE_BYTES):
        self.head_bytes, self.tail_bytes, self.max_line = head_bytes, tail_bytes, max_line_bytes
        self.head: list[LogLine] = []
        self.tail: collections.deque[tuple[LogLine, int]] = collections.deque()  # (line, bytes it held)
        self._head_used = 0
        self._tail_used = 0
        self._head_full = False
        self.total = 0
        self.dropped = 0
        self._pending: dict[str, tuple[int, bytearray]] = {}  # stream -> (tick of its first byte, bytes)

    def feed(self, stream: str, tick: int, data: bytes) -> None:
        """Take `data` read from `stream` during `tick`."""
        if not data:
            return
        self.total += len(data)
        if self._head_full and len(data) > self.tail_bytes:
            # a flood: everything but the last tail's worth would be pushed out anyway
            cut = len(data) - self.tail_bytes
            pending = self._pending.pop(stream, None)
            self.dropped += cut + (len(pending[1]) if pending else 0)
            data = data[cut:]
        start, buffer = self._pending.get(stream, (tick, bytearray()))
        buffer += data
        lines = buffer.split(b"\n")
        rest = lines.pop()
        for raw in lines:
            self._line(start, stream, raw, len(raw) + 1)
            start = tick
        while len(rest) > self.max_line:
            self._line(start, stream, rest[: self.max_line], self.max_line)
            rest, start = rest[self.max_line:], tick
        if rest:
            self._pending[stream] = (start, bytearray(rest))
        else:
            self._pending.pop(stream, None)

    def _line(self, tick: int, stream: str, raw: bytes | bytearray, size: int) -> None:
        while len(raw) > self.max_line:  # a long line read in one piece
            self._line(tick, stream, raw[: self.max_line], self.max_line)
            raw, size = raw[self.max_line:], size - self.max_line
        line = LogLine(tick, stream, bytes(raw).decode("utf-8", errors="replace"))
        if not self._head_full and self._head_used + size <= self.head_bytes:
            self.head.append(line)
            self._head_used += size
            return
        self._head_full = True
        self.tail.append((line, size))
        self._tail_used += size
        while self._tail_used > self.tail_bytes and self.tail:
            _, evicted = self.tail.popleft()
            self._tail_used -= evicted
            self.dropped += evicted

    def last_text(self, chars: int) -> str:
        """The last `chars` characters written (both streams, line order), for a crash's
        reason: a traceback's last lines."""
        texts = [line.text for line in self.head[-200:]] + [line.text for line, _ in list(self.tail)[-200:]]
        texts += [bytes(buffer).decode("utf-8", errors="replace") for _, buffer in self._pending.values()]
        return "\n".join(texts)[-chars:].strip()

    def close(self, *, slot: int, policy_id: str, revision: str) -> TeamLog:
        """Flush unterminated lines and return the team's log."""
        for stream, (tick, buffer) in sorted(self._pending.items()):
            self._line(tick, stream, bytes(buffer), len(buffer))
        self._pending.clear()
        lines = (*self.head, *(line for line, _ in self.tail))
        return TeamLog(
            slot=slot,
            policy_id=policy_id,
            revision=revision,
            lines=lines,
            total_bytes=self.total,
            dropped_bytes=self.dropped,
            gap_at=len(self.head) if self.dropped else None,
            head_bytes=self.head_bytes,
            tail_bytes=self.tail_bytes,
        )


class MatchLogs:
    """Collects one match's team logs as the runner closes its teams; `finish` returns
    the bytes (None when no team was sandboxed: built-in teams have no logs)."""

    def __init__(self) -> None:
        self.teams: list[TeamLog] = []
        self.data: bytes | None = None

    def add(self, log: TeamLog) -> None:
        self.teams.append(log)

    def finish(self, *, match_id: str) -> bytes | None:
        self.data = encode(match_id, self.teams) if self.teams else None
        return self.data


def encode(match_id: str, teams: Iterable[TeamLog]) -> bytes:
    """The on-disk bytes of a match's logs (see the module docstring)."""
    body = {
        "version": VERSION,
        "match_id": match_id,
        "teams": [team.to_dict() for team in sorted(teams, key=lambda t: t.slot)],
    }
    return gzip.compress(json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode(), compresslevel=6, mtime=0)


def read(data: bytes) -> tuple[str, list[TeamLog]]:
    """Decode a match's logs: (match id, team logs in slot order), checked whole.

    Raises:
        `DamagedFileError`: not a log file of this version, or cut short or corrupt.
    """
    try:
        body = json.loads(gzip.decompress(data))
        if not isinstance(body, dict) or body.get("version") != VERSION:
            raise DamagedFileError(f"log version {body.get('version') if isinstance(body, dict) else '?'} is not supported "
                             f"(this code reads {VERSION})")
        teams = [TeamLog.from_dict(team) for team in body["teams"]]
        match_id = str(body["match_id"])
    except (OSError, EOFError, ValueError, KeyError, TypeError, zlib.error) as exc:
        raise DamagedFileError(f"these match logs are damaged and cannot be read ({type(exc).__name__}: {exc})") from exc
    return match_id, teams


def render_text(match_id: str, teams: Iterable[TeamLog]) -> str:
    """The downloadable text of one or more teams' logs: one line per written line,
    `tick   12 stdout | text`, with the gap where bytes were dropped."""
    out = []
    for team in teams:
        out.append(f"# match {match_id}, team {team.slot}: {team.policy_id}@{team.revision[:12]}, "
                   f"{team.total_bytes} bytes written, {team.dropped_bytes} dropped "
                   f"(kept: the first {_size(team.head_bytes)} and the last {_size(team.tail_bytes)})")
        if not team.lines:
            out.append("# (printed nothing)")
        for index, line in enumerate(team.lines):
            if index == team.gap_at:
                out.append(f"[... {team.dropped_bytes} bytes dropped]")
            out.append(f"tick {line.tick:4d} {line.stream} | {line.text}")
        if team.gap_at is not None and team.gap_at >= len(team.lines):
            out.append(f"[... {team.dropped_bytes} bytes dropped]")
    return "\n".join(out) + "\n"


def _size(n: int) -> str:
    return f"{n // 1024} KiB" if n % 1024 == 0 else f"{n} bytes"
