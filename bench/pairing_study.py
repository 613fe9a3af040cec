"""How the PvP pairing rule affects rating quality and how fast a newcomer settles, in simulation.

    python -m bench.pairing_study [--fields 50 100] [--seeds 20] [--age 60] [--after 200]
                                  [--quality-matches 3000] [--quality-seeds 3] [--spread 1.5] [--json FILE]

A population with hidden skills plays 16-team matches (`arena.simulation`, coarse scores:
ties and zeros like real matches), rated online with TrueSkill as the matchmaker rates
them. Four rules draw the pools:

- `random`: uniformly random pools, every qualified policy equally likely in each (the
  baseline of issue 24; the Arena has never drawn pools this way);
- `least-played`: `Pairing.RANDOM`, the Arena's old default: the least-played first,
  ties at random;
- `uncertainty`: `Pairing.UNCERTAINTY`, the 16 largest TrueSkill sigmas;
- `guarantee`: `Pairing.GUARANTEE`, the volume guarantee: the unsettled (`arena.settling`)
  first in up to 8 seats, the rest uniformly at random.

Two experiments:

1. **A newcomer in a settled field** of `--fields` policies. The field plays uniformly random
   pools until each has played `--age` matches on average and every rating is settled; the
   newcomer (its skill drawn like the others') then joins, and from that same state each
   rule plays on. Per rule, averaged over `--seeds`: the matches the Arena plays until the
   newcomer is settled (`newcomer_total_matches`: what a submitter waits for) and how many of
   them were its own; the field's rank correlation (TrueSkill mu against the hidden skills,
   the newcomer left out) averaged over the first `--after` matches after it joined; and the
   cost afterwards: the newcomer's share of the seats in the `--after` matches after it
   settled (its fair share is 16 / (N + 1)), and the seats it took beyond that fair share,
   which are maintenance the field lost. Also the newcomer's Plackett-Luce interval when
   TrueSkill calls it settled (the likelihood's curvature, the field held at its fit), the
   precision it gained per match, and the meter's forecast (`arena.settling.settling`, made
   at its 5th match) against what happened.
2. **Rating quality from scratch** (`--quality-matches`, 0 to skip): `--policies` policies,
   all new, each rule for the whole run: rank correlation of TrueSkill mu after 1/4, 1/2
   and all of the matches, of the Plackett-Luce fit at the end, and the share of pairs
   that met.

The last line is JSON: the figures at N = 100 (`newcomer_total_matches_random`,
`newcomer_total_matches_guarantee`, `speedup` = their ratio, `field_spearman_random`,
`field_spearman_guarantee`, and the same for `least_played` and `uncertainty`), whether the
target (a speedup of at least 4, the field's correlation within 0.005 of random's) is met,
and everything per field size and rule under `fields`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from itertools import combinations

import numpy as np
from scipy.stats import spearmanr

from arena.ratings import Outcome, TrueSkillState, outcomes, plackett_luce, trueskill_ratings
from arena.revision import Revision, player_id
from arena.rules import Pairing
from arena.settling import SETTLED_SIGMA, SETTLED_WIDTH, is_settled, precision_gain, settling
from arena.simulation import Population, play
from matchmaking.service.pairing import make_pool

#: The rules compared, by the name the study prints: None is uniformly random pools.
RULES: dict[str, Pairing | None] = {
    "random": None,
    "least-played": Pairing.RANDOM,
    "uncertainty": Pairing.UNCERTAINTY,
    "guarantee": Pairing.GUARANTEE,
}

#: The issue's target: the guarantee settles a newcomer this many times sooner than random pools...
TARGET_SPEEDUP = 4.0
#: ...with the field's rank correlation at most this much below random pools'.
TARGET_SPEARMAN_LOSS = 0.005

SIZE = 16


def newcomer_width(history: list[Outcome], newcomer: str, others: dict[str, float], skill_guess: float) -> float:
    """95% interval width of `newcomer`'s rating from the likelihood curvature (Efron ties
    ignored: distinct-score approximation), everyone else fixed at `others`."""
    info = 0.0
    for o in history:
        if newcomer not in o.players:
            continue
        s = np.array([others.get(p, skill_guess) if p != newcomer else skill_guess for p in o.players])
        order = np.argsort(-np.array(o.scores), kind="stable")
        position = int(np.flatnonzero(np.array(o.players)[order] == newcomer)[0])
        strengths = np.exp(s[order])
        for stage in range(position + 1):  # the newcomer is in every choice set up to its own
            share = strengths[position] / strengths[stage:].sum()
            info += share * (1 - share)
    return float("inf") if info == 0 else 2 * 1.96 / np.sqrt(info)


# -- the simulated Arena -------------------------------------------------------------------
class Arena:
    """Matches played one at a time, rated online: what the matchmaker sees."""

    def __init__(self, ids: Sequence[str], truth: Mapping[str, float]):
        self.ids = list(ids)
        self.truth = dict(truth)
        self.state = TrueSkillState()
        self.counts: dict[str, int] = {}
        self.history: list[Outcome] = []
        self.met: set[tuple[str, str]] = set()

    def fork(self) -> Arena:
        twin = Arena(self.ids, self.truth)
        twin.state, twin.counts, twin.history = self.state, dict(self.counts), list(self.history)
        return twin

    def sigmas(self) -> dict[str, float]:
        return {p: r.sigma for p, r in self.state.ratings.items()}

    def pool(self, rule: Pairing | None, candidates: Sequence[str], rng: np.random.Generator) -> list[str]:
        if rule is None:  # the baseline: uniformly random pools
            return [candidates[i] for i in rng.choice(len(candidates), size=SIZE, replace=False)]
        return make_pool(candidates, counts=self.counts, rng=rng, how=rule, uncertainty=self.sigmas(), fill=())

    def play(self, pool: Sequence[str], rng: np.random.Generator) -> None:
        index = len(self.history)
        result = play([Revision.parse(p).policy_id for p in pool], [self.truth[p] for p in pool], rng=rng, index=index)
        outcome = outcomes([result])[0]
        self.history.append(outcome)
        self.state = trueskill_ratings([outcome], state=self.state, anchors={})
        for p in pool:
            self.counts[p] = self.counts.get(p, 0) + 1

    def spearman(self, players: Sequence[str]) -> float:
        rated = [p for p in players if p in self.state.ratings]
        mu = [self.state.ratings[p].mu for p in rated]
        return float(spearmanr(mu, [self.truth[p] for p in rated]).correlation)


def population(size: int, seed: int, spread: float) -> tuple[list[str], dict[str, float]]:
    pop = Population.random(size, seed=seed, prefix="sim-p", spread=spread)  # each its own owner: pools seat one per owner
    ids = [player_id(p, "sim") for p in pop.ids]
    return ids, dict(zip(ids, (float(s) for s in pop.skills)))


# -- 1. a newcomer in a settled field --------------------------------------------------------
def settled_field(field: int, *, seed: int, age: int, spread: float, batch: int = 1) -> tuple[Arena, list[str]]:
    """A field of `field` policies played in uniformly random pools until each has played `age`
    matches on average and every rating is settled; and `batch` newcomers (not yet played)."""
    ids, truth = population(field + batch, seed, spread)
    arena = Arena(ids, truth)
    members = ids[:field]
    rng = np.random.default_rng(10_000 + seed)
    sigmas: dict[str, float] = {}
    while len(arena.history) < age * field / SIZE or not all(is_settled(sigmas.get(p, 99.0)) for p in members):
        arena.play(arena.pool(None, members, rng), rng)
        sigmas = arena.sigmas()
    return arena, ids[field:]


def positions(values: Mapping[str, float]) -> dict[str, int]:
    """Each player's place, 1 for the highest value."""
    return {p: i for i, p in enumerate(sorted(values, key=lambda q: -values[q]), start=1)}


def newcomer_run(start: Arena, newcomers: Sequence[str], rule: Pairing | None, *, seed: int, after: int,
                 fitted: dict[str, float]) -> dict[str, float]:
    """From a settled field, the newcomers join and `rule` draws every pool from then on, until
    every newcomer is settled and `after` matches more (and at least `after` in all)."""
    arena = start.fork()
    new, first = set(newcomers), newcomers[0]
    field = [p for p in arena.ids if p not in new]
    rng = np.random.default_rng(20_000 + seed)
    joined = len(arena.history)
    own: dict[str, int] = dict.fromkeys(newcomers, 0)
    own_at_settle: dict[str, int] = {}
    settled_at: int | None = None
    field_rho: list[float] = []
    seats_after, streak, rank_error = 0, 0, float("nan")
    forecast: dict[str, float] = {}
    width_pl, gain = float("nan"), float("nan")
    while True:
        played = len(arena.history) - joined
        if settled_at is None and played >= 5_000:
            break  # never settles (cannot happen with tau = 0): reported as nan
        if settled_at is not None and played >= max(settled_at + after, after):
            break
        pool = arena.pool(rule, arena.ids, rng)
        arena.play(pool, rng)
        played += 1
        seated = [p for p in pool if p in new]
        for p in seated:
            own[p] += 1
        if settled_at is not None:  # the cost: seats the newcomers keep once they are settled
            seats_after += len(seated)
            streak += bool(seated) and streak == played - settled_at - 1  # a newcomer in every pool since
        if played <= after and played % 10 == 0:
            field_rho.append(arena.spearman(field))
        ratings = arena.state.ratings
        if first in pool and own[first] == 5 and rule is Pairing.GUARANTEE:  # the meter, at its 5th match
            meter = settling(arena.sigmas(), arena.counts, candidates=arena.ids, match_s=None, how=rule)[first]
            forecast = {"own": meter.matches_left, "arena": meter.arena_matches_left, "at": played}
        for p in seated:
            if p not in own_at_settle and is_settled(ratings[p].sigma):
                own_at_settle[p] = own[p]
                if p == first:
                    gain = precision_gain(ratings[p].sigma, own[p]) or float("nan")
                    guess = float(np.mean(list(fitted.values())))
                    width_pl = newcomer_width(arena.history[joined:], p, fitted, guess)
                    if forecast:
                        forecast["own_actual"], forecast["arena_actual"] = own[p] - 5, played - forecast["at"]
        if settled_at is None and len(own_at_settle) == len(newcomers):
            settled_at = played
            placed = positions({p: ratings[p].mu for p in arena.ids})
            true = positions({p: arena.truth[p] for p in arena.ids})
            rank_error = float(np.mean([abs(placed[p] - true[p]) for p in newcomers]))
    fair = SIZE / len(arena.ids) * len(newcomers)
    report = {
        "newcomer_total_matches": float(settled_at) if settled_at is not None else float("nan"),
        "newcomer_own_matches": float(np.mean(list(own_at_settle.values()))) if own_at_settle else float("nan"),
        "newcomer_place_error": rank_error,
        "field_spearman": float(np.mean(field_rho)),
        "seat_share_after_settled": seats_after / after,
        "excess_seats_after_settled": seats_after - fair * after,
        "every_pool_after_settled": float(streak),
        "pl_width_at_settled": width_pl,
        "gain_per_match": gain,
    }
    if "own_actual" in forecast:
        report["meter_own_ratio"] = forecast["own"] / max(1.0, forecast["own_actual"])
        report["meter_arena_ratio"] = forecast["arena"] / max(1.0, forecast["arena_actual"])
    return report


def newcomer_study(field: int, *, seeds: int, age: int, after: int, spread: float,
                   batch: int = 1) -> dict[str, dict[str, float]]:
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in RULES}
    for seed in range(seeds):
        start, newcomers = settled_field(field, seed=seed, age=age, spread=spread, batch=batch)
        fitted = {p: r.rating for p, r in plackett_luce(start.history, anchors={}, bootstrap=0).items()}
        for name, rule in RULES.items():
            runs[name].append(newcomer_run(start, newcomers, rule, seed=seed, after=after, fitted=fitted))
    summary = {}
    for name, rows in runs.items():
        keys = sorted({k for r in rows for k in r})
        summary[name] = {k: float(np.nanmean([r.get(k, np.nan) for r in rows])) for k in keys}
        total = [r["newcomer_total_matches"] for r in rows]
        summary[name]["newcomer_total_matches_p90"] = float(np.nanpercentile(total, 90))
    return summary


# -- 2. rating quality from scratch ---------------------------------------------------------
def quality_run(rule: Pairing | None, *, policies: int, matches: int, seed: int, spread: float) -> dict[str, float]:
    ids, truth = population(policies, seed, spread)
    arena = Arena(ids, truth)
    rng = np.random.default_rng(seed + 1)
    report: dict[str, float] = {}
    marks = {matches // 4: "quarter", matches // 2: "half", matches: "all"}
    for index in range(matches):
        pool = arena.pool(rule, ids, rng)
        arena.play(pool, rng)
        arena.met.update(combinations(sorted(pool), 2))
        if index + 1 in marks:
            report[f"trueskill_spearman_{marks[index + 1]}"] = arena.spearman(ids)
    fitted = plackett_luce(arena.history, anchors={}, bootstrap=0)
    report["mle_spearman_all"] = float(spearmanr([fitted[p].rating for p in ids], [truth[p] for p in ids]).correlation)
    report["pairs_met"] = len(arena.met) / (policies * (policies - 1) / 2)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description="Pairing rules compared in simulation.")
    parser.add_argument("--fields", type=int, nargs="+", default=[50, 100], help="sizes of the settled field")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--age", type=int, default=60, help="matches each field policy has played on average")
    parser.add_argument("--after", type=int, default=200, help="matches over which the field and the cost are measured")
    parser.add_argument("--batch", type=int, default=1, help="newcomers joining together")
    parser.add_argument("--policies", type=int, default=100, help="policies of the from-scratch quality run")
    parser.add_argument("--quality-matches", type=int, default=3000, help="0: skip the from-scratch quality run")
    parser.add_argument("--quality-seeds", type=int, default=3)
    parser.add_argument("--spread", type=float, default=1.5, help="std of the hidden skills; smaller = noisier outcomes")
    parser.add_argument("--json", help="also write everything to this file")
    args = parser.parse_args()
    began = time.perf_counter()
    print(f"settled: 95% interval at most {SETTLED_WIDTH} unit wide (TrueSkill sigma <= {SETTLED_SIGMA:.3f}); "
          f"'random' = uniformly random pools, 'least-played' = the Arena's old default", flush=True)
    fields: dict[str, dict[str, dict[str, float]]] = {}
    for field in args.fields:
        summary = newcomer_study(field, seeds=args.seeds, age=args.age, after=args.after, spread=args.spread,
                                 batch=args.batch)
        fields[str(field)] = summary
        share = args.batch * SIZE / (field + args.batch)
        who = "newcomer" if args.batch == 1 else f"{args.batch} newcomers"
        for name, r in summary.items():
            meter = (f"; meter at its 5th match: {r['meter_own_ratio']:.2f}x its own matches left, "
                     f"{r['meter_arena_ratio']:.2f}x the Arena's" if "meter_own_ratio" in r else "")
            print(f"N={field:>3} {name:>12}: {who} settled after {r['newcomer_total_matches']:6.1f} matches of the Arena "
                  f"(p90 {r['newcomer_total_matches_p90']:.0f}), {r['newcomer_own_matches']:.1f} its own "
                  f"(Plackett-Luce interval then {r['pl_width_at_settled']:.2f}), {r['newcomer_place_error']:.1f} places "
                  f"off; field rank correlation {r['field_spearman']:.4f}; afterwards {r['seat_share_after_settled']:.2f} "
                  f"seats a match (fair {share:.2f}), {r['excess_seats_after_settled']:.0f} beyond that in {args.after} "
                  f"matches, in every pool for {r['every_pool_after_settled']:.1f} matches{meter}", flush=True)
    quality: dict[str, dict[str, float]] = {}
    if args.quality_matches:
        for name, rule in RULES.items():
            runs = [quality_run(rule, policies=args.policies, matches=args.quality_matches, seed=s, spread=args.spread)
                    for s in range(args.quality_seeds)]
            quality[name] = {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}
            r = quality[name]
            print(f"from scratch {name:>12}: TrueSkill rank correlation {r['trueskill_spearman_quarter']:.3f} / "
                  f"{r['trueskill_spearman_half']:.3f} / {r['trueskill_spearman_all']:.3f} (1/4, 1/2, all of "
                  f"{args.quality_matches} matches), Plackett-Luce {r['mle_spearman_all']:.3f}; pairs that met "
                  f"{r['pairs_met']:.2%}", flush=True)
    gain = fields[str(args.fields[-1])]["guarantee"]["gain_per_match"]
    widths = {str(w): float(np.ceil((1 / (w * SETTLED_SIGMA / SETTLED_WIDTH) ** 2 - 1 / (25 / 3) ** 2) / gain))
              for w in (1.5, 1.0, 0.75, 0.5)}
    print("own matches a newcomer needs for a 95% interval of width " +
          ", ".join(f"{w}: {m:.0f}" for w, m in widths.items()) + f" (gain {gain:.4f} per match)", flush=True)
    result: dict[str, object] = {}
    main_field = fields.get("100")
    if main_field is not None:
        for name in RULES:
            key = name.replace("-", "_")
            result[f"newcomer_total_matches_{key}"] = round(main_field[name]["newcomer_total_matches"], 1)
            result[f"field_spearman_{key}"] = round(main_field[name]["field_spearman"], 4)
        speedup = main_field["random"]["newcomer_total_matches"] / main_field["guarantee"]["newcomer_total_matches"]
        result["speedup"] = round(speedup, 2)
        loss = main_field["random"]["field_spearman"] - main_field["guarantee"]["field_spearman"]
        result["target_met"] = bool(speedup >= TARGET_SPEEDUP and loss <= TARGET_SPEARMAN_LOSS)
    result.update(settled_width=SETTLED_WIDTH, settled_sigma=round(SETTLED_SIGMA, 4), own_matches_by_width=widths,
                  seeds=args.seeds, age=args.age, after=args.after, batch=args.batch, fields=fields, quality=quality,
                  seconds=round(time.perf_counter() - began, 1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    print(json.dumps(result, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
