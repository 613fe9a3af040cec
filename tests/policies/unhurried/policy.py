"""Test policy: idles, taking 20 ms a tick, so that a match of it lasts some seconds however
fast the engine plays (a test that watches a match in flight needs it to be in flight)."""
import time


class Team:
    def __init__(self, team_id, env_config):
        pass

    def act(self, observations):
        time.sleep(0.02)
        return {}
