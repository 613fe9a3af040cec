"""The Linux mechanisms that confine a sandboxed team's process, applied to itself.

No library on PyPI wraps these for Python without a container runtime, so they are called
here through `ctypes`, each in a few lines, each optional: `confine()` applies what the
kernel offers and reports what it applied.

- **Landlock** (Linux 5.13+, unprivileged): the process may read only the Python
  installation, the system libraries, the Arena's `matchmaking` code and its own policy
  folder, and write only its working folder; on kernels with Landlock ABI 4+ it may not
  open or accept TCP connections, and on ABI 6+ it may not signal processes or reach
  abstract sockets outside itself. This is what keeps a team out of the history store,
  the Space's files and other submissions, as root or not.
- **Namespaces**: a new, empty network namespace, and a mount namespace in which the
  working folder is a private tmpfs of a fixed size (the disk quota: writing past it
  fails with ENOSPC); as root, or inside a new user namespace that maps only the
  process's own user.
- **seccomp**: no new processes (`fork`, `vfork`, `clone` without `CLONE_THREAD`); threads
  are allowed. Stops fork bombs, including as root, where `RLIMIT_NPROC` does not apply.
  System calls of the x32 ABI (numbers with bit 30 set) are refused outright, as
  libseccomp does, since they would reach `fork` under another number.
- **Capabilities**: all dropped (also those a new user namespace grants), so the team
  cannot undo the above, unmount its quota or regain privileges.
- **rlimits**: file size, CPU seconds, no core dumps; a backstop on address space once the
  interpreter and frameworks are loaded (`limit_memory`; the memory limit itself is on
  resident memory, measured by the host).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import resource
import struct
import sys
from collections.abc import Iterable
from pathlib import Path

from arena.errors import ConfinementError, SandboxViolation
from matchmaking.engine.readable import system_readable
from matchmaking.sandbox import seccomp

_libc = ctypes.CDLL(None, use_errno=True)

_PR_SET_NO_NEW_PRIVS = 38
_PR_CAPBSET_DROP = 24
_CLONE_THREAD = 0x00010000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_CLONE_NEWNS = 0x00020000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 2, 4, 8, 0x4000, 1 << 18

# Landlock (include/uapi/linux/landlock.h); its syscalls share numbers on every architecture.
_SYS_LANDLOCK_CREATE_RULESET, _SYS_LANDLOCK_ADD_RULE, _SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_READ = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
_FS_FILE_RIGHTS = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | (1 << 14) | (1 << 15)  # + TRUNCATE, IOCTL_DEV
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1

def _syscall(number: int, *args) -> int:
    result = _libc.syscall(ctypes.c_long(number), *args)
    return result if result >= 0 else -ctypes.get_errno()


def landlock_abi() -> int:
    """Landlock ABI version the kernel offers; 0 if none."""
    version = _syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    return max(0, version)


def _landlock(read_only: Iterable[Path], read_write: Iterable[Path]) -> str:
    abi = landlock_abi()
    if abi < 1:
        return "not available (the team can read whatever its user can)"
    handled_fs = (1 << 13) - 1  # ABI 1: EXECUTE ... MAKE_SYM
    if abi >= 2:
        handled_fs |= 1 << 13  # REFER
    if abi >= 3:
        handled_fs |= 1 << 14  # TRUNCATE
    if abi >= 5:
        handled_fs |= 1 << 15  # IOCTL_DEV
    handled_net = _NET_BIND_TCP | _NET_CONNECT_TCP if abi >= 4 else 0
    scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("=QQQ", handled_fs, handled_net, scoped)[: 8 if abi < 4 else 16 if abi < 6 else 24]
    buffer = ctypes.create_string_buffer(attr, len(attr))
    ruleset = _syscall(_SYS_LANDLOCK_CREATE_RULESET, buffer, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        return f"not applied (create_ruleset: {os.strerror(-ruleset)})"
    try:
        for paths, access in ((read_only, _FS_READ), (read_write, handled_fs)):
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue  # absent on this machine
                try:
                    allowed = access & handled_fs
                    if not os.path.isdir(path):
                        allowed &= _FS_FILE_RIGHTS
                    rule = ctypes.create_string_buffer(struct.pack("=Qi", allowed, fd), 12)
                    error = _syscall(_SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH), rule, ctypes.c_uint32(0))
                    if error < 0:
                        raise ConfinementError(-error, f"landlock_add_rule({path}): {os.strerror(-error)}")
                finally:
                    os.close(fd)
        error = _syscall(_SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
        if error < 0:
            raise ConfinementError(-error, f"landlock_restrict_self: {os.strerror(-error)}")
    finally:
        os.close(ruleset)
    extras = (", no TCP" if handled_net else "") + (", no signals or abstract sockets outside" if scoped else "")
    return f"Landlock ABI {abi}: read-only system and policy files, writes only in its folder{extras}"


def _map_own_user(uid: int, gid: int) -> None:
    """In a new user namespace, map the process's own user and group (and nothing else)."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def _namespaces() -> tuple[str, bool]:
    """Enter new network and mount namespaces; (what was applied, whether mounts are private)."""
    uid, gid = os.getuid(), os.getgid()
    if _libc.unshare(_CLONE_NEWNET | _CLONE_NEWNS) == 0:
        return "empty network namespace", True
    if _libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET | _CLONE_NEWNS) == 0:
        try:
            _map_own_user(uid, gid)
        except OSError:
            return "empty network namespace (in a user namespace)", False
        return "empty network namespace (in a user namespace)", True
    if _libc.unshare(_CLONE_NEWNET) == 0:
        return "empty network namespace", False
    if _libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) == 0:
        return "empty network namespace (in a user namespace)", False
    return "no namespace available", False


def _disk_quota(workdir: Path, size_mb: int, private_mounts: bool, ids: tuple[int, int] | None) -> str:
    """Mount a tmpfs of `size_mb` over the working folder, seen only by this process."""
    if not private_mounts:
        return f"no mount namespace: the host measures the folder every tick (quota {size_mb} MB)"
    mount = _libc.mount
    mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    if mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:  # nothing propagates out
        return f"not mounted (making mounts private: {os.strerror(ctypes.get_errno())}); the host measures the folder"
    uid, gid = ids or (os.getuid(), os.getgid())
    options = f"size={int(size_mb)}m,mode=0700,uid={uid},gid={gid}".encode()
    if mount(b"tmpfs", str(workdir).encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, options) != 0:
        return f"not mounted ({os.strerror(ctypes.get_errno())}); the host measures the folder every tick"
    return f"its folder is a private {size_mb} MB tmpfs"


#: Teams of a Space running as root run as user and group `TEAM_ID_BASE + their pid`: an id no
#: account, file or other process has (pids are unique while the team lives), so a team can
#: neither read the Space's files (`DATA` is 0700) nor signal, trace or write to anyone else.
TEAM_ID_BASE = 2_000_000_000
NOBODY = 65534

_O_WRITE = 0o1 | 0o2 | 0o100 | 0o1000  # O_WRONLY, O_RDWR, O_CREAT, O_TRUNC
_AF_UNIX = 1
_EPERM, _EACCES, _ENOSYS = errno.EPERM, errno.EACCES, errno.ENOSYS


def _system_call_filter(*, files: bool) -> str:
    """The seccomp layer, which needs no privileges and holds on any kernel since 3.5.

    - processes: no fork, vfork or clone of a process (threads are allowed), no change of CPU;
    - network: sockets of the unix family only, and no connect, bind, listen, accept or
      addressed send at all, so not even an abstract unix socket of the host is reachable;
    - signals: only to itself (its own pid, its own process group, its own threads);
    - no ptrace, process_vm_*, io_uring (whose requests would bypass this filter), bpf,
      perf_event_open, userfaultfd, keyrings, unshare, setns or mounts;
    - with `files` (where Landlock is missing): no file is opened for writing, created,
      removed, renamed, linked or changed anywhere, its own folder included.
    """
    me = os.getpid()
    f = seccomp.Filter()
    if not f.supported:
        return f"not applied (no system-call table for {platform.machine()})"
    f.deny("fork", "vfork", "sched_setaffinity", errno=_EPERM)
    f.deny("clone3", errno=_ENOSYS)  # clone3 hides its flags: libc falls back to clone
    f.allow_only_if_arg_has("clone", 0, _CLONE_THREAD, errno=_EPERM)
    f.deny_unless_arg("socket", 0, (_AF_UNIX,), errno=_EACCES)
    f.deny("connect", "bind", "listen", "accept", "accept4", "sendmsg", "sendmmsg", errno=_EACCES)
    f.deny_unless_null("sendto", 4, errno=_EACCES)
    f.deny_unless_arg("kill", 0, (me, 0, -me), errno=_EPERM)
    for name in ("tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"):
        f.deny_unless_arg(name, 0, (me,), errno=_EPERM)
    f.deny("tkill", "pidfd_send_signal", "pidfd_open", "pidfd_getfd", "ptrace", "process_vm_readv", "process_vm_writev",
           "kcmp", "io_uring_setup", "io_uring_enter", "io_uring_register", "bpf", "perf_event_open", "userfaultfd",
           "keyctl", "add_key", "request_key", "unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
           "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", errno=_EPERM)
    if files:
        f.deny_if_arg_has("open", 1, _O_WRITE, errno=_EACCES)
        f.deny_if_arg_has("openat", 2, _O_WRITE, errno=_EACCES)
        f.deny("openat2", errno=_ENOSYS)  # its flags sit behind a pointer; libc falls back to openat
        f.deny("creat", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat", "renameat2", "link",
               "linkat", "symlink", "symlinkat", "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown",
               "fchownat", "truncate", "mknod", "mknodat", "utime", "utimes", "utimensat", "futimesat", "setxattr",
               "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr", errno=_EACCES)
    error = f.install()
    if error:
        return f"not applied ({error})"
    return "applied" + (" (no file writes anywhere: no Landlock)" if files else "")


def _drop_bounding_set() -> None:
    """Empty the capability bounding set while still allowed to (as root, before `_become`)."""
    cap = 0
    while _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) == 0:
        cap += 1


def _drop_capabilities() -> str:
    """Empty every capability set: dropping is always permitted, and a new user namespace
    grants a full set that must go too."""
    _drop_bounding_set()
    header = struct.pack("=Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = bytes(24)  # two empty {effective, permitted, inheritable} sets
    if _libc.capset(ctypes.create_string_buffer(header, 8), ctypes.create_string_buffer(data, 24)) != 0:
        return f"not dropped ({os.strerror(ctypes.get_errno())})"
    return "all dropped" + (" (root without privileges)" if os.getuid() == 0 else "")


def closed_to_others(paths: Iterable[Path]) -> str:
    """The first folder on the way to `paths` (or among them) that other users may not
    enter or list, as "PATH (mode 0NNN)"; "" if every one is open to them."""
    for path in paths:
        if not path.exists():
            continue
        path = path.resolve()
        for folder in [*reversed(path.parents), path] if path.is_dir() else reversed(path.parents):
            mode = os.stat(folder).st_mode
            needed = 0o001 if folder != path else 0o005
            if mode & needed != needed:
                return f"{folder} (mode {mode & 0o777:04o})"
    return ""


def python_paths() -> list[Path]:
    """The folders of this interpreter's standard library and packages: a team imports from them."""
    import sysconfig

    return [Path(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib", "purelib", "platlib")]


def team_ids(code: Iterable[Path] = ()) -> tuple[tuple[int, int] | None, str]:
    """The user and group this team process should become, and why not when None.

    As root: its own (`TEAM_ID_BASE` + pid), provided the interpreter, its packages and
    `code` are open to other users (a team must still import them); as an ordinary user,
    None (there is no other user it could become)."""
    if os.geteuid() != 0:
        return None, f"the Space's own user (uid {os.getuid()}): not root, so there is no other user to become"
    closed = closed_to_others([*python_paths(), *code])
    if closed:
        return None, (f"not applied: {closed} is closed to other users, and a team's own user could not import "
                      "Python from there; the team runs as root without capabilities")
    return (TEAM_ID_BASE + os.getpid(), TEAM_ID_BASE + os.getpid()), ""


def _unreadable_to_others(folder: Path) -> bool:
    """Whether some folder or file inside `folder` is not open to other users (0700 and the like)."""
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            if os.stat(os.path.join(root, name)).st_mode & 0o005 != 0o005:
                return True
        for name in files:
            if os.stat(os.path.join(root, name)).st_mode & 0o004 == 0:
                return True
    return os.stat(folder).st_mode & 0o005 != 0o005


def policy_folder_for(ids: tuple[int, int] | None, policy: Path, workdir: Path) -> Path:
    """Where a team that becomes `ids` will read its policy: the folder itself through a
    descriptor opened now (`/proc/self/fd/N`: the folders above it, `DATA` among them, stay
    closed to it), or, if the folder's own files are closed to other users, a copy in its
    working folder. Unchanged when the team keeps its user."""
    if ids is None:
        return policy
    if _unreadable_to_others(policy):
        import shutil

        copy = workdir / ".policy"
        shutil.copytree(policy, copy, symlinks=False)
        for root, dirs, files in os.walk(copy):
            for name in [*dirs, *files]:
                os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
        os.chmod(copy, 0o755)
        return copy
    fd = os.open(policy, os.O_RDONLY | os.O_DIRECTORY)  # kept open for the life of the process
    return Path(f"/proc/self/fd/{fd}")


def _become(ids: tuple[int, int], workdir: Path) -> str:
    """Switch to the team's own user and group (as root), owning only its working folder."""
    uid, gid = ids
    for folder, _, files in os.walk(workdir):
        os.chown(folder, uid, gid)
        for name in files:
            os.chown(os.path.join(folder, name), uid, gid)
    try:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    except OSError as exc:  # a user namespace that maps only a few ids (rootless containers)
        if exc.errno != errno.EINVAL or uid == NOBODY:
            raise
        return _become((NOBODY, NOBODY), workdir) + f" (uid {uid} is not mapped here)"
    return f"its own user (uid {uid}): the Space's files and processes are closed to it"


def confine(
    *,
    workdir: Path,
    readable: Iterable[Path],
    cpu_index: int,
    cpu_count: int = 1,
    cpu_seconds: int,
    max_file_mb: int,
    workdir_mb: int = 128,
    policy: Path | None = None,
    own_user: bool = True,
) -> dict[str, str]:
    """Confine the calling process for good. Returns what was applied, by mechanism.

    Args:
        workdir (`Path`): the only folder it may write (and its working directory).
        readable (`Iterable[Path]`): folders and files it may read (policy, code).
        cpu_index (`int`): which of the allowed CPUs to start from (taken modulo their number).
        cpu_count (`int`): how many CPUs it may run on.
        cpu_seconds (`int`): CPU time after which the kernel kills it (a backstop).
        max_file_mb (`int`): largest file it may write.
        workdir_mb (`int`): total size of its working folder.
        policy (`Path`, *optional*): the team's policy folder; `applied["policy folder"]`
            says where to read it from now on (`policy_folder_for`).
        own_user (`bool`): as root, become the team's own unprivileged user (`team_ids`).
    """
    applied = {}
    cpus = sorted(os.sched_getaffinity(0))
    chosen = {cpus[(cpu_index + i) % len(cpus)] for i in range(max(1, cpu_count))}
    os.sched_setaffinity(0, chosen)
    applied["cpu"] = f"{len(chosen)} core{'s' if len(chosen) > 1 else ''}"
    readable = list(readable)
    ids, not_switched = team_ids([p for p in readable if p != policy]) if own_user else (None, "not asked to")
    applied["network"], private_mounts = _namespaces()
    applied["disk"] = _disk_quota(workdir, workdir_mb, private_mounts, ids)
    if policy is not None:  # after the quota's mount, which would hide a copy made before
        applied["policy folder"] = str(policy_folder_for(ids, policy, workdir))

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    file_bytes = max_file_mb << 20
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise ConfinementError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    # Landlock's rules are made while every readable path can still be opened; the folders a
    # team's user may not enter (DATA, above its policy) are then closed to it as well
    applied["files"] = _landlock([*system_readable(), *readable], [workdir])
    _drop_bounding_set()  # needs CAP_SETPCAP: before the switch of user
    applied["user"] = _become(ids, workdir) if ids is not None else not_switched
    applied["capabilities"] = _drop_capabilities()
    landlock = applied["files"].startswith("Landlock")
    applied["system calls"] = _system_call_filter(files=not landlock)
    seccomp_on = applied["system calls"].startswith("applied")
    if seccomp_on:
        applied["network"] += "; seccomp: unix sockets only, no connect, bind, listen or addressed send"
        applied["processes"] = "seccomp: threads only, no new processes, no change of CPU"
        applied["signals"] = "seccomp: to itself only" + ("; Landlock: none outside" if "signals" in applied["files"] else "")
        if not landlock:
            applied["files"] += "; seccomp: no file is written, created or removed anywhere"
    else:
        applied["processes"] = applied["signals"] = applied["system calls"]
        if "no TCP" not in applied["files"] and "namespace" not in applied["network"]:
            _refuse_sockets_in_python()
            applied["network"] += "; Python sockets refused by an audit hook"
    os.chdir(workdir)
    return applied


def _refuse_sockets_in_python() -> None:
    """Last resort where the kernel offers nothing: refuse socket use from Python code."""

    def hook(event: str, args: tuple) -> None:
        if event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo"):
            raise SandboxViolation(f"network access is not allowed in the Arena sandbox ({event})")

    sys.addaudithook(hook)


def address_space_mb() -> float:
    """Virtual memory this process has mapped, in MB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE") / 2**20


#: Address space allowed beyond what is mapped plus the memory limit. Frameworks reserve far
#: more virtual memory than they use (thread stacks, allocator arenas), so the limit itself
#: is on memory actually used, measured by the host (`SandboxedTeam`); this cap only stops
#: a runaway allocation between two of its readings.
VIRTUAL_HEADROOM_MB = 2048


def limit_memory(extra_mb: int, *, headroom_mb: int = VIRTUAL_HEADROOM_MB) -> None:
    """Cap the address space at what is mapped now (interpreter, preloaded frameworks) plus
    `extra_mb` and `headroom_mb`: a backstop, not the limit (see `VIRTUAL_HEADROOM_MB`)."""
    allowed = int((address_space_mb() + extra_mb + headroom_mb) * 2**20)
    resource.setrlimit(resource.RLIMIT_AS, (allowed, allowed))
