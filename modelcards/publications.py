"""Which results of which revision go on its model card, and whether it is time: pure.

`due(standings, statuses, published=..., declined=..., rule=..., now=...)` is the whole
decision: the leaderboard's standings, the status log's states and what was last
published in, the publications to make now out. No I/O, no clock of its own.

When a revision's results are published ("settles", precisely):

1. **At qualification.** The first time a repo's latest revision is `qualified` (once PvE
   stage 1 is decided): its PvE figures per stage ended so far and, if it has played PvP
   already, its ratings. Each later PvE stage that ends is news too.
2. **When its TrueSkill sigma first falls below a step** of `PublishRule.sigma_steps`:
   4, 2, 1, 0.5 (sigma starts at 25/3). Each step halves the uncertainty, which takes
   about four times the matches of the one before: in 16-team pools sigma was 4.44 after
   1 match, 2.08 after 5, 1.02 after 20, 0.64 after 50 and 0.45 after 100
   (`python -m bench.card_schedule`). With `tau = 0` sigma only falls, so a revision is
   published at most once per step, whatever the number of matches.
3. **When its conservative score (mu - 3 sigma) moved by `score_move` (3.0) or more**
   since the last publication: a settled rating that still moves is news (3 points is
   about three quarters of a beta).

and never twice within `min_interval_s` (an hour by default) for one revision, except the
first. What counts as "moved" compares the rounded figures a reader sees, so figures that
round the same are never republished. A revision the owner declined (its card opts out,
or the owner closed the Arena's pull request while it carried that revision's results)
is never published again; a newer revision of the same repo starts afresh.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from arena.errors import InvalidArgumentError
from arena.lifecycle import RevisionState, StageFigures, Status
from arena.schema import player_id
from leaderboard.standings import Standings


@dataclass(frozen=True)
class PvPFigures:
    """A revision's PvP ratings, rounded to what a reader sees (2 decimals)."""

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
class CardResults:
    """Everything the Arena publishes about one revision."""

    repo_id: str
    revision: str
    pve: tuple[StageFigures, ...]
    pvp: PvPFigures | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CardResults:
        """Read what `to_dict` wrote.

        Raises:
            `KeyError`, `TypeError`, `ValueError`: not such a record.
        """
        pvp = data.get("pvp")
        return cls(
            repo_id=str(data["repo_id"]),
            revision=str(data["revision"]),
            pve=tuple(StageFigures(int(s["stage"]), float(s["top1_ratio"]), float(s["mean_achievement"]), int(s["matches"]))
                      for s in data["pve"]),
            pvp=None if pvp is None else PvPFigures(**pvp),
        )


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

    sigma_steps: tuple[float, ...] = (4.0, 2.0, 1.0, 0.5)
    """TrueSkill sigma values whose first crossing is published, in falling order."""
    score_move: float = 3.0
    """A move of the conservative score (TrueSkill points) that is published."""
    min_interval_s: float = 3600.0
    """Least time between two publications of one revision (the first one excepted)."""

    def __post_init__(self) -> None:
        if list(self.sigma_steps) != sorted(self.sigma_steps, reverse=True) or any(s <= 0 for s in self.sigma_steps):
            raise InvalidArgumentError(f"sigma_steps must be positive and falling, e.g. (6, 4, 3); got {self.sigma_steps}.")
        if self.score_move <= 0 or self.min_interval_s < 0:
            raise InvalidArgumentError("score_move must be positive and min_interval_s at least 0.")

    def level(self, pvp: PvPFigures | None) -> int:
        """How many sigma steps a rating is below (0 without PvP)."""
        return 0 if pvp is None else sum(pvp.sigma < step for step in self.sigma_steps)

    def news(self, last: CardResults, now: CardResults) -> str:
        """Why `now` is worth publishing after `last`, or "" if it is not."""
        ended = sorted({s.stage for s in now.pve} - {s.stage for s in last.pve})
        if ended:  # a revision qualifies once stage 1 is decided; its later stages end after
            return f"PvE stage {', '.join(map(str, ended))} ended"
        if now.pvp is not None and self.level(now.pvp) > self.level(last.pvp):
            step = self.sigma_steps[self.level(now.pvp) - 1]
            return f"TrueSkill sigma fell below {step:g} ({now.pvp.sigma:.2f} after {now.pvp.matches} PvP matches)"
        if now.pvp is not None and last.pvp is not None:
            moved = now.pvp.conservative - last.pvp.conservative
            if abs(moved) >= self.score_move:
                return f"conservative score moved by {moved:+.2f} to {now.pvp.conservative:.2f} since the last publication"
        return ""


def results_for(standings: Standings, state: RevisionState) -> CardResults:
    """A revision's figures: PvE from its status (the stages ended so far), PvP from the standings."""
    player = player_id(state.repo_id, state.revision)
    pve = tuple(StageFigures(s.stage, round(s.top1_ratio, 2), round(s.mean_achievement, 2), s.matches)
                for s in sorted(state.pve, key=lambda s: s.stage))
    rating = standings.trueskill.ratings.get(player)
    pvp = None
    if rating is not None and rating.matches > 0:
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
    return CardResults(state.repo_id, state.revision, pve, pvp)


def due(
    standings: Standings,
    statuses: Iterable[RevisionState],
    *,
    published: Mapping[tuple[str, str], Published],
    declined: Collection[tuple[str, str]],
    rule: PublishRule,
    now: float,
) -> list[Publication]:
    """The publications to make now, one at most per revision, sorted by repo.

    Args:
        standings (`Standings`): the leaderboard's latest.
        statuses (iterable of `RevisionState`): every revision (only each repo's latest
            qualified one is published).
        published (`Mapping`): (repo, revision) -> its last `Published`.
        declined (`Collection`): (repo, revision) pairs never to publish (opted out).
        rule (`PublishRule`): when to publish again.
        now (`float`): UNIX time.
    """
    out = []
    for state in statuses:
        if not state.latest or state.status is not Status.QUALIFIED or state.key in declined:
            continue
        results = results_for(standings, state)
        last = published.get(state.key)
        if last is None:
            out.append(Publication(results, "qualified for PvP"))
        elif results != last.results and now - last.at >= rule.min_interval_s:
            reason = rule.news(last.results, results)
            if reason:
                out.append(Publication(results, reason))
    return sorted(out, key=lambda p: p.results.repo_id)
