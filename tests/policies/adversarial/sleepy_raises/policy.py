"""As `sleepy`, but its late answer to tick 3 is an exception: the Arena must record it
when it reads that answer, a tick later."""
import signal
import time


class Team:
    def __init__(self, team_id, env_config):
        self.woken = False
        signal.signal(signal.SIGUSR1, self._wake)

    def _wake(self, signum, frame):
        self.woken = True

    def act(self, observations):
        if next(iter(observations.values()))["CurrentTick"] == 2:
            until = time.monotonic() + 60
            while not self.woken and time.monotonic() < until:
                time.sleep(0.01)
            raise RuntimeError("raised after the deadline")
        return {}
