"""Test policy: member 0 sends a valid move; member 1 an out-of-range index; member 2 an
unknown action; key 99 is no member."""


class Team:
    def __init__(self, team_id, env_config):
        pass

    def act(self, observations):
        return {
            0: {"Move": {"Direction": 1}},
            1: {"Move": {"Direction": 17}},
            2: {"Teleport": {"Where": 0}},
            99: {"Move": {"Direction": 0}},
        }
