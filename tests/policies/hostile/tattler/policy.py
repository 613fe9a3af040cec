"""Reads a file of the Space's user (its path in targets.json) and says what it holds:
prints it, and raises it from act(). Where isolation is missing (NMMO_ARENA_ISOLATION=warn
on a weak host) it can read the file; the Arena must not publish what it says."""
import json
from pathlib import Path


class Team:
    def __init__(self, team_id, env_config):
        target = json.loads((Path(__file__).parent / "targets.json").read_text())["read"]
        try:
            self.said = Path(target).read_text().strip()
        except OSError as exc:
            self.said = f"could not read it: {exc.strerror}"
        print("the Space's file says:", self.said)

    def act(self, observations):
        raise RuntimeError(f"the Space's file says: {self.said}")
