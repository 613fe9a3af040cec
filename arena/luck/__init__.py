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
older records (`spawn_side == -1`) are left out and counted in `excluded_matches`. The
matches of a duplicate set (recorded before sets were retired) count as separate matches,
as they are rated: the same line-up on rotated seats is exactly what shows the seat's
effect. Built-in teams are policies like any other (not anchored: their anchor values
were fitted without seat effects).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arena.errors import NotEnoughMatchesError
from arena.luck.effects import EffectsFit, Spread, fit_effects
from arena.luck.seats import EFFECT_GROUPS, LABELS, MIN_MATCHES, SHARE_GROUPS, Seats, seats
from arena.luck.shares import Decomposition, decompose, lobby


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
    "EFFECT_GROUPS",
    "LABELS",
    "MIN_MATCHES",
    "SHARE_GROUPS",
    "lobby",
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

