"""Passes the 16-tick validation, then exits its process at tick 21 of every match."""
import os


class Team:
    def __init__(self, team_id, env_config):
        pass

    def act(self, observations):
        if next(iter(observations.values()))["CurrentTick"] == 20:
            os._exit(1)
        return {}
