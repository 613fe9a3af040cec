"""How the PvP pairing rule affects rating quality, measured in simulation.

    python -m bench.pairing_study [--policies 100] [--matches 3000] [--seeds 3] [--spread 1.5]

A population with hidden skills plays 16-team matches (`arena.simulation`, coarse
scores: ties and zeros like real matches). Each pairing rule of `matchmaking.service.pairing`
(random, uncertainty-first) chooses the pools from the live TrueSkill ratings, as the
matchmaker does. Reported per rule, averaged over seeds:

- rank correlation (Spearman) of TrueSkill mu and of the Plackett-Luce fit with the hidden
  skills, after 1/4, 1/2 and all of the matches;
- coverage: the share of policy pairs that met at least once;
- for a newcomer added after half the matches: how many of its matches it takes until its
  95% interval (from the Plackett-Luce likelihood's curvature, the others held at their
  fitted ratings) is narrower than `--width` rating units, and how many matches the Arena
  plays meanwhile (`newcomer_total_matches`: what a submitter waits for);
- the field's rank correlation over those same matches.
"""

from __future__ import annotations

import argparse
import json
import sys
from itertools import combinations

import numpy as np
from scipy.stats import spearmanr

from arena.ratings import Outcome, TrueSkillState, outcomes, plackett_luce, player_id, trueskill_ratings
from arena.rules import Pairing
from arena.simulation import Population, play
from matchmaking.service.pairing import make_pool


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


def simulate(how: Pairing, *, policies: int, matches: int, seed: int, width: float, spread: float = 1.5) -> dict[str, float]:
    population = Population.random(policies, seed=seed, prefix="sim/p", spread=spread)
    newcomer_index = policies - 1
    ids = [player_id(p, "sim") for p in population.ids]
    truth = dict(zip(ids, population.skills))
    rng = np.random.default_rng(seed + 1)
    state = TrueSkillState()
    counts: dict[str, int] = {}
    history: list[Outcome] = []
    met: set[tuple[str, str]] = set()
    report: dict[str, float] = {}
    newcomer_matches, narrowed_at, narrowed_total = 0, None, None
    fitted_at_half: dict[str, float] = {}
    for index in range(matches):
        joined = index >= matches // 2
        candidates = ids if joined else ids[:newcomer_index]
        uncertainty = {p: r.sigma for p, r in state.ratings.items()}
        pool = make_pool(candidates, counts=counts, rng=rng, how=how, uncertainty=uncertainty, fill=())
        result = play([p.rsplit("@", 1)[0] for p in pool], [truth[p] for p in pool], rng=rng, index=index)
        outcome = outcomes([result])[0]
        history.append(outcome)
        state = trueskill_ratings([outcome], state=state, anchors={})
        for p in pool:
            counts[p] = counts.get(p, 0) + 1
        met.update(combinations(sorted(pool), 2))
        if index + 1 == matches // 2:
            fitted_at_half = {p: r.rating for p, r in plackett_luce(history, anchors={}, bootstrap=0).items()}
        if joined and ids[newcomer_index] in pool:
            newcomer_matches += 1
            if narrowed_at is None and newcomer_matches % 5 == 0:
                guess = float(np.mean(list(fitted_at_half.values())))
                if newcomer_width(history, ids[newcomer_index], fitted_at_half, guess) < width:
                    narrowed_at, narrowed_total = newcomer_matches, index + 1 - matches // 2
        if index + 1 in (matches // 4, matches // 2, matches):
            rated = [p for p in ids if p in state.ratings]
            label = {matches // 4: "quarter", matches // 2: "half", matches: "all"}[index + 1]
            report[f"trueskill_spearman_{label}"] = float(spearmanr([state.ratings[p].mu for p in rated], [truth[p] for p in rated]).correlation)
    fitted = plackett_luce(history, anchors={}, bootstrap=0)
    report["mle_spearman_all"] = float(spearmanr([fitted[p].rating for p in ids], [truth[p] for p in ids]).correlation)
    report["pairs_met"] = len(met) / (policies * (policies - 1) / 2)
    report["newcomer_matches_to_narrow"] = float(narrowed_at) if narrowed_at is not None else float("nan")
    report["newcomer_total_matches"] = float(narrowed_total) if narrowed_total is not None else float("nan")
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description="Pairing rules compared in simulation.")
    parser.add_argument("--policies", type=int, default=100)
    parser.add_argument("--matches", type=int, default=3000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--width", type=float, default=1.0)
    parser.add_argument("--spread", type=float, default=1.5, help="std of the hidden skills; smaller = noisier outcomes")
    parser.add_argument("--json")
    args = parser.parse_args()
    summary = {}
    for how in Pairing:
        runs = [
            simulate(how, policies=args.policies, matches=args.matches, seed=s, width=args.width, spread=args.spread)
            for s in range(args.seeds)
        ]
        summary[how.value] = {k: float(np.nanmean([r[k] for r in runs])) for k in runs[0]}
        r = summary[how.value]
        print(
            f"{how.value:>15}: TrueSkill rank correlation {r['trueskill_spearman_quarter']:.3f} / {r['trueskill_spearman_half']:.3f} / "
            f"{r['trueskill_spearman_all']:.3f} (1/4, 1/2, all matches), Plackett-Luce {r['mle_spearman_all']:.3f}; "
            f"pairs that met {r['pairs_met']:.2%}; newcomer's 95% interval < {args.width} after {r['newcomer_matches_to_narrow']:.0f} of its matches, "
            f"{r['newcomer_total_matches']:.0f} matches of the Arena",
            flush=True,
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
