"""At tick 3, writes its own length-prefixed message straight to its reply pipe: a JSON
object holding 300,000 nested arrays (well under the size cap), which once made the
match's decoder raise RecursionError and void the whole match."""
import fcntl
import os
import stat
import struct


class Team:
    def __init__(self, team_id, env_config):
        pass

    def act(self, observations):
        if next(iter(observations.values()))["CurrentTick"] == 2:
            body = b'{"type":"actions","tick":3,"actions":' + b"[" * 300_000 + b"]" * 300_000 + b"}"
            for fd in range(3, 64):
                try:
                    if stat.S_ISFIFO(os.fstat(fd).st_mode) and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
                        os.write(fd, struct.pack(">I", len(body)) + body)
                except OSError:
                    continue
        return {}
