"""seccomp-BPF filters, assembled from rules: which system calls fail, and on what arguments.

No package on PyPI builds seccomp programs without the C library libseccomp (whose Python
binding is not on PyPI), so the few instructions a rule needs are assembled here. A filter
sees a call's number and its arguments by value, never the memory a pointer points to: a
rule can check `socket()`'s family or `openat()`'s flags, not a path or an address.

Used twice: by `confine` for a team's own process, and by `weak_kernel` to make this
machine look like a host without Landlock or namespaces.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
from dataclasses import dataclass, field

_libc = ctypes.CDLL(None, use_errno=True)

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_LD_W_ABS, _JEQ_K, _JSET_K, _RET_K = 0x20, 0x15, 0x45, 0x06
RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_X32_SYSCALL_BIT = 0x40000000

#: Audit architecture and system-call numbers, by machine. Calls a machine lacks are absent.
ARCHITECTURES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (0xC000003E, {
        "open": 2, "creat": 85, "openat": 257, "openat2": 437, "mkdir": 83, "mkdirat": 258, "rmdir": 84,
        "unlink": 87, "unlinkat": 263, "rename": 82, "renameat": 264, "renameat2": 316, "link": 86, "linkat": 265,
        "symlink": 88, "symlinkat": 266, "chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452, "chown": 92,
        "fchown": 93, "lchown": 94, "fchownat": 260, "truncate": 76, "mknod": 133, "mknodat": 259, "utime": 132,
        "utimes": 235, "utimensat": 280, "futimesat": 261, "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190,
        "removexattr": 197, "lremovexattr": 198, "fremovexattr": 199,
        "socket": 41, "connect": 42, "accept": 43, "sendto": 44, "sendmsg": 46, "bind": 49, "listen": 50,
        "accept4": 288, "sendmmsg": 307,
        "kill": 62, "tkill": 200, "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
        "pidfd_send_signal": 424, "pidfd_open": 434, "pidfd_getfd": 438,
        "clone": 56, "clone3": 435, "fork": 57, "vfork": 58, "sched_setaffinity": 203,
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "io_uring_setup": 425,
        "io_uring_enter": 426, "io_uring_register": 427, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
        "keyctl": 250, "add_key": 248, "request_key": 249, "unshare": 272, "setns": 308, "mount": 165, "umount2": 166,
        "pivot_root": 155, "chroot": 161, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
        "fsmount": 432, "fspick": 433,
        "landlock_create_ruleset": 444, "landlock_add_rule": 445, "landlock_restrict_self": 446,
    }),
    "aarch64": (0xC00000B7, {
        "openat": 56, "openat2": 437, "mkdirat": 34, "unlinkat": 35, "renameat": 38, "renameat2": 276,
        "linkat": 37, "symlinkat": 36, "fchmod": 52, "fchmodat": 53, "fchmodat2": 452, "fchown": 55, "fchownat": 54,
        "truncate": 45, "mknodat": 33, "utimensat": 88, "setxattr": 5, "lsetxattr": 6, "fsetxattr": 7,
        "removexattr": 14, "lremovexattr": 15, "fremovexattr": 16,
        "socket": 198, "bind": 200, "listen": 201, "accept": 202, "connect": 203, "sendto": 206, "sendmsg": 211,
        "accept4": 242, "sendmmsg": 269,
        "kill": 129, "tkill": 130, "tgkill": 131, "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240,
        "pidfd_send_signal": 424, "pidfd_open": 434, "pidfd_getfd": 438,
        "clone": 220, "clone3": 435, "sched_setaffinity": 122,
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272, "io_uring_setup": 425,
        "io_uring_enter": 426, "io_uring_register": 427, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282,
        "keyctl": 219, "add_key": 217, "request_key": 218, "unshare": 97, "setns": 268, "mount": 40, "umount2": 39,
        "pivot_root": 41, "chroot": 51, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
        "fsmount": 432, "fspick": 433,
        "landlock_create_ruleset": 444, "landlock_add_rule": 445, "landlock_restrict_self": 446,
    }),
}


def _stmt(code: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, 0, 0, k)


def _jump(code: int, k: int, jt: int, jf: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _errno(number: int) -> int:
    return _RET_ERRNO | (number & 0xFFFF)


def _low(arg: int) -> int:
    return 16 + 8 * arg  # seccomp_data.args[arg], low 32 bits (little-endian machines)


@dataclass
class Filter:
    """A seccomp program under construction: one rule per system call, applied by `install`.

    Calls with no rule are allowed. Every rule ends in a verdict, so the rules are
    independent blocks: the dispatcher jumps over the blocks of other calls.
    """

    machine: str = field(default_factory=platform.machine)
    blocks: dict[int, list[bytes]] = field(default_factory=dict)

    @property
    def supported(self) -> bool:
        return self.machine in ARCHITECTURES

    def _number(self, name: str) -> int | None:
        return ARCHITECTURES[self.machine][1].get(name) if self.supported else None

    def _add(self, names: tuple[str, ...], block: list[bytes]) -> None:
        for name in names:
            number = self._number(name)
            if number is not None:
                self.blocks[number] = block

    def deny(self, *names: str, errno: int) -> Filter:
        """These calls always fail with `errno`."""
        self._add(names, [_stmt(_RET_K, _errno(errno))])
        return self

    def deny_unless_arg(self, name: str, arg: int, allowed: tuple[int, ...], *, errno: int) -> Filter:
        """`name` fails with `errno` unless the low 32 bits of argument `arg` (an `int`
        argument: the kernel reads no more) is one of `allowed`."""
        values = sorted({v & 0xFFFFFFFF for v in allowed})
        block = [_stmt(_LD_W_ABS, _low(arg))]
        block += [_jump(_JEQ_K, v, len(values) - i, 0) for i, v in enumerate(values)]
        block += [_stmt(_RET_K, _errno(errno)), _stmt(_RET_K, RET_ALLOW)]
        self._add((name,), block)
        return self

    def deny_if_arg_has(self, name: str, arg: int, mask: int, *, errno: int) -> Filter:
        """`name` fails with `errno` when argument `arg` has any bit of `mask` (flags)."""
        self._add((name,), [_stmt(_LD_W_ABS, _low(arg)), _jump(_JSET_K, mask, 0, 1),
                            _stmt(_RET_K, _errno(errno)), _stmt(_RET_K, RET_ALLOW)])
        return self

    def allow_only_if_arg_has(self, name: str, arg: int, mask: int, *, errno: int) -> Filter:
        """`name` fails with `errno` unless argument `arg` has a bit of `mask` (flags)."""
        self._add((name,), [_stmt(_LD_W_ABS, _low(arg)), _jump(_JSET_K, mask, 0, 1),
                            _stmt(_RET_K, RET_ALLOW), _stmt(_RET_K, _errno(errno))])
        return self

    def deny_unless_null(self, name: str, arg: int, *, errno: int) -> Filter:
        """`name` fails with `errno` unless pointer argument `arg` is NULL (all 64 bits)."""
        self._add((name,), [_stmt(_LD_W_ABS, _low(arg)), _jump(_JEQ_K, 0, 0, 2), _stmt(_LD_W_ABS, _low(arg) + 4),
                            _jump(_JEQ_K, 0, 1, 0), _stmt(_RET_K, _errno(errno)), _stmt(_RET_K, RET_ALLOW)])
        return self

    def program(self) -> list[bytes]:
        """The instructions: the architecture checked first (a call made through another ABI,
        such as i386's `int 0x80` or x86-64's x32 numbers, fails with ENOSYS, as libseccomp's
        default does: those numbers would reach the same calls under other names)."""
        arch, _ = ARCHITECTURES[self.machine]
        enosys = _stmt(_RET_K, _errno(38))
        program = [_stmt(_LD_W_ABS, 4), _jump(_JEQ_K, arch, 1, 0), enosys, _stmt(_LD_W_ABS, 0)]
        if self.machine == "x86_64":
            program += [_jump(_JSET_K, _X32_SYSCALL_BIT, 0, 1), enosys]
        for number, block in self.blocks.items():  # a block always returns: the accumulator
            program += [_jump(_JEQ_K, number, 0, len(block)), *block]  # holds the number at every test
        program.append(_stmt(_RET_K, RET_ALLOW))
        return program

    def install(self) -> str:
        """Apply to this thread and every process it starts (sets `no_new_privs`, which an
        unprivileged process needs first). Returns "" or why it failed."""
        if not self.supported:
            return f"no system-call table for {self.machine}"
        if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return f"prctl(PR_SET_NO_NEW_PRIVS): {_strerror()}"
        program = self.program()
        instructions = ctypes.create_string_buffer(b"".join(program))
        header = struct.pack("=HxxxxxxQ", len(program), ctypes.addressof(instructions))
        fprog = ctypes.create_string_buffer(header, len(header))
        if _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, fprog, 0, 0) != 0:
            return f"prctl(PR_SET_SECCOMP): {_strerror()}"
        return ""


def _strerror() -> str:
    return os.strerror(ctypes.get_errno())
