"""At tick 1, tries to read the Space's map secret and the held-out maps' cache (paths in
targets.txt beside it: `read FILE` or `list FOLDER`), and reports what it could, as a fault."""
import os


class Team:
    def __init__(self, team_id, env_config):
        with open(os.path.join(os.path.dirname(__file__), "targets.txt")) as f:
            self.targets = [line.split(" ", 1) for line in f.read().splitlines() if line]

    def act(self, observations):
        results = []
        for action, path in self.targets:
            try:
                if action == "list":
                    found = ",".join(sorted(os.listdir(path))) or "<empty>"
                else:
                    with open(path, "rb") as f:
                        found = f"{len(f.read())} bytes"
                results.append(f"{action} {path}: OK {found}")
            except Exception as exc:  # noqa: BLE001
                results.append(f"{action} {path}: {type(exc).__name__}")
        raise RuntimeError("report " + "; ".join(results))
