"""The Plackett-Luce negative log-likelihood and its gradient in one pass over the
matches, the GIL released so that bootstrap resamples fit on several threads at once.
"""

from __future__ import annotations

import math

import numpy as np

from arena.kernels.compiler import jit


@jit(nogil=True)
def plackett_luce_nll(s, order, widths, group_size, weights, grad):
    """`arena.ratings.mle.negative_log_likelihood` in one pass: returns the weighted NLL and
    writes its gradient into `grad`. Matches of weight 0 contribute nothing and are skipped.

    A tie group of d teams starting at position g, with `remaining` the strength of
    positions >= g and `tied` the group's: denominators den_k = remaining - (k/d) tied for
    k < d; each member q gets e^s_q (sum of w/den over every group up to its own, minus
    its group's sum of w (k/d)/den), minus w.
    """
    for i in range(grad.shape[0]):
        grad[i] = 0.0
    strength_of = np.exp(s)
    width = order.shape[1]
    strength = np.zeros(width)
    remaining = np.zeros(width + 1)
    nll = 0.0
    for r in range(order.shape[0]):
        w = weights[r]
        if w == 0:
            continue
        n = widths[r]
        for q in range(n):
            strength[q] = strength_of[order[r, q]]
        remaining[n] = 0.0
        for q in range(n - 1, -1, -1):
            remaining[q] = remaining[q + 1] + strength[q]
        total = 0.0
        reach = 0.0
        g = 0
        while g < n:
            d = int(group_size[r, g])
            tied = remaining[g] - remaining[g + d]
            a_sum, b_sum = 0.0, 0.0
            for k in range(d):
                share = k / d
                den = remaining[g] - share * tied
                total += s[order[r, g + k]] - math.log(den)
                a_sum += w / den
                b_sum += w * share / den
            reach += a_sum
            for q in range(g, g + d):
                grad[order[r, q]] += strength[q] * (reach - b_sum) - w
            g += d
        nll -= w * total
    return nll
