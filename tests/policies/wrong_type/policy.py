"""Test policy: returns a list instead of a dict."""


class Team:
    def __init__(self, team_id, env_config):
        pass

    def act(self, observations):
        return [1, 2, 3]
