"""How a recorded match is played again from its record, and whether it came out the same.

The Space's audits (`matchmaking.service.matchmaker`) and the command
`python -m matchmaking.rerun` (`matchmaking/rerun.py`, which also finds the Hub) both play a
record again through `rerun`:

1. **The versions** it was played with (`nmmo_version`, `arena_version`) must be the
   installed ones; otherwise it refuses, naming both and what to install.
2. **The spec** is rebuilt from the record (`spec_for`): seed, line-up by slot (built-ins
   by name, submissions downloaded at their recorded commit through `huggingface_hub`
   into `CACHE/rerun/OWNER/NAME/SHA`), horizon, track, stage, the set fields of a match
   of a duplicate set (recorded before sets were retired), the default map pool. Its
   derived match id must be the record's: one that is not means the record does not name
   what its match was played with (a rewritten revision, say), and the rerun is then
   never reported identical.
3. **The match** is played as the Space plays it (submissions each in their sandbox,
   built-ins in the match process), and the two records' `outcome()`s (the record without
   its wall-clock fields) are compared; the first difference is named by its path
   (`teams[3].achievement`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from huggingface_hub import HfApi
from huggingface_hub.errors import HfHubHTTPError

from arena import ARENA_VERSION
from arena.errors import (
    MatchNotFoundError,
    MatchSetupError,
    NoHubError,
    NotReproducibleError,
    VersionMismatchError,
)
from arena.policies import PolicyRef, builtin
from arena.records import Format, to_dict
from arena.revision import LOCAL_PREFIX, Revision, is_builtin
from arena.schema import MatchResult
from arena.settings import ArenaSettings
from history.store import HistoryReader
from matchmaking.engine import game, maps
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec, run_match
from matchmaking.hub.discovery import download
from matchmaking.hub.health import answered, describe

#: Plays a rebuilt spec and returns its record (the CLI: here; the matchmaker: its executor).
Player = Callable[[MatchSpec], MatchResult]

#: Fetches a submission's files at a commit: `(repo_id, revision) -> folder`.
Fetcher = Callable[[Revision], Path]

#: Where a step of the rerun is told (a line of text).
Say = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


# -- the record ---------------------------------------------------------------------------

def find_record(settings: ArenaSettings, match_id: str) -> MatchResult:
    """The recorded match `match_id` of the Space's history (shards and write-ahead log).

    Raises:
        `MatchNotFoundError`: no history in the data folder, or no such match in it.
    """
    root = settings.history_dir
    if not (root / "data").is_dir() and not (root / "wal").is_dir():
        raise MatchNotFoundError(f"{settings.data_dir} holds no match history ({root} is missing): give the Space's data "
                                 "folder with --data DIR (or NMMO_ARENA_DATA).")
    results = HistoryReader(root).results()
    for result in results:
        if result.match_id == match_id:
            return result
    raise MatchNotFoundError(f"Match {match_id!r} is not in the history of {settings.data_dir} ({len(results)} matches "
                             "recorded, in its shards and write-ahead log). Copy the id from the Matches tab of that Space.")


def check_versions(record: MatchResult, *, nmmo_version: str = game.NMMO_VERSION, arena_version: str = ARENA_VERSION) -> None:
    """Refuse a record played with other versions than the installed ones.

    Raises:
        `VersionMismatchError`: naming both versions of each that differs and what to install.
    """
    fixes = []
    if record.nmmo_version != nmmo_version:
        fixes.append(f"nmmo {record.nmmo_version} (installed: {nmmo_version}; `pip install nmmo=={record.nmmo_version}`)")
    if record.arena_version != arena_version:
        fixes.append(f"Arena {record.arena_version} (installed: {arena_version}; check out the Arena's commit whose "
                     f'arena/__init__.py says ARENA_VERSION = "{record.arena_version}"')
    if fixes:
        raise VersionMismatchError(
            f"Match {record.match_id} was recorded with nmmo {record.nmmo_version} and Arena {record.arena_version}; "
            f"this installation has nmmo {nmmo_version} and Arena {arena_version}. A rerun here would not replay what was "
            f"recorded. Install " + " and ".join(fixes) + ", then rerun it."
        )


# -- the spec -----------------------------------------------------------------------------

def spec_for(record: MatchResult, *, fetch: Fetcher, settings: ArenaSettings, say: Say = _quiet) -> MatchSpec:
    """The spec of a recorded match, as the matchmaker built it, with its id derived anew.

    Each submission is fetched once (`fetch`), at the commit its team was recorded with.

    Raises:
        `NotReproducibleError`: a `local:` policy, a held-out map without the Space's secret, or slots that are not
            0..N-1 (a record that does not name what played).
        `MatchSetupError`: the record's line-up or horizon is not one a match can have.
    """
    map_key = None
    if record.held_out:
        if not settings.map_secret and not settings.map_secret_file.is_file():
            raise NotReproducibleError(
                f"Match {record.match_id} was played on a held-out map, generated from the Space's secret, and neither "
                f"NMMO_ARENA_MAP_SECRET nor {settings.map_secret_file} holds it here: only the Space that played it can "
                "rerun it (run this on the Space's data folder with --data, or set NMMO_ARENA_MAP_SECRET to its secret)."
            )
        map_key = maps.space_key(settings)
    teams = sorted(record.teams, key=lambda t: t.slot)
    if [t.slot for t in teams] != list(range(len(teams))):
        raise NotReproducibleError(f"Match {record.match_id}'s record has slots {[t.slot for t in teams]}, not 0 to "
                                   f"{len(teams) - 1}: it does not say who played each seat.")
    fetched: dict[Revision, Path] = {}
    policies = []
    for team in teams:
        if is_builtin(team.policy_id):
            policies.append(builtin(team.policy_id))
            continue
        if team.policy_id.startswith(LOCAL_PREFIX):
            raise NotReproducibleError(
                f"Match {record.match_id}: slot {team.slot} was played by {team.policy_id}, a folder on the machine that "
                "played it, which no Hub serves: only matches of built-ins and Hub submissions can be rerun."
            )
        revision = Revision(team.policy_id, team.revision)
        if revision not in fetched:
            fetched[revision] = fetch(revision)
            say(f"Fetched {revision.policy_id}@{revision.short} into {fetched[revision]}")
        policies.append(PolicyRef(revision, path=fetched[revision]))
    try:
        config = MatchConfig(num_teams=len(teams), horizon=record.horizon, cache_dir=settings.cache_dir, map_key=map_key)
    except ValueError as exc:
        raise MatchSetupError(f"Match {record.match_id}'s record cannot be played again: {exc}") from None
    return MatchSpec(seed=record.seed, policies=tuple(policies), config=config, track=record.track, stage=record.stage,
                     set_id=record.set_id, set_size=record.set_size, set_rotation=record.set_rotation,
                     held_out=record.held_out)


# -- the comparison -----------------------------------------------------------------------

def first_difference(recorded: Any, rerun: Any, path: str = "") -> dict[str, Any] | None:
    """The first place where two records (as `outcome()` gives them) differ, in the
    recorded one's field order: `{"path": "teams[3].achievement", "recorded": 12, "rerun": 4}`,
    or None when they are equal. A field or entry present on one side only reads as None
    on the other.

    Example:
        >>> first_difference({"a": 1, "t": [{"x": 1}, {"x": 2}]}, {"a": 1, "t": [{"x": 1}, {"x": 3}]})
        {'path': 't[1].x', 'recorded': 2, 'rerun': 3}
    """
    if isinstance(recorded, Mapping) and isinstance(rerun, Mapping):
        for key in [*recorded, *(k for k in rerun if k not in recorded)]:
            where = f"{path}.{key}" if path else str(key)
            if key not in recorded or key not in rerun:
                return {"path": where, "recorded": recorded.get(key), "rerun": rerun.get(key)}
            found = first_difference(recorded[key], rerun[key], where)
            if found is not None:
                return found
        return None
    if isinstance(recorded, (list, tuple)) and isinstance(rerun, (list, tuple)):
        for i in range(max(len(recorded), len(rerun))):
            where = f"{path}[{i}]"
            if i >= len(recorded) or i >= len(rerun):
                return {"path": where, "recorded": recorded[i] if i < len(recorded) else None,
                        "rerun": rerun[i] if i < len(rerun) else None}
            found = first_difference(recorded[i], rerun[i], where)
            if found is not None:
                return found
        return None
    if recorded != rerun:
        return {"path": path, "recorded": recorded, "rerun": rerun}
    return None


def summary(record: MatchResult) -> dict[str, Any]:
    """The recorded match in brief: its conditions and each team's line."""
    return {
        "track": record.track, "stage": record.stage, "seed": record.seed, "map_id": record.map_id,
        "horizon": record.horizon, "ticks": record.ticks, "started_at": record.started_at,
        "nmmo_version": record.nmmo_version, "arena_version": record.arena_version,
        "set_id": record.set_id, "set_rotation": record.set_rotation,
        "teams": [{"slot": t.slot, "policy_id": t.policy_id, "revision": t.revision, "achievement": t.achievement,
                   "rank": t.rank} for t in record.teams],
    }


@dataclass(frozen=True)
class RerunReport:
    """A recorded match, its rerun, and the verdict."""

    recorded: MatchResult
    rerun: MatchResult
    derived_match_id: str
    """The id the spec rebuilt from the record derives; the record's own when it names
    everything its match was played with."""
    difference: dict[str, Any] | None
    """The first difference (`first_difference`), or a `match_id` one when only the ids
    disagree; None when identical."""
    duration_s: float
    """Wall time of the rerun: downloads and the match."""
    hub: str = ""
    """Where the submissions were fetched from."""

    #: The `--json` object: the recorded match in brief, the rerun's record left out.
    FORMAT = Format(layout=("match_id", "identical", "difference", "brief", "duration_s", "derived_match_id", "hub"),
                    keys={"brief": "recorded"})

    @property
    def match_id(self) -> str:
        return self.recorded.match_id

    @property
    def identical(self) -> bool:
        return self.difference is None

    @property
    def brief(self) -> dict[str, Any]:
        return summary(self.recorded)

    def to_dict(self) -> dict[str, Any]:
        """The `--json` object (a report: written, never read back)."""
        return to_dict(self)


def play_here(spec: MatchSpec) -> MatchResult:
    """Play `spec` in this process as the Space does: every submission in its sandbox."""
    from matchmaking.sandbox.host import sandboxed_host

    return run_match(spec, host_factory=sandboxed_host)


def rerun(record: MatchResult, *, fetch: Fetcher, settings: ArenaSettings, play: Player = play_here, say: Say = _quiet,
          hub: str = "") -> RerunReport:
    """Replay a recorded match and compare the two records.

    Args:
        record (`MatchResult`): the recorded match (`find_record`).
        fetch (`Fetcher`): gets a submission's files at a commit (`HubFetcher`).
        settings (`ArenaSettings`): the Space's settings (its cache of maps).
        play (`Player`, *optional*): plays the spec; in this process by default.
        say (`Say`, *optional*): told each step, one line each.
        hub (`str`, *optional*): where `fetch` fetches from, for the report.

    Returns:
        `RerunReport`: identical or not, with the first difference.

    Raises:
        `VersionMismatchError`, `NotReproducibleError`, `MatchSetupError`: before anything is
            played. `MatchFailedError`: the game engine failed. Whatever `fetch` raises.

    Example:
        A match of built-in teams (nothing to fetch), played and played again:

        >>> from arena.policies import builtin
        >>> from matchmaking.teams.factory import in_process_host
        >>> spec = MatchSpec(seed=1, policies=(builtin("forage"),) * 16, config=MatchConfig(horizon=8))
        >>> record = run_match(spec, host_factory=in_process_host)
        >>> rerun(record, fetch=HubFetcher(HfApi(), Path("downloads")), settings=ArenaSettings()).identical
        True

        A recorded one, its submissions fetched from the Hub: `rerun(find_record(settings,
        match_id), fetch=HubFetcher(api, root), settings=settings)`.
    """
    started = time.perf_counter()
    check_versions(record)
    spec = spec_for(record, fetch=fetch, settings=settings, say=say)
    derived = spec.match_id
    if derived == record.match_id:
        say(f"Spec: seed {spec.seed}, {record.track}{f' stage {record.stage}' if record.stage else ''}, "
            f"{record.horizon} ticks; its derived match id is the record's")
    else:
        say(f"Spec: its derived match id is {derived}, not the record's {record.match_id}: the record does not name what "
            "its match was played with (the rerun plays what it names, under the record's id)")
    begun = time.perf_counter()
    again = play(replace(spec, match_id=record.match_id))
    say(f"Played: {again.ticks} ticks in {time.perf_counter() - begun:.1f} s")
    difference = first_difference(record.outcome(), again.outcome())
    if difference is None and derived != record.match_id:
        difference = {"path": "match_id", "recorded": record.match_id, "rerun": derived}
    return RerunReport(record, again, derived, difference, round(time.perf_counter() - started, 3), hub)


# -- the Hub ------------------------------------------------------------------------------

@dataclass
class HubFetcher:
    """Downloads submissions at a commit from one Hub into `root/OWNER/NAME/SHA` (each
    folder kept: a commit's files never change)."""

    api: HfApi
    root: Path

    def __call__(self, revision: Revision) -> Path:
        """The folder of `revision`.

        Raises:
            `NotReproducibleError`: the Hub answered that it has no such repo or commit.
            `NoHubError`: the Hub did not answer.
        """
        try:
            return download(self.api, revision, self.root)
        except Exception as exc:  # noqa: BLE001 - classified: an answer is the revision's fate, silence the Hub's
            if answered(exc):
                raise NotReproducibleError(
                    f"{self.api.endpoint} cannot serve {revision.policy_id} at commit {revision.sha} ({describe(exc)}): the repo or that "
                    "commit is gone (deleted, or its history rewritten), so the match cannot be played again."
                ) from None
            if isinstance(exc, (OSError, HfHubHTTPError)) or "connect" in type(exc).__name__.lower():
                raise NoHubError(f"The Hub at {self.api.endpoint} does not answer ({describe(exc)}): is the Space "
                                 "running? Start it, or point at a Hub with --hub URL.") from None
            raise
