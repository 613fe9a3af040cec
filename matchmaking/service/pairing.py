"""Who plays whom in PvP: pools of 16 from the qualified revisions.

The default is the volume guarantee (`Pairing.GUARANTEE`): the revisions whose ratings
are not settled yet (`arena.settling`, one definition) take up to 8 seats of each pool,
the least settled first, and the other seats are drawn uniformly at random from everyone
else. A newcomer thus plays every match until its rating is settled, then its fair share,
and the unsettled always meet the field. Every qualified revision keeps at least
(16 - 8) / N of the seats of every pool: nobody is starved.

The options: `RANDOM`, the paper's protocol as the Arena long drew it (the least-played
first, ties at random: a newcomer sits in every pool until its count catches up with the
field's, long after it is settled), and `UNCERTAINTY` (the largest TrueSkill sigmas
first). `bench/pairing_study.py` measures them against uniformly random pools (docs/
benchmarks.md). Closest-rating pools (Hugging Face's AI vs. AI: the least-played policy
and 15 of the n whose ratings are closest to it) were retired on 2026-12-03: their study
found that they split the field into groups that rarely meet.

**No teammates in a free-for-all.** A pool seats at most one revision of each owner (the
namespace of its repo): two entries of one author could help each other in a match of
sixteen. Whatever the rule, the candidates are taken in its order and an owner already
seated is passed over.

With fewer qualified policies (of distinct owners) than seats, built-in teams fill the
pool; they are the fixed anchors of the ratings (`arena.rules.ANCHORS`, `POOL_FILL`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from arena.errors import InvalidArgumentError
from arena.revision import owner_of
from arena.rules import POOL_FILL, Pairing
from arena.settling import is_settled, priority_seats


def _one_per_owner(ordered: Iterable[str], size: int, seated: Iterable[str] = ()) -> list[str]:
    """The first `size` of `ordered` whose owner is not seated yet (nor in `seated`)."""
    taken = {owner_of(p) for p in seated} - {None}
    chosen: list[str] = []
    for player in ordered:
        if len(chosen) == size:
            break
        who = owner_of(player)
        if who is None or who not in taken:
            chosen.append(player)
            if who is not None:
                taken.add(who)
    return chosen


def _least_played_first(candidates: Sequence[str], counts: Mapping[str, int], rng: np.random.Generator) -> list[str]:
    jitter = rng.random(len(candidates))
    return [p for _, _, p in sorted(zip((counts.get(p, 0) for p in candidates), jitter, candidates))]


def _guarantee(candidates: Sequence[str], sigmas: Mapping[str, float], rng: np.random.Generator, size: int) -> list[str]:
    # ALGO LOGIC: the least settled first, in at most half the seats; the rest uniformly at random
    sigma = [sigmas.get(p, float("inf")) for p in candidates]
    unsettled = [(-s, j, p) for s, j, p in zip(sigma, rng.random(len(candidates)), candidates) if not is_settled(s)]
    chosen = _one_per_owner((p for _, _, p in sorted(unsettled)), priority_seats(size))
    taken = set(chosen)
    rest = [p for p in candidates if p not in taken]
    return chosen + _one_per_owner((rest[i] for i in rng.permutation(len(rest))), size - len(chosen), seated=chosen)


def make_pool(
    candidates: Sequence[str],
    *,
    counts: Mapping[str, int],
    rng: np.random.Generator,
    how: Pairing,
    size: int = 16,
    uncertainty: Mapping[str, float] | None = None,
    fill: Sequence[str] = POOL_FILL,
) -> list[str]:
    """One pool of `size` players.

    Args:
        candidates (`Sequence[str]`): the qualified revisions.
        counts (`Mapping[str, int]`): PvP matches each has played so far.
        rng (`np.random.Generator`): the randomness (seeded by the caller).
        size (`int`): seats in a match.
        how (`Pairing`): the pairing rule (see the module docstring).
        uncertainty (`Mapping[str, float]`): TrueSkill sigma of each player (for `UNCERTAINTY`
            and `GUARANTEE`; a player missing has never played: the least certain).
        fill (`Sequence[str]`): built-ins that fill empty seats, cycled.

    Returns:
        `list[str]`: exactly `size` players, in random seat order, no two of one owner.
    """
    if size < 1:
        raise InvalidArgumentError(f"`size` must be at least 1, got {size}.")
    candidates = list(dict.fromkeys(candidates))
    owners = {owner_of(p) for p in candidates}
    if len(candidates) <= size and len(owners) == len(candidates):
        chosen = list(candidates)
    elif how is Pairing.RANDOM or len(candidates) <= size:
        chosen = _one_per_owner(_least_played_first(candidates, counts, rng), size)
    elif how is Pairing.UNCERTAINTY:
        if uncertainty is None:
            raise InvalidArgumentError("uncertainty-first pairing needs `uncertainty`.")
        jitter = rng.random(len(candidates))
        chosen = _one_per_owner([p for _, _, p in sorted(zip((-uncertainty.get(p, float("inf")) for p in candidates), jitter,
                                                                  candidates))], size)
    elif how is Pairing.GUARANTEE:
        if uncertainty is None:
            raise InvalidArgumentError("the volume guarantee needs `uncertainty` (TrueSkill sigmas).")
        chosen = _guarantee(candidates, uncertainty, rng, size)
    else:
        raise InvalidArgumentError(f"Unknown pairing {how!r}.")
    seats = size - len(chosen)
    if seats and not fill:
        raise InvalidArgumentError(f"Only {len(chosen)} of the {size} seats have a candidate of an owner not seated yet, "
                                   "and no built-ins were given to fill the rest (`fill`).")
    chosen += [fill[i % len(fill)] for i in range(seats)]
    return [chosen[i] for i in rng.permutation(len(chosen))]
