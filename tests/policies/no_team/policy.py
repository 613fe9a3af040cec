"""Test policy: defines no Team class."""


class Agent:
    def act(self, observations):
        return {}
