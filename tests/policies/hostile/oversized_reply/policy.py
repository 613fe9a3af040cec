"""At tick 3, announces a 3 GB message on its reply pipe (and sends a little of it)."""
import fcntl
import os
import stat
import struct


class Team:
    def __init__(self, team_id, env_config):
        pass

    def act(self, observations):
        if next(iter(observations.values()))["CurrentTick"] == 2:
            for fd in range(3, 64):
                try:
                    if stat.S_ISFIFO(os.fstat(fd).st_mode) and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
                        os.write(fd, struct.pack(">I", 3 << 30) + b"{" * 1000)
                except OSError:
                    continue
        return {}
