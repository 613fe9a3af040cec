"""The rules of the Arena's tracks, each written once: built-in teams, PvE stages, PvP anchors.

Everything that repeats a number of the rules (the matchmaker's plans, the ratings'
anchors, the pool fillers, the UI's prose, the README) reads it from here, so a rule
changes in one place. The settings of a running Space (`arena.settings.ArenaSettings`)
start from these values; a Space may override the PvE thresholds for a demo, and its
pages then say the values it runs with.

- **Built-in teams** (`BUILTIN_TEAMS`): the Arena's own teams, what they are and whether
  they are scripted or learned. nmmo's scripted baselines play PvE stage 1 (as in the IJCAI
  kit) and fill PvP pools; the Arena's own teams play stages 2 and 3. As the paper's stage 2
  was a learned baseline, ours is the `apprentice` network (`training/imitate.py`), which
  replaced the scripted `coordinated` team there after beating it head to head (docs/rules.md,
  "From training to a ranked policy"); stage 3 stays scripted.
- **PvE** (`PVE`): 10 matches a stage against 15 built-in teams; a Top1Ratio of 0.5 opens
  the next stage; a mean Achievement of 25 in stage 1 qualifies for PvP (the paper's).
- **Anchors** (`ANCHORS`): the built-ins whose ratings are fixed, so that the rating scale
  means the same thing as the population changes (AlphaStar anchored its MMR the same
  way); they are also the teams that fill a PvP pool with fewer than 16 qualified
  revisions (`POOL_FILL`), strongest first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from arena.errors import InvalidArgumentError, PolicyNotFoundError
from arena.revision import BUILTIN_PREFIX


@dataclass(frozen=True)
class MatchFormat:
    """The shape of every Arena match (the IJCAI 2022 challenge's)."""

    num_teams: int = 16
    team_size: int = 8
    map_size: int = 128
    """Playable tiles per side (nmmo's Medium config)."""
    horizon: int = 1024
    """Ticks, unless every agent dies first."""


#: The format of PvE and PvP matches.
MATCH = MatchFormat()


@dataclass(frozen=True)
class BuiltinTeam:
    """One of the Arena's own teams."""

    name: str
    """Its name in `builtin:NAME` (lower case; names are matched without regard to case)."""
    description: str
    kind: str
    """`scripted` (hand-written rules) or `learned` (a trained network)."""
    anchor: float | None = None
    """Its fixed Plackett-Luce rating if it is a rating anchor (random play at 0)."""

    @property
    def policy_id(self) -> str:
        return f"{BUILTIN_PREFIX}{self.name}"


#: Every built-in team, in listing order. Anchor values fitted by `python -m bench.anchors`
#: on 12 full built-in matches (95% intervals: Forage 1.44-2.75, Combat 1.82-3.87); refit
#: when the built-ins change.
BUILTIN_TEAMS: tuple[BuiltinTeam, ...] = (
    BuiltinTeam("random", "nmmo's Random baseline: every member moves in a random direction.", "scripted", anchor=0.0),
    BuiltinTeam("forage", "nmmo's Forage baseline: eats and drinks when low, otherwise explores toward the centre.", "scripted", anchor=1.88),
    BuiltinTeam(
        "combat",
        "nmmo's Combat baselines (Melee, Range, Mage members): forage, trade, equip, attack weak targets, evade.",
        "scripted",
        anchor=2.65,
    ),
    BuiltinTeam("melee", "nmmo's Melee baseline on every member.", "scripted"),
    BuiltinTeam("range", "nmmo's Range baseline on every member.", "scripted"),
    BuiltinTeam("mage", "nmmo's Mage baseline on every member.", "scripted"),
    BuiltinTeam("coordinated", "The Arena's scripted role-based team (stage 3): scouts, gatherers and two fighters with one shared target.", "scripted"),
    BuiltinTeam("elite", "The Arena's strongest scripted team (stage 3): as coordinated, plus NPC hunting, healing and three fighters.", "scripted"),
    BuiltinTeam("apprentice", "The Arena's learned team (stage 2): a network trained to imitate elite (training/imitate.py).", "learned"),
)

_BY_NAME: dict[str, BuiltinTeam] = {team.name: team for team in BUILTIN_TEAMS}


def builtin_team(name: str) -> BuiltinTeam:
    """The built-in team called `name` (`Forage`, `forage` and `builtin:forage` alike).

    Raises:
        `PolicyNotFoundError`: no built-in team of that name.
    """
    key = name.strip()
    if key.lower().startswith(BUILTIN_PREFIX):
        key = key[len(BUILTIN_PREFIX):]
    team = _BY_NAME.get(key.lower())
    if team is None:
        raise PolicyNotFoundError(
            f"No built-in team {name!r}. Available: {', '.join(t.policy_id for t in BUILTIN_TEAMS)}."
        )
    return team


#: Fixed ratings of the anchor teams, by policy id, in Plackett-Luce units.
ANCHORS: dict[str, float] = {t.policy_id: t.anchor for t in BUILTIN_TEAMS if t.anchor is not None}

#: Built-ins that fill the empty seats of a PvP pool, strongest first, cycled: the anchors.
POOL_FILL: tuple[str, ...] = tuple(sorted(ANCHORS, key=lambda p: -ANCHORS[p]))


class Pairing(str, Enum):
    """How PvP pools of 16 are drawn from the qualified revisions (`matchmaking.service.pairing`).

    Every PvP pool plays one match on its own seed, and each match is rated on its own.
    """

    RANDOM = "random"
    """The paper's, as the Arena drew it before the guarantee: the least-played first, ties at random
    (a newcomer sits in every pool until its count has caught up with the field's)."""
    UNCERTAINTY = "uncertainty"
    """The least certain ratings (largest TrueSkill sigma) first."""
    GUARANTEE = "guarantee"
    """The volume guarantee (the default): the unsettled (`arena.settling`) first, least
    settled first, in at most 8 seats of a pool; the other seats uniformly at random."""

    @property
    def rated(self) -> bool:
        """Whether the rule reads the live TrueSkill ratings (its sigmas)."""
        return self is not Pairing.RANDOM


#: Options retired on `RETIRED_ON` because their own studies rejected them, each with why
#: (the figures are in docs/changelog.md): pairings (values of `NMMO_ARENA_PAIRING`) and the
#: PvP format (`NMMO_ARENA_PVP_FORMAT`: duplicate sets). A Space started with one is refused
#: (`arena.settings`); records of duplicate sets stay readable (docs/history.md).
RETIRED_ON = "2026-12-03"
RETIRED_PAIRINGS: dict[str, str] = {
    "closest-rating": "its study found that it splits the field into groups that rarely meet: "
                      "32% of the pairs never met in 3,000 simulated matches",
}
RETIRED_PVP_FORMAT = ("its study found that duplicate sets need more matches than single matches before the "
                      "order settles, 20 against 16; every PvP match is a single match")


@dataclass(frozen=True)
class PveRules:
    """The PvE track: a revision's team against 15 built-in teams, stage by stage."""

    stages: Mapping[int, tuple[str, ...]] = field(
        default_factory=lambda: {
            1: ("combat",) * 3 + ("forage",) * 5 + ("random",) * 7,  # the IJCAI starter kit's stage 1
            2: ("apprentice",) * 6 + ("combat",) * 5 + ("forage",) * 4,  # learned, as the paper's stage 2
            3: ("elite",) * 8 + ("coordinated",) * 7,
        }
    )
    """Built-in opponents of each stage, by name, 15 per stage."""
    matches_per_stage: int = 10
    """Matches a revision plays per stage (the paper's 10)."""
    next_stage_top1: float = 0.5
    """Top1Ratio in a stage that opens the next one."""
    qualify_achievement: float = 25.0
    """Mean Achievement in stage 1 that qualifies a revision for PvP (the paper's 25)."""

    @property
    def last_stage(self) -> int:
        return max(self.stages)

    def opponents(self, stage: int) -> tuple[str, ...]:
        """Names of the built-in teams a submission meets in `stage`."""
        if stage not in self.stages:
            raise InvalidArgumentError(f"No PvE stage {stage}; stages are {sorted(self.stages)}.")
        return self.stages[stage]

    def describe(self, stage: int) -> str:
        """`3 Combat, 5 Forage, 7 Random`: a stage's opponents in words."""
        counts: dict[str, int] = {}
        for name in self.opponents(stage):
            counts[name] = counts.get(name, 0) + 1
        return ", ".join(f"{n} {name if name in ('coordinated', 'elite', 'apprentice') else name.capitalize()}" for name, n in counts.items())

    def kinds(self, stage: int) -> str:
        """Whether a stage's opponents are scripted, learned, or both."""
        return " and ".join(sorted({builtin_team(name).kind for name in self.opponents(stage)}))


#: The PvE rules as the paper set them.
PVE = PveRules()


def stage_opponents(stage: int) -> tuple[str, ...]:
    """Names of the built-in teams a submission meets in PvE `stage`."""
    return PVE.opponents(stage)
