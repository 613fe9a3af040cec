"""The project's learned team: its two exports agree, and both play as submissions.

The weights are the committed ones (`training/imitate.py` wrote them); these tests do not
train, they check what a participant and the PvE track receive.
"""

from __future__ import annotations

import pytest

from arena.policies import builtin, local
from matchmaking.engine import game
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec, run_match
from matchmaking.sandbox.host import sandboxed_host
from matchmaking.service.validation import validate
from matchmaking.teams.factory import in_process_host
from matchmaking.teams.loading import load_team_class
from tests_support import EXAMPLES

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")

TORCH, ONNX = EXAMPLES / "apprentice-torch", EXAMPLES / "apprentice-onnx"


def test_the_exports_are_committed_and_small():
    for path in (TORCH / "weights.pt", ONNX / "model.onnx"):
        assert path.is_file() and path.stat().st_size < 4 * 2**20, path


@pytest.mark.slow
def test_torch_and_onnx_choose_the_same_actions_through_a_match():
    """Both teams are shown the same observations of a real game, tick after tick, from
    the first tick on (spawn state included), with entities and items in view."""
    config = MatchConfig(horizon=60)
    env = game.make_env(config, map_id=3)
    obs = game.reset_env(env, seed=5)
    env_config = game.env_config(config, team_id=0, seed=1)
    agents = game.team_agent_ids(config)
    teams = {team: (load_team_class(TORCH)(team, env_config), load_team_class(ONNX)(team, env_config)) for team in (0, 5, 11)}
    compared = attacks = uses = 0
    for _ in range(config.horizon):
        actions = {}
        for team, (by_torch, by_onnx) in teams.items():
            team_obs = {m: obs[a] for m, a in enumerate(agents[team]) if a in env.realm.players}
            a, b = by_torch.act(team_obs), by_onnx.act(team_obs)
            assert a == b
            compared += len(a)
            attacks += sum("Attack" in x for x in a.values())
            uses += sum("Use" in x for x in a.values())
            actions.update({agents[team][m]: x for m, x in a.items()})  # nmmo takes the contract's format
        obs, *_ = env.step(actions)
    game.dispose_env(env)
    assert compared > 1000 and uses > 0, (attacks, uses)


@pytest.mark.parametrize("folder", [TORCH, ONNX], ids=["torch", "onnx"])
def test_the_example_validates_in_the_sandbox(folder):
    report = validate(local(folder), ticks=16)
    assert report.ok, report.reason
    assert 0 < report.median_step_ms < 100, report.reason


def test_both_play_a_match_in_the_sandbox_without_a_fault():
    config = MatchConfig(horizon=40)
    lineup = (local(TORCH), local(ONNX)) + tuple(builtin(n) for n in ("combat", "forage", "random", "elite") * 3 + ("forage", "random"))
    result = run_match(MatchSpec(seed=4, policies=lineup, config=config), host_factory=sandboxed_host)
    for team in result.teams[:2]:
        assert team.fault_counts == {}, team.faults


def test_the_about_tab_says_which_stages_are_learned():
    from arena.settings import ArenaSettings
    from leaderboard.about import about_markdown

    text = about_markdown(ArenaSettings(), hub_url="http://hub")
    assert "Stages 1 and 3 are played by **scripted** teams only; stage 2 also by a **learned** team" in text
    assert "stage 2: 6 apprentice, 5 Combat, 4 Forage (learned and scripted)" in text


def test_the_learned_built_in_is_the_same_network_played_in_process():
    from arena.rules import builtin_team

    assert builtin_team("Apprentice").kind == "learned"
    config = MatchConfig(horizon=20)
    lineup = (builtin("apprentice"), local(TORCH)) + tuple(builtin(n) for n in ("combat", "forage", "random") * 4 + ("forage", "random"))
    played = run_match(MatchSpec(seed=6, policies=lineup, config=config), host_factory=in_process_host)  # in-process, as built-ins play
    by_builtin, by_example = played.teams[0], played.teams[1]
    assert by_builtin.fault_counts == {} and by_example.fault_counts == {}
    assert by_builtin.alive == by_example.alive == 8
