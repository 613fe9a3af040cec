"""How much of a team's result is luck: the seat, the map and the lobby, next to the policy.

Two measures, both pure functions of the history's team rows (history in, `LuckReport` out):

- **Effects on the ranking** (`EffectsFit`). A Plackett-Luce fit of every match, the
  same model and likelihood as the leaderboard's MLE (`arena.ratings`, ties by Efron's
  rule), where a team's strength is its policy's strength plus an effect of its spawn
  side (4 edges), of its spawn point along the edge (`spawn_index`), of its slot (nmmo
  team id: the order teams act in) and of its side on that map (map x side). The luck
  effects carry a ridge penalty (a prior of about one rating unit) and are reported
  centred (sum to zero within each group, map x side within each map and each side).
  A map's own effect and the lobby cannot appear here: every team of a match shares
  them, and a ranking is unchanged by what all its teams share. Each group's figure is
  its spread: the root mean square of its effects in rating units (a gap of 1 wins a
  duel 73% of the time), with the part that is estimation noise taken out (the noise is
  measured by a bootstrap over whole matches) and a bootstrap 95% interval. The
  policies' spread is measured the same way, so the two compare directly.
- **Shares of Achievement's variance** (`Decomposition`). Achievement is the absolute
  result, where the map (some maps are richer for everyone) and the lobby (the mean
  strength of the other teams, from the fit above) do act. A least-squares fit of
  Achievement on policy, map, side, index, slot, lobby and map x side (one-hot groups;
  map x side made orthogonal to map and side, so it holds only what they cannot say)
  splits the explained variance among the groups by Shapley values: each group's share
  is its gain in R^2 averaged over every order of adding the groups. Unlike nested
  models (whose shares depend on the order chosen) it is order-free, and it is exact and
  deterministic (2^7 fits of a Gram matrix). R^2 is adjusted for the degrees of
  freedom, so that a group of many levels (a map played twice) is not credited with the
  noise it can fit; the residual is 1 - the full model's adjusted R^2, so the shares and
  the residual sum to 1. A group that explains nothing can get a share slightly below 0.

Which rows count: every match whose teams all have a spawn point recorded (schema 2);
older records (`spawn_side == -1`) are left out and counted in `excluded_matches`. A
duplicate set's matches count as separate matches: the same line-up on rotated seats is
exactly what shows the seat's effect. Built-in teams are policies like any other (not
anchored: their anchor values were fitted without seat effects).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from arena.errors import NotEnoughMatchesError
from arena.ratings.mle import build_design, negative_log_likelihood
from arena.ratings.results import Outcome
from arena.schema import player_id, rows

#: The effect groups of the ranking model, in report order.
EFFECT_GROUPS: tuple[str, ...] = ("side", "index", "slot", "map_side")

#: The groups of the Achievement decomposition, in report order (then `residual`).
SHARE_GROUPS: tuple[str, ...] = ("policy", "map", "side", "index", "slot", "lobby", "map_side")

#: Names for people, in `summary()`.
LABELS: Mapping[str, str] = {
    "policy": "policy", "map": "map", "side": "spawn side", "index": "point along the edge", "slot": "slot",
    "lobby": "lobby", "map_side": "side on the map", "residual": "unexplained",
}

#: Ridge on the policies' strengths: the leaderboard MLE's, so a policy that always wins
#: stays finite.
POLICY_L2 = 0.01

#: Ridge on each luck effect: a prior of one rating unit. It keeps the side effects of a
#: map played once finite, and weighs nothing next to the thousands of seats a side or a
#: slot is seen in; with a handful of matches per map it shrinks map x side effects, so
#: their spread is then a lower bound.
EFFECT_L2 = 1.0

#: Fewest usable matches for a report.
MIN_MATCHES = 10


# -- the seats ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Seats:
    """The usable team rows as arrays, one entry per team per match (a "seat")."""

    match: np.ndarray
    """Match number 0..matches-1 of each seat; a match's seats are contiguous."""
    player: np.ndarray
    """Index into `players`."""
    side: np.ndarray
    index: np.ndarray
    slot: np.ndarray
    map: np.ndarray
    """Index into `maps`."""
    achievement: np.ndarray
    players: tuple[str, ...]
    maps: tuple[tuple[bool, int], ...]
    """(held out, map id) of each map: held-out maps are numbered apart from published ones."""
    excluded_matches: int = 0
    """Matches left out because a team had no spawn point recorded."""

    @property
    def matches(self) -> int:
        return int(self.match[-1]) + 1 if len(self.match) else 0


def seats(
    history: Any,
    *,
    tracks: Sequence[str] | None = None,
    horizon: int | None = None,
    latest: int | None = None,
) -> Seats:
    """The usable seats of a history.

    Args:
        history: the team rows (a pandas frame with the columns of `arena.schema.TEAM_COLUMNS`,
            as `leaderboard.standings` holds them), or `MatchResult`s.
        tracks (`Sequence[str]`, *optional*): only matches of these tracks (default: all).
        horizon (`int`, *optional*): only matches set to this many ticks (default: all).
        latest (`int`, *optional*): only the latest this many usable matches (default: all).

    Returns:
        `Seats`: matches ordered by (start time, match id), slots in order.
    """
    col = _history_columns(history)
    n = len(col.get("match_id", ()))
    if n == 0:
        return _empty()
    keep = np.ones(n, dtype=bool)
    if tracks is not None:
        keep &= np.isin(col["track"].astype(str), list(tracks))
    if horizon is not None:
        keep &= col["horizon"].astype(np.int64) == horizon
    ids, slots, starts = col["match_id"].astype(str), col["slot"].astype(np.int64), col["started_at"].astype(str)
    seen: set[tuple[str, int]] = set()
    for i in np.flatnonzero(keep):  # the first row of each (match, slot), as the history keeps
        if (ids[i], slots[i]) in seen:
            keep[i] = False
        seen.add((ids[i], slots[i]))
    order = np.flatnonzero(keep)
    order = order[np.lexsort((slots[order], ids[order], starts[order]))]
    side, index = _known(col.get("spawn_side"), n)[order], _known(col.get("spawn_index"), n)[order]
    ids = ids[order]
    bad = set(ids[(side < 0) | (index < 0)].tolist())
    _, inverse, counts = np.unique(ids, return_inverse=True, return_counts=True)
    usable = ~np.isin(ids, list(bad)) & (counts[inverse] >= 2)
    order, ids = order[usable], ids[usable]
    if latest is not None:
        distinct = list(dict.fromkeys(ids.tolist()))
        kept = set(distinct[-latest:]) if latest > 0 else set()
        order, ids = order[np.isin(ids, list(kept))], ids[np.isin(ids, list(kept))]
    if len(order) == 0:
        return _empty(excluded=len(bad))
    if "player" in col:
        names = col["player"].astype(str)[order]
    else:
        names = np.array([player_id(str(p), str(r)) for p, r in zip(col["policy_id"][order], col["revision"][order])])
    held = (_truthy(col["held_out"]) if "held_out" in col else np.zeros(n, dtype=bool))[order]
    map_keys = list(zip(held.tolist(), col["map_id"].astype(np.int64)[order].tolist()))
    maps = tuple(sorted(set(map_keys)))
    map_at = {m: i for i, m in enumerate(maps)}
    players, player = np.unique(names, return_inverse=True)
    match = np.cumsum(np.r_[0, ids[1:] != ids[:-1]])
    return Seats(
        match=match.astype(np.int64),
        player=player.astype(np.int64),
        side=_known(col.get("spawn_side"), n)[order],
        index=_known(col.get("spawn_index"), n)[order],
        slot=slots[order],
        map=np.array([map_at[m] for m in map_keys], dtype=np.int64),
        achievement=col["achievement"].astype(float)[order],
        players=tuple(str(p) for p in players),
        maps=maps,
        excluded_matches=len(bad),
    )


def _history_columns(history: Any) -> dict[str, np.ndarray]:
    """The history as columns: a frame's (anything with `columns` and `[name]`, such as
    the pandas frame the leaderboard holds; `arena` does not import pandas) or the rows of
    `MatchResult`s."""
    if hasattr(history, "columns"):
        return {str(c): np.asarray(history[c]) for c in history.columns}
    table = [row for result in history for row in rows(result)]
    return {c: np.array([r[c] for r in table]) for c in (table[0] if table else {})}


def _known(values: Any, n: int) -> np.ndarray:
    """A spawn column as integers, -1 where it is missing (version 1 rows)."""
    if values is None:
        return np.full(n, -1, dtype=np.int64)
    out = np.array([-1 if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in values], dtype=np.float64)
    return out.astype(np.int64)


def _truthy(values: np.ndarray) -> np.ndarray:
    return np.array([bool(v) and not (isinstance(v, float) and math.isnan(v)) for v in values], dtype=bool)


def _empty(excluded: int = 0) -> Seats:
    nothing = np.zeros(0, dtype=np.int64)
    return Seats(nothing, nothing, nothing, nothing, nothing, nothing, np.zeros(0), (), (), excluded)


# -- effects on the ranking ---------------------------------------------------------------


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


# -- shares of Achievement's variance -------------------------------------------------------


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
    from scipy import sparse

    n = len(s.match)
    y = s.achievement - s.achievement.mean()
    total = float(y @ y)
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
    degrees = {g: _rank(gram[np.ix_(spans[g], spans[g])]) for g in SHARE_GROUPS}

    # ALGO LOGIC: the explained sum of squares of every subset of groups. Map and map x
    # side have hundreds of columns (one per map): each of their four combinations is
    # solved once, and the small groups are added by block elimination (Schur complement).
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

    def value(groups: tuple[str, ...]) -> float:
        if not groups or total == 0:
            return 0.0
        df = sum(degrees[g] for g in groups)
        r2 = min(max(explained[frozenset(groups)] / total, 0.0), 1.0)
        return 1.0 - (1.0 - r2) * (n - 1) / max(n - 1 - df, 1)

    k = len(SHARE_GROUPS)
    values = {subset: value(subset) for size in range(k + 1) for subset in combinations(SHARE_GROUPS, size)}
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
    full = values[SHARE_GROUPS]
    shares["residual"] = 1.0 - full
    r2 = explained[frozenset(SHARE_GROUPS)] / total if total else 0.0
    return Decomposition(shares=shares, variance=total / n, r2=min(max(r2, 0.0), 1.0), degrees=degrees)


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


# -- the report -----------------------------------------------------------------------------


@dataclass(frozen=True)
class LuckReport:
    """How much of a result is luck, from `matches` matches (see the module docstring)."""

    effects: EffectsFit
    achievement: Decomposition
    matches: int
    teams: int
    """Seats counted: teams x matches."""
    policies: int
    maps: int
    excluded_matches: int = 0
    """Matches left out: a team without a spawn point (records before schema 2)."""

    def to_json(self) -> dict[str, Any]:
        """The figures as `python -m bench.luck --json` prints them."""
        spreads = self.effects.spreads
        groups = ("policy", *EFFECT_GROUPS)
        out: dict[str, Any] = {f"{g}_sd": round(spreads[g].sd, 4) for g in groups}
        out["intervals"] = {g: _rounded_interval(spreads[g].low, spreads[g].high) for g in groups}
        out["raw_sd"] = {g: round(spreads[g].raw, 4) for g in groups}
        out["shares"] = {g: round(self.achievement.shares[g], 4) for g in (*SHARE_GROUPS, "residual")}
        out.update(matches=self.matches, teams=self.teams, policies=self.policies, maps=self.maps,
                   excluded_matches=self.excluded_matches, achievement_variance=round(self.achievement.variance, 2),
                   matches_per_map=round(self.matches / max(self.maps, 1), 2))
        return out

    def summary(self) -> list[str]:
        """The figures as a few one-line sentences."""
        sp = self.effects.spreads

        def spread(g: str) -> str:
            s = sp[g]
            return f"±{s.sd:.2f}" + ("" if s.low is None else f" (95% {s.low:.2f}-{s.high:.2f})")

        shares = self.achievement.shares
        listed = sorted(SHARE_GROUPS, key=lambda g: -shares[g])
        left_out = f"; {self.excluded_matches} older matches without spawn points left out" if self.excluded_matches else ""
        return [
            f"From {self.matches} matches ({self.teams} teams, {self.policies} policies, {self.maps} maps){left_out}.",
            f"In rating units (a gap of 1 wins a duel 73% of the time): policies spread {spread('policy')}; "
            f"spawn side {spread('side')}, point along the edge {spread('index')}, slot {spread('slot')}, "
            f"side on a given map {spread('map_side')}.",
            "Of Achievement's variance: " + ", ".join(f"{LABELS[g]} {shares[g]:.0%}" for g in listed)
            + f", unexplained {shares['residual']:.0%}.",
        ]


def luck_report(
    history: Any,
    *,
    tracks: Sequence[str] | None = None,
    horizon: int | None = None,
    latest: int | None = None,
    bootstrap: int = 50,
    seed: int = 0,
    min_matches: int = MIN_MATCHES,
) -> LuckReport:
    """How much of the results in `history` the seat, the map and the lobby explain.

    Args:
        history: the team rows (a pandas frame of `arena.schema.TEAM_COLUMNS`) or
            `MatchResult`s.
        tracks (`Sequence[str]`, *optional*): only these tracks' matches (default: all).
        horizon (`int`, *optional*): only matches of this many ticks (default: all; short
            test matches and full ones do not mix well).
        latest (`int`, *optional*): only the latest this many usable matches (bounds the
            cost on a long history; default: all).
        bootstrap (`int`): resamples of whole matches for the noise correction and the
            intervals of the spreads (0: none).
        seed (`int`): seed of the resampling; the same history and seed give the same report.
        min_matches (`int`): fewest usable matches.

    Returns:
        `LuckReport`.

    Raises:
        `NotEnoughMatchesError`: fewer than `min_matches` matches with spawn points, or a
            single policy (nothing to compare luck with).

    Example:
        >>> from arena.simulation import Population, seated_history
        >>> report = luck_report(seated_history(Population.random(20), 40), bootstrap=0)
        >>> report.matches, report.teams
        (40, 640)
    """
    s = seats(history, tracks=tracks, horizon=horizon, latest=latest)
    if s.matches < min_matches or len(s.players) < 2:
        older = f" ({s.excluded_matches} older ones have no spawn points)" if s.excluded_matches else ""
        raise NotEnoughMatchesError(
            f"Luck needs at least {min_matches} matches with spawn points recorded and 2 policies; the history has "
            f"{s.matches} such matches{older} and {len(s.players)} policies. Play more matches (or lower `min_matches`)."
        )
    effects = fit_effects(s, bootstrap=bootstrap, seed=seed)
    return LuckReport(
        effects=effects,
        achievement=decompose(s, effects.policy),
        matches=s.matches,
        teams=len(s.match),
        policies=len(s.players),
        maps=len(s.maps),
        excluded_matches=s.excluded_matches,
    )


__all__ = [
    "Decomposition",
    "EffectsFit",
    "LuckReport",
    "Seats",
    "Spread",
    "decompose",
    "fit_effects",
    "luck_report",
    "seats",
]


def _rounded_interval(low: float | None, high: float | None) -> list[float] | None:
    return None if low is None or high is None else [round(low, 4), round(high, 4)]
