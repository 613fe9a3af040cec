"""The PvE queue: earliest stage first, round-robin by matches played, newcomers boosted;
and the forecast that plays that order forward."""

from __future__ import annotations

import pytest

from arena.revision import Revision
from matchmaking.service.pve_queue import PveWork, forecast, pick


def work(name: str, stage: int, played: int, since: float, left: int | None = None) -> PveWork:
    left = 10 - played if left is None else left
    return PveWork(Revision(f"u/{name}", name * 4), stage, tuple(range(1000 * len(name), 1000 * len(name) + left)), played, since)


def test_stage_one_goes_ahead_of_later_stages_of_revisions_pushed_before():
    old = [work("a", 3, 2, since=1.0), work("b", 2, 0, since=2.0)]
    new = work("n", 1, 0, since=9.0)
    chosen = pick([*old, new], 2)
    assert [w.id.policy_id for w, _ in chosen] == ["u/n", "u/n"]
    assert [w.id.policy_id for w, _ in pick(old, 3)] == ["u/b", "u/b", "u/b"]  # stage 2 before 3


def test_revisions_in_a_stage_share_round_robin_and_a_newcomer_catches_up_first():
    early = [work("a", 1, 3, since=1.0), work("b", 1, 3, since=2.0)]
    new = work("nn", 1, 0, since=9.0)
    chosen = [w.id.policy_id for w, _ in pick([*early, new], 7)]
    assert chosen[:3] == ["u/nn"] * 3  # catches up to the others' 3 ...
    assert chosen[3:] == ["u/a", "u/b", "u/nn", "u/a"]  # ... then turns, oldest first among equals


def test_seeds_in_flight_are_not_started_twice_and_count_as_played():
    a, b = work("a", 1, 0, since=1.0), work("b", 1, 1, since=2.0)
    chosen = pick([a, b], 2, in_flight={a.id: [a.seeds[0], a.seeds[1]]})
    assert [(w.id.policy_id, seed) for w, seed in chosen] == [("u/b", b.seeds[0]), ("u/a", a.seeds[2])]


def test_forecast_places_and_times_follow_the_order():
    old = work("a", 2, 0, since=1.0)
    new = work("n", 1, 6, since=9.0)  # 4 stage-1 matches left
    entries = forecast([old, new], workers=2, match_s=30.0, now=100.0)
    assert entries[new.id].place == 1 and entries[old.id].place == 2
    assert entries[new.id].eta_s == pytest.approx(60.0)  # 4 matches on 2 workers
    assert entries[old.id].eta_s == pytest.approx(60.0 + 5 * 30.0)  # then its 10 on 2 workers
    halved = forecast([old, new], workers=2, match_s=30.0, now=100.0, later_share=0.5)
    assert halved[old.id].eta_s == pytest.approx(60.0 + 5 * 60.0)  # PvP takes half once stage 1 is done
    busy = forecast([new], workers=2, match_s=30.0, now=100.0, in_flight={new.id: [new.seeds[0]]}, busy_until=[110.0])
    assert busy[new.id].eta_s == pytest.approx(60.0)  # one ends at 110; the other 3: 100-130, 110-140, 130-160 -> 60
    assert forecast([new], workers=2, match_s=None)[new.id].eta_s is None
