"""At tick 1, tries to write outside its folder and read files that are not its own (paths
listed in targets.txt beside it), writes inside its working folder, and reports."""
import os


class Team:
    def __init__(self, team_id, env_config):
        with open(os.path.join(os.path.dirname(__file__), "targets.txt")) as f:
            self.targets = [line.split(" ", 1) for line in f.read().splitlines() if line]

    def act(self, observations):
        results = []
        for action, path in self.targets:
            try:
                if action == "write":
                    with open(path, "w") as f:
                        f.write("escaped")
                else:
                    with open(path) as f:
                        f.read()
                results.append(f"{action} {path}: OK")
            except Exception as exc:  # noqa: BLE001
                results.append(f"{action} {path}: {type(exc).__name__}")
        try:
            with open("scratch.txt", "w") as f:  # its own working folder is writable
                f.write("mine")
            results.append("write cwd: OK")
        except Exception as exc:  # noqa: BLE001
            results.append(f"write cwd: {type(exc).__name__}")
        raise RuntimeError("report " + "; ".join(results))
