"""Idles, then at tick 3 sleeps until it is woken (SIGUSR1: `test_sandbox.py` sends it once
the runner has gone on without it), answers that tick late and carries on. Unwoken, it
sleeps 60 s."""
import signal
import time


class Team:
    def __init__(self, team_id, env_config):
        self.woken = False
        signal.signal(signal.SIGUSR1, self._wake)

    def _wake(self, signum, frame):
        self.woken = True  # a flag, not an exception: a wake-up before the sleep is not lost

    def act(self, observations):
        if next(iter(observations.values()))["CurrentTick"] == 2:
            until = time.monotonic() + 60
            while not self.woken and time.monotonic() < until:
                time.sleep(0.01)
        return {}
