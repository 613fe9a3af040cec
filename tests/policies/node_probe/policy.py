"""Test policy: reports what of its node it can reach, then walks slowly.

At build time it prints one `probe` line per thing a sandboxed team must not reach on the
node that plays it: the node's cache (other submissions, generated maps), the node's Hub
credentials folder, its parent process's environment (where Ray's token is) and Ray's
token in its own environment. Each tick it sleeps `DELAY_S`, so a match lasts long enough
to lose its node in the middle.
"""
import os
import time

DELAY_S = 0.1
PATHS = ["/tmp/node/cache/submissions", "/tmp/node/cache/maps", "/tmp/node/hf", "/tmp/node/ray"]


def _reach(path):
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            with open(path, "rb") as f:
                f.read(1)
        return "reachable"
    except Exception as exc:  # noqa: BLE001 - the kind of refusal is what is reported
        return type(exc).__name__


class Team:
    def __init__(self, team_id, env_config):
        for path in [*PATHS, f"/proc/{os.getppid()}/environ"]:
            print(f"probe {path}: {_reach(path)}", flush=True)
        print(f"probe RAY_AUTH_TOKEN: {'present' if 'RAY_AUTH_TOKEN' in os.environ else 'absent'}", flush=True)

    def act(self, observations):
        time.sleep(DELAY_S)
        return {member: {"Move": {"Direction": 4}} for member in observations}
