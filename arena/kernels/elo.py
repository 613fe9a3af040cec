"""Elo over the whole history in one compiled pass: `arena.ratings.elo_ratings`'s
per-match duels.
"""

from __future__ import annotations

import numpy as np

from arena.kernels.compiler import jit


@jit(nogil=True)
def elo_history(seats, scores, widths, rating, fixed, fixed_rating, k):
    """`arena.ratings.elo_ratings` over every match in order; `rating` updated in place.

    `seats` here are in the outcome's own seat order (Elo does not sort)."""
    width = seats.shape[1]
    current = np.zeros(width)
    delta = np.zeros(width)
    for r in range(seats.shape[0]):
        n = widths[r]
        for i in range(n):
            p = seats[r, i]
            current[i] = fixed_rating[p] if fixed[p] else rating[p]
        scale = k / max(n - 1, 1)
        for i in range(n):
            total = 0.0
            for j in range(n):
                if seats[r, i] == seats[r, j]:
                    term = 0.0
                else:
                    expected = 1.0 / (1.0 + 10.0 ** ((current[j] - current[i]) / 400.0))
                    if scores[r, i] > scores[r, j]:
                        actual = 1.0
                    elif scores[r, i] == scores[r, j]:
                        actual = 0.5
                    else:
                        actual = 0.0
                    term = actual - expected
                total += term
            delta[i] = scale * total
        for i in range(n):
            p = seats[r, i]
            if not fixed[p]:
                rating[p] = rating[p] + delta[i]
