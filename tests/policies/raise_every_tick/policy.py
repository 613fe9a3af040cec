"""Test policy: raises on every tick."""


class Team:
    def __init__(self, team_id, env_config):
        self.calls = 0

    def act(self, observations):
        self.calls += 1
        raise RuntimeError(f"deliberate failure on call {self.calls}")
