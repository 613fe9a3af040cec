"""The isolation self-test's team: on its first turn it tries to escape, as an attacker would.

This file is the `policy.py` of the probe team that `matchmaking.isolation` runs in a real
sandbox. Every attempt goes through libc (`ctypes`), past anything Python itself could
refuse, and is reported on one stdout line (`MARKER` + JSON). The host checks the same
attempts from outside (files created, connections accepted) and trusts what it sees.

Its folder holds `targets.json`: the file to read, the folders to write into, the host's
TCP and UDP ports, its abstract unix socket and its own pid.
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import struct
from pathlib import Path

MARKER = "NMMO-ARENA-ISOLATION-PROBE "

_AF_UNIX, _AF_INET = 1, 2
_SOCK_STREAM, _SOCK_DGRAM, _SOCK_RAW = 1, 2, 3
_IPPROTO_ICMP = 1
_O_RDONLY, _O_WRONLY, _O_CREAT, _O_EXCL = 0, 1, 0o100, 0o200

_libc = ctypes.CDLL(None, use_errno=True)


def _error() -> str:
    code = ctypes.get_errno()
    return f"{os.strerror(code)} ({code})"


def _inet(port: int) -> ctypes.Array:
    address = struct.pack("=HH4s8x", _AF_INET, socket.htons(port), socket.inet_aton("127.0.0.1"))
    return ctypes.create_string_buffer(address, len(address))


def _read(path: str, token: str) -> tuple[bool, str]:
    fd = _libc.open(path.encode(), _O_RDONLY)
    if fd < 0:
        return False, f"open: {_error()}"
    buffer = ctypes.create_string_buffer(256)
    count = _libc.read(fd, buffer, 255)
    _libc.close(fd)
    if count < 0:
        return False, f"opened, but read: {_error()}"
    return True, "read its contents" + (" (the secret)" if token.encode() in buffer.value else "")


def _write(paths: list[str]) -> tuple[bool, str]:
    outcomes = []
    for path in paths:
        fd = _libc.open(path.encode(), _O_WRONLY | _O_CREAT | _O_EXCL, 0o644)
        if fd >= 0:
            _libc.write(fd, b"escaped", 7)
            _libc.close(fd)
            return True, f"created {path}"
        outcomes.append(f"open: {_error()}")
    return False, "; ".join(sorted(set(outcomes)))


def _tcp(port: int) -> tuple[bool, str]:
    fd = _libc.socket(_AF_INET, _SOCK_STREAM, 0)
    if fd < 0:
        return False, f"socket: {_error()}"
    try:
        if _libc.connect(fd, _inet(port), 16) == 0:
            return True, f"connected to 127.0.0.1:{port}"
        return False, f"connect: {_error()}"
    finally:
        _libc.close(fd)


def _udp(port: int) -> tuple[bool, str]:
    fd = _libc.socket(_AF_INET, _SOCK_DGRAM, 0)
    if fd < 0:
        return False, f"socket: {_error()}"
    try:
        if _libc.sendto(fd, b"escaped", 7, 0, _inet(port), 16) >= 0:
            return True, f"sent a datagram to 127.0.0.1:{port}"
        return False, f"sendto: {_error()}"
    finally:
        _libc.close(fd)


def _raw() -> tuple[bool, str]:
    fd = _libc.socket(_AF_INET, _SOCK_RAW, _IPPROTO_ICMP)
    if fd < 0:
        return False, f"socket: {_error()}"
    _libc.close(fd)
    return True, "opened a raw ICMP socket"


def _abstract(name: str) -> tuple[bool, str]:
    fd = _libc.socket(_AF_UNIX, _SOCK_STREAM, 0)
    if fd < 0:
        return False, f"socket: {_error()}"
    try:
        path = b"\0" + name.encode()
        address = struct.pack("=H", _AF_UNIX) + path
        if _libc.connect(fd, ctypes.create_string_buffer(address, len(address)), len(address)) == 0:
            return True, f"connected to the host's abstract socket @{name}"
        return False, f"connect: {_error()}"
    finally:
        _libc.close(fd)


def _signal(pids: list[int]) -> tuple[bool, str]:
    outcomes = []
    for pid in pids:
        if _libc.kill(pid, 0) == 0:  # signal 0: every check a real signal passes, no effect
            return True, f"may signal pid {pid}"
        outcomes.append(f"kill: {_error()}")
    return False, "; ".join(sorted(set(outcomes)))


def _fork() -> tuple[bool, str]:
    pid = _libc.fork()
    if pid == 0:
        os._exit(0)
    if pid < 0:
        return False, f"fork: {_error()}"
    os.waitpid(pid, 0)
    return True, f"started process {pid}"


def attempts(targets: dict) -> list[dict]:
    """Every escape, tried once: [{"probe", "escaped", "detail"}]."""
    tries = {
        "read": lambda: _read(targets["read"], targets["token"]),
        "write": lambda: _write(targets["write"]),
        "tcp": lambda: _tcp(targets["tcp_port"]),
        "udp": lambda: _udp(targets["udp_port"]),
        "raw": _raw,
        "abstract_unix": lambda: _abstract(targets["unix_name"]),
        "signal": lambda: _signal([os.getppid(), targets["host_pid"]]),
        "fork": _fork,
    }
    report = []
    for name, attempt in tries.items():
        try:
            escaped, detail = attempt()
        except Exception as exc:  # noqa: BLE001 - an attempt that cannot even be made did not escape
            escaped, detail = False, f"{type(exc).__name__}: {exc}"
        report.append({"probe": name, "escaped": escaped, "detail": detail})
    return report


class Team:
    def __init__(self, team_id, env_config):
        self.targets = json.loads((Path(__file__).parent / "targets.json").read_text())
        self.done = False

    def act(self, observations):
        if not self.done:
            self.done = True
            print(MARKER + json.dumps(attempts(self.targets)), flush=True)
        return {}
