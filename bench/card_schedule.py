"""How often a model card is updated: the publication rule over a simulated PvP life.

A newcomer joins a population of 40 rated policies and plays every PvP match (16-team
random pools, `arena.simulation`), at a given rate of matches per hour; after each match
`modelcards.publications.due` decides, as the Space would, whether its card's pull request
is updated. Prints TrueSkill sigma after some match counts (what the sigma steps below the
settled level are chosen against), the match after which the rating is settled
(`arena.settling.is_settled`: no PvP figures on the card before it), and every publication
with its match, time and reason.

    python -m bench.card_schedule --matches 500 --per-hour 240
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from arena.lifecycle import StageFigures, Status
from arena.ratings import EloState, TrueSkillState, extend_trueskill, outcomes
from arena.revision import Revision
from arena.settling import is_settled
from arena.simulation import Population, play
from history.statuses import StatusLog
from leaderboard.standings import Standings
from modelcards.publications import Published, PublishRule, due


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.card_schedule", description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, default=500)
    parser.add_argument("--per-hour", type=float, default=240.0, help="PvP matches the newcomer plays per hour")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rule = PublishRule()
    crowd = Population.random(40, seed=args.seed + 1, prefix="crowd/p")
    rng = np.random.default_rng(args.seed)
    repo, revision = "bench/newcomer", "sim"  # the simulation names every revision "sim"
    with tempfile.TemporaryDirectory() as tmp:
        log = StatusLog(Path(tmp) / "statuses.jsonl")
        for status in (Status.QUEUED, Status.VALIDATING, Status.EVALUATING):
            log.record(Revision(repo, revision), status)
        log.record(Revision(repo, revision), Status.QUALIFIED, "qualified", pve=(StageFigures(1, 0.6, 30.0, 10),))
        statuses = log.states()
    history, state = [], TrueSkillState()
    published: dict = {}
    shown = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}
    publications = []
    settled_at = None
    for index in range(args.matches + 1):
        now = index * 3600.0 / args.per_hour
        if index:
            seats = rng.choice(len(crowd.ids), size=15, replace=False)
            lineup = [repo, *(crowd.ids[i] for i in seats)]
            result = play(lineup, [0.5, *crowd.skills[seats]], rng=rng, index=index)
            history.append(result)
            state = extend_trueskill(state, outcomes(history))
        standings = Standings(trueskill=state, elo=EloState(), mle={})
        for publication in due(standings, statuses, published=published, declined=(), rule=rule, now=now):
            published[(repo, revision)] = Published(publication.results, now)
            publications.append((index, now, publication.reason))
        rating = state.ratings.get(f"{repo}@sim")
        if settled_at is None and rating is not None and is_settled(rating.sigma):
            settled_at = index
            print(f"settled after {index} matches (hour {now / 3600:.2f}): sigma {rating.sigma:.2f}")
        if index in shown and rating is not None:
            print(f"after {index:4d} matches: sigma {rating.sigma:.2f}, mu - 3 sigma {rating.conservative:.2f}")
    print(f"\n{len(publications)} publications over {args.matches} matches ({args.matches / args.per_hour:.1f} hours at {args.per_hour:g} an hour):")
    for index, now, reason in publications:
        print(f"  match {index:4d}, hour {now / 3600:5.2f}: {reason}")


if __name__ == "__main__":
    main()
