"""At tick 3, writes 60 MB files into its working folder until it cannot; the error says
how much it wrote. Stops at 3 GB should nothing stop it."""


class Team:
    def __init__(self, team_id, env_config):
        pass

    def act(self, observations):
        if next(iter(observations.values()))["CurrentTick"] == 2:
            chunk = b"\xff" * (60 << 20)
            written = 0
            try:
                for i in range(50):
                    with open(f"fill-{i}.bin", "wb") as f:
                        f.write(chunk)
                    written += len(chunk)
            except OSError as exc:
                raise RuntimeError(f"wrote {written >> 20} MB, then {exc.strerror}") from exc
            raise RuntimeError(f"wrote {written >> 20} MB without hindrance")
        return {}
