"""At tick 3, writes a reply of the wrong shape to its reply pipe: a list for the tick,
text for the CPU time."""
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
            body = json.dumps({"type": "actions", "tick": [3], "cpu_s": "lots", "wall_s": None, "actions": {}}).encode()
            for fd in range(3, 64):
                try:
                    if stat.S_ISFIFO(os.fstat(fd).st_mode) and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
                        os.write(fd, struct.pack(">I", len(body)) + body)
                except OSError:
                    continue
        return {}
