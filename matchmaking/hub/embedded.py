"""The embedded Hub as the Space runs it, and how other programs on the machine find it.

With no Hub configured (`NMMO_ARENA_HUB` unset) the Space serves `localhub` on DATA/hub,
on `NMMO_ARENA_LOCAL_HUB_PORT` (7861 by default, so the docs can say where it listens;
a free port when that one is taken, or with 0). Writing to it needs its token, made on
the first start and kept in `DATA/local-hub-token` (mode 0600). While it runs, the Space
publishes where it is in `DATA/local-hub.json`:

    {"endpoint": "http://127.0.0.1:7861", "token_file": "local-hub-token",
     "space_url": "http://127.0.0.1:7860", "pid": 12345}

so that `python -m matchmaking.submit` (any program run by the same user) finds the
endpoint and the token on its own. The file goes when the Space stops; one left behind by
a killed Space names an endpoint that no longer answers, which the reader reports.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from arena.errors import DamagedFileError
from arena.files import secret_file, write_atomically
from arena.settings import ArenaSettings

if TYPE_CHECKING:
    from localhub import LocalHub

log = logging.getLogger(__name__)


def port_free(host: str, port: int) -> bool:
    """Whether `port` can be listened on now (as uvicorn binds: with SO_REUSEADDR)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def start_local_hub(settings: ArenaSettings, *, host: str = "127.0.0.1") -> LocalHub:
    """Start `localhub.LocalHub` on the data folder's `hub/` with its token, on
    `NMMO_ARENA_LOCAL_HUB_PORT`, or on a free port when that is 0 or taken. Returns the
    running hub (`.endpoint`)."""
    from localhub import LocalHub

    token = secret_file(settings.local_hub_token_file)
    port = settings.local_hub_port
    if port and not port_free(host, port):
        log.warning("port %d is taken (NMMO_ARENA_LOCAL_HUB_PORT): the embedded Hub listens on a free port instead", port)
        port = 0
    try:
        return LocalHub(settings.local_hub_dir, host=host, port=port, write_token=token).start()
    except RuntimeError:  # taken between the probe and the bind
        if not port:
            raise
        return LocalHub(settings.local_hub_dir, host=host, port=0, write_token=token).start()


@dataclass(frozen=True)
class HubAddress:
    """Where a running Space's embedded Hub listens, and the token that writes to it."""

    endpoint: str
    token: str
    space_url: str | None
    """The Space's own page, where the Submissions tab shows a push's status."""
    source: Path
    """The file this was read from."""


def publish(settings: ArenaSettings, *, endpoint: str, space_url: str | None) -> Path:
    """Write `DATA/local-hub.json` (mode 0600, replaced atomically)."""
    path = settings.local_hub_address_file
    token_file = os.path.relpath(settings.local_hub_token_file, path.parent)
    body = {"endpoint": endpoint, "token_file": token_file, "space_url": space_url, "pid": os.getpid()}
    write_atomically(path, json.dumps(body), mode=0o600)
    return path


def withdraw(settings: ArenaSettings) -> None:
    """Remove `DATA/local-hub.json` if this process wrote it (the Space is stopping)."""
    path = settings.local_hub_address_file
    try:
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError):
        pass


def find(settings: ArenaSettings) -> HubAddress | None:
    """The embedded Hub a Space on this data folder published, or None if it published none.

    Raises:
        `ValueError`: the address file or its token file cannot be read.
    """
    path = settings.local_hub_address_file
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
        token = (path.parent / str(data["token_file"])).read_text().strip()
        return HubAddress(endpoint=str(data["endpoint"]), token=token, space_url=data.get("space_url"), source=path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DamagedFileError(f"{path} cannot be read ({type(exc).__name__}: {exc}); start the Space again to rewrite it.") from None
