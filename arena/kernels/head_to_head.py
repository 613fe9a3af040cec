"""Every pair's meetings, wins and ties in one compiled pass (`arena.head_to_head`).
"""

from __future__ import annotations

import numpy as np

from arena.kernels.compiler import jit


@jit(nogil=True)
def pair_counts(seats, scores, widths, met, wins, ties):
    """`arena.head_to_head._counts`: per ordered pair, matches met, won and tied (the match
    is the unit: a pair seated several times in one match counts once, by the sign of its
    seats' net score), added into `met`, `wins`, `ties` ([P, P] int64)."""
    width = seats.shape[1]
    most = width * (width - 1) // 2
    lo_of = np.zeros(most, dtype=np.int64)
    hi_of = np.zeros(most, dtype=np.int64)
    sign_of = np.zeros(most)
    done = np.zeros(most, dtype=np.bool_)
    for r in range(seats.shape[0]):
        n = widths[r]
        # the usual match seats each player once: every seat pair is its own pair, counted
        # at once (the de-duplication below is quadratic in seat pairs, 7,200 steps a match)
        distinct = True
        for i in range(n):
            for j in range(i + 1, n):
                if seats[r, i] == seats[r, j]:
                    distinct = False
        if distinct:
            for i in range(n):
                for j in range(i + 1, n):
                    a, b = seats[r, i], seats[r, j]
                    if a < 0 or b < 0:
                        continue
                    met[a, b] += 1
                    met[b, a] += 1
                    diff = scores[r, i] - scores[r, j]
                    if diff == 0:
                        ties[a, b] += 1
                        ties[b, a] += 1
                    elif diff > 0:
                        wins[a, b] += 1
                    else:
                        wins[b, a] += 1
            continue
        count = 0
        for i in range(n):
            for j in range(i + 1, n):
                a, b = seats[r, i], seats[r, j]
                if a < 0 or b < 0 or a == b:
                    continue
                diff = scores[r, i] - scores[r, j]
                sign = 1.0 if diff > 0 else (-1.0 if diff < 0 else 0.0)
                if a < b:
                    lo_of[count], hi_of[count], sign_of[count] = a, b, sign
                else:
                    lo_of[count], hi_of[count], sign_of[count] = b, a, -sign
                done[count] = False
                count += 1
        for k in range(count):
            if done[k]:
                continue
            lo, hi = lo_of[k], hi_of[k]
            net = 0.0
            for q in range(k, count):  # the pair's other seat pairs in this match, if any
                if not done[q] and lo_of[q] == lo and hi_of[q] == hi:
                    net += sign_of[q]
                    done[q] = True
            met[lo, hi] += 1
            met[hi, lo] += 1
            if net == 0:
                ties[lo, hi] += 1
                ties[hi, lo] += 1
            elif net > 0:
                wins[lo, hi] += 1
            else:
                wins[hi, lo] += 1
