"""Evaluate a policy locally: against the PvE stage-1 teams, as the IJCAI starter kit did, or
against submissions of the field, fetched from the Arena's Hub.

Usage::

    python -m matchmaking.evaluate TARGET [--against OWNER/NAME[@REV] ...] [--against top:K]
                                          [--hub URL] [--data DIR]
                                          [--matches N] [--horizon T] [--seed S]
                                          [--workers W] [--json]

TARGET is a folder holding `policy.py` or `builtin:NAME`. Match `i` uses seed `S + i`, so a
run is reproducible. A folder's team, and every Hub revision, is isolated in its own
sandboxed process exactly as on the Arena (`matchmaking.sandbox.host`). A folder is first
validated as the Space validates a submission: the report gives that verdict and its time
per tick (median and 99th percentile, the tables' "ms / tick"), and a rejection is a
warning on stderr, the matches are played anyway. The report then gives Top1Ratio, mean
Achievement (and how far it is from the 25 of stage 1 that qualifies for PvP), mean points
per task, each match with TARGET's rank, and the line-up's per-team table; `--json` prints one JSON object on stdout instead (progress
stays on stderr), with every match's full record.

**PvE (no `--against`).** Each match puts TARGET's team against 3 Combat, 5 Forage and 7
Random teams, TARGET in the first seat, as PvE stage 1 plays it.

**Practice against the field (`--against`).** Each `--against OWNER/NAME[@REV]` names a
submission on the Hub (REV: a commit sha or a branch; none: its latest commit), and
`--against top:K` the current top K of the PvP leaderboard; together at most 15 opponents.
The Hub is found as `submit` and `rerun` find it (`matchmaking.hub.connection`): `--hub
URL`, `NMMO_ARENA_HUB` or `HF_ENDPOINT`, else the embedded Hub of the Space running on the
data folder (`--data`, `NMMO_ARENA_DATA`), else that folder's embedded Hub started for this
run. Each revision is
checked as the Space checks a submission before it runs anything (its files' format and
size, `matchmaking.hub.discovery`), downloaded into the cache (`NMMO_ARENA_CACHE/practice`),
and validated by the Space's own validation match (`matchmaking.service.validation`);
then the matches are played as a PvP pool is: the seats left over go to the built-in teams
Combat, Forage and Random in turn (`arena.rules.POOL_FILL`, the PvE stage-1 teams and the
ratings' anchors), and each match seats its 16 teams in an order drawn from its seed. It
rates nothing and records nothing: no history, no status, nothing pushed to the Hub.

`top:K` reads the match-history dataset the Space publishes on that Hub
(`NMMO_ARENA_HISTORY_REPO`: the source of truth the tables are computed from) and ranks as
the PvP tab does by default (`matchmaking.practice.field_ranking`): each repo's current revision (the one that
played its latest PvP match: older revisions no longer play), ranked by the Plackett-Luce
table's Rank (1 + the number of shown policies whose 95% interval lies entirely above), then
by rating, with the Space's bootstrap (200 resamples, seed 0). The run is refused, with what
to do, when the dataset holds no PvP match, or fewer submissions than K.

Before submitted code runs, the isolation self-test (`matchmaking.isolation`) checks this
machine's sandbox. For the participant's own folder alone the default is
`NMMO_ARENA_ISOLATION=warn`: stderr names each missing mechanism and the run goes on. Other
people's code (any `--against`) defaults to `strict`: the run is refused (exit code 3) where
isolation is missing, unless `NMMO_ARENA_ISOLATION=warn` says to play anyway.

Exit status: 0; 1 if any match failed; 2 for bad arguments or an opponent that cannot play
(the message says which and what to do); 3 refused by the isolation self-test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from tqdm import tqdm

from arena.errors import ArenaError, InvalidArgumentError, SettingsError
from arena.policies import PolicyRef, builtin, parse_target
from arena.records import Format, Record
from arena.revision import Revision
from arena.rules import POOL_FILL, PVE, stage_opponents
from arena.schema import TASK_NAMES, MatchResult
from arena.settings import ArenaSettings
from matchmaking.engine.config import MatchConfig
from matchmaking.practice import (
    MAX_OPPONENTS,
    AgainstArgs,
    Opponent,
    choose_opponents,
    fetch,
    own_namespaces,
    parse_against,
)
from matchmaking.service.pve import PolicySummary, summarize

if TYPE_CHECKING:  # the engine, the sandbox and the workers load nmmo and numba: imported when a run starts,
    from matchmaking.engine.match import MatchSpec  # so that --help and a bad argument answer at once


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m matchmaking.evaluate",
        description="Play a policy against the PvE stage-1 built-in teams, or against submissions fetched from the "
        "Arena's Hub (--against), on this machine, and report its Achievement. Nothing is rated or recorded.",
        epilog="Exit status: 0; 1 if any match failed; 2 bad arguments or an opponent that cannot play; 3 refused by "
        "the isolation self-test.",
    )
    parser.add_argument("target", help="a folder holding policy.py, or builtin:NAME")
    parser.add_argument("--against", action="append", default=[], metavar="OWNER/NAME[@REV] | top:K",
                        help="an opponent from the Hub: a submission at a commit sha or branch (default: its latest "
                        "commit), or top:K, the current top K of the PvP leaderboard; repeat it, 15 opponents at most. "
                        "Seats left over go to the built-in teams")
    parser.add_argument("--hub", default=None, help="URL of the Hub holding the submissions (default: NMMO_ARENA_HUB, "
                        "HF_ENDPOINT, else the data folder's embedded Hub: the running Space's, or started for this run)")
    parser.add_argument("--data", type=Path, default=None, help="the Space's data folder, to find its embedded Hub "
                        "(default: NMMO_ARENA_DATA, as the Space reads it); nothing is written to it")
    parser.add_argument("--matches", type=int, default=10, help="matches to play (default 10, as PvE)")
    parser.add_argument("--horizon", type=int, default=1024, help="ticks per match (default 1024)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first match; match i uses seed+i")
    parser.add_argument("--workers", type=int, default=None, help="parallel worker processes (default: one per core)")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    return parser


def evaluation_specs(target: PolicyRef, *, matches: int, horizon: int, seed: int) -> list[MatchSpec]:
    """The stage-1 matches of an evaluation run."""
    from matchmaking.engine.match import MatchSpec, policies_for

    opponents = [builtin(name) for name in stage_opponents(1)]
    config = MatchConfig(horizon=horizon)
    return [
        MatchSpec(seed=seed + i, policies=policies_for(target, opponents), config=config, track="local", stage=1)
        for i in range(matches)
    ]


def practice_specs(target: PolicyRef, opponents: Sequence[PolicyRef], *, matches: int, horizon: int,
                   seed: int) -> list[MatchSpec]:
    """The matches of a practice run: TARGET, the opponents, and the built-ins of a PvP pool's
    fill (`POOL_FILL` in turn) in the seats left over; match `i` on seed `seed + i`, its seats
    in an order drawn from that seed (as a PvP pool's are random)."""
    from matchmaking.engine.match import MatchSpec

    config = MatchConfig(horizon=horizon)
    fill = [builtin(POOL_FILL[i % len(POOL_FILL)]) for i in range(config.num_teams - 1 - len(opponents))]
    lineup = [target, *opponents, *fill]
    specs = []
    for i in range(matches):
        order = np.random.default_rng(seed + i).permutation(len(lineup))
        specs.append(MatchSpec(seed=seed + i, policies=tuple(lineup[k] for k in order), config=config, track="local"))
    return specs


# -- the report ------------------------------------------------------------------------------

@dataclass(frozen=True)
class LineupRow(Record):
    """One team of the line-up over the run: its seats, mean rank and Achievement, and how
    often TARGET finished strictly above it."""

    id: Revision
    seats: int
    """Seats it held in each match."""
    mean_rank: float
    mean_achievement: float
    beaten: int
    """(Match, seat) pairs in which TARGET ranked strictly better."""
    met: int
    """(Match, seat) pairs in all."""

    FORMAT = Format(keys={"id": ("policy_id", "revision")})  # as the match record names a team's policy


def lineup_table(results: Sequence[MatchResult], target_id: str) -> list[LineupRow]:
    """Per team of the matches (TARGET first, then by mean rank), its figures over `results`."""
    seats: dict[Revision, list[tuple[int, int, bool]]] = {}
    for result in results:
        mine = result.team(target_id).rank
        for team in result.teams:
            beaten = team.policy_id != target_id and mine < team.rank
            seats.setdefault(Revision(team.policy_id, team.revision), []).append((team.rank, team.achievement, beaten))
    rows = [LineupRow(revision, len(got) // max(len(results), 1), float(np.mean([g[0] for g in got])),
                      float(np.mean([g[1] for g in got])), sum(g[2] for g in got), len(got))
            for revision, got in seats.items()]
    return sorted(rows, key=lambda r: (r.id.policy_id != target_id, r.mean_rank, r.id))


@dataclass(frozen=True)
class Timing(Record):
    """TARGET's validation, as the Space runs it: its verdict and time per tick (what the
    tables show as "ms / tick")."""

    ok: bool
    reason: str
    median_step_ms: float
    p99_step_ms: float


def timing(target: PolicyRef) -> Timing | None:
    """Validate TARGET in its sandbox as the Space would (None for a built-in: no sandbox)."""
    if target.is_builtin:
        return None
    from matchmaking.service.validation import validate

    report = validate(target)
    return Timing(report.ok, report.reason, round(report.median_step_ms, 2), round(report.p99_step_ms, 2))


def pvp_bar(summary: PolicySummary) -> str:
    """How far TARGET's mean Achievement is from the PvP bar (`PVE.qualify_achievement` in
    stage 1), in words."""
    gap = PVE.qualify_achievement - summary.mean_achievement
    bar = f"the {PVE.qualify_achievement:.0f} that qualifies for PvP (mean Achievement in PvE stage 1)"
    return f"{gap:.1f} below {bar}" if gap > 0 else f"{-gap:.1f} above {bar}"


def format_report(summary: PolicySummary, results: Sequence[MatchResult], failures: Sequence[str],
                  against: str = "", lineup: Sequence[LineupRow] = (), timed: Timing | None = None) -> str:
    """The human-readable report: TARGET's validation and figures, each match, and (with
    `lineup`) each team's."""
    lines = [
        f"Policy        {summary.policy_id} (revision {summary.revision[:12]})",
    ]
    if timed is not None:
        lines += [f"Validation    {'accepted' if timed.ok else 'REJECTED'}: {timed.reason}",
                  f"Time / tick   {timed.median_step_ms:.1f} ms median, {timed.p99_step_ms:.1f} ms 99th percentile "
                  f"(deadline {MatchConfig().step_timeout_s * 1000:.0f} ms)"]
    lines += [
        f"Matches       {summary.matches} against {against or f'PvE stage 1 ({PVE.describe(1)})'}",
        f"Top1Ratio     {summary.top1_ratio:.2f} ({summary.wins} won)",
        f"Achievement   {summary.mean_achievement:.1f} mean of 84: {pvp_bar(summary)}",
        "",
        f"{'task':<11}{'points':>8}{'raw value':>11}",
    ]
    for task in TASK_NAMES:
        per = summary.per_task[task]
        lines.append(f"{task:<11}{per.points:>8.1f}{per.value:>11.1f}")
    lines.append("")
    lines.append(f"{'match':<22}{'seed':>6}{'map':>5}{'rank':>6}{'score':>7}  faults")
    for result in results:
        team = result.team(summary.policy_id)
        faults = ", ".join(f"{k} x{v}" for k, v in sorted(team.fault_counts.items())) or "-"
        lines.append(f"{result.match_id:<22}{result.seed:>6}{result.map_id:>5}{team.rank:>6}{team.achievement:>7}  {faults}")
        if team.faults:
            first = team.faults[0]
            lines.append(f"{'':<22}first fault at tick {first.tick}: {first.kind.value}: {first.message}")
    if lineup:
        width = max(len("team"), *(len(row.id.label) for row in lineup)) + 2
        lines.append("")
        lines.append(f"{'team':<{width}}{'seats':>6}{'mean rank':>11}{'Achievement':>13}  you above it")
        for row in lineup:
            above = "-" if row.id.policy_id == summary.policy_id else f"{row.beaten} of {row.met}"
            lines.append(f"{row.id.label:<{width}}{row.seats:>6}{row.mean_rank:>11.1f}{row.mean_achievement:>13.1f}  {above}")
    for failure in failures:
        lines.append(f"match failed: {failure}")
    return "\n".join(lines)


# -- the command ------------------------------------------------------------------------------

def _gate(mode_default: str, environ: Mapping[str, str]) -> int:
    """The isolation self-test before submitted code runs: 0 to go on, else the exit code."""
    from matchmaking.sandbox import isolation

    try:
        mode = ArenaSettings.read("isolation", environ, default=mode_default)
    except SettingsError as exc:
        print(f"error: {' '.join(exc.problems)}", file=sys.stderr)
        return 2
    report = isolation.check(mode)
    for mechanism in report.mechanisms():
        if not mechanism.held:
            print(f"warning: {mechanism.name} isolation is missing on this machine: {mechanism.why}", file=sys.stderr)
    if report.refuses:
        print(f"error: {report.line()} {report.advice()}", file=sys.stderr)
        return 3
    return 0


def _hub_opponents(args: argparse.Namespace, against: AgainstArgs,
                   environ: Mapping[str, str]) -> tuple[list[PolicyRef], list[Opponent]] | int:
    """Connect to the Hub, choose, check, fetch and validate the opponents: (their
    references, who they are), or the exit code of a refusal (its message printed)."""
    from huggingface_hub.utils import disable_progress_bars

    from matchmaking.hub.connection import connect
    from matchmaking.sandbox.host import protect_process

    disable_progress_bars()

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    settings = ArenaSettings.from_env(environ)
    connection = connect(settings, hub=args.hub, environ=environ, purpose="this practice run")
    try:
        say(f"Hub: {connection.describe()}")
        opponents = choose_opponents(connection.api, against, settings=settings, say=say,
                                     mine=own_namespaces(connection.api))
        code = _gate("strict", environ)  # other people's code: strict unless NMMO_ARENA_ISOLATION says warn
        if code:
            return code
        protect_process()
        refs = []
        for opponent in opponents:
            say(f"Fetching and validating {opponent.id.policy_id}@{opponent.id.short} ({opponent.why})")
            refs.append(fetch(connection.api, opponent, downloads=settings.cache_dir / "practice" / "submissions",
                              ticks=settings.validation_ticks))
    finally:
        connection.close()
    return refs, opponents


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    environ = dict(os.environ)
    if args.data is not None:
        environ["NMMO_ARENA_DATA"] = str(args.data)
    try:
        if args.matches < 1:
            raise InvalidArgumentError(f"--matches must be at least 1, got {args.matches}.")
        if args.workers is not None and args.workers < 1:
            raise InvalidArgumentError(f"--workers must be at least 1, got {args.workers}.")
        target = parse_target(args.target)
        against = parse_against(args.against)
        specs = evaluation_specs(target, matches=args.matches, horizon=args.horizon, seed=args.seed)
    except (ArenaError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    opponents: list[Opponent] = []
    if against.named or against.top:
        try:
            found = _hub_opponents(args, against, environ)
            if isinstance(found, int):
                return found
            refs, opponents = found
            specs = practice_specs(target, refs, matches=args.matches, horizon=args.horizon, seed=args.seed)
        except (ArenaError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    elif not target.is_builtin:
        code = _gate("warn", environ)  # the participant's own code on their own machine
        if code:
            return code

    from matchmaking.sandbox.host import protect_process, sandboxed_host
    from matchmaking.service.executor import default_workers, run_matches

    protect_process()
    timed = timing(target)
    if timed is not None and not timed.ok:
        print(f"warning: the Space would reject this policy at validation: {timed.reason}", file=sys.stderr)
    where = f"{len(opponents)} from the Hub" if opponents else "PvE stage 1"
    results: list[MatchResult] = []
    failures: list[str] = []
    with tqdm(total=len(specs), desc=f"{target.policy_id} vs {where}", unit="match", file=sys.stderr) as bar:
        for outcome in run_matches(specs, workers=args.workers or default_workers(), host_factory=sandboxed_host):
            if outcome.result is not None:
                results.append(outcome.result)
            else:
                failures.append(f"seed {outcome.spec.seed}: {outcome.error}")
            bar.update(1)
    results.sort(key=lambda r: r.seed)
    if not results:
        print("error: every match failed:\n" + "\n".join(failures), file=sys.stderr)
        return 1

    summary = summarize(results, target.policy_id)
    lineup = lineup_table(results, target.policy_id) if opponents else []
    fill = MAX_OPPONENTS - len(opponents)
    described = (f"{len(opponents)} submission{'s' if len(opponents) != 1 else ''} from the Hub"
                 f"{f' and {fill} built-in teams' if fill else ''}") if opponents else ""
    if args.json:
        payload = summary.to_dict() | {
            "matches": [r.to_dict() for r in results],
            "failed_matches": failures,
        }
        payload["match_count"] = summary.matches
        payload["validation"] = None if timed is None else timed.to_dict()
        payload["pvp_bar"] = PVE.qualify_achievement
        payload["to_pvp_bar"] = round(PVE.qualify_achievement - summary.mean_achievement, 3)
        if opponents:
            payload["opponents"] = [{"repo_id": o.id.policy_id, "revision": o.id.sha, "why": o.why} for o in opponents]
            payload["lineup"] = [row.to_dict() for row in lineup]
        json.dump(payload, sys.stdout)
        sys.stdout.write("\n")
    else:
        print(format_report(summary, results, failures, described, lineup, timed))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
