"""Idles, then forks without end at tick 3. Should the sandbox let one fork through, the
children exit after a while and the loop stops at 200, so a failing test cannot take the
test machine down with it; the error message says how many forks succeeded."""
import os
import time


class Team:
    def __init__(self, team_id, env_config):
        pass

    def act(self, observations):
        if next(iter(observations.values()))["CurrentTick"] == 2:
            forked = 0
            try:
                while forked < 200:
                    if os.fork() == 0:
                        time.sleep(30)
                        os._exit(0)
                    forked += 1
            except Exception as exc:  # noqa: BLE001
                raise RuntimeError(f"forked {forked} processes, then {type(exc).__name__}: {exc}") from exc
            raise RuntimeError(f"forked {forked} processes")
        return {}
