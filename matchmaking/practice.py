"""Practice against the field: who a practice run plays, and fetching them from the Hub.

`python -m matchmaking.evaluate FOLDER --against OWNER/NAME[@REV] ... --against top:K`
(`matchmaking.evaluate`) plays a participant's team against submissions of the field on
their own machine. This module turns the `--against` values into pinned, checked and
downloaded revisions: named ones as they are on the Hub, and `top:K` as the PvP tab ranks
the field from the match-history dataset (`field_ranking`). It records nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from arena.errors import ArenaError, DamagedFileError, InvalidArgumentError, NoHubError, PolicyNotFoundError
from arena.policies import PolicyRef
from arena.ratings import RatedTable, interval_ranks, plackett_luce
from arena.revision import Revision, is_builtin
from arena.rules import ANCHORS
from arena.settings import ArenaSettings
from matchmaking.engine.config import MatchConfig

#: Teams in a match: TARGET and at most this many opponents from the Hub.
MAX_OPPONENTS = MatchConfig().num_teams - 1

#: `--against top:K`.
TOP_PREFIX = "top:"

#: Bootstrap resamples of the Plackett-Luce fit, as the Space's PvP table.
BOOTSTRAP = 200



@dataclass(frozen=True)
class AgainstArgs:
    """The `--against` values, parsed: named revisions, and K of `top:K` (0: none)."""

    named: tuple[tuple[str, str | None], ...]
    """(repo id, revision or None for the latest commit), in the order given."""
    top: int = 0


def parse_against(values: Sequence[str]) -> AgainstArgs:
    """`--against` values as `AgainstArgs`.

    Raises:
        `InvalidArgumentError`: a value that is neither OWNER/NAME[@REV] nor top:K, two
            top:K, a K outside 1-15, or more than 15 opponents named.
    """
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    named: list[tuple[str, str | None]] = []
    top = 0
    for raw in values:
        text = raw.strip()
        if text.lower().startswith(TOP_PREFIX):
            count = text[len(TOP_PREFIX):].strip()
            if top:
                raise InvalidArgumentError(f"--against {text!r}: give top:K once (the top K of the PvP leaderboard).")
            if not count.isdigit() or not 1 <= int(count) <= MAX_OPPONENTS:
                raise InvalidArgumentError(f"--against {text!r}: K of top:K must be a whole number from 1 to "
                                           f"{MAX_OPPONENTS} (a match seats {MAX_OPPONENTS} opponents), e.g. top:5.")
            top = int(count)
            continue
        repo_id, at, revision = text.partition("@")
        try:
            validate_repo_id(repo_id)
            if "/" not in repo_id:
                raise HFValidationError("it has no OWNER/ part")
        except HFValidationError as exc:
            raise InvalidArgumentError(f"--against {text!r} is neither OWNER/NAME[@REV] (a submission on the Hub, "
                                       f"as on its page there) nor top:K: {exc}") from None
        if at and not revision.strip():
            raise InvalidArgumentError(f"--against {text!r}: nothing after @; give a commit sha or a branch, or leave "
                                       "@REV out for the latest commit.")
        named.append((repo_id, revision.strip() or None))
    if len(named) + top > MAX_OPPONENTS:
        raise InvalidArgumentError(f"--against names {len(named) + top} opponents ({len(named)} named"
                                   f"{f' and top:{top}' if top else ''}); a match seats {MAX_OPPONENTS} besides yours: "
                                   "name fewer.")
    return AgainstArgs(tuple(named), top)


@dataclass(frozen=True)
class Opponent:
    """A revision from the Hub that plays against TARGET, and why it was picked."""

    id: Revision
    """The repo, pinned to a commit sha."""
    why: str
    """`--against OWNER/NAME@REV`, or `top:K (rank R, rating X)`."""
    files: tuple[tuple[str, int], ...] = ()
    """(path, size) of its files at that commit, as the Hub lists them."""


@dataclass(frozen=True)
class FieldEntry:
    """One submission of the PvP leaderboard as `top:K` ranks it."""

    id: Revision
    rank: int
    """The PvP table's Rank: 1 + the number of shown policies whose 95% interval lies entirely above."""
    rating: float
    """Plackett-Luce rating (the MLE column)."""
    low: float
    high: float
    matches: int


def _classified(exc: Exception, what: str, endpoint: str) -> ArenaError:
    """A failed Hub call as the Arena's error: no such repo or revision, or no Hub."""
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError, RevisionNotFoundError

    from matchmaking.hub.health import answered, describe

    if isinstance(exc, RevisionNotFoundError):
        return PolicyNotFoundError(f"{what}: no such revision on {endpoint}. Give a commit sha from the repo's history "
                                   "(or a branch), or leave @REV out for its latest commit.")
    if isinstance(exc, RepositoryNotFoundError):
        return PolicyNotFoundError(f"{what}: no such repo on {endpoint}. Check OWNER/NAME as on the repo's Hub page, "
                                   "and that this is the Arena's Hub (--hub URL).")
    if answered(exc):
        return PolicyNotFoundError(f"{what}: {endpoint} refused it ({describe(exc)}).")
    if isinstance(exc, (OSError, HfHubHTTPError)) or "connect" in type(exc).__name__.lower():
        return NoHubError(f"The Hub at {endpoint} does not answer ({describe(exc)}): is the Space running? Start it, "
                          "or point at a Hub with --hub URL.")
    raise exc


def resolve(api, repo_id: str, revision: str | None, *, why: str, max_mb: float) -> Opponent:
    """Pin `repo_id` at `revision` (its latest commit if None) to a commit sha, and check its
    files as the Space checks a submission before anything of it runs.

    Raises:
        `PolicyNotFoundError`: no such repo or revision on the Hub.
        `InvalidArgumentError`: its files cannot play (no `policy.py` at the root, too large).
        `NoHubError`: the Hub does not answer.
    """
    from matchmaking.hub.discovery import format_problem, size_problem

    what = f"--against {repo_id}{f'@{revision}' if revision else ''}"
    try:
        info = api.model_info(repo_id, revision=revision, files_metadata=True)
    except Exception as exc:  # noqa: BLE001 - classified: the answer is the argument's fate, silence the Hub's
        raise _classified(exc, what, api.endpoint) from None
    files = tuple(sorted((s.rfilename, int(s.size or 0)) for s in (info.siblings or [])))
    problem = format_problem(files) or size_problem(files, max_mb)
    if problem:
        raise InvalidArgumentError(f"{what} (commit {str(info.sha)[:12]}) cannot play: {problem}")
    return Opponent(Revision(repo_id, str(info.sha)), why, files)


def field_ranking(api, history_repo: str, cache: Path, *, bootstrap: int = BOOTSTRAP) -> list[FieldEntry]:
    """The submissions of the PvP leaderboard, best first, from the history dataset on the Hub.

    The shards `data/*.parquet` of dataset `history_repo` (downloaded into `cache`, only the
    new ones on a later run), read as the Space reads them (`history.index`: each match
    once). Each repo's current revision is the one that played its latest PvP match (older
    revisions no longer play: the table's default view, superseded revisions hidden). Rated
    by the Space's Plackett-Luce fit (`arena.ratings.plackett_luce`, anchors fixed) over
    every PvP match, then ranked as the PvP table ranks what it shows (those revisions and
    the anchors, `arena.ratings.interval_ranks`), then by rating, then by id.

    Raises:
        `PolicyNotFoundError`: no such dataset on the Hub.
        `InvalidArgumentError`: the dataset holds no PvP match yet.
        `DamagedFileError`: a shard cannot be read.
        `NoHubError`: the Hub does not answer.
    """
    from huggingface_hub import snapshot_download

    from history.index import HistoryIndex
    from history.store import HistoryReader

    try:
        folder = Path(snapshot_download(history_repo, repo_type="dataset", allow_patterns=["data/*.parquet"],
                                        cache_dir=cache, endpoint=api.endpoint, token=api.token))
    except Exception as exc:  # noqa: BLE001 - classified
        from huggingface_hub.errors import RepositoryNotFoundError

        if isinstance(exc, RepositoryNotFoundError):
            raise PolicyNotFoundError(
                f"top:K ranks the PvP leaderboard from the match history the Space publishes, and {api.endpoint} has no "
                f"dataset {history_repo} (NMMO_ARENA_HISTORY_REPO). Point --hub at the Space's Hub and "
                "NMMO_ARENA_HISTORY_REPO at its dataset (a new Space creates it with its first matches), or name "
                "opponents with --against OWNER/NAME[@REV].") from None
        raise _classified(exc, f"top:K reads the history dataset {history_repo}", api.endpoint) from None
    reader = HistoryReader(folder)
    folded = HistoryIndex(reader).refresh().folded
    if reader.damaged:
        raise DamagedFileError(f"The history dataset {history_repo}, downloaded into {cache}, holds a shard that cannot "
                               f"be read ({reader.damaged[0]}); delete {cache} to download it again.")
    table = folded.rated
    if not len(table):
        raise InvalidArgumentError(
            f"top:K ranks the PvP leaderboard, and the history dataset {history_repo} on {api.endpoint} holds no PvP "
            f"match yet ({folded.matches} matches). Name opponents with --against OWNER/NAME[@REV], or wait until the "
            "Space has played PvP and pushed the history (its PvP tab then shows the table).")
    mle = plackett_luce(table, bootstrap=bootstrap)
    current = [p for p in _latest_revisions(table) if p in mle]
    ranks = interval_ranks(mle, current + [p for p in ANCHORS if p in mle])
    counts = folded.tallies.pvp["matches"]
    entries = [FieldEntry(Revision.parse(p), ranks[p], mle[p].rating, mle[p].low, mle[p].high, int(counts[p]))
               for p in current]
    return sorted(entries, key=lambda e: (e.rank, -e.rating, e.id))


def _latest_revisions(table: RatedTable) -> list[str]:
    """Per repo, the submission player (`Revision.player`) that played its latest result."""
    rows, seats = np.nonzero(table.seats >= 0)
    last = np.full(len(table.names), -1)
    np.maximum.at(last, table.seats[rows, seats], rows)  # results are in rating order: the latest is the last
    latest: dict[str, tuple[int, str]] = {}
    for player, row in zip(table.names, last.tolist()):
        if row >= 0 and not is_builtin(player):
            repo = Revision.parse(player).policy_id
            latest[repo] = max(latest.get(repo, (-1, "")), (row, player))
    return [player for _, player in latest.values()]


def own_namespaces(api) -> frozenset[str]:
    """The namespaces the caller's token speaks for on the Hub (its user and organisations;
    none without a token, or where the Hub cannot tell)."""
    if not api.token:
        return frozenset()
    try:
        me = api.whoami()
    except Exception:  # noqa: BLE001 - only a courtesy: top:K then skips nothing
        return frozenset()
    return frozenset([str(me.get("name", "")), *(str(o.get("name", "")) for o in me.get("orgs") or [])]) - {""}


def choose_opponents(api, against: AgainstArgs, *, settings: ArenaSettings,
                     say: Callable[[str], None] = lambda line: None, mine: frozenset[str] = frozenset()) -> list[Opponent]:
    """The opponents `--against` names, pinned to commit shas and checked, named first and
    then the top K (a revision named twice plays once). `top:K` skips the submissions of the
    namespaces in `mine` (the caller's own: practising against yourself teaches nothing).

    Raises:
        `PolicyNotFoundError`, `InvalidArgumentError`, `NoHubError`: see `resolve` and
            `field_ranking`; and `InvalidArgumentError` when the leaderboard holds fewer
            than K submissions, or the opponents are more than 15.
    """
    chosen = [resolve(api, repo, rev, why=f"--against {repo}{f'@{rev}' if rev else ''}", max_mb=settings.max_submission_mb)
              for repo, rev in against.named]
    if against.top:
        ranking = field_ranking(api, settings.history_repo, settings.cache_dir / "practice" / "history")
        yours = [e for e in ranking if e.id.policy_id.split("/")[0] in mine]
        for entry in yours:
            say(f"top:{against.top}: skipping {entry.id.label} (rank {entry.rank}): it is your own")
        ranking = [e for e in ranking if e not in yours]
        if len(ranking) < against.top:
            raise InvalidArgumentError(
                f"--against top:{against.top}: the PvP leaderboard of {settings.history_repo} on {api.endpoint} holds "
                f"{len(ranking)} submission{'s' if len(ranking) != 1 else ''}. Ask for top:{len(ranking)} or fewer"
                f"{'' if not ranking else ', or name opponents with --against OWNER/NAME[@REV]'}.")
        for entry in ranking[:against.top]:
            say(f"top:{against.top}: {entry.id.label}, rank {entry.rank}, rating {entry.rating:.2f} "
                f"({entry.low:.2f} to {entry.high:.2f}), {entry.matches} PvP matches")
            why = f"top:{against.top} (rank {entry.rank}, rating {entry.rating:.2f})"
            chosen.append(resolve(api, entry.id.policy_id, entry.id.sha, why=why, max_mb=settings.max_submission_mb))
    first: dict[Revision, Opponent] = {}
    for opponent in chosen:
        first.setdefault(opponent.id, opponent)
    unique = list(first.values())
    if len(unique) > MAX_OPPONENTS:
        raise InvalidArgumentError(f"--against gives {len(unique)} different opponents; a match seats {MAX_OPPONENTS} "
                                   "besides yours: name fewer, or a smaller top:K.")
    return unique


def fetch(api, opponent: Opponent, *, downloads: Path, ticks: int) -> PolicyRef:
    """Download `opponent`'s commit into `downloads` and validate it as the Space validates a
    submission (its validation match, in its sandbox).

    Raises:
        `InvalidArgumentError`: it fails validation (the reason says what happened).
        `PolicyNotFoundError`, `NoHubError`: the download failed.
    """
    from matchmaking.hub.discovery import download
    from matchmaking.service.validation import validate

    what = f"{opponent.id.policy_id}@{opponent.id.short} ({opponent.why})"
    try:
        path = download(api, opponent.id, downloads)
    except Exception as exc:  # noqa: BLE001 - classified
        raise _classified(exc, f"{what}: the download failed", api.endpoint) from None
    ref = PolicyRef(opponent.id, path=path)
    report = validate(ref, ticks=ticks)
    if not report.ok:
        fault = report.faults[0] if report.faults else None
        happened = (f"{fault.kind.value} {f'at tick {fault.tick}' if fault.tick else 'while being built'}: {fault.message}"
                    if fault is not None else report.reason)
        raise InvalidArgumentError(f"{what} fails the Arena's validation match ({happened}), so it would not play on the "
                                   "Arena either. Pick another revision of it, or leave it out.")
    return ref
