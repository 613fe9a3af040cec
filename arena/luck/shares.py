"""Shares of Achievement's variance: policy, map, seat and lobby, by Shapley values over
least-squares fits (order-free, exact, deterministic)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from arena.luck.seats import SHARE_GROUPS, Seats


@dataclass(frozen=True)
class Decomposition:
    """Achievement's variance split among the groups (Shapley shares of adjusted R^2)."""

    shares: Mapping[str, float]
    """Each of `SHARE_GROUPS` and `residual`; they sum to 1."""
    variance: float
    """Achievement's variance over the seats (points^2)."""
    r2: float
    """R^2 of the full model, unadjusted."""
    degrees: Mapping[str, int] = field(default_factory=dict)
    """Degrees of freedom each group spends."""


def lobby(s: Seats, strength: Mapping[str, float]) -> np.ndarray:
    """Per seat, the mean strength of the other teams of its match."""
    theta = np.array([strength[p] for p in s.players])[s.player]
    total = np.bincount(s.match, weights=theta)[s.match]
    count = np.bincount(s.match)[s.match]
    return (total - theta) / np.maximum(count - 1, 1)


def decompose(s: Seats, strength: Mapping[str, float]) -> Decomposition:
    """Shapley shares of Achievement's variance (see the module docstring).

    Args:
        s (`Seats`): the usable seats.
        strength (`Mapping[str, float]`): each policy's strength (`EffectsFit.policy`),
            for the lobby.
    """
    n = len(s.match)
    y = s.achievement - s.achievement.mean()
    total = float(y @ y)
    gram, cross, spans = _gram(s, strength, y)
    degrees = {g: _rank(gram[np.ix_(spans[g], spans[g])]) for g in SHARE_GROUPS}
    explained = _explained(gram, cross, spans)

    def value(groups: tuple[str, ...]) -> float:
        if not groups or total == 0:
            return 0.0
        df = sum(degrees[g] for g in groups)
        r2 = min(max(explained[frozenset(groups)] / total, 0.0), 1.0)
        return 1.0 - (1.0 - r2) * (n - 1) / max(n - 1 - df, 1)

    k = len(SHARE_GROUPS)
    values = {subset: value(subset) for size in range(k + 1) for subset in combinations(SHARE_GROUPS, size)}
    shares = _shapley(values)
    full = values[SHARE_GROUPS]
    shares["residual"] = 1.0 - full
    r2 = explained[frozenset(SHARE_GROUPS)] / total if total else 0.0
    return Decomposition(shares=shares, variance=total / n, r2=min(max(r2, 0.0), 1.0), degrees=degrees)


def _gram(s: Seats, strength: Mapping[str, float], y: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """The centred Gram matrix of the groups' columns (one-hot, the lobby one column) and
    their cross-products with `y`, map x side residualised on map and side; each group's
    columns."""
    from scipy import sparse

    n = len(s.match)
    sides = 4
    onehot = {
        "policy": (s.player, len(s.players)),
        "map": (s.map, len(s.maps)),
        "side": (s.side, sides),
        "index": (s.index, int(s.index.max()) + 1),
        "slot": (s.slot, int(s.slot.max()) + 1),
        "map_side": (s.map * sides + s.side, len(s.maps) * sides),
    }
    blocks, spans, at = [], {}, 0
    for g in SHARE_GROUPS:
        if g == "lobby":
            block = sparse.csr_matrix(lobby(s, strength)[:, None])
        else:
            codes, width = onehot[g]
            block = sparse.csr_matrix((np.ones(n), (np.arange(n), codes)), shape=(n, width))
        blocks.append(block)
        spans[g] = np.arange(at, at + block.shape[1])
        at += block.shape[1]
    x = sparse.hstack(blocks).tocsr()
    # centred Gram matrix and cross-products, from the sparse design (never densified)
    mean = np.asarray(x.mean(axis=0)).ravel()
    gram = (x.T @ x).toarray() - n * np.outer(mean, mean)
    cross = x.T @ y
    # map x side keeps only what map and side cannot explain: residualise it on them
    main = np.r_[spans["map"], spans["side"]]
    inter = spans["map_side"]
    original = gram.copy()
    coef = _solve(original[np.ix_(main, main)], original[np.ix_(main, inter)])
    rest = np.setdiff1d(np.arange(at), inter)
    gram[np.ix_(rest, inter)] = original[np.ix_(rest, inter)] - original[np.ix_(rest, main)] @ coef
    gram[np.ix_(inter, rest)] = gram[np.ix_(rest, inter)].T
    gram[np.ix_(inter, inter)] = original[np.ix_(inter, inter)] - original[np.ix_(inter, main)] @ coef
    cross[inter] -= coef.T @ cross[main]
    return gram, cross, spans


def _explained(gram: np.ndarray, cross: np.ndarray, spans: Mapping[str, np.ndarray]) -> dict[frozenset[str], float]:
    """The explained sum of squares of every subset of `SHARE_GROUPS`."""
    # ALGO LOGIC: map and map x side have hundreds of columns (one per map): each of their
    # four combinations is solved once, and the small groups are added by block
    # elimination (Schur complement).
    big = ("map", "map_side")
    small = tuple(g for g in SHARE_GROUPS if g not in big)
    small_cols = np.concatenate([spans[g] for g in small])
    position = {g: np.arange(len(small_cols))[np.isin(small_cols, spans[g])] for g in small}
    explained: dict[frozenset[str], float] = {}
    for size in range(len(big) + 1):
        for part in combinations(big, size):
            if part:
                cols = np.concatenate([spans[g] for g in part])
                g_bb = gram[np.ix_(cols, cols)]
                solved_b = _solve(g_bb, cross[cols])
                solved_s = _solve(g_bb, gram[np.ix_(cols, small_cols)])
                base = float(cross[cols] @ solved_b)
                g_ss = gram[np.ix_(small_cols, small_cols)] - gram[np.ix_(small_cols, cols)] @ solved_s
                b_s = cross[small_cols] - gram[np.ix_(small_cols, cols)] @ solved_b
            else:
                base, g_ss, b_s = 0.0, gram[np.ix_(small_cols, small_cols)], cross[small_cols]
            for count in range(len(small) + 1):
                for chosen in combinations(small, count):
                    extra = 0.0
                    if chosen:
                        at_ = np.concatenate([position[g] for g in chosen])
                        extra = float(b_s[at_] @ _solve(g_ss[np.ix_(at_, at_)], b_s[at_]))
                    explained[frozenset(part + chosen)] = base + extra
    return explained


def _shapley(values: Mapping[tuple[str, ...], float]) -> dict[str, float]:
    """Each group's Shapley value of `values` (every subset of `SHARE_GROUPS`, in its order)."""
    k = len(SHARE_GROUPS)
    shares = {}
    for g in SHARE_GROUPS:
        others = tuple(h for h in SHARE_GROUPS if h != g)
        phi = 0.0
        for size in range(k):
            weight = math.factorial(size) * math.factorial(k - size - 1) / math.factorial(k)
            for subset in combinations(others, size):
                with_g = tuple(h for h in SHARE_GROUPS if h in subset or h == g)
                phi += weight * (values[with_g] - values[subset])
        shares[g] = phi
    return shares


def _solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a^+ b for a positive semi-definite Gram matrix `a` (one-hot groups are
    rank-deficient once centred): columns scaled to a unit diagonal (those that are all
    zero dropped), then Cholesky with a jitter far below every nonzero eigenvalue; `b`
    lies in the range of `a` here, so the jitter changes nothing that matters. Falls back
    to an eigendecomposition where round-off defeats the jitter."""
    from scipy.linalg import LinAlgError, cho_factor, cho_solve

    d = np.diag(a).copy()
    keep = d > 1e-10 * max(float(d.max(initial=0.0)), 1e-300)
    out = np.zeros(b.shape)
    if not keep.any():
        return out
    scale = 1.0 / np.sqrt(d[keep])
    scaled = a[np.ix_(keep, keep)] * np.outer(scale, scale)
    rhs = b[keep] * (scale[:, None] if b.ndim == 2 else scale)
    try:
        solved = cho_solve(cho_factor(scaled + 1e-9 * np.eye(len(scaled))), rhs)
    except LinAlgError:
        w, v = np.linalg.eigh(scaled)
        inverse = np.where(w > 1e-9 * w.max(), 1.0 / np.where(w > 0, w, 1.0), 0.0)
        solved = v @ (inverse[:, None] * (v.T @ rhs) if b.ndim == 2 else inverse * (v.T @ rhs))
    out[keep] = solved * (scale[:, None] if b.ndim == 2 else scale)
    return out


def _rank(a: np.ndarray) -> int:
    """Rank of a Gram matrix, on the same unit-diagonal scale as `_solve`."""
    d = np.diag(a)
    keep = d > 1e-10 * max(float(d.max(initial=0.0)), 1e-300)
    if not keep.any():
        return 0
    scale = 1.0 / np.sqrt(d[keep])
    w = np.linalg.eigvalsh(a[np.ix_(keep, keep)] * np.outer(scale, scale))
    return int(np.sum(w > 1e-8 * w.max()))

