"""Which results of which revision go on its model card, and whether it is time: pure.

`due(standings, statuses, published=..., declined=..., rule=..., now=...)` is the whole
decision: the leaderboard's standings, the status log's states and what was last
published in, the publications to make now out. No I/O, no clock of its own.

**PvP figures wait until the rating is settled.** A revision's PvP figures (TrueSkill and
the Plackett-Luce MLE rating) are published only once its TrueSkill sigma is settled
(`arena.settling.is_settled`, the one definition: its 95% interval at most 1 rating unit
wide; docs/rules.md, "Settled"). Until then `CardResults.pvp` is None and
`CardResults.provisional` says, for the card's text, how many PvP matches it has played
and about how many more of its own it needs (`arena.settling.matches_to_settle` at its
own gain per match so far, `precision_gain`; before its first match, the median gain of
the rated field, `FALLBACK_GAIN` when nobody has played).

When a revision's results are published:

1. **At qualification.** The first time a repo's latest revision is `qualified` (once PvE
   stage 1 is decided): its PvE figures per stage ended so far, and its PvP figures if
   its rating is already settled (else the provisional note).
2. **When a later PvE stage ends**, with the PvE figures (and the PvP figures or the note,
   as they stand).
3. **When its PvP rating first settles** ("PvP rating settled after N PvP matches"): its
   PvP figures appear.
4. **When its TrueSkill sigma first falls below a step** of `PublishRule.sigma_steps`,
   each below the settled sigma: by default 0.5 (the settled level halved in sigma,
   about four times the matches: in 16-team pools sigma was 1.02 after 20 matches, 0.64
   after 50 and 0.45 after 100, `python -m bench.card_schedule`). With `tau = 0` sigma
   only falls, so each step is published at most once; several crossed at once make one
   publication naming the lowest.
5. **When its conservative score (mu - 3 sigma) moved by `score_move` (3.0) or more**
   since the last publication, both settled: a settled rating that still moves is news
   (3 points is about three quarters of a beta).

Nothing else publishes: before it settles, a revision's card changes only for PvE news;
and never twice within `min_interval_s` (an hour by default) for one revision, except the
first (what is due then waits, and is published with the figures as they stand at the
end of the interval). What counts as "moved" compares the rounded figures a reader sees,
so figures that round the same are never republished. A revision the owner declined (its
card opts out, or the owner closed the Arena's pull request while it carried that
revision's results) is never published again; a newer revision of the same repo starts
afresh.
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from arena.errors import InvalidArgumentError
from arena.lifecycle import RevisionState, StageFigures, Status
from arena.ratings import TRUESKILL_SIGMA
from arena.records import Format, Record
from arena.revision import Revision
from arena.settling import FALLBACK_GAIN, SETTLED_SIGMA, is_settled, matches_to_settle, precision_gain
from leaderboard.standings import Standings


@dataclass(frozen=True)
class PvPFigures:
    """A revision's settled PvP ratings, rounded to what a reader sees (2 decimals)."""

    mu: float
    sigma: float
    conservative: float
    """mu - 3 sigma: what the leaderboard ranks TrueSkill by."""
    matches: int
    mle: float | None = None
    """Plackett-Luce maximum-likelihood rating (anchored), None before its first fit."""
    mle_low: float | None = None
    mle_high: float | None = None
    """Its 95% bootstrap interval."""


@dataclass(frozen=True)
class ProvisionalPvP:
    """A PvP rating not settled yet: what the card's text says instead of its figures."""

    matches: int
    """PvP matches played so far."""
    matches_left: int
    """About how many more of its own it needs to settle (`arena.settling.matches_to_settle`)."""


@dataclass(frozen=True)
class CardResults(Record):
    """Everything the Arena publishes about one revision."""

    id: Revision
    pve: tuple[StageFigures, ...]
    pvp: PvPFigures | None = None
    """Its PvP figures, once its rating is settled (None before)."""
    provisional: ProvisionalPvP | None = None
    """Before that, how far it is from settled (None once settled)."""

    #: In the ledger, as in the status log, the revision is `repo_id` and `revision`.
    FORMAT = Format(keys={"id": ("repo_id", "revision")})


@dataclass(frozen=True)
class Published:
    """The last publication of one revision: what, and when (UNIX time)."""

    results: CardResults
    at: float


@dataclass(frozen=True)
class Publication:
    """Results to publish now, and why (said in the commit and on the pull request)."""

    results: CardResults
    reason: str


@dataclass(frozen=True)
class PublishRule:
    """When results are published again (see the module docstring)."""

    sigma_steps: tuple[float, ...] = (0.5,)
    """TrueSkill sigma values whose first crossing is published, in falling order, each
    below the settled sigma (`arena.settling.SETTLED_SIGMA`): above it there are no PvP
    figures yet, and settling is itself published."""
    score_move: float = 3.0
    """A move of the conservative score (TrueSkill points) that is published."""
    min_interval_s: float = 3600.0
    """Least time between two publications of one revision (the first one excepted)."""

    def __post_init__(self) -> None:
        if list(self.sigma_steps) != sorted(self.sigma_steps, reverse=True) or any(s <= 0 for s in self.sigma_steps):
            raise InvalidArgumentError(f"sigma_steps must be positive and falling, e.g. (0.7, 0.5); got {self.sigma_steps}.")
        if any(not s < SETTLED_SIGMA for s in self.sigma_steps):
            raise InvalidArgumentError(
                f"sigma_steps must each be below the settled sigma ({SETTLED_SIGMA:.3f}, arena.settling.SETTLED_SIGMA): "
                f"PvP figures are published only once settled, which is itself published; got {self.sigma_steps}.")
        if self.score_move <= 0 or self.min_interval_s < 0:
            raise InvalidArgumentError("score_move must be positive and min_interval_s at least 0.")

    def level(self, pvp: PvPFigures | None) -> int:
        """How many sigma steps a rating is below (0 without PvP figures)."""
        return 0 if pvp is None else sum(pvp.sigma < step for step in self.sigma_steps)

    def news(self, last: CardResults, now: CardResults) -> str:
        """Why `now` is worth publishing after `last`, or "" if it is not."""
        ended = sorted({s.stage for s in now.pve} - {s.stage for s in last.pve})
        if ended:  # a revision qualifies once stage 1 is decided; its later stages end after
            return f"PvE stage {', '.join(map(str, ended))} ended"
        if now.pvp is None:  # provisional: its PvP figures wait until settled
            return ""
        if not _settled(last.pvp):
            return f"PvP rating settled after {now.pvp.matches} PvP matches (TrueSkill sigma {now.pvp.sigma:.2f})"
        if self.level(now.pvp) > self.level(last.pvp):
            step = self.sigma_steps[self.level(now.pvp) - 1]
            return f"TrueSkill sigma fell below {step:g} ({now.pvp.sigma:.2f} after {now.pvp.matches} PvP matches)"
        if last.pvp is not None:
            moved = now.pvp.conservative - last.pvp.conservative
            if abs(moved) >= self.score_move:
                return f"conservative score moved by {moved:+.2f} to {now.pvp.conservative:.2f} since the last publication"
        return ""


def _settled(pvp: PvPFigures | None) -> bool:
    """Whether published figures were settled ones (a ledger written before the rule carried
    unsettled figures too; their rounded sigma is read, as a settled one rounds settled)."""
    return pvp is not None and is_settled(pvp.sigma)


def field_gain(standings: Standings) -> float:
    """The median precision gained per PvP match over the rated field (`FALLBACK_GAIN` when
    nobody has played): the estimate for a revision before its first PvP match, as the meter's."""
    gains = [g for r in standings.trueskill.ratings.values() if (g := precision_gain(r.sigma, r.matches))]
    return statistics.median(gains) if gains else FALLBACK_GAIN


def results_for(standings: Standings, state: RevisionState, *, gain: float | None = None) -> CardResults:
    """A revision's figures: PvE from its status (the stages ended so far), PvP from the
    standings once settled (`arena.settling.is_settled` on its TrueSkill sigma), else how
    far it is from settled.

    Args:
        standings (`Standings`): the leaderboard's latest.
        state (`RevisionState`): the revision's status.
        gain (`float`, *optional*): precision per match for a revision yet to play
            (`field_gain(standings)` when not given).
    """
    player = state.id.player
    pve = tuple(StageFigures(s.stage, round(s.top1_ratio, 2), round(s.mean_achievement, 2), s.matches)
                for s in sorted(state.pve, key=lambda s: s.stage))
    rating = standings.trueskill.ratings.get(player)
    if rating is None or rating.matches < 1 or not is_settled(rating.sigma):
        sigma, matches = (TRUESKILL_SIGMA, 0) if rating is None else (rating.sigma, int(rating.matches))
        own = precision_gain(sigma, matches) or (field_gain(standings) if gain is None else gain)
        left = matches_to_settle(sigma, gain=own) if own > 0 else 0
        return CardResults(state.id, pve, provisional=ProvisionalPvP(matches, left))
    mle = standings.mle.get(player)
    pvp = PvPFigures(
        mu=round(rating.mu, 2),
        sigma=round(rating.sigma, 2),
        conservative=round(rating.conservative, 2),
        matches=int(rating.matches),
        mle=None if mle is None else round(mle.rating, 2),
        mle_low=None if mle is None else round(mle.low, 2),
        mle_high=None if mle is None else round(mle.high, 2),
    )
    return CardResults(state.id, pve, pvp)

def due(
    standings: Standings,
    statuses: Iterable[RevisionState],
    *,
    published: Mapping[Revision, Published],
    declined: Collection[Revision],
    rule: PublishRule,
    now: float,
) -> list[Publication]:
    """The publications to make now, one at most per revision, sorted by repo.

    Args:
        standings (`Standings`): the leaderboard's latest.
        statuses (iterable of `RevisionState`): every revision (only each repo's latest
            qualified one is published).
        published (`Mapping`): (repo, revision) -> its last `Published`.
        declined (`Collection`): revisions never to publish (opted out).
        rule (`PublishRule`): when to publish again.
        now (`float`): UNIX time.
    """
    out = []
    gain = field_gain(standings)
    for state in statuses:
        if not state.latest or state.status is not Status.QUALIFIED or state.id in declined:
            continue
        results = results_for(standings, state, gain=gain)
        last = published.get(state.id)
        if last is None:
            out.append(Publication(results, "qualified for PvP"))
        elif results != last.results and now - last.at >= rule.min_interval_s:
            reason = rule.news(last.results, results)
            if reason:
                out.append(Publication(results, reason))
    return sorted(out, key=lambda p: p.results.id)
