"""The match runner: determinism, mixed line-ups, and faults that never end a match."""

from __future__ import annotations

import json

import pytest

from arena.errors import MatchSetupError
from arena.policies import builtin, local
from arena.schema import FaultKind, MatchResult
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec, policies_for, run_match
from matchmaking.teams.factory import in_process_host
from tests_support import EXAMPLES, patient, policy_dir

SHORT = MatchConfig(horizon=40, time_bank_s=0.0, max_faults_recorded=10)  # no bank: one late answer is a timeout


@pytest.mark.slow
def test_same_seed_and_policies_give_identical_records(stage1_opponents):
    # the same game whatever the machine's load: no tick may time out (the runner's timeouts are tested below)
    lineup = policies_for(local(EXAMPLES / "explorer"), stage1_opponents)
    first = run_match(MatchSpec(seed=11, policies=lineup, config=patient(SHORT)), host_factory=in_process_host)
    second = run_match(MatchSpec(seed=11, policies=lineup, config=patient(SHORT)), host_factory=in_process_host)
    other = run_match(MatchSpec(seed=12, policies=lineup, config=patient(SHORT)), host_factory=in_process_host)
    assert first.outcome() == second.outcome()
    assert first.match_id == second.match_id != other.match_id
    assert first.outcome()["teams"] != other.outcome()["teams"]
    assert first.ticks == SHORT.horizon
    assert len(first.teams) == 16 and [t.slot for t in first.teams] == list(range(16))


@pytest.fixture(scope="module")
def mixed_match() -> MatchResult:
    """Every built-in, the example policy and eight misbehaving test policies in one match."""
    builtins = [builtin(name) for name in ("random", "forage", "combat", "melee", "range", "mage")]
    tests = [
        local(policy_dir(name))
        for name in (
            "raise_every_tick",
            "raise_at_tick",
            "bad_actions",
            "wrong_type",
            "import_error",
            "no_team",
            "exit_on_init",
            "slow",
        )
    ]
    lineup = tuple(builtins + [local(EXAMPLES / "explorer")] + tests + [builtin("forage")])
    return run_match(MatchSpec(seed=5, policies=lineup, config=SHORT), host_factory=in_process_host)


def team(result: MatchResult, name: str):
    return next(t for t in result.teams if t.policy_id.endswith(":" + name))


def test_mixed_match_completes_with_a_full_record(mixed_match):
    assert mixed_match.ticks == SHORT.horizon
    assert len(mixed_match.teams) == 16
    for t in mixed_match.teams:
        assert set(t.tasks) == {"travel", "forage", "equipment", "eliminate"}
        assert t.achievement == sum(task.points for task in t.tasks.values())
        assert 1 <= t.rank <= 16
        assert t.alive + t.deaths == SHORT.team_size
    assert min(t.rank for t in mixed_match.teams) == 1
    # the record survives a JSON round trip unchanged
    assert MatchResult.from_dict(json.loads(json.dumps(mixed_match.to_dict()))) == mixed_match


def test_builtin_and_example_teams_have_no_faults(mixed_match):
    for t in mixed_match.teams:
        if t.policy_id.startswith("builtin:") or t.policy_id == "local:explorer":
            assert t.fault_counts == {}, t


def test_raising_every_tick_is_recorded_every_tick_and_capped(mixed_match):
    t = team(mixed_match, "raise_every_tick")
    # asked every tick while a member lived (idle agents starve by tick 25): one fault each
    assert set(t.fault_counts) == {"ERROR"} and t.fault_counts["ERROR"] > SHORT.max_faults_recorded
    assert len(t.faults) == SHORT.max_faults_recorded
    assert [f.tick for f in t.faults] == list(range(1, SHORT.max_faults_recorded + 1))
    assert "RuntimeError: deliberate failure on call 1" in t.faults[0].message
    assert "policy.py:" in t.faults[0].message


def test_a_single_exception_costs_one_tick(mixed_match):
    t = team(mixed_match, "raise_at_tick")
    assert t.fault_counts == {"ERROR": 1}
    assert t.faults[0].tick == 5 and "ValueError: deliberate failure at tick 5" in t.faults[0].message
    assert t.tasks["travel"].value > 10  # it kept moving north on the other ticks


def test_invalid_actions_keep_the_valid_members(mixed_match):
    t = team(mixed_match, "bad_actions")
    assert t.fault_counts.get("INVALID", 0) >= 1
    assert "Move.Direction=17 is out of range 0..4" in t.faults[0].message
    wrong = team(mixed_match, "wrong_type")
    assert wrong.faults[0].kind is FaultKind.INVALID and "got list" in wrong.faults[0].message


@pytest.mark.parametrize(
    "name, words",
    [
        ("import_error", "ImportNotAllowedError"),
        ("no_team", "must define `class Team`"),
        ("exit_on_init", "SystemExit"),
    ],
)
def test_a_team_that_cannot_start_idles_with_one_init_fault(mixed_match, name, words):
    t = team(mixed_match, name)
    assert t.fault_counts == {"INIT": 1}
    assert t.faults[0].tick == 0 and words in t.faults[0].message


def test_a_late_answer_is_dropped_as_timeout(mixed_match):
    t = team(mixed_match, "slow")
    assert t.fault_counts == {"TIMEOUT": 1}
    assert t.faults[0].tick == 3 and "over the 600 ms deadline, and the team's time bank for the match is spent" in t.faults[0].message


def test_spec_validation_names_the_problem():
    with pytest.raises(MatchSetupError, match="16 expected, 2 given"):
        MatchSpec(seed=1, policies=(builtin("random"),) * 2)
    with pytest.raises(MatchSetupError, match="non-negative integer"):
        MatchSpec(seed=-1, policies=(builtin("random"),) * 16)
