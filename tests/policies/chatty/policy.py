"""Test policy for logs and faults: prints a line to stdout on every tick (and while being
built), writes to stderr and raises at tick 5, and sleeps 1.5 s at tick 9 (past the 0.6 s
deadline and the 0.4 s time bank the tests give it: a TIMEOUT), printing before and after the sleep. It idles otherwise.
A tick here is the match's (1-based): nmmo's CurrentTick is one less."""

import sys
import time


class Team:
    def __init__(self, team_id, env_config):
        print(f"building team {team_id}")

    def act(self, observations):
        tick = int(next(iter(observations.values()))["CurrentTick"]) + 1
        print(f"hello from tick {tick}")
        if tick == 5:
            print("about to fail at tick 5", file=sys.stderr)
            raise ValueError("deliberate failure at tick 5")
        if tick == 9:
            print("sleeping at tick 9")
            time.sleep(1.5)
            print("woke up at tick 9")
        return {}
