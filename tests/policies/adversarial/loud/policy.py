"""Idles, printing a megabyte to stdout and to stderr every tick."""
import sys

CHUNK = "x" * (1 << 20)


class Team:
    def __init__(self, team_id, env_config):
        pass

    def act(self, observations):
        print(CHUNK)
        print(CHUNK, file=sys.stderr)
        return {}
