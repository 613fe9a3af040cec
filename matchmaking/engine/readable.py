"""What a team's process may read: the Arena's code it imports, the interpreter with its
packages, and a few system files.

The sandbox grants exactly these (and the team's own policy folder); the engine keeps what
a team must never see, the held-out maps, outside all of them (`matchmaking.engine.maps`).
Written here, below both, so that the two read one list.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from arena import PROJECT_ROOT

#: The Arena's code a team's process may read (it imports parts of it after confinement).
ARENA_CODE = (PROJECT_ROOT / "arena", PROJECT_ROOT / "matchmaking")


def system_readable() -> list[Path]:
    """What every confined process may read besides its policy and the Arena's code: the
    interpreter with its packages, system libraries, and a few devices and settings.
    (`matchmaking.engine.maps` keeps the held-out maps out of all of these.)"""
    system = [Path(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix}]
    system += [Path(p) for p in ("/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/share/zoneinfo", "/etc/localtime",
                                 "/etc/ld.so.cache", "/dev/null", "/dev/zero", "/dev/urandom", "/dev/random",
                                 "/sys/devices/system/cpu", f"/proc/{os.getpid()}")]
    return system
