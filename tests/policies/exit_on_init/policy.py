"""Test policy: calls sys.exit() while being built."""
import sys


class Team:
    def __init__(self, team_id, env_config):
        sys.exit(3)

    def act(self, observations):
        return {}
