"""Test policy: idles, taking 150 ms a tick, so that a match of it lasts some seconds however
fast the engine plays (a test that watches a match in flight needs it to be in flight). Its
agents starve by about tick 25, and a team is asked only while it has agents: 25 ticks of
it are the match's seconds, the rest goes as fast as the engine."""
import time


class Team:
    def __init__(self, team_id, env_config):
        pass

    def act(self, observations):
        time.sleep(0.15)
        return {}
