"""Head to head: pair records and their intervals on hand-made histories, clear cycles
found where planted and nowhere else, and the Nash average on hand-made matrices."""

from __future__ import annotations

import numpy as np
import pytest

from arena.head_to_head import MIN_MEETINGS, head_to_head, meta_game, nash_average, wilson_interval
from arena.ratings import Outcome


def match(k: int, players: tuple[str, ...], scores: tuple[int, ...]) -> Outcome:
    return Outcome((f"2026-01-01T00:00:{k:05d}", f"m{k:05d}"), players, scores)


def duels(winner: str, loser: str, wins: int, losses: int, *, start: int = 0) -> list[Outcome]:
    """`wins` matches `winner` scored more, then `losses` it scored less."""
    return [match(start + k, (winner, loser), (10, 4) if k < wins else (4, 10)) for k in range(wins + losses)]


# -- the Nash average on hand-made matrices ------------------------------------------------


def test_rock_paper_scissors_is_uniform_and_everyone_scores_zero():
    rps = np.array([[0, 1, -1], [-1, 0, 1], [1, -1, 0]], dtype=float)
    ratings, weights = nash_average(rps)
    assert weights == pytest.approx([1 / 3] * 3, abs=1e-6)
    assert ratings == pytest.approx([0, 0, 0], abs=1e-9)


def test_a_weighted_cycle_has_its_own_mix():
    # rock beats scissors by 2 (log-odds), the others by 1: the equilibrium is p ~ (1, 2, 1)/4 rotated
    a = np.array([[0, 1, -2], [-1, 0, 1], [2, -1, 0]], dtype=float)
    ratings, weights = nash_average(a)
    assert ratings == pytest.approx([0, 0, 0], abs=1e-9)
    assert weights == pytest.approx([0.25, 0.5, 0.25], abs=1e-6)


def test_a_transitive_matrix_puts_the_mix_on_the_top_player_and_orders_the_rest():
    skills = np.array([0.3, 2.0, -1.0, 1.1])  # player 1 on top, then 3, 0, 2
    a = skills[:, None] - skills[None, :]
    ratings, weights = nash_average(a)
    assert weights == pytest.approx([0, 1, 0, 0], abs=1e-9)
    assert ratings[1] == 0 and all(ratings[i] < 0 for i in (0, 2, 3))
    assert list(np.argsort(-ratings)) == [1, 3, 0, 2]
    assert ratings == pytest.approx(skills - skills[1])  # against the top player: the gap to it


def test_copies_of_a_weak_player_change_the_mean_win_rate_but_not_the_nash_average():
    # a beats b beats c; a cycle among a, b and d keeps the mix mixed
    base = np.array([
        [0.0, 1.0, 2.0, -1.0],   # a
        [-1.0, 0.0, 1.5, 1.0],   # b
        [-2.0, -1.5, 0.0, -1.0],  # c: weak, beaten by everyone
        [1.0, -1.0, 1.0, 0.0],   # d
    ])
    copies = 5
    n = len(base) + copies
    crowded = np.zeros((n, n))
    crowded[:4, :4] = base
    for k in range(4, n):  # each copy plays exactly as c does, and evenly against c and the other copies
        crowded[k, :4] = base[2]
        crowded[:4, k] = base[:, 2]
    before, w_before = nash_average(base)
    after, w_after = nash_average(crowded)
    assert after[:4] == pytest.approx(before, abs=1e-7)
    assert w_before[2] == pytest.approx(0, abs=1e-9) and w_after[[2, *range(4, n)]].sum() == pytest.approx(0, abs=1e-9)

    def mean_share(a: np.ndarray) -> np.ndarray:
        share = 1 / (1 + np.exp(-a))
        return (share.sum(axis=1) - 0.5) / (len(a) - 1)

    assert np.all(mean_share(crowded)[[0, 1, 3]] > mean_share(base)[[0, 1, 3]] + 0.05)  # the mean rewards beating copies


def test_copies_in_the_mix_share_its_weight_evenly():
    rps = np.array([[0, 1, -1], [-1, 0, 1], [1, -1, 0]], dtype=float)
    four = np.zeros((4, 4))
    four[:3, :3] = rps
    four[3, :3], four[:3, 3] = rps[2], rps[:, 2]  # a second scissors
    ratings, weights = nash_average(four)
    assert weights == pytest.approx([1 / 3, 1 / 3, 1 / 6, 1 / 6], abs=1e-5)  # maximum entropy: the copies split one share
    assert ratings == pytest.approx([0, 0, 0, 0], abs=1e-7)


def test_no_one_one_and_two_players():
    assert [len(x) for x in nash_average(np.zeros((0, 0)))] == [0, 0]
    ratings, weights = nash_average(np.zeros((1, 1)))
    assert ratings.tolist() == [0.0] and weights.tolist() == [1.0]
    ratings, weights = nash_average(np.array([[0.0, 0.7], [-0.7, 0.0]]))
    assert weights.tolist() == pytest.approx([1, 0]) and ratings.tolist() == pytest.approx([0, -0.7])
    ratings, weights = nash_average(np.zeros((2, 2)))  # never met: no evidence, an even mix
    assert weights.tolist() == pytest.approx([0.5, 0.5]) and ratings.tolist() == [0, 0]
    empty = head_to_head([])
    assert empty.players == () and empty.nash == {} and empty.cycles == () and empty.pairs() == [] and empty.count_pairs() == 0


def test_a_matrix_that_is_not_a_game_is_refused():
    with pytest.raises(ValueError, match="antisymmetric"):
        nash_average(np.array([[0.0, 1.0], [1.0, 0.0]]))


# -- records and intervals -----------------------------------------------------------------


def test_shares_and_wilson_intervals_on_a_tiny_history():
    history = [
        match(0, ("a", "b", "c"), (10, 4, 4)),
        match(1, ("a", "b", "c"), (4, 10, 0)),
        match(2, ("a", "b"), (7, 7)),
        match(3, ("c", "b"), (4, 8)),
    ]
    h = head_to_head(history)
    assert h.players == ("a", "b", "c")
    a, b, c = range(3)
    assert h.met[a, b] == h.met[b, a] == 3 and h.met[a, c] == 2 and h.met[b, c] == 3
    assert (h.wins[a, b], h.wins[b, a], h.ties[a, b]) == (1, 1, 1)
    assert h.share[a, b] == pytest.approx(0.5) and h.share[b, c] == pytest.approx(5 / 6)  # b-c: a tie, two wins
    assert (h.wins[a, c], h.ties[a, c]) == (2, 0) and h.share[c, a] == 0.0
    # Wilson: p = 5/6 with n = 3, z = 1.96
    z = 1.959963984540054
    p, n = 5 / 6, 3
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert (h.low[b, c], h.high[b, c]) == pytest.approx((centre - half, centre + half))
    assert h.low[c, b] == pytest.approx(1 - h.high[b, c]) and np.isnan(h.share[a, a])
    pairs = {(r["a"], r["b"]): r for r in h.pairs()}
    assert len(pairs) == 6 and pairs[("b", "c")] == {
        "a": "b", "b": "c", "met": 3, "wins": 2, "ties": 1, "share": pytest.approx(5 / 6),
        "low": pytest.approx(centre - half), "high": pytest.approx(centre + half)}


def test_wilson_stays_inside_zero_one_where_wald_would_not():
    low, high = wilson_interval(np.array([0, 3, 10]), np.array([3, 3, 10]))
    assert low[0] == 0 and 0 < high[0] < 0.6 and 0.4 < low[1] < 1 and high[1] == pytest.approx(1)
    assert np.all(np.isnan(wilson_interval(0, 0)))


def test_a_player_seated_twice_counts_the_match_once_by_majority_of_seat_pairs():
    # builtin:x holds two seats; the match is one meeting for each pair
    h = head_to_head([
        match(0, ("p", "x", "x"), (5, 9, 1)),  # p above one x seat, below the other: a tie
        match(1, ("p", "x", "x"), (5, 9, 6)),  # p below both: x wins
        match(2, ("x", "p", "x", "q"), (1, 5, 2, 3)),  # p above both: p wins; q above both x seats too
    ])
    p, q, x = (h.index(n) for n in ("p", "q", "x"))
    assert h.met[p, x] == 3 and h.met[x, x] == 0
    assert (h.wins[p, x], h.ties[p, x], h.wins[x, p]) == (1, 1, 1)
    assert (h.met[q, x], h.wins[q, x]) == (1, 1)


def test_the_share_is_the_same_whatever_the_seat_order_or_match_order():
    history = [match(k, ("a", "b", "c", "a"), tuple(int(s) for s in np.random.default_rng(k).integers(0, 5, 4))) for k in range(30)]
    shuffled = [match(k, tuple(reversed(o.players)), tuple(reversed(o.scores))) for k, o in reversed(list(enumerate(history)))]
    one, two = head_to_head(history), head_to_head(shuffled)
    assert np.array_equal(one.wins, two.wins) and np.array_equal(one.ties, two.ties) and one.nash == two.nash


# -- clear cycles ----------------------------------------------------------------------------


def test_a_planted_cycle_is_found_with_its_shares():
    history = duels("rock", "scissors", 9, 1) + duels("scissors", "paper", 9, 1, start=100) \
        + duels("paper", "rock", 10, 0, start=200) + duels("rock", "filler", 8, 2, start=300)
    h = head_to_head(history)
    assert h.cycle_count == 1 and len(h.cycles) == 1
    cycle = h.cycles[0]
    assert cycle.players == ("paper", "rock", "scissors")  # the smallest id first, then along the edges
    assert cycle.shares == pytest.approx((1.0, 0.9, 0.9))
    assert {p: round(w, 6) for p, w in h.nash_weight.items() if w > 1e-9}.keys() == {"paper", "rock", "scissors"}


def test_a_cycle_needs_every_edge_clear_and_enough_meetings():
    few = MIN_MEETINGS - 1  # each pair decisive but met too rarely
    h = head_to_head(duels("r", "s", few, 0) + duels("s", "p", few, 0, start=100) + duels("p", "r", few, 0, start=200))
    assert h.cycles == () and h.cycle_count == 0
    h = head_to_head(duels("r", "s", 9, 1) + duels("s", "p", 9, 1, start=100) + duels("p", "r", 6, 4, start=200))
    assert h.cycles == ()  # 6 of 10: its interval reaches below 0.5


def test_a_four_cycle_is_found_once():
    names = ["a", "b", "c", "d"]
    history = []
    for k, (winner, loser) in enumerate(zip(names, names[1:] + names[:1])):
        history += duels(winner, loser, 10, 0, start=100 * k)
    history += duels("a", "c", 5, 5, start=1000) + duels("b", "d", 5, 5, start=2000)  # chords even: no 3-cycle
    h = head_to_head(history)
    assert h.cycle_count == 1 and [c.players for c in h.cycles] == [("a", "b", "c", "d")]


def test_a_transitive_history_has_no_cycle_and_its_nash_follows_the_skills():
    from arena.simulation import Population, play

    rng = np.random.default_rng(3)
    population = Population(ids=tuple(f"p{i}" for i in range(8)), skills=np.linspace(1.4, -1.4, 8))
    outcomes = []
    for k in range(300):  # neighbours differ by 0.4 (a duel won 60% of the time): no pair's interval reverses
        r = play(population.ids, population.skills, rng=rng, index=k, coarse=False)
        outcomes.append(match(k, tuple(t.policy_id for t in r.teams), tuple(t.achievement for t in r.teams)))
    h = head_to_head(outcomes)
    assert h.cycles == () and h.cycle_count == 0
    assert h.nash_weight["p0"] == pytest.approx(1.0, abs=1e-6)
    ratings = [h.nash[p] for p in population.ids]
    assert ratings[0] == 0 and all(x > y for x, y in zip(ratings, ratings[1:]))


def test_the_meta_game_is_antisymmetric_finite_and_zero_where_pairs_never_met():
    met = np.array([[0, 4, 0], [4, 0, 0], [0, 0, 0]])
    wins = np.array([[0, 4, 0], [0, 0, 0], [0, 0, 0]])
    a = meta_game(met, wins, np.zeros_like(met))
    assert np.allclose(a, -a.T) and np.all(np.isfinite(a))
    assert a[0, 1] == pytest.approx(np.log(4.5 / 0.5)) and a[0, 2] == 0 and a[1, 2] == 0
