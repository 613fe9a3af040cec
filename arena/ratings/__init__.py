"""How ratings are computed: three views of the same match history, each a pure function.

Input is always a sequence of `Outcome`s (who played, what each scored), read from the
history; output is a table of ratings. The same history gives the identical table.

- `trueskill_ratings`: TrueSkill as the IJCAI paper used it, through the `trueskill`
  package's algorithm: one rating per policy revision (a team of 8 is one player),
  16-team free-for-all ranked by Achievement with equal scores tied, `tau=0`, a small
  draw probability. Online: matches apply in the order of `Outcome.key` (start time, then
  match id) and the state can be checkpointed and extended.
- `plackett_luce`: an order-free maximum-likelihood rating. One batch fit of a
  Plackett-Luce model over the whole history (ties by Efron's rule, a small L2 penalty),
  anchored on the built-in teams' fixed ratings as AlphaStar anchored its MMR, with 95%
  intervals for rating and leaderboard position from a bootstrap over whole results,
  drawn over the results in id order: permuting start times or input order changes no
  rating, interval or rank.
- `elo_ratings`: Elo as in Hugging Face's AI vs. AI, a 16-team result read as pairwise
  duels.

Scales. Plackett-Luce ratings are log-strengths: a gap of 1 means the better policy wins a
duel e/(1+e), about 73% of the time. The anchors are given in that unit; TrueSkill and
Elo place them on their own scales by matching duel win probabilities (see
`ANCHOR_TRUESKILL_MU`, `anchor_elo`).
"""

from arena.ratings.columns import rated_from_codes
from arena.ratings.elo import ELO_K, EloState, elo_ratings
from arena.ratings.mle import MLERating, interval_ranks, plackett_luce
from arena.ratings.results import Outcome, RatedTable, by_id, outcomes
from arena.ratings.scales import (
    DRAW_PROBABILITY,
    ELO_PER_PL,
    ELO_START,
    TRUESKILL_BETA,
    TRUESKILL_MU,
    TRUESKILL_PER_PL,
    TRUESKILL_SIGMA,
    anchor_elo,
    anchor_trueskill_mu,
)
from arena.ratings.trueskill import (
    TrueSkillRating,
    TrueSkillState,
    extend_trueskill,
    recomputed,
    trueskill_ratings,
    trueskill_trail,
)
from arena.rules import ANCHORS

__all__ = [
    "ANCHORS", "DRAW_PROBABILITY", "ELO_K", "ELO_PER_PL", "ELO_START", "TRUESKILL_BETA", "TRUESKILL_MU", "TRUESKILL_PER_PL",
    "TRUESKILL_SIGMA", "EloState", "MLERating", "Outcome", "RatedTable", "TrueSkillRating", "TrueSkillState",
    "anchor_elo", "anchor_trueskill_mu", "by_id", "elo_ratings", "extend_trueskill", "interval_ranks", "outcomes", "plackett_luce",
    "rated_from_codes", "recomputed", "trueskill_ratings", "trueskill_trail",
]
