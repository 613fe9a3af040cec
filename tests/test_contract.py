"""The check of a team's answer against the action space."""

from __future__ import annotations

import numpy as np

from matchmaking.engine.contract import check_actions

SPACE = {"Move": {"Direction": 5}, "Attack": {"Style": 3, "Target": 101}}


def check(answer, alive=frozenset(range(8))):
    return check_actions(answer, alive_members=alive, team_size=8, space=SPACE)


def test_valid_actions_pass_and_numpy_indices_become_ints():
    checked = check({0: {"Move": {"Direction": np.int64(2)}}, np.int32(1): {"Attack": {"Style": 0, "Target": 100}}, 2: {}})
    assert checked.ok
    assert checked.actions == {0: {"Move": {"Direction": 2}}, 1: {"Attack": {"Style": 0, "Target": 100}}, 2: {}}
    assert type(checked.actions[0]["Move"]["Direction"]) is int


def test_not_a_dict_is_reported_with_its_type():
    checked = check([1, 2])
    assert checked.actions == {}
    assert "got list" in checked.summary()


def test_each_bad_member_idles_alone():
    checked = check(
        {
            0: {"Move": {"Direction": 1}},
            1: {"Move": {"Direction": 5}},
            2: {"Fly": {"Up": 1}},
            3: {"Attack": {"Style": 0}},
            4: {"Move": {"Direction": 1.0}},
            5: {"Move": {"Direction": True}},
            6: {"Move": {"Speed": 1, "Direction": 0}},
            7: "north",
            99: {"Move": {"Direction": 0}},
            "x": {},
        }
    )
    assert checked.actions == {0: {"Move": {"Direction": 1}}}
    problems = "\n".join(checked.problems)
    assert "member 1: Move.Direction=5 is out of range 0..4" in problems
    assert "member 2: unknown action 'Fly'" in problems
    assert "member 3: Attack is missing argument(s) Target" in problems
    assert "member 4: Move.Direction must be an integer index, got float" in problems
    assert "member 5: Move.Direction must be an integer index, got bool" in problems
    assert "member 6: Move has no argument 'Speed'" in problems
    assert "member 7: action must be a dict" in problems
    assert "key 99 is not a member index 0..7" in problems
    assert "key 'x' is not a member index 0..7" in problems
    assert checked.summary().endswith("(+8 more)")


def test_negative_index_is_invalid():
    # nmmo would read a negative Target as a row from the end: never let it through
    assert not check({0: {"Attack": {"Style": 0, "Target": -1}}}).ok


def test_actions_for_dead_members_are_ignored_quietly():
    checked = check({0: {"Move": {"Direction": 1}}, 5: {"Move": {"Direction": 1}}}, alive={0})
    assert checked.ok
    assert checked.actions == {0: {"Move": {"Direction": 1}}}
