"""Does nothing: the baseline the adversarial policies are compared with."""


class Team:
    def __init__(self, team_id, env_config):
        pass

    def act(self, observations):
        return {}
