"""Who plays whom in PvP: pools of 16 from the qualified revisions.

The default is the paper's protocol: uniformly random pools that keep every policy's
match count about equal (the least-played policies are picked first, ties at random).
The alternative is uncertainty-first pools (the policies whose ratings are least certain
first). `bench/pairing_study.py` measures both; in 16-team free-for-alls random pools
converge as fast, so random stays the default. Closest-rating pools (Hugging Face's AI vs.
AI: the least-played policy and 15 of the n whose ratings are closest to it) were retired
on 2026-12-03: their study found that they split the field into groups that rarely meet.

With fewer qualified policies than seats, built-in teams fill the pool; they are the
fixed anchors of the ratings (`arena.rules.ANCHORS`, `POOL_FILL`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from arena.errors import InvalidArgumentError
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
        uncertainty (`Mapping[str, float]`): current rating uncertainty (for `UNCERTAINTY`).
        fill (`Sequence[str]`): built-ins that fill empty seats, cycled.

    Returns:
        `list[str]`: exactly `size` players, in random seat order.
    """
    if size < 1:
        raise InvalidArgumentError(f"`size` must be at least 1, got {size}.")
    candidates = list(dict.fromkeys(candidates))
    if len(candidates) <= size:
        chosen = list(candidates)
    elif how is Pairing.RANDOM:
        chosen = _least_played_first(candidates, counts, rng)[:size]
    elif how is Pairing.UNCERTAINTY:
        if uncertainty is None:
            raise InvalidArgumentError("uncertainty-first pairing needs `uncertainty`.")
        jitter = rng.random(len(candidates))
        chosen = [p for _, _, p in sorted(zip((-uncertainty.get(p, float("inf")) for p in candidates), jitter, candidates))][:size]
    else:
        raise InvalidArgumentError(f"Unknown pairing {how!r}.")
    seats = size - len(chosen)
    chosen += [fill[i % len(fill)] for i in range(seats)]
    return [chosen[i] for i in rng.permutation(len(chosen))]
