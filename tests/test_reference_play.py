"""The runner plays built-in teams exactly as nmmo's own scripted loop does.

Built-in teams go through the contract (observation dicts in, string/index actions out),
while nmmo's bare loop runs the same scripted agents inside `env.step()` on its own
`Observation` objects. Same classes, map, seed and RNG streams must give the same game,
tick for tick: evidence that the contract loses nothing and that the runner's overhead
benchmark compares like with like.
"""

from __future__ import annotations

from arena.scoring import Task
from bench.match_speed import bare_match, stage1_lineup
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec, run_match
from matchmaking.teams.factory import in_process_host
from tests_support import patient


def test_runner_reproduces_nmmo_scripted_play():
    spec = MatchSpec(seed=3, policies=stage1_lineup(), config=patient(MatchConfig(horizon=80)))
    bare = bare_match(spec, track=True)
    result = run_match(spec, host_factory=in_process_host)
    assert result.ticks == bare["ticks"]
    for team in result.teams:
        progress = bare["progress"][team.slot]
        assert {t.value: progress.value(t) for t in Task} == {k: v.value for k, v in team.tasks.items()}, team.slot
        assert team.alive == bare["alive"][team.slot]
    assert sum(t.alive for t in result.teams) < 128  # something happened in the game
