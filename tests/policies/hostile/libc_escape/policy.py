"""At tick 2, through libc (past Python's audit hooks): reads a file outside its folder,
creates one outside it, and connects over TCP to a listener on this machine, as the issue's
attacker did. The paths and port are in targets.json; the error says what happened."""
import ctypes
import json
import os
import socket
import struct
from pathlib import Path

libc = ctypes.CDLL(None, use_errno=True)


def outcome(result):
    return "ok" if result >= 0 else os.strerror(ctypes.get_errno())


class Team:
    def __init__(self, team_id, env_config):
        self.targets = json.loads((Path(__file__).parent / "targets.json").read_text())

    def act(self, observations):
        if next(iter(observations.values()))["CurrentTick"] != 2:
            return {}
        fd = libc.open(self.targets["read"].encode(), 0)
        buffer = ctypes.create_string_buffer(128)
        read = outcome(libc.read(fd, buffer, 127) if fd >= 0 else fd)
        written = outcome(libc.open(self.targets["write"].encode(), 0o1 | 0o100, 0o644))
        sock = libc.socket(2, 1, 0)
        address = struct.pack("=HH4s8x", 2, socket.htons(self.targets["port"]), socket.inet_aton("127.0.0.1"))
        connected = outcome(libc.connect(sock, ctypes.create_string_buffer(address, 16), 16) if sock >= 0 else sock)
        raise RuntimeError(f"escape: read={read} {buffer.value[:40]!r} write={written} connect={connected}")
