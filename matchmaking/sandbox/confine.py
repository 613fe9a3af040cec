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
from pathlib import Path
from typing import Iterable

_libc = ctypes.CDLL(None, use_errno=True)

_PR_SET_NO_NEW_PRIVS = 38
_PR_CAPBSET_DROP = 24
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_CLONE_THREAD = 0x00010000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_CLONE_NEWNS = 0x00020000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 2, 4, 8, 0x4000, 1 << 18
_X32_SYSCALL_BIT = 0x40000000

# Landlock (include/uapi/linux/landlock.h); its syscalls share numbers on every architecture.
_SYS_LANDLOCK_CREATE_RULESET, _SYS_LANDLOCK_ADD_RULE, _SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_READ = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
_FS_FILE_RIGHTS = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | (1 << 14) | (1 << 15)  # + TRUNCATE, IOCTL_DEV
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1

# seccomp-BPF (linux/filter.h, linux/seccomp.h)
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JSET_K, _BPF_RET_K = 0x20, 0x15, 0x45, 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_ARCH = {  # audit arch, then syscall numbers of clone, clone3, fork, vfork (None: absent), sched_setaffinity
    "x86_64": (0xC000003E, 56, 435, 57, 58, 203),
    "aarch64": (0xC00000B7, 220, 435, None, None, 122),
}


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
                        raise OSError(-error, f"landlock_add_rule({path}): {os.strerror(-error)}")
                finally:
                    os.close(fd)
        error = _syscall(_SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
        if error < 0:
            raise OSError(-error, f"landlock_restrict_self: {os.strerror(-error)}")
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


def _disk_quota(workdir: Path, size_mb: int, private_mounts: bool) -> str:
    """Mount a tmpfs of `size_mb` over the working folder, seen only by this process."""
    if not private_mounts:
        return f"no mount namespace: the host measures the folder every tick (quota {size_mb} MB)"
    mount = _libc.mount
    mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    if mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:  # nothing propagates out
        return f"not mounted (making mounts private: {os.strerror(ctypes.get_errno())}); the host measures the folder"
    options = f"size={int(size_mb)}m,mode=0700,uid={os.getuid()},gid={os.getgid()}".encode()
    if mount(b"tmpfs", str(workdir).encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, options) != 0:
        return f"not mounted ({os.strerror(ctypes.get_errno())}); the host measures the folder every tick"
    return f"its folder is a private {size_mb} MB tmpfs"


def _no_new_processes() -> str:
    """seccomp filter: fork, vfork and clone without CLONE_THREAD fail with EPERM, and so
    does sched_setaffinity (a process may widen its own CPU set: the team keeps its core)."""
    spec = _ARCH.get(platform.machine())
    if spec is None:
        return f"not applied (no syscall table for {platform.machine()})"
    arch, clone, clone3, fork, vfork, setaffinity = spec

    def stmt(code: int, k: int) -> bytes:
        return struct.pack("=HBBI", code, 0, 0, k)

    def jump(code: int, k: int, jt: int, jf: int) -> bytes:
        return struct.pack("=HBBI", code, jt, jf, k)

    deny = _RET_ERRNO | errno.EPERM
    program = [
        stmt(_BPF_LD_W_ABS, 4),  # arch
        jump(_BPF_JEQ_K, arch, 1, 0),
        stmt(_BPF_RET_K, _RET_ALLOW),  # unknown arch: leave alone
        stmt(_BPF_LD_W_ABS, 0),  # syscall number
    ]
    if platform.machine() == "x86_64":  # x32 ABI calls share the arch value: refuse them all
        program += [jump(_BPF_JSET_K, _X32_SYSCALL_BIT, 0, 1), stmt(_BPF_RET_K, deny)]
    program += [
        jump(_BPF_JEQ_K, clone3, 0, 1),
        stmt(_BPF_RET_K, _RET_ERRNO | errno.ENOSYS),  # clone3 hides its flags: make libc fall back to clone
    ]
    for number in (fork, vfork, setaffinity):
        if number is not None:
            program += [jump(_BPF_JEQ_K, number, 0, 1), stmt(_BPF_RET_K, deny)]
    program += [
        jump(_BPF_JEQ_K, clone, 1, 0),
        stmt(_BPF_RET_K, _RET_ALLOW),
        stmt(_BPF_LD_W_ABS, 16),  # clone's flags (low 32 bits of args[0])
        jump(_BPF_JSET_K, _CLONE_THREAD, 0, 1),
        stmt(_BPF_RET_K, _RET_ALLOW),  # a thread
        stmt(_BPF_RET_K, deny),  # a process
    ]
    filters = ctypes.create_string_buffer(b"".join(program))
    fprog = struct.pack("=HxxxxxxQ", len(program), ctypes.addressof(filters))
    prog_buffer = ctypes.create_string_buffer(fprog, len(fprog))
    if _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, prog_buffer, 0, 0) != 0:
        return f"not applied ({os.strerror(ctypes.get_errno())})"
    return "seccomp: threads only, no new processes, no change of CPU"


def _drop_capabilities() -> str:
    """Empty the bounding set (where allowed) and every capability set: dropping is always
    permitted, and a new user namespace grants a full set that must go too."""
    cap = 0
    while _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) == 0:
        cap += 1
    header = struct.pack("=Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = bytes(24)  # two empty {effective, permitted, inheritable} sets
    if _libc.capset(ctypes.create_string_buffer(header, 8), ctypes.create_string_buffer(data, 24)) != 0:
        return f"not dropped ({os.strerror(ctypes.get_errno())})"
    return "all dropped" + (" (root without privileges)" if os.getuid() == 0 else "")


def system_readable() -> list[Path]:
    """What every confined process may read besides its policy and the Arena's code: the
    interpreter with its packages, system libraries, and a few devices and settings.
    (`matchmaking.maps` keeps the held-out maps out of all of these.)"""
    system = [Path(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix}]
    system += [Path(p) for p in ("/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/share/zoneinfo", "/etc/localtime",
                                 "/etc/ld.so.cache", "/dev/null", "/dev/zero", "/dev/urandom", "/dev/random",
                                 "/sys/devices/system/cpu", f"/proc/{os.getpid()}")]
    return system


def confine(
    *,
    workdir: Path,
    readable: Iterable[Path],
    cpu_index: int,
    cpu_count: int = 1,
    cpu_seconds: int,
    max_file_mb: int,
    workdir_mb: int = 128,
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
    """
    applied = {}
    cpus = sorted(os.sched_getaffinity(0))
    chosen = {cpus[(cpu_index + i) % len(cpus)] for i in range(max(1, cpu_count))}
    os.sched_setaffinity(0, chosen)
    applied["cpu"] = f"{len(chosen)} core{'s' if len(chosen) > 1 else ''}"
    applied["network"], private_mounts = _namespaces()
    applied["disk"] = _disk_quota(workdir, workdir_mb, private_mounts)

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    file_bytes = max_file_mb << 20
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    applied["capabilities"] = _drop_capabilities()

    applied["files"] = _landlock([*system_readable(), *readable], [workdir])
    if "no TCP" not in applied["files"] and "namespace" not in applied["network"]:
        _refuse_sockets_in_python()
        applied["network"] += "; Python sockets refused by an audit hook"
    applied["processes"] = _no_new_processes()
    os.chdir(workdir)
    return applied


def _refuse_sockets_in_python() -> None:
    """Last resort where the kernel offers nothing: refuse socket use from Python code."""

    def hook(event: str, args: tuple) -> None:
        if event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo"):
            raise PermissionError(f"network access is not allowed in the Arena sandbox ({event})")

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
