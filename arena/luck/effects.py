"""Effects on the ranking: a Plackett-Luce fit of every match in which a team's strength
is its policy's plus the effects of its seat (side, point, slot, side on that map), each
group's spread with the noise taken out and a bootstrap interval."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from arena.luck.seats import EFFECT_GROUPS, Seats
from arena.ratings.mle import build_design, negative_log_likelihood
from arena.ratings.results import Outcome

#: Ridge on the policies' strengths: the leaderboard MLE's, so a policy that always wins
#: stays finite.
POLICY_L2 = 0.01

#: Ridge on each luck effect: a prior of one rating unit. It keeps the side effects of a
#: map played once finite, and weighs nothing next to the thousands of seats a side or a
#: slot is seen in; with a handful of matches per map it shrinks map x side effects, so
#: their spread is then a lower bound.
EFFECT_L2 = 1.0




@dataclass(frozen=True)
class Spread:
    """How far one group's effects spread, in rating units."""

    sd: float
    """Root mean square of the centred effects, estimation noise taken out (0 at least)."""
    raw: float
    """Root mean square of the fitted effects, noise included."""
    low: float | None = None
    high: float | None = None
    """Bootstrap 95% interval of `sd` (None without a bootstrap)."""
    levels: int = 0
    """Effects in the group (policies; sides; points; slots; map x side cells)."""


@dataclass(frozen=True)
class EffectsFit:
    """The Plackett-Luce fit with luck effects beside the policies' strengths."""

    policy: Mapping[str, float]
    """Each policy's strength, centred, net of the seats it was dealt."""
    side: np.ndarray
    """Per spawn side (0 north, 1 east, 2 south, 3 west)."""
    index: np.ndarray
    """Per spawn point along the edge."""
    slot: np.ndarray
    """Per slot (nmmo team id)."""
    map_side: Mapping[tuple[bool, int], np.ndarray]
    """Per map (held out, map id), its four sides' effects beyond the side's own."""
    spreads: Mapping[str, Spread]
    """`policy` and each of `EFFECT_GROUPS`."""


@dataclass(frozen=True)
class _Layout:
    """Where each group sits in the parameter vector."""

    players: int
    sides: int
    indices: int
    slots: int
    maps: int

    @property
    def offsets(self) -> dict[str, int]:
        out, at = {}, 0
        for name, size in self.sizes.items():
            out[name] = at
            at += size
        return out

    @property
    def sizes(self) -> dict[str, int]:
        return {"policy": self.players, "side": self.sides, "index": self.indices, "slot": self.slots,
                "map_side": self.maps * self.sides}

    @property
    def total(self) -> int:
        return sum(self.sizes.values())


def _columns(s: Seats, layout: _Layout) -> np.ndarray:
    """[seats, 5]: each seat's parameter index in every group."""
    o = layout.offsets
    return np.stack([
        o["policy"] + s.player, o["side"] + s.side, o["index"] + s.index, o["slot"] + s.slot,
        o["map_side"] + s.map * layout.sides + s.side,
    ], axis=1)


def _fit_effects(
    design: Any, columns: np.ndarray, penalty: np.ndarray, weights: np.ndarray, start: np.ndarray
) -> np.ndarray:
    """Penalised maximum likelihood of the parameters (seat strength = sum of its columns)."""
    from scipy.optimize import minimize

    size = len(penalty)

    def objective(beta: np.ndarray) -> tuple[float, np.ndarray]:
        strength = beta[columns].sum(axis=1)
        nll, grad_seat = negative_log_likelihood(strength, design, weights)
        grad = np.bincount(columns.ravel(), weights=np.repeat(grad_seat, columns.shape[1]), minlength=size)
        return nll + 0.5 * float(np.sum(penalty * beta**2)), grad + penalty * beta

    solution = minimize(objective, start, jac=True, method="L-BFGS-B", options={"maxiter": 1000, "gtol": 1e-6})
    return solution.x


def _centred(beta: np.ndarray, layout: _Layout, present_players: np.ndarray, present_maps: np.ndarray) -> dict[str, np.ndarray]:
    """The groups' effects, centred so that each is what the group alone adds.

    Shifts that leave every seat's strength in every match unchanged, so leave the
    likelihood unchanged: a constant added to a whole group (every match has one member
    of each group per team), a map x side row's mean (every team of a match is on its
    map), and each side's mean over the maps moved into the side's own effect."""
    o, n = layout.offsets, layout.sizes
    part = {k: beta[o[k]:o[k] + n[k]].copy() for k in n}
    grid = part["map_side"].reshape(layout.maps, layout.sides)
    grid -= grid.mean(axis=1, keepdims=True)
    if present_maps.any():
        by_side = grid[present_maps].mean(axis=0)
        grid -= by_side
        part["side"] += by_side
    grid[~present_maps] = np.nan
    part["map_side"] = grid
    policy = part["policy"]
    policy -= policy[present_players].mean() if present_players.any() else 0.0
    policy[~present_players] = np.nan
    for k in ("side", "index", "slot"):
        part[k] -= part[k].mean()
    return part


def _rms(values: np.ndarray) -> float:
    values = values[np.isfinite(values)]
    return float(np.sqrt(np.mean(values**2))) if len(values) else 0.0


def fit_effects(s: Seats, *, bootstrap: int = 50, seed: int = 0) -> EffectsFit:
    """The Plackett-Luce fit of `s` with luck effects (see the module docstring).

    Args:
        s (`Seats`): the usable seats (`seats`).
        bootstrap (`int`): resamples of whole matches, for the noise correction and the
            intervals (0: raw spreads, no interval).
        seed (`int`): seed of the resampling.
    """
    layout = _Layout(len(s.players), 4, int(s.index.max()) + 1, int(s.slot.max()) + 1, len(s.maps))
    # ALGO LOGIC: every seat is its own "player" of the leaderboard's design, so its
    # strength is a sum of parameters and the leaderboard's likelihood applies unchanged.
    bounds = np.r_[0, np.flatnonzero(np.diff(s.match)) + 1, len(s.match)]
    design = build_design([
        Outcome(("", str(m)), tuple(f"{k:09d}" for k in range(a, b)), tuple(s.achievement[a:b]))
        for m, (a, b) in enumerate(zip(bounds, bounds[1:]))
    ])
    columns = _columns(s, layout)
    o = layout.offsets
    penalty = np.full(layout.total, EFFECT_L2)
    penalty[o["policy"]:o["policy"] + layout.players] = POLICY_L2
    m = s.matches
    every_player, every_map = np.ones(layout.players, dtype=bool), np.ones(layout.maps, dtype=bool)
    estimate = _fit_effects(design, columns, penalty, np.ones(m), np.zeros(layout.total))
    point = _centred(estimate, layout, every_player, every_map)
    groups = ("policy", *EFFECT_GROUPS)
    samples: dict[str, list[np.ndarray]] = {g: [] for g in groups}
    rng = np.random.default_rng(seed)
    match_player = np.zeros((m, layout.players), dtype=bool)
    match_player[s.match, s.player] = True
    match_map = np.zeros((m, layout.maps), dtype=bool)
    match_map[s.match, s.map] = True
    for _ in range(bootstrap):
        weights = np.bincount(rng.integers(0, m, size=m), minlength=m).astype(np.float64)
        drawn = weights > 0
        beta = _fit_effects(design, columns, penalty, weights, estimate)
        part = _centred(beta, layout, match_player[drawn].any(axis=0), match_map[drawn].any(axis=0))
        for g in groups:
            samples[g].append(part[g].ravel())
    spreads = {}
    for g in groups:
        raw = _rms(point[g].ravel())
        if not bootstrap:
            spreads[g] = Spread(sd=raw, raw=raw, levels=int(np.isfinite(point[g]).sum()))
            continue
        stack = np.array(samples[g])
        # a level missing from a resample (a map not drawn) says nothing about its noise
        counted = np.isfinite(stack).sum(axis=0) >= 2
        noise = float(np.mean(np.nanvar(stack[:, counted], axis=0, ddof=1))) if counted.any() else 0.0
        # a resample's effects carry the estimate's noise and the resampling's again
        replicas = [math.sqrt(max(0.0, _rms(row) ** 2 - 2 * noise)) for row in stack]
        low, high = np.percentile(replicas, [2.5, 97.5])
        spreads[g] = Spread(sd=math.sqrt(max(0.0, raw**2 - noise)), raw=raw, low=float(low), high=float(high),
                            levels=int(np.isfinite(point[g]).sum()))
    grid = point["map_side"]
    return EffectsFit(
        policy={p: float(point["policy"][i]) for i, p in enumerate(s.players)},
        side=point["side"],
        index=point["index"],
        slot=point["slot"],
        map_side={key: grid[i] for i, key in enumerate(s.maps)},
        spreads=spreads,
    )

