"""At tick 3, sends an extra well-formed answer for a tick that was never asked, before
its real answer: every answer after it arrives one message late."""
import fcntl
import json
import os
import stat
import struct


class Team:
    def __init__(self, team_id, env_config):
        pass

    def act(self, observations):
        if next(iter(observations.values()))["CurrentTick"] == 2:
            body = json.dumps({"type": "actions", "tick": 999, "cpu_s": 0.0, "wall_s": 0.0, "actions": {}}).encode()
            for fd in range(3, 64):
                try:
                    if stat.S_ISFIFO(os.fstat(fd).st_mode) and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
                        os.write(fd, struct.pack(">I", len(body)) + body)
                except OSError:
                    continue
        return {}
