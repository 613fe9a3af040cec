"""Who plays whom in PvP: pools of 16 from the qualified revisions.

The default is the paper's protocol: uniformly random pools that keep every policy's
match count about equal (the least-played policies are picked first, ties at random).
Two alternatives are offered for comparison: rating-aware pools in the spirit of
Hugging Face's AI vs. AI (take the least-played policy, fill its pool at random from the
n policies whose ratings are closest to it) and uncertainty-first pools (the policies
whose ratings are least certain first). `bench/pairing_study.py` measures them; in
16-team free-for-alls random pools converge as fast as either, and closest-rating pools
split the field into groups that rarely meet, so random stays the default.

With fewer qualified policies than seats, built-in teams fill the pool; they are the
fixed anchors of the ratings (`arena.rules.ANCHORS`, `POOL_FILL`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from arena.rules import POOL_FILL, Pairing


def _least_played_first(candidates: Sequence[str], counts: Mapping[str, int], rng: np.random.Generator) -> list[str]:
    jitter = rng.random(len(candidates))
    return [p for _, _, p in sorted(zip((counts.get(p, 0) for p in candidates), jitter, candidates))]


def make_pool(
    candidates: Sequence[str],
    *,
    counts: Mapping[str, int],
    rng: np.random.Generator,
    size: int = 16,
    how: Pairing = Pairing.RANDOM,
    ratings: Mapping[str, float] | None = None,
    uncertainty: Mapping[str, float] | None = None,
    closest: int = 31,
    fill: Sequence[str] = POOL_FILL,
) -> list[str]:
    """One pool of `size` players.

    Args:
        candidates (`Sequence[str]`): the qualified revisions.
        counts (`Mapping[str, int]`): PvP matches each has played so far.
        rng (`np.random.Generator`): the randomness (seeded by the caller).
        size (`int`): seats in a match.
        how (`Pairing`): the pairing rule (see the module docstring).
        ratings (`Mapping[str, float]`): current ratings (for `CLOSEST_RATING`).
        uncertainty (`Mapping[str, float]`): current rating uncertainty (for `UNCERTAINTY`).
        closest (`int`): n of "the n closest ratings" (at least `size - 1`).
        fill (`Sequence[str]`): built-ins that fill empty seats, cycled.

    Returns:
        `list[str]`: exactly `size` players, in random seat order.
    """
    if size < 1:
        raise ValueError(f"`size` must be at least 1, got {size}.")
    candidates = list(dict.fromkeys(candidates))
    if len(candidates) <= size:
        chosen = list(candidates)
    elif how is Pairing.RANDOM:
        chosen = _least_played_first(candidates, counts, rng)[:size]
    elif how is Pairing.CLOSEST_RATING:
        if ratings is None:
            raise ValueError("closest-rating pairing needs `ratings`.")
        focus = _least_played_first(candidates, counts, rng)[0]
        others = sorted((p for p in candidates if p != focus), key=lambda p: abs(ratings.get(p, 0.0) - ratings.get(focus, 0.0)))
        near = others[: max(closest, size - 1)]
        chosen = [focus] + [near[i] for i in rng.choice(len(near), size=size - 1, replace=False)]
    elif how is Pairing.UNCERTAINTY:
        if uncertainty is None:
            raise ValueError("uncertainty-first pairing needs `uncertainty`.")
        jitter = rng.random(len(candidates))
        chosen = [p for _, _, p in sorted(zip((-uncertainty.get(p, float("inf")) for p in candidates), jitter, candidates))][:size]
    else:
        raise ValueError(f"Unknown pairing {how!r}.")
    seats = size - len(chosen)
    chosen += [fill[i % len(fill)] for i in range(seats)]
    return [chosen[i] for i in rng.permutation(len(chosen))]
