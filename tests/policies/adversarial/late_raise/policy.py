"""At tick 3 works for 2 s, then raises: in a match that ends sooner, the Arena must still
record that error (it is the team's, whenever it arrives)."""
import time


class Team:
    def __init__(self, team_id, env_config):
        pass

    def act(self, observations):
        if next(iter(observations.values()))["CurrentTick"] == 2:
            time.sleep(2.0)
            raise RuntimeError("raised after the match's last tick")
        return {}
