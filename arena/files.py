"""The one way the Arena replaces a file (whole or not at all), and makes a secret file.

Every file of the Space's state (history shards, WAL entries, status logs, the writer's
identity, caches, the embedded Hub's address, the live reports of matches in flight) is
written here, so that a crash or a kill -9 at any moment leaves the old file or the new
one, never half of either, and no stray temporary file is ever read as data (their names
start with a dot, which every reader of the history skips).
"""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

__all__ = ["secret_file", "write_atomically"]


def write_atomically(path: Path | str, data: bytes | str | Callable[[IO[Any]], None], *,
                     durable: bool = True, mode: int | None = None) -> None:
    """Replace `path` by `data` in one rename.

    `data` is the bytes (a `str` is written as UTF-8), or a function writing them to the
    open binary file. `durable` also fsyncs the file and its folder, so that the rename
    survives a power cut (what the history needs; a cache or a live report can skip it).
    `mode` sets the file's permissions before it appears (0o600 for a file naming a token).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            if callable(data):
                data(f)
            else:
                f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    if durable:
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


def secret_file(path: Path) -> str:
    """The secret kept in `path`, made (random, mode 0600) on first use: the embedded Hub's
    token, the embedded default's webhook secret and the held-out maps' secret are made this way."""
    path = Path(path)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(16))
    return path.read_text().strip()
