"""Test policy: takes longer than the step limit on tick 3 (CurrentTick 2)."""
import time


class Team:
    def __init__(self, team_id, env_config):
        self.delay = float(env_config.get("test_delay_s", 1.0))

    def act(self, observations):
        tick = next(iter(observations.values()))["CurrentTick"]
        if tick == 2:
            time.sleep(self.delay)
        return {member: {"Move": {"Direction": 4}} for member in observations}
