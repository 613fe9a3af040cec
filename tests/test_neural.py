"""Trained policies in the sandbox: PyTorch and ONNX load from their folders and play, under
the same limits as any team: one CPU whatever they ask, memory as used, time per tick."""

from __future__ import annotations

import shutil

import pytest

from arena.policies import builtin, local
from matchmaking.engine import game
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec, run_match
from matchmaking.sandbox.host import sandboxed_host
from matchmaking.service.validation import validate
from matchmaking.teams.loading import load_team_class
from tests_support import POLICIES, fault_of

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")

NEURAL = POLICIES / "neural"
HOSTILE = ("threads_hog", "big_model", "slow_model")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """The torch and ONNX test policies, with the same freshly made weights in each folder."""
    root = tmp_path_factory.mktemp("neural")
    torch_dir = shutil.copytree(NEURAL / "torch_mlp", root / "torch_mlp")
    onnx_dir = shutil.copytree(NEURAL / "onnx_mlp", root / "onnx_mlp")
    import sys

    sys.path.insert(0, str(torch_dir))
    try:
        from net import Net
    finally:
        sys.path.remove(str(torch_dir))
        sys.modules.pop("net", None)
    torch.manual_seed(0)
    net = Net().eval()
    torch.save(net.state_dict(), torch_dir / "weights.pt")
    torch.onnx.export(net, (torch.zeros(2, 17),), str(onnx_dir / "model.onnx"), dynamo=False, input_names=["features"],
                      output_names=["logits"], dynamic_axes={"features": {0: "members"}, "logits": {0: "members"}})
    return {"torch": torch_dir, "onnx": onnx_dir}


@pytest.mark.parametrize("kind", ["torch", "onnx"])
def test_a_trained_policy_validates_in_the_sandbox(folders, kind):
    report = validate(local(folders[kind]), ticks=16)
    assert report.ok, report.reason
    assert report.faults == () and 0 < report.median_step_ms <= report.p99_step_ms < 600 and report.max_step_cpu_ms < 600
    assert "ms per tick (median; 99th percentile" in report.reason and "beyond the preloaded frameworks" in report.reason
    assert 0 <= report.peak_memory_mb < 200  # the frameworks themselves do not count


def test_the_torch_and_onnx_exports_play_the_same_actions(folders):
    config = MatchConfig(num_teams=1, horizon=4)
    env = game.make_env(config, map_id=2)
    obs = game.reset_env(env, seed=3)
    team_obs = {m: obs[a] for m, a in enumerate(game.team_agent_ids(config)[0])}
    env_config = game.env_config(config, team_id=0, seed=1)
    by_torch = load_team_class(folders["torch"])(0, env_config).act(team_obs)
    by_onnx = load_team_class(folders["onnx"])(0, env_config).act(team_obs)
    assert by_torch == by_onnx and len(by_torch) == 8


HORIZON = 120


@pytest.fixture(scope="module")
def match(folders):
    # a bank of 0.2 s: slow_model's second of CPU at tick 3 is late beyond it on any machine;
    # 120 ticks: on a loaded machine big_model's gigabyte takes seconds to fill, and the ticks
    # it is still busy with pass without a wait, so the match must last long enough to see it
    config = MatchConfig(horizon=HORIZON, time_bank_s=0.2, hang_timeout_s=60.0, fault_message_chars=600)
    lineup = [local(folders["torch"]), local(folders["onnx"])] + [local(NEURAL / name) for name in HOSTILE]
    lineup += [builtin(n) for n in ("combat", "forage", "random") * 3 + ("combat", "forage")]
    return run_match(MatchSpec(seed=8, policies=tuple(lineup), config=config), host_factory=sandboxed_host)


def test_neural_teams_play_a_match_without_a_fault(match):
    assert match.ticks == HORIZON
    for slot in (0, 1):
        assert match.teams[slot].fault_counts == {}, match.teams[slot].faults


def test_asking_for_sixteen_threads_still_gets_one_cpu(match):
    team, faults = fault_of(match, "threads_hog")
    assert team.fault_counts == {"ERROR": 1}
    assert "threads=1 ort_threads=1 cores=1 widen=refused (Operation not permitted)" in faults
    ratio = float(faults.split("cpu_per_wall=")[1].split()[0].rstrip(")"))
    assert ratio <= 1.05, faults


def test_a_model_past_the_memory_limit_is_a_memory_fault_with_its_figure(match):
    team, faults = fault_of(match, "big_model")
    # stopped while it builds the tensor (the host reads its memory as it waits), not after;
    # where the build outlasts a tick's wait (a loaded machine fills pages slowly) it is a
    # timeout first, then the memory fault, and nothing after it
    assert team.fault_counts.get("MEMORY") == 1 and set(team.fault_counts) <= {"MEMORY", "TIMEOUT"}, faults
    memory = next(f for f in team.faults if f.kind.value == "MEMORY")
    assert all(f.tick <= memory.tick for f in team.faults), faults
    used = int(memory.message.split("the team used ")[1].split(" MB")[0])
    assert 1024 <= used <= 1700 and "over the 1024 MB limit" in memory.message and memory.tick >= 3


def test_a_model_too_slow_is_a_timeout_past_its_deadline_and_bank(match):
    """Its one slow tick (a second of CPU at tick 3) is late beyond the match's 0.2 s bank: a
    TIMEOUT there, saying so (and, on a machine where the wait ended first, the ticks it was
    still busy with), and nothing else."""
    team, faults = fault_of(match, "slow_model")
    assert set(team.fault_counts) == {"TIMEOUT"} and team.faults[0].tick == 3, faults
    first = team.faults[0].message
    assert "over the 600 ms deadline, and the team's time bank for the match is spent" in first or \
        "no answer within 0.80 s (its deadline and the rest of its time bank)" in first, first
    assert all("still busy with tick 3" in f.message for f in team.faults[1:]), faults
