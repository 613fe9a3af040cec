"""Scoring: every tier boundary of every task, ranks, and the raw values read off the game."""

from __future__ import annotations

import pytest

from arena.scoring import (
    MAX_ACHIEVEMENT,
    RULES,
    TIER_POINTS,
    Task,
    TeamProgress,
    achievement,
    competition_ranks,
    top1,
)


@pytest.mark.parametrize("task", list(Task))
def test_each_tier_starts_exactly_at_its_threshold(task):
    rule = RULES[task]
    assert rule.points(0) == 0
    for threshold, points in zip(rule.thresholds, TIER_POINTS):
        assert rule.points(threshold - 1) < points, f"{task} just below {threshold}"
        assert rule.points(threshold) == points, f"{task} at {threshold}"
    assert rule.points(rule.thresholds[-1] + 1000) == TIER_POINTS[-1]


@pytest.mark.parametrize("task", list(Task))
def test_only_the_highest_tier_counts(task):
    hard = RULES[task].thresholds[-1]
    progress = TeamProgress(**{task.value: hard})
    assert achievement(progress).points[task] == 21  # not 4 + 10 + 21
    assert achievement(progress).total == 21 + sum(
        RULES[t].points(TeamProgress().value(t)) for t in Task if t is not task
    )


def test_paper_thresholds_kept_for_travel_and_eliminate():
    assert RULES[Task.TRAVEL].thresholds == (32, 64, 127)
    assert RULES[Task.ELIMINATE].thresholds == (1, 3, 6)


def test_thresholds_increase_and_fit_nmmo_2_caps():
    for rule in RULES.values():
        assert rule.thresholds[0] < rule.thresholds[1] < rule.thresholds[2]
    # nmmo 2.x caps skills and item levels at 10
    assert RULES[Task.FORAGE].thresholds[-1] <= 10
    assert RULES[Task.EQUIPMENT].thresholds[-1] <= 10


def test_achievement_sums_tasks_and_caps_at_84():
    best = TeamProgress(**{t.value: RULES[t].thresholds[-1] for t in Task})
    assert achievement(best).total == MAX_ACHIEVEMENT == 84
    mixed = TeamProgress(travel=64, forage=0, equipment=RULES[Task.EQUIPMENT].thresholds[0], eliminate=6)
    assert achievement(mixed).total == 10 + 0 + 4 + 21


def test_ties_share_a_rank_and_all_tied_leaders_win():
    ranks = competition_ranks([10, 35, 10, 0, 35])
    assert ranks == [3, 1, 3, 5, 1]
    assert top1(ranks) == [False, True, False, False, True]
    assert competition_ranks([0] * 16) == [1] * 16
