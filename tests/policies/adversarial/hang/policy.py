"""Idles, then loops forever at tick 3."""


class Team:
    def __init__(self, team_id, env_config):
        pass

    def act(self, observations):
        if next(iter(observations.values()))["CurrentTick"] == 2:
            while True:
                pass
        return {}
