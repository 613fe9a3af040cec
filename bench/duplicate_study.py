"""Duplicate sets against single matches: how many real matches before the PvP order settles?

    python -m bench.duplicate_study [--rounds 16] [--out .cache/duplicate-study] [--workers 2]
    python -m bench.duplicate_study --analyse-only --out .cache/duplicate-study

A field of 18 policies of different strengths (the nine built-ins, the five examples, and
four variants of them that take a random step with some probability) plays full 1024-tick
PvP matches in both formats, interleaved so that both see the same machine: each round is
one duplicate set (one seed played once per map edge, the seats rotated,
`matchmaking.seating`) and four single matches on seeds of their own. Pools of 16 are drawn
from the 18 as the matchmaker draws them (least played first), separately per format.

For each format, after every 4 matches (and at the end), the Plackett-Luce order of the 15 policies that
are not anchors (`arena.ratings.plackett_luce`, anchors fixed) is compared with that
format's own order at the end of the run (Spearman); "matches needed" is the first count
from which the correlation stays at or above 0.95, taken in play order and in 19 random
orders of the same matches, the median reported (which matches happen to come first moves
it a lot in a short run; an order that never settles counts as more than the run). Also reported: the same against the
order of all matches of both formats together (a reference neither format owns), and the
mean width of the 95% bootstrap intervals of rating and rank after the same number of
matches. The issue's rule: duplicate sets become the default PvP format if they need at
least 1.3x fewer matches.

Matches are recorded in a history store under `--out` (resumable: the schedule is fixed by
`--seed`, recorded matches are not played again), which `python -m bench.luck --data OUT`
reads too. The JSON line last has the figures.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from arena import PROJECT_ROOT
from arena.ratings import ANCHORS, Outcome, outcomes, plackett_luce
from arena.rules import DUPLICATE_SET_SIZE
from arena.schema import MatchResult, player_id
from history.store import HistoryStore
from matchmaking import game, seating
from matchmaking.config import MatchConfig
from matchmaking.executor import default_workers, run_matches
from matchmaking.match import MatchSpec
from matchmaking.pairing import make_pool
from matchmaking.policy import PolicyRef, builtin, local
from matchmaking.sandbox.host import sandboxed_host

BUILTINS = ("random", "forage", "combat", "melee", "range", "mage", "coordinated", "elite", "apprentice")
EXAMPLES = ("explorer", "gatherer", "wanderer", "apprentice-torch", "apprentice-onnx")
#: (variant name, example it wraps, probability of a random step instead of its action)
VARIANTS = (("apprentice-eps15", "apprentice-torch", 0.15), ("apprentice-eps50", "apprentice-torch", 0.5),
            ("explorer-eps30", "explorer", 0.3), ("gatherer-eps30", "gatherer", 0.3))
SETTLED = 0.95
DEFAULT_IF = 1.3

_WRAPPER = '''"""{name}: {base} taking a random step instead of its action with probability {eps}
(a weaker variant for the duplicate-format study, bench/duplicate_study.py)."""

import numpy as np

from base_policy import Team as Base


class Team(Base):
    def __init__(self, team_id, env_config):
        super().__init__(team_id, env_config)
        self._rng = np.random.default_rng(int(env_config["seed"]))

    def act(self, observations):
        actions = super().act(observations)
        for member in observations:
            if self._rng.random() < {eps}:
                actions[member] = {{"Move": {{"Direction": int(self._rng.integers(5))}}}}
        return actions
'''


def field(out: Path) -> list[PolicyRef]:
    """The 18 policies: built-ins, examples, and variants written under `out/field`."""
    refs = [builtin(name) for name in BUILTINS]
    examples = PROJECT_ROOT / "examples" / "policies"
    refs += [local(str(examples / name)) for name in EXAMPLES]
    for name, base, eps in VARIANTS:
        folder = out / "field" / name
        if not (folder / "policy.py").is_file():
            shutil.copytree(examples / base, folder, dirs_exist_ok=True)
            (folder / "policy.py").rename(folder / "base_policy.py")
            (folder / "policy.py").write_text(_WRAPPER.format(name=name, base=base, eps=eps))
        refs.append(local(str(folder)))
    return refs


def schedule(refs: list[PolicyRef], rounds: int, seed: int, config: MatchConfig) -> list[list[MatchSpec]]:
    """Per round: one duplicate set, then `DUPLICATE_SET_SIZE` single matches."""
    rng = np.random.default_rng(seed)
    by_id = {player_id(r.policy_id, r.revision): r for r in refs}
    counts: dict[str, dict[str, int]] = {"duplicate": {}, "single": {}}
    out = []
    for _ in range(rounds):
        specs = []
        pool = make_pool(list(by_id), counts=counts["duplicate"], rng=rng, fill=())
        for p in pool:
            counts["duplicate"][p] = counts["duplicate"].get(p, 0) + 1
        lineup = [by_id[p] for p in pool]
        set_seed = int(rng.integers(2**48))
        layout = game.spawn_layout(config, set_seed, game.map_id_for_seed(set_seed, config.map_pool))
        sid = seating.set_id(set_seed, pool, DUPLICATE_SET_SIZE)
        for r, seats in enumerate(seating.rotations(lineup, layout, count=DUPLICATE_SET_SIZE)):
            specs.append(MatchSpec(seed=set_seed, policies=tuple(seats), config=config, track="pvp",
                                   set_id=sid, set_size=DUPLICATE_SET_SIZE, set_rotation=r))
        for _ in range(DUPLICATE_SET_SIZE):
            pool = make_pool(list(by_id), counts=counts["single"], rng=rng, fill=())
            for p in pool:
                counts["single"][p] = counts["single"].get(p, 0) + 1
            specs.append(MatchSpec(seed=int(rng.integers(2**48)), policies=tuple(by_id[p] for p in pool),
                                   config=config, track="pvp"))
        out.append(specs)
    return out


def play(rounds: list[list[MatchSpec]], store: HistoryStore, workers: int) -> None:
    for number, specs in enumerate(rounds, 1):
        todo = [s for s in specs if not store.knows(s.match_id)]
        started = time.perf_counter()
        for outcome in run_matches(todo, workers=workers, host_factory=sandboxed_host):
            if outcome.result is None:
                print(f"  match {outcome.spec.match_id} failed: {outcome.error}", flush=True)
                continue
            store.record(outcome.result, replay=outcome.replay, logs=outcome.logs)
        store.flush()
        print(f"round {number}/{len(rounds)}: {len(todo)} matches in {time.perf_counter() - started:.0f} s", flush=True)


def _order(history: list[Outcome], players: list[str]) -> np.ndarray:
    fit = plackett_luce(history, bootstrap=0)
    return np.array([fit[p].rating if p in fit else np.nan for p in players])


def curve(history: list[Outcome], per_result: int, players: list[str], reference: np.ndarray, step: int = 4) -> list[tuple[int, float]]:
    """(matches, Spearman with `reference`) after every `step` matches, and at the end."""
    points = []
    total = len(history) * per_result
    for n in sorted({*range(step, total + 1, step), total}):
        if n % per_result or n == 0:
            continue
        ratings = _order(history[: n // per_result], players)
        seen = ~np.isnan(ratings)
        points.append((n, float(spearmanr(ratings[seen], reference[seen]).statistic)))
    return points


def needed(points: list[tuple[int, float]], threshold: float = SETTLED) -> int | None:
    """The first match count from which the correlation stays at or above `threshold`."""
    first = None
    for n, rho in points:
        if rho >= threshold:
            first = n if first is None else first
        else:
            first = None
    return first


def widths(history: list[Outcome], players: list[str], bootstrap: int = 200) -> tuple[float, float]:
    """Mean width of the 95% intervals of rating and of rank over `players`."""
    fit = plackett_luce(history, bootstrap=bootstrap)
    rating = [fit[p].high - fit[p].low for p in players if p in fit]
    rank = [fit[p].rank_high - fit[p].rank_low for p in players if p in fit]
    return float(np.mean(rating)), float(np.mean(rank))


def needed_over_orders(history: list[Outcome], per_result: int, players: list[str], reference: np.ndarray,
                       orders: int, seed: int = 0) -> list[int | None]:
    """`needed` for the matches in play order, then in `orders - 1` random orders: how
    soon the order settles should not hang on which matches happened to come first. (The
    final order is the same for every order: the fit is order-free.)"""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(orders):
        shuffled = history if k == 0 else [history[i] for i in rng.permutation(len(history))]
        out.append(needed(curve(shuffled, per_result, players, reference)))
    return out


def _median_needed(values: list[int | None], total: int) -> float | None:
    """The median of `needed` over orders, an order that never settled counting as more
    than every match played (so that it cannot pull the median down)."""
    filled = [total + 1 if v is None else v for v in values]
    middle = float(np.median(filled))
    return None if middle > total else middle


def analyse(results: list[MatchResult], orders: int = 20) -> dict:
    results = sorted(results, key=lambda r: (r.started_at, r.match_id))
    single = outcomes([r for r in results if not r.set_id])
    duplicate = outcomes([r for r in results if r.set_id])  # complete sets only
    players = sorted({p for o in single + duplicate for p in o.players} - set(ANCHORS))
    both = _order(single + duplicate, players)
    report: dict = {"policies": len(players) + len(set(ANCHORS) & {p for o in single for p in o.players}),
                    "matches_single": len(single), "matches_duplicate": DUPLICATE_SET_SIZE * len(duplicate)}
    for name, history, per in (("single", single, 1), ("duplicate", duplicate, DUPLICATE_SET_SIZE)):
        own = _order(history, players)
        points = curve(history, per, players, own)
        versus_both = curve(history, per, players, both)
        report[f"needed_{name}_in_play_order"] = needed(points)
        over = needed_over_orders(history, per, players, own, orders)
        report[f"needed_{name}_orders"] = over
        report[f"needed_{name}"] = _median_needed(over, len(history) * per)
        report[f"needed_{name}_vs_both"] = _median_needed(needed_over_orders(history, per, players, both, orders), len(history) * per)
        report[f"curve_{name}"] = [[n, round(rho, 3)] for n, rho in points]
        report[f"curve_{name}_vs_both"] = [[n, round(rho, 3)] for n, rho in versus_both]
    same = min(report["matches_single"], report["matches_duplicate"]) // DUPLICATE_SET_SIZE * DUPLICATE_SET_SIZE
    for name, history, per in (("single", single, 1), ("duplicate", duplicate, DUPLICATE_SET_SIZE)):
        rating, rank = widths(history[: same // per], players)
        report[f"width_{name}"] = round(rating, 3)
        report[f"rank_width_{name}"] = round(rank, 2)
    report["compared_at_matches"] = same
    a, b = report["needed_single"], report["needed_duplicate"]
    report["ratio"] = None if a is None or b is None else round(a / b, 2)
    report["default"] = "duplicate" if report["ratio"] is not None and report["ratio"] >= DEFAULT_IF else "single"
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=16, help="rounds of one duplicate set and 4 single matches")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / ".cache" / "duplicate-study")
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--horizon", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--analyse-only", action="store_true", help="analyse what is recorded, play nothing")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    store = HistoryStore(args.out / "history")
    if not args.analyse_only:
        config = MatchConfig(horizon=args.horizon)
        refs = field(args.out)
        play(schedule(refs, args.rounds, args.seed, config), store, args.workers)
    results = [r for r in store.results() if r.track == "pvp"]
    report = analyse(results)
    print(f"{report['policies']} policies; {report['matches_single']} single matches, {report['matches_duplicate']} in duplicate sets")
    for name in ("single", "duplicate"):
        print(f"{name:>9}: order settled (Spearman >= {SETTLED} with its own final order) after "
              f"{report[f'needed_{name}']} matches (median over {len(report[f'needed_{name}_orders'])} orders of the matches; "
              f"{report[f'needed_{name}_in_play_order']} in play order; {report[f'needed_{name}_vs_both']} against both formats' order); "
              f"after {report['compared_at_matches']} matches, 95% intervals {report[f'width_{name}']} rating units "
              f"and {report[f'rank_width_{name}']} places wide")
    print(f"single / duplicate matches needed: {report['ratio']} (default if >= {DEFAULT_IF}: {report['default']})")
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
