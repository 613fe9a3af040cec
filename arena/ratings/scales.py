"""The rating scales and the anchors' place on them: TrueSkill, Elo and Plackett-Luce units.

Plackett-Luce ratings are log-strengths: a gap of 1 means the better policy wins a duel
e/(1+e), about 73% of the time. The anchors (`arena.rules.ANCHORS`) are given in that unit;
TrueSkill and Elo place them on their own scales by matching duel win probabilities.
"""

from __future__ import annotations

import math

# The anchors' fixed ratings, in Plackett-Luce units, are part of the rules (`arena.rules`).

#: TrueSkill mu per Plackett-Luce unit: a duel won with probability sigmoid(d) in PL is won
#: with probability Phi(mu_gap / (sqrt(2) beta)) in TrueSkill; matching the slopes at 0
#: (sigmoid'(0) = 1/4, Phi'(0) = 1/sqrt(2 pi)) gives mu_gap = d * sqrt(2) beta * sqrt(2 pi) / 4.
TRUESKILL_MU, TRUESKILL_SIGMA = 25.0, 25.0 / 3.0
TRUESKILL_BETA = TRUESKILL_SIGMA / 2.0
TRUESKILL_PER_PL = math.sqrt(2.0) * TRUESKILL_BETA * math.sqrt(2.0 * math.pi) / 4.0

#: Elo points per Plackett-Luce unit: Elo's duel probability is 1 / (1 + 10^(-gap/400)).
ELO_PER_PL = 400.0 / math.log(10.0)
ELO_START = 1200.0

#: TrueSkill draw probability: small, since large values distort the many ties at 0.
DRAW_PROBABILITY = 0.015


def anchor_trueskill_mu(value: float, mean_anchor: float) -> float:
    """An anchor's TrueSkill mu: centred so the anchors' mean sits at the default mu."""
    return TRUESKILL_MU + (value - mean_anchor) * TRUESKILL_PER_PL


def anchor_elo(value: float, mean_anchor: float) -> float:
    """An anchor's Elo: centred so the anchors' mean sits at the starting Elo."""
    return ELO_START + (value - mean_anchor) * ELO_PER_PL


