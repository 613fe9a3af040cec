"""Rebuild the NMMO Arena's PvP leaderboard from the published match history, alone.

Standalone on purpose: it imports only pandas, numpy, scipy, `trueskill` and the standard
library, never the Arena's code, so it checks the Space from outside. Every convention it
applies is written in the README ("How the ratings are computed, exactly"); this file is
that section as code, read top to bottom: read the shards, take their PvP matches as rated
results, then TrueSkill, Elo, the Plackett-Luce MLE with its bootstrap, the head to head with its
Nash average, the held-out standing and its gap to PvE, then the table.

Get the data (a snapshot of the Hub dataset, or the history folder of a local Space):

    huggingface-cli download --repo-type dataset nmmo-arena/match-history \\
        --include "data/*.parquet" --local-dir match-history
    # the embedded Hub of a local Space: add --endpoint, or read its folder directly:
    #   data/history/data/ (only the shards already pushed are what the Space rates)

Run it (the PvP tab names the last shard it rated: pass it as --through):

    python examples/recompute_ratings.py --data match-history \\
        --through 2026/12/01/teams-20261201T101500123456-0a1b2c3d.parquet --csv table.csv

(Shards are in one folder a day, `data/YYYY/MM/DD/`, named in the order written; a history
from before day folders has them flat in `data/`. Compaction replaces a day's shards by one
from time to time, so a `--through` name stays valid only until the next compaction.)

It prints the table as the Space shows it with "Include superseded revisions" ticked
(every rated revision), rounded as the Space rounds it (2 decimals).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import trueskill
from scipy.linalg import null_space
from scipy.optimize import linprog, minimize

# -- the rules' constants (the README's "How the ratings are computed, exactly") ---------

#: The anchors: built-in teams with fixed ratings, in Plackett-Luce units (arena/rules.py).
ANCHORS = {"builtin:random": 0.0, "builtin:forage": 1.88, "builtin:combat": 2.65}
MEAN_ANCHOR = sum(ANCHORS.values()) / len(ANCHORS)

#: TrueSkill: the paper's defaults, tau 0 (a revision never changes), a small draw probability.
TS_MU, TS_SIGMA = 25.0, 25.0 / 3.0
TS_BETA = TS_SIGMA / 2.0
TS_TAU = 0.0
TS_DRAW_PROBABILITY = 0.015
#: An anchor's fixed TrueSkill sigma.
TS_ANCHOR_SIGMA = 1.0
#: TrueSkill mu per Plackett-Luce unit: the duel win probabilities' slopes matched at 0.
TS_PER_PL = math.sqrt(2.0) * TS_BETA * math.sqrt(2.0 * math.pi) / 4.0

#: Elo: AI vs. AI's start, K per match shared over a team's n-1 duels.
ELO_START, ELO_K = 1200.0, 32.0
#: Elo points per Plackett-Luce unit (Elo's duel probability is 1 / (1 + 10^(-gap/400))).
ELO_PER_PL = 400.0 / math.log(10.0)

#: Plackett-Luce: L2 penalty toward the mean of the anchors present; the optimizer's settings.
MLE_L2 = 0.01
MLE_MAXITER, MLE_GTOL = 500, 1e-6
#: The bootstrap: resamples, seed, and the percentiles of the 95% intervals.
BOOTSTRAP, SEED = 200, 0
PERCENTILES = (2.5, 97.5)

#: Head to head: the pseudo-win each way in the meta-game's shares, (wins + ties/2 + 1/2) / (met + 1).
NASH_PSEUDO_WIN = 0.5
#: The equilibrium solver: weights below SUPPORT_TOL are outside the support (the LP's
#: tolerance); SLSQP's settings for the entropy; payoffs within NASH_ZERO of 0 read as 0.
SUPPORT_TOL = 1e-6
SLSQP_MAXITER, SLSQP_FTOL = 500, 1e-12
NASH_ZERO = 1e-9

#: PvE vs PvP: the PvE stage every submission plays; "far" from FAR_MIN_RANKS ranks or
#: FAR_FIELD_SHARE of the field ranked in both, whichever is more.
PVE_STAGE = 1
FAR_MIN_RANKS, FAR_FIELD_SHARE = 3, 0.25

#: What a schema-version-1 shard lacks, and the value it reads as. (The set columns were
#: written by Arenas before 2026-12-03, when duplicate sets existed; they are read and
#: ignored: every PvP match is one result, a set's matches included.)
V1_DEFAULTS = {"set_id": "", "set_size": 1, "set_rotation": 0, "held_out": False, "spawn_side": -1, "spawn_index": -1}


@dataclass
class Args:
    """What to read and where to write (the command line)."""

    data: Path
    """a folder holding the dataset's shards (in data/, or directly)"""
    through: str | None = None
    """stop at this shard (its file name): the PvP tab says which one it rated"""
    bootstrap: int = BOOTSTRAP
    """bootstrap resamples (the Space's: 200)"""
    csv: Path | None = None
    """also write the table as CSV here"""
    json: Path | None = None
    """also write the table as JSON records here"""


def competition_ranks(values) -> np.ndarray:
    """1 for the highest; equal values share the best rank ("1224")."""
    values = np.asarray(values, dtype=np.float64)
    return 1 + len(values) - np.searchsorted(np.sort(values), values, side="right")


# -- 1. read the shards -----------------------------------------------------------------


def read_rows(data: Path, through: str | None = None) -> tuple[pd.DataFrame, list[str]]:
    """Every team row of the shards (sorted by name, the order written), up to `through`;
    a row repeated across shards (a crash between shard and WAL clean-up) counts once."""
    folder = data / "data" if (data / "data").is_dir() else data
    shards = sorted((p for p in folder.rglob("*.parquet") if not any(part.startswith(".") for part in p.parts)),
                    key=lambda p: p.relative_to(folder).as_posix())
    names = {p: p.relative_to(folder).as_posix() for p in shards}
    if through is not None:
        if not any(names[p] == through for p in shards):
            sys.exit(f"--through {through}: no such shard in {folder} (the names are paths inside data/, "
                     "as YYYY/MM/DD/teams-*.parquet)")
        shards = [p for p in shards if names[p] <= through]
    if not shards:
        sys.exit(f"no parquet shards in {folder}: download the dataset first (see this script's docstring)")
    frames = []
    for path in shards:
        frame = pd.read_parquet(path)
        for column, default in V1_DEFAULTS.items():  # version 1 shards: the columns they lack
            frame[column] = frame[column].fillna(default) if column in frame else default
        frames.append(frame)
    rows = pd.concat(frames, ignore_index=True).drop_duplicates(["match_id", "slot"], keep="first")
    builtin = rows["policy_id"].str.startswith("builtin:")
    rows["player"] = np.where(builtin, rows["policy_id"], rows["policy_id"] + "@" + rows["revision"])
    return rows, [names[p] for p in shards]


# -- 2. what is rated: every PvP match, one result each --------------------------------


@dataclass(frozen=True)
class Result:
    started_at: str
    id: str  # the match id
    players: tuple[str, ...]
    scores: tuple[float, ...]


def rated_results(rows: pd.DataFrame) -> list[Result]:
    """Results in rating order (start time, then id): each PvP match, its players in slot
    order, each scored by its Achievement (set_id is ignored: a set's matches count one by one)."""
    pvp = rows[rows["track"] == "pvp"].sort_values(["started_at", "match_id", "slot"])
    return [Result(started_at, match_id, tuple(match["player"]), tuple(int(s) for s in match["achievement"]))
            for (started_at, match_id), match in pvp.groupby(["started_at", "match_id"], sort=True)]


# -- 3. TrueSkill: online, in rating order ----------------------------------------------


def trueskill_ratings(results: list[Result]) -> dict[str, tuple[float, float]]:
    """(mu, sigma) per non-anchor player. Each result is one free-for-all of one-player
    teams, ranked by score with ties sharing the best rank; teams enter sorted by player id;
    anchors enter at fixed (mu, 1) and are never updated; a player seated twice takes the
    mean of its updates. Where the default float maths fails, the mpmath backend."""
    env = trueskill.TrueSkill(mu=TS_MU, sigma=TS_SIGMA, beta=TS_BETA, tau=TS_TAU, draw_probability=TS_DRAW_PROBABILITY)
    precise = trueskill.TrueSkill(mu=TS_MU, sigma=TS_SIGMA, beta=TS_BETA, tau=TS_TAU,
                                  draw_probability=TS_DRAW_PROBABILITY, backend="mpmath")
    fixed = {p: (TS_MU + (v - MEAN_ANCHOR) * TS_PER_PL, TS_ANCHOR_SIGMA) for p, v in ANCHORS.items()}
    ratings: dict[str, tuple[float, float]] = {}
    for r in results:
        order = sorted(range(len(r.players)), key=lambda i: (r.players[i], i))
        players = [r.players[i] for i in order]
        ranks = competition_ranks(r.scores)[order].tolist()
        before = [fixed.get(p) or ratings.get(p, (TS_MU, TS_SIGMA)) for p in players]
        try:
            after = env.rate([(env.create_rating(mu, sigma),) for mu, sigma in before], ranks=ranks)
        except (FloatingPointError, ValueError):
            after = precise.rate([(precise.create_rating(mu, sigma),) for mu, sigma in before], ranks=ranks)
        updates: dict[str, list[tuple[float, float]]] = {}
        for p, (new,) in zip(players, after):
            if p not in fixed:
                updates.setdefault(p, []).append((float(new.mu), float(new.sigma)))
        for p, news in updates.items():
            ratings[p] = (sum(m for m, _ in news) / len(news), sum(s for _, s in news) / len(news))
    return ratings


# -- 4. Elo: a result read as its pairwise duels ----------------------------------------


def elo_ratings(results: list[Result]) -> dict[str, float]:
    """Higher score wins a duel, equal scores draw, no duel with oneself; each seat moves
    by K/(n-1) times its summed duel surprises, all from the ratings before the result (a
    player seated twice gets both seats' moves); anchors fixed, newcomers at 1200."""
    fixed = {p: ELO_START + (v - MEAN_ANCHOR) * ELO_PER_PL for p, v in ANCHORS.items()}
    ratings: dict[str, float] = {}
    for r in results:
        current = np.array([fixed.get(p, ratings.get(p, ELO_START)) for p in r.players])
        scores = np.array(r.scores)
        expected = 1.0 / (1.0 + 10.0 ** ((current[None, :] - current[:, None]) / 400.0))
        actual = np.where(scores[:, None] > scores[None, :], 1.0, np.where(scores[:, None] == scores[None, :], 0.5, 0.0))
        same = np.array(r.players)[:, None] == np.array(r.players)[None, :]
        delta = ELO_K / max(len(current) - 1, 1) * np.where(same, 0.0, actual - expected).sum(axis=1)
        for p, d in zip(r.players, delta):
            if p not in fixed:
                ratings[p] = ratings.get(p, ELO_START) + float(d)
    return ratings


# -- 5. Plackett-Luce maximum likelihood, order-free, with the bootstrap -----------------


def design(results: list[Result], players: list[str]):
    """Per result: its players by position (best first; within a tie, by player id), and
    each position's tie group (where it starts, and its size at that start)."""
    index = {p: i for i, p in enumerate(players)}
    width = max(len(r.players) for r in results)
    order = np.full((len(results), width), -1, dtype=np.int64)
    valid = np.zeros((len(results), width), dtype=bool)
    group_start = np.zeros((len(results), width), dtype=np.int64)
    group_size = np.zeros((len(results), width), dtype=np.float64)
    for row, r in enumerate(results):
        ranked = sorted(range(len(r.players)), key=lambda i: (-r.scores[i], r.players[i]))
        start = 0
        for pos, i in enumerate(ranked):
            order[row, pos], valid[row, pos] = index[r.players[i]], True
            if pos and r.scores[i] != r.scores[ranked[pos - 1]]:
                start = pos
            group_start[row, pos] = start
            group_size[row, start] += 1
    return order, valid, group_start, group_size


def negative_log_likelihood(s, order, valid, start, group_size, weights):
    """Plackett-Luce with Efron's ties: a tie group G of d players taken from the players R
    still in the ranking adds sum_G s - sum_{k<d} log(sum_R e^s - (k/d) sum_G e^s); each
    result weighted. Returns the value and its gradient in s."""
    safe = np.where(valid, order, 0)
    strength = np.where(valid, np.exp(s[safe]), 0.0)
    remaining = np.cumsum(strength[:, ::-1], axis=1)[:, ::-1]
    csum = np.cumsum(strength, axis=1)
    end = start + np.take_along_axis(group_size, start, axis=1).astype(np.int64) - 1
    end = np.where(valid, end, start)
    before = np.where(start > 0, np.take_along_axis(csum, np.maximum(start - 1, 0), axis=1), 0.0)
    tied = np.take_along_axis(csum, end, axis=1) - before
    size = np.take_along_axis(group_size, start, axis=1)
    k = np.arange(valid.shape[1])[None, :] - start
    share = np.where(valid, k / np.where(size > 0, size, 1.0), 0.0)
    denominator = np.where(valid, np.take_along_axis(remaining, start, axis=1) - share * tied, 1.0)
    w = weights[:, None]
    nll = -float(np.sum(w * np.where(valid, s[safe] - np.log(denominator), 0.0)))
    a = np.where(valid, w / denominator, 0.0)
    b = np.where(valid, w * share / denominator, 0.0)
    reach = np.take_along_axis(np.cumsum(a, axis=1), end, axis=1)
    csum_b = np.cumsum(b, axis=1)
    group_b = np.take_along_axis(csum_b, end, axis=1) - np.where(start > 0, np.take_along_axis(csum_b, np.maximum(start - 1, 0), axis=1), 0.0)
    push = strength * (reach - group_b)
    occurrences = np.broadcast_to(w, valid.shape)
    grad = np.bincount(safe[valid], weights=push[valid] - occurrences[valid], minlength=len(s))
    return nll, grad


def fit(matrices, n: int, weights, fixed: dict[int, float], start=None) -> np.ndarray:
    """The penalized fit: anchors fixed, the others free, L2 toward the anchors' mean."""
    free = np.array([i for i in range(n) if i not in fixed], dtype=np.int64)
    base = np.zeros(n)
    for i, v in fixed.items():
        base[i] = v
    prior = float(np.mean(list(fixed.values()))) if fixed else 0.0
    if len(free) == 0:
        return base

    def objective(x):
        s = base.copy()
        s[free] = x
        nll, grad = negative_log_likelihood(s, *matrices, weights)
        return nll + 0.5 * MLE_L2 * float(np.sum((x - prior) ** 2)), grad[free] + MLE_L2 * (x - prior)

    x0 = start[free] if start is not None else np.full(len(free), prior)
    solution = minimize(objective, x0, jac=True, method="L-BFGS-B", options={"maxiter": MLE_MAXITER, "gtol": MLE_GTOL})
    s = base.copy()
    s[free] = solution.x
    return s


def plackett_luce(results: list[Result], bootstrap: int = BOOTSTRAP) -> pd.DataFrame:
    """Rating, 95% interval, rank (competition ranking of all rated players) and its 95%
    interval, per player. Order-free: the results are taken sorted by id; each bootstrap
    resample draws m results with replacement from that order with one seeded generator."""
    results = sorted(results, key=lambda r: (r.id, r.players, r.scores, r.started_at))
    players = sorted({p for r in results for p in r.players})
    fixed = {players.index(p): v for p, v in ANCHORS.items() if p in players}
    matrices = design(results, players)
    m, n = len(results), len(players)
    estimate = fit(matrices, n, np.ones(m), fixed)
    rng = np.random.default_rng(SEED)
    samples = np.empty((bootstrap, n))
    for b in range(bootstrap):
        weights = np.bincount(rng.integers(0, m, size=m), minlength=m).astype(np.float64)
        samples[b] = fit(matrices, n, weights, fixed, start=estimate)
    if bootstrap:
        low, high = np.percentile(samples, PERCENTILES, axis=0)
        rank_low, rank_high = np.percentile(np.array([competition_ranks(row) for row in samples]), PERCENTILES, axis=0)
    else:
        low, high, rank_low, rank_high = estimate, estimate, competition_ranks(estimate), competition_ranks(estimate)
    return pd.DataFrame({
        "rating": estimate, "low": low, "high": high, "rank": competition_ranks(estimate),
        "rank_low": np.floor(rank_low).astype(int), "rank_high": np.ceil(rank_high).astype(int),
    }, index=players)


# -- 6. head to head: every pair's record, and the Nash average -------------------------


def pair_counts(results: list[Result], players: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """met, wins, ties per ordered pair [a, b], the result as the unit: in one result a
    beat b when more of the (a seat, b seat) pairs had a above than below, tied when as
    many went each way (one seat each: who scored more); a player never meets itself."""
    index = {p: i for i, p in enumerate(players)}
    n = len(players)
    met, wins, ties = np.zeros((n, n), dtype=np.int64), np.zeros((n, n), dtype=np.int64), np.zeros((n, n), dtype=np.int64)
    for r in results:
        net: dict[tuple[int, int], int] = {}  # (a, b) with a < b: seat pairs a won minus seat pairs b won
        for x in range(len(r.players)):
            for y in range(x + 1, len(r.players)):
                a, b = index[r.players[x]], index[r.players[y]]
                if a == b:
                    continue
                sign = int(np.sign(r.scores[x] - r.scores[y]))
                key, sign = ((a, b), sign) if a < b else ((b, a), -sign)
                net[key] = net.get(key, 0) + sign
        for (a, b), count in net.items():
            met[a, b] += 1
            met[b, a] += 1
            if count == 0:
                ties[a, b] += 1
                ties[b, a] += 1
            else:
                wins[(a, b) if count > 0 else (b, a)] += 1
    return met, wins, ties


def meta_game(met: np.ndarray, wins: np.ndarray, ties: np.ndarray) -> np.ndarray:
    """A[a, b] = logit((wins + ties/2 + 1/2) / (met + 1)); 0 where a and b never met."""
    smoothed = (wins + ties / 2.0 + NASH_PSEUDO_WIN) / (met + 2.0 * NASH_PSEUDO_WIN)
    a = np.where(met > 0, np.log(smoothed) - np.log1p(-smoothed), 0.0)
    np.fill_diagonal(a, 0.0)
    return (a - a.T) / 2.0  # antisymmetric exactly, not just up to rounding


def nash_equilibrium(a: np.ndarray) -> np.ndarray:
    """The maximum-entropy Nash mix p of the symmetric zero-sum game a (value 0: the
    equilibria are {p >= 0, sum p = 1, a p <= 0})."""
    n = len(a)
    if n == 1:
        return np.ones(1)
    # ALGO LOGIC: step 1, the largest support of any equilibrium, one LP over the cone
    # {x >= 0, a x <= 0}: maximise sum y with y <= min(1, x) (and sum x <= n / SUPPORT_TOL)
    cost = np.concatenate([np.zeros(n), -np.ones(n)])
    upper = np.block([[a, np.zeros((n, n))], [-np.eye(n), np.eye(n)], [np.ones((1, n)), np.zeros((1, n))]])
    bound = np.concatenate([np.zeros(2 * n), [n / SUPPORT_TOL]])
    lp = linprog(cost, A_ub=upper, b_ub=bound, bounds=[(0, None)] * n + [(0, 1)] * n, method="highs")
    x = np.maximum(lp.x[:n], 0.0)
    start = x / x.sum()
    support = np.nonzero(start > SUPPORT_TOL / 10)[0]
    off = np.setdiff1d(np.arange(n), support)
    p0 = np.zeros(n)
    p0[support] = start[support] / start[support].sum()
    # ALGO LOGIC: step 2, the most entropy on that support: p_S = p0_S + N z spans
    # {a[S, S] p_S = 0, sum p_S = 1}; keep p_S >= 0 and (a p)_j <= 0 off the support (SLSQP)
    basis = null_space(np.vstack([a[np.ix_(support, support)], np.ones((1, len(support)))]), rcond=1e-9)
    if len(support) == 1 or basis.shape[1] == 0:
        return p0  # a single equilibrium (the generic case)
    x0 = p0[support]

    def negentropy(z):
        q = np.maximum(x0 + basis @ z, 1e-300)
        return float(np.sum(q * np.log(q))), basis.T @ (np.log(q) + 1.0)

    constraints = [{"type": "ineq", "fun": lambda z: x0 + basis @ z, "jac": lambda z: basis}]
    if len(off):
        block = a[np.ix_(off, support)]
        constraints.append({"type": "ineq", "fun": lambda z: -(block @ (x0 + basis @ z)), "jac": lambda z: -(block @ basis)})
    solution = minimize(negentropy, np.zeros(basis.shape[1]), jac=True, method="SLSQP", constraints=constraints,
                        options={"maxiter": SLSQP_MAXITER, "ftol": SLSQP_FTOL})
    q = np.maximum(x0 + basis @ solution.x, 0.0)
    p = np.zeros(n)
    p[support] = q / q.sum()

    def entropy_cost(v):
        return np.sum(v * np.log(np.maximum(v, 1e-300)))

    # the LP's point stands if the optimiser left the polytope or lost entropy
    return p if np.max(a @ p) <= 1e-7 and entropy_cost(p) <= entropy_cost(p0) + 1e-12 else p0


def nash_average(results: list[Result]) -> dict[str, float]:
    """Per player, its expected log-odds (A p) against the maximum-entropy Nash mix p."""
    players = sorted({p for r in results for p in r.players})
    if not players:
        return {}
    a = meta_game(*pair_counts(results, players))
    payoff = a @ nash_equilibrium(a)
    payoff[np.abs(payoff) < NASH_ZERO] = 0.0
    return dict(zip(players, payoff.tolist()))


# -- 7. held-out standing, and its gap to PvE -------------------------------------------


def held_out_ratings(rows: pd.DataFrame) -> dict[str, float]:
    """Plackett-Luce point estimates (no bootstrap) from PvP results on held-out maps only."""
    results = rated_results(rows[rows["held_out"].astype(bool)])
    return plackett_luce(results, bootstrap=0)["rating"].to_dict() if results else {}


def pve_vs_pvp(rows: pd.DataFrame, held_out: dict[str, float]) -> dict[str, str]:
    """Among submissions with both, PvP rank (by held-out rating) minus PvE rank (by mean
    Achievement in stage 1), competition ranks; far when |gap| >= max(3, ceil(field / 4))."""
    pve = rows[(rows["track"] == "pve") & (rows["stage"] == PVE_STAGE) & ~rows["player"].str.startswith("builtin:")]
    stage = pve.groupby("player")["achievement"].mean()
    both = sorted(p for p in stage.index if p in held_out and p not in ANCHORS)
    gaps = competition_ranks([held_out[p] for p in both]) - competition_ranks([stage[p] for p in both])
    limit = max(FAR_MIN_RANKS, math.ceil(FAR_FIELD_SHARE * len(both)))
    text = {}
    for p, gap in zip(both, gaps.tolist()):
        side = "PvE better" if gap > 0 else "PvP better"
        text[p] = "0" if gap == 0 else f"{gap:+d} ({side}{', far' if abs(gap) >= limit else ''})"
    return text


# -- 8. the table ------------------------------------------------------------------------


def pvp_table(rows: pd.DataFrame, bootstrap: int = BOOTSTRAP) -> pd.DataFrame:
    """The PvP leaderboard: Rank = 1 + the number of players whose 95% MLE interval lies
    entirely above this one's (none for a player not rated yet); then by MLE; rounded to
    2 decimals."""
    results = rated_results(rows)
    ts, elo, nash = trueskill_ratings(results), elo_ratings(results), nash_average(results)
    held_out = held_out_ratings(rows)
    gaps = pve_vs_pvp(rows, held_out)
    mle = plackett_luce(results, bootstrap) if results else pd.DataFrame(columns=["rating", "low", "high", "rank_low", "rank_high"])
    pvp = rows[rows["track"] == "pvp"]
    agg = pvp.groupby("player").agg(matches=("match_id", "nunique"), achievement=("achievement", "mean"))
    table = pd.DataFrame({
        "Policy": agg.index,
        "TrueSkill": [ts[p][0] - 3 * ts[p][1] if p in ts else np.nan for p in agg.index],
        "mu": [ts[p][0] if p in ts else np.nan for p in agg.index],
        "sigma": [ts[p][1] if p in ts else np.nan for p in agg.index],
        "MLE": [mle.at[p, "rating"] if p in mle.index else np.nan for p in agg.index],
        "95% interval": [f"{mle.at[p, 'low']:.2f} to {mle.at[p, 'high']:.2f}" if p in mle.index else "" for p in agg.index],
        "Position range": [f"{mle.at[p, 'rank_low']}-{mle.at[p, 'rank_high']}" if p in mle.index else "" for p in agg.index],
        "Held-out": [held_out.get(p, np.nan) for p in agg.index],
        "PvE vs PvP": [gaps.get(p, "") for p in agg.index],
        "Elo": [elo.get(p, np.nan) for p in agg.index],  # anchors: fixed, not shown
        "Nash avg": [nash.get(p, np.nan) for p in agg.index],
        "Matches": agg["matches"].to_numpy(),
        "Achievement": agg["achievement"].to_numpy(),
    })
    lows = np.array([mle.at[p, "low"] if p in mle.index else -np.inf for p in agg.index])
    # (every player of a PvP match is rated here; the Space leaves a player newer than its last fit unranked)
    table.insert(0, "Rank", [1 + int(np.sum(lows > mle.at[p, "high"])) if p in mle.index else np.nan for p in agg.index])
    table = table.sort_values(["Rank", "MLE"], ascending=[True, False], kind="stable")
    return table.round(2).reset_index(drop=True)


def parse(argv: list[str] | None = None) -> Args:
    parser = argparse.ArgumentParser(description="Rebuild the NMMO Arena's PvP leaderboard from its match history.")
    parser.add_argument("--data", type=Path, required=True, help="a folder holding the dataset's shards (in data/, or directly)")
    parser.add_argument("--through", help="stop at this shard (its file name): the PvP tab names the last one it rated")
    parser.add_argument("--bootstrap", type=int, default=BOOTSTRAP, help="bootstrap resamples (the Space's: 200)")
    parser.add_argument("--csv", type=Path, help="also write the table as CSV here")
    parser.add_argument("--json", type=Path, help="also write the table as JSON records here")
    return Args(**vars(parser.parse_args(argv)))


if __name__ == "__main__":
    args = parse()
    rows, shards = read_rows(args.data, args.through)
    table = pvp_table(rows, args.bootstrap)
    print(f"{rows['match_id'].nunique():,} matches in {len(shards)} shard{'s' if len(shards) > 1 else ''} through {shards[-1]}")
    print(table.to_string(index=False))
    if args.csv:
        table.to_csv(args.csv, index=False)
    if args.json:
        args.json.write_text(json.dumps(table.to_dict(orient="records"), indent=1, default=str))
