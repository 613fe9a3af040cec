"""Idles, but at ticks 3 and 4 returns things that are not actions."""


class Team:
    def __init__(self, team_id, env_config):
        pass

    def act(self, observations):
        tick = next(iter(observations.values()))["CurrentTick"]
        if tick == 2:
            return {0: object()}
        if tick == 3:
            return {0: {"Move": {"Direction": float("nan")}}}
        return {}
