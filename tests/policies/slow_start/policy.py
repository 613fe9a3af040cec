"""Test policy: takes 20 s to build (within the 60 s allowed), then idles. Its validation
is long enough to be interrupted."""
import time


class Team:
    def __init__(self, team_id, env_config):
        time.sleep(20)

    def act(self, observations):
        return {}
