"""What killed team processes leave behind, and where it lies: each team's (and zygote's)
private working folder and shared-memory block are named by the match process that made
them, so that those of a process gone (kill -9) are found and removed at the next start."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from matchmaking.sandbox.protocol import SHM_PREFIX, owner_tag

#: Where every team process's private working folder (and each zygote's home) is made:
#: `<kind>-<owner_tag of the match process>-<random>`, so that the folders of a match process
#: killed before it could clean up are found and removed at the next start. One per user
#: of the Arena; open to passing through (0711) and to nothing else, since a team that runs
#: as its own user (`confine.team_ids`) must reach its folder, and only its folder.
SANDBOX_ROOT = Path(tempfile.gettempdir()) / f"nmmo-arena-sandboxes-{os.getuid()}"


def private_folder(kind: str) -> Path:
    """A new private working folder of this process, for a team or a zygote (`SANDBOX_ROOT`)."""
    SANDBOX_ROOT.mkdir(mode=0o711, exist_ok=True)
    os.chmod(SANDBOX_ROOT, 0o711)
    return Path(tempfile.mkdtemp(prefix=f"{kind}-{owner_tag()}-", dir=SANDBOX_ROOT))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_sandboxes() -> int:
    """Remove the working folders and shared-memory blocks of match processes that are
    gone (killed with kill -9, say: their teams' folders and memory outlive them).
    Returns how many were removed. Safe while other match processes run: only the
    leftovers of dead processes of this PID namespace are touched (`owner_tag`), and only
    this user's (another user's Arena on the same machine keeps its own)."""
    removed = 0
    candidates = [(p, p.name.split("-")) for p in SANDBOX_ROOT.glob("*-*-*-*")] if SANDBOX_ROOT.is_dir() else []
    shm = Path("/dev/shm")
    if shm.is_dir():
        candidates += [(p, ["shm", *p.name[len(SHM_PREFIX):].split("-")]) for p in shm.glob(f"{SHM_PREFIX}*")]
    namespace = owner_tag().split("-")[1]
    for path, parts in candidates:
        try:
            pid = int(parts[1])
        except (IndexError, ValueError):
            continue
        if len(parts) < 4 or parts[2] != namespace:
            continue  # made in another PID namespace: its pid says nothing here about its maker
        try:
            if _alive(pid) or path.lstat().st_uid != os.getuid():
                continue
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        except OSError:  # gone meanwhile, or not ours to remove
            continue
        removed += 1
    return removed
