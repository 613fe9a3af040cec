"""What crosses the boundary between the match and a sandboxed team, and how.

Observations go through shared memory: each tick a team's members' arrays are copied into a
block laid out once per match (`ObservationLayout`), and only a small control message
(tick, alive members) goes down the pipe. Everything the team sends back is length-prefixed
JSON: the match never unpickles anything a policy produced. A message is bounded before it
is decoded: over `MAX_REPLY_BYTES` it is refused unread, nested deeper than `MAX_DEPTH` it
is refused undecoded (a policy can write to its own reply pipe, so its bytes are never
trusted: 300,000 nested arrays once made the decoder raise `RecursionError` in the match),
and once decoded it must have the shape of the message expected (`parse_ready`,
`parse_reply`). Every breach is a `ProtocolError`, which the host turns into the team's
fault.

Both sides import this module: the match process and `matchmaking.sandbox.worker`.
"""

from __future__ import annotations

import json
import mmap
import os
import secrets
import select
import struct
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from arena.errors import NotSendableError, PipeClosedError, ProtocolError
from matchmaking.engine.observations import ObservationLayout

#: Largest reply a team may send for one tick (its actions are a few hundred bytes).
MAX_REPLY_BYTES = 1 << 20

#: Deepest nesting of arrays and objects in a message (an answer needs 4).
MAX_DEPTH = 16

_HEADER = struct.Struct(">I")
_OPEN = np.zeros(256, dtype=np.int8)
_OPEN[[ord("["), ord("{")]] = 1
_OPEN[[ord("]"), ord("}")]] = -1


def nesting_depth(data: bytes) -> int:
    """How deeply arrays and objects nest in JSON text, brackets inside strings ignored.

    Vectorised (a megabyte takes a few milliseconds): a quote opens or closes a string
    unless an odd number of backslashes precedes it.
    """
    if not data:
        return 0
    raw = np.frombuffer(data, dtype=np.uint8)
    positions = np.arange(len(raw))
    backslash = raw == ord("\\")
    last_other = np.maximum.accumulate(np.where(backslash, -1, positions))  # last non-backslash at or before i
    run_before = np.empty(len(raw), dtype=np.int64)  # backslashes right before i
    run_before[0] = 0
    run_before[1:] = positions[:-1] - last_other[:-1]
    quote = (raw == ord('"')) & (run_before % 2 == 0)
    inside = (np.cumsum(quote) % 2).astype(bool) & ~quote
    steps = np.where(inside, 0, _OPEN[raw])
    return int(np.cumsum(steps, dtype=np.int64).max(initial=0))


def send_message(fd: int, message: Mapping[str, Any]) -> None:
    """Write one length-prefixed JSON message to `fd` (blocking)."""
    data = json.dumps(message, separators=(",", ":")).encode()
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def receive_message(fd: int, *, timeout: float | None, limit: int = MAX_REPLY_BYTES) -> dict[str, Any] | None:
    """Read one message from `fd`; None if nothing complete arrived within `timeout` s.

    Raises:
        `PipeClosedError`: the pipe closed.
        `ProtocolError`: the message is over `limit` bytes or not JSON.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    header = _read_exactly(fd, _HEADER.size, deadline)
    if header is None:
        return None
    (length,) = _HEADER.unpack(header)
    if length > limit:
        raise ProtocolError(f"message of {length} bytes is over the {limit}-byte limit")
    # a header without its body within a second is a broken peer, not a slow one
    body = _read_exactly(fd, length, None if deadline is None else max(deadline, time.monotonic() + 1.0))
    if body is None:
        raise ProtocolError("message cut off")
    depth = nesting_depth(body)
    if depth > MAX_DEPTH:
        raise ProtocolError(f"message nests {depth} levels deep, over the limit of {MAX_DEPTH}")
    try:
        message = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"message is not JSON: {str(exc)[:120]}") from exc
    if not isinstance(message, dict):
        raise ProtocolError("message is not a JSON object")
    return message


@dataclass(frozen=True)
class Ready:
    """The team's process answered its instructions: built, or not."""

    ok: bool
    confinement: dict[str, str]
    kind: str = ""
    """For a failure: `INIT` or `MEMORY`."""
    message: str = ""


@dataclass(frozen=True)
class Reply:
    """The team's answer to one tick: its actions, or the error that replaced them."""

    tick: int
    actions: Any = None
    error_kind: str = ""
    """`ERROR`, `INVALID` or `MEMORY` when `act()` failed; "" with actions."""
    message: str = ""
    cpu_s: float = 0.0
    wall_s: float = 0.0


def _field(message: Mapping[str, Any], key: str, types: tuple[type, ...], default: Any = ...) -> Any:
    if key not in message:
        if default is ...:
            raise ProtocolError(f"message has no {key!r}")
        return default
    value = message[key]
    if not isinstance(value, types) or isinstance(value, bool) and bool not in types:
        raise ProtocolError(f"{key!r} is a {type(value).__name__}, not a {' or '.join(t.__name__ for t in types)}")
    return value


def parse_ready(message: Mapping[str, Any]) -> Ready:
    """The answer to `init`, checked.

    Raises:
        `ProtocolError`: any other message, or one of the wrong shape.
    """
    kind = message.get("type")
    if kind == "ready":
        confinement = _field(message, "confinement", (dict,), {})
        return Ready(True, {str(k): str(v) for k, v in confinement.items()})
    if kind == "init_error":
        error = _field(message, "kind", (str,), "INIT")
        return Ready(False, {}, "MEMORY" if error == "MEMORY" else "INIT", str(_field(message, "message", (str,), "")))
    raise ProtocolError(f"expected a ready message, got {str(kind)[:40]!r}")


def parse_reply(message: Mapping[str, Any]) -> Reply:
    """An answer to `act`, checked (the actions themselves are checked by the runner).

    Raises:
        `ProtocolError`: any other message, or one of the wrong shape.
    """
    kind = message.get("type")
    if kind not in ("actions", "error"):
        raise ProtocolError(f"expected actions, got a message of type {str(kind)[:40]!r}")
    tick = _field(message, "tick", (int,))
    cpu = float(_field(message, "cpu_s", (int, float), 0.0))
    wall = float(_field(message, "wall_s", (int, float), 0.0))
    if not (0 <= cpu < 1e6 and 0 <= wall < 1e6):
        raise ProtocolError("its timings are out of range")
    if kind == "error":
        error = _field(message, "kind", (str,), "ERROR")
        return Reply(tick, error_kind=error if error in ("ERROR", "INVALID", "MEMORY") else "ERROR",
                     message=str(_field(message, "message", (str,), "")), cpu_s=cpu, wall_s=wall)
    return Reply(tick, actions=from_json_safe(message.get("actions")), cpu_s=cpu, wall_s=wall)


def _read_exactly(fd: int, size: int, deadline: float | None) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([fd], [], [], remaining)  # with no time left: one poll
        if not ready:
            if remaining == 0.0:
                if chunks:
                    raise ProtocolError("message cut off")
                return None
            continue
        chunk = os.read(fd, size - len(chunks))
        if not chunk:
            raise PipeClosedError("pipe closed")
        chunks += chunk
    return bytes(chunks)


#: Name prefix of every shared block (`arena-<owner_tag of its creator>-<random>`).
SHM_PREFIX = "arena-"


def owner_tag() -> str:
    """`<pid>-<pid namespace>` of this process, in the names of what it leaves in shared
    places (`/dev/shm`, the sandboxes' folder), so that a later process removes them only
    once their maker is gone (`leftovers.remove_stale_sandboxes`). The namespace matters:
    processes in another PID namespace (a container, a Ray node under `unshare`) share
    `/tmp` and `/dev/shm` with pids that mean nothing here."""
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:  # no /proc: one namespace as far as anyone can tell
        namespace = 0
    return f"{os.getpid()}-{namespace}"


class SharedBlock:
    """A named block of shared memory (`/dev/shm/NAME`), mapped into this process.

    Unlike `multiprocessing.shared_memory`, it is never unmapped explicitly: the mapping
    lives as long as any array viewing it (the env keeps views of it, see
    `matchmaking.engine.game.share_observation_arrays`), so no array can outlive its memory.
    `unlink` only removes the name.
    """

    def __init__(self, name: str, size: int, *, create: bool):
        self.name = name
        path = f"/dev/shm/{name}"
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        fd = os.open(path, flags, 0o600)
        try:
            if create:
                os.ftruncate(fd, size)
            self.buf = memoryview(mmap.mmap(fd, size))
        finally:
            os.close(fd)

    @classmethod
    def create(cls, size: int) -> SharedBlock:
        return cls(f"{SHM_PREFIX}{owner_tag()}-{secrets.token_hex(8)}", size, create=True)

    def unlink(self) -> None:
        try:
            os.unlink(f"/dev/shm/{self.name}")
        except FileNotFoundError:
            pass


class ObservationReader:
    """The team side: each tick, one copy of a member's block into private arrays.

    The policy gets a new top-level dict per tick holding the same arrays (and the same
    `ActionTargets` dict), overwritten every tick: exactly how nmmo's own `Env` hands out
    observations, at one memory copy per member instead of one per array.
    """

    def __init__(self, layout: ObservationLayout, block: memoryview):
        self.layout = layout
        self.shared = np.frombuffer(block, dtype=np.uint8, count=layout.total_bytes).reshape(layout.team_size, layout.agent_bytes)
        self.private = np.zeros_like(self.shared)
        self.templates: list[dict[str, Any]] = []
        self.scalars: list[list[tuple[str, np.ndarray]]] = []
        for views in layout.views(memoryview(self.private.reshape(-1).data)):
            template: dict[str, Any] = {}
            scalars = []
            for field, view in zip(layout.fields, views):
                if not field.shape:
                    scalars.append((field.path[-1], view))
                    continue
                node = template
                for key in field.path[:-1]:
                    node = node.setdefault(key, {})
                node[field.path[-1]] = view
            self.templates.append(template)
            self.scalars.append(scalars)

    def read(self, member: int) -> dict[str, Any]:
        self.private[member] = self.shared[member]
        observation = dict(self.templates[member])
        for key, view in self.scalars[member]:
            observation[key] = int(view)
        return observation


def to_json_safe(value: Any, *, depth: int = 0) -> Any:
    """A policy's answer as plain JSON data: dicts with str/int keys, ints, floats, strings.

    NumPy scalars become Python numbers; anything else (objects, arrays, sets) raises
    `TypeError` naming it, so the team gets an INVALID fault instead of a crash.
    """
    if depth > 6:
        raise NotSendableError("answer is nested too deeply")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if isinstance(key, (np.integer, int)) and not isinstance(key, bool):
                key = f"#{int(key)}"  # JSON keys are strings: mark integer keys to restore them
            elif not isinstance(key, str):
                raise NotSendableError(f"dict key {key!r} of type {type(key).__name__} cannot be sent")
            out[key] = to_json_safe(item, depth=depth + 1)
        return out
    raise NotSendableError(f"value of type {type(value).__name__} cannot be an action")


def from_json_safe(value: Any) -> Any:
    """Undo `to_json_safe`'s key marking: `"#3"` keys become `3` again."""
    if isinstance(value, dict):
        return {
            (int(k[1:]) if isinstance(k, str) and k.startswith("#") and k[1:].lstrip("-").isdigit() else k): from_json_safe(v)
            for k, v in value.items()
        }
    return value
