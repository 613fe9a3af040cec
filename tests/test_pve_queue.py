"""The PvE queue: earliest stage first, the Arena's seeded submissions last, a newcomer's
first match boosted, then earliest pushed first; and the forecast that plays that order
forward."""

from __future__ import annotations

import pytest

from arena.revision import Revision
from matchmaking.service.pve_queue import PveWork, forecast, pick


def work(name: str, stage: int, played: int, since: float, left: int | None = None, seeded: bool = False,
         owner: str = "") -> PveWork:
    """`name`'s work, in the repo `owner/name` (an owner of its own, `name`, by default)."""
    left = 10 - played if left is None else left
    seeds = tuple(range(1000 * len(name), 1000 * len(name) + left))
    return PveWork(Revision(f"{owner or name}/{name}", name * 4), stage, seeds, played, since, seeded=seeded)


def ids(chosen) -> list[str]:
    return [w.id.policy_id.split("/")[1] for w, _ in chosen]


def test_stage_one_goes_ahead_of_later_stages_of_revisions_pushed_before():
    old = [work("a", 3, 2, since=1.0), work("b", 2, 0, since=2.0)]
    new = work("n", 1, 0, since=9.0)
    chosen = pick([*old, new], 2)
    assert ids(chosen) == ["n", "n"]
    assert ids(pick(old, 3)) == ["b", "b", "b"]  # stage 2 before 3


def test_a_newcomer_plays_its_first_match_first_then_verdicts_come_in_push_order():
    early = [work("a", 1, 3, since=1.0), work("b", 1, 3, since=2.0)]
    new = work("nn", 1, 0, since=9.0)
    chosen = ids(pick([*early, new], 12))
    assert chosen[0] == "nn"  # its first figure after one match ...
    assert chosen[1:] == ["a"] * 7 + ["b"] * 4  # ... then the earliest pushed, with every free worker


def test_the_arenas_seeded_submissions_yield_to_every_other_revision():
    seeded = [work("a", 1, 0, since=1.0, seeded=True), work("b", 1, 2, since=2.0, seeded=True)]
    new = work("nn", 1, 4, since=9.0)
    assert ids(pick([*seeded, new], 7)) == ["nn"] * 6 + ["a"]
    later = work("c", 2, 0, since=0.0)  # a later stage still waits for the seeded ones' stage 1
    assert ids(pick([later, *seeded], 2)) == ["a", "a"]


def test_owners_take_turns_so_a_flood_delays_another_owner_by_about_one_match():
    """Issue 37's flood: one owner's 25 revisions, pushed first, some already playing; then
    another owner's one. Its first match is the next to start, and its stage follows at once."""
    flood = [work(f"s{i:02d}", 1, 2 if i < 2 else 0, since=float(i), owner="spammer") for i in range(25)]
    victim = work("v", 1, 0, since=100.0, owner="victim")
    chosen = ids(pick([*flood, victim], 12))
    assert chosen[0] == "v" and chosen.count("v") == 10  # all of its stage before the flood's second revision ...
    assert set(chosen) - {"v"} == {"s00"}  # ... beside the flood's first, which takes turns with it
    places = forecast([*flood, victim], workers=2, match_s=10.0)
    assert places[victim.id].place == 1 and places[flood[0].id].place == 2 and places[flood[1].id].place == 3
    assert places[victim.id].eta_s == pytest.approx(50.0)  # its 10 matches on the 2 workers: the flood costs nothing


def test_a_place_in_the_queue_only_moves_forward_as_matches_are_played():
    revisions = [work(name, 1, 0, since=float(i), left=3) for i, name in enumerate(["a", "b", "c", "d"])]
    last = revisions[3].id
    places = []
    while any(w.id == last for w in revisions):
        places.append(forecast(revisions, workers=2, match_s=30.0)[last].place)
        (item, _), = pick(revisions, 1)
        revisions = [w if w is not item else PveWork(w.id, 1, w.seeds[1:], w.played + 1, w.since) for w in revisions]
        revisions = [w for w in revisions if w.seeds]  # a stage played out: its verdict
    assert places == sorted(places, reverse=True) and places[0] == 4 and places[-1] == 1, places  # forward only


def test_seeds_in_flight_are_not_started_twice_and_count_as_played():
    a, b = work("a", 1, 0, since=1.0), work("b", 1, 1, since=2.0)
    chosen = pick([a, b], 2, in_flight={a.id: [a.seeds[0], a.seeds[1]]})
    assert [(w.id.policy_id, seed) for w, seed in chosen] == [(a.id.policy_id, a.seeds[2]), (a.id.policy_id, a.seeds[3])]
    fresh = work("c", 1, 0, since=3.0)  # no match yet, none in flight: boosted ahead of both
    assert ids(pick([a, b, fresh], 2, in_flight={a.id: [a.seeds[0]]})) == ["c", "a"]


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
