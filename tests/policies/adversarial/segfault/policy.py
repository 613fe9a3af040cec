"""Idles, then crashes the interpreter (reads address 0) at tick 3."""
import ctypes


class Team:
    def __init__(self, team_id, env_config):
        pass

    def act(self, observations):
        if next(iter(observations.values()))["CurrentTick"] == 2:
            ctypes.string_at(0)
        return {}
