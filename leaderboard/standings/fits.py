"""Published fits: a writer's whole-history Plackett-Luce fit, kept in the dataset beside the
shards it was computed from, so that a Space restored on an empty disk shows it at once.

The fit with its 200 bootstrap resamples is the one costly part of the standings: on a
million matches it took 187 s of a restore's 335 s (docs/restart.md). Its result is a small
table (a rating, an interval, a rank range per player), a pure function of the shards it
names. So each writer publishes its latest fit of matches all in the dataset as
`fits/fit-<writer>.json` (its own file, replaced only by itself, like its heartbeat), and a
restored Space takes a published fit, with as many bootstrap resamples as its own, instead
of fitting again (`StandingsRefresher`):

- one of exactly the PvP results it rates (the same match ids: a compaction renames shards,
  never matches), shown as the fit of all its shards;
- else the one of the most shards that it holds every one of, shown as the fit of those
  shards (as between two fits of its own), until its own fit, at most `mle_every_s` later.

Its next fit of its own replaces it; until then the PvP tab says whose fit it shows.

The JSON keeps every float exactly (`json` writes the shortest repr that reads back the
same value), so a restored Space's tables equal the writer's.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from arena.files import write_atomically
from arena.ratings import MLERating, RatedTable
from leaderboard.standings.record import Source

log = logging.getLogger(__name__)

#: The dataset's folder of published fits (pulled by `history.restore`, pushed by `history.mirror`).
FOLDER = "fits"

#: Bumped when the file's layout changes: a file of another version is not read.
VERSION = 1


@dataclass(frozen=True)
class PublishedFit:
    """The Plackett-Luce fit with its bootstrap of the PvP results in `shards`."""

    shards: tuple[str, ...]
    """The shards it was fitted on (names inside `data/`, sorted)."""
    bootstrap: int
    """Its bootstrap resamples: only a Space with as many takes it."""
    mle: Mapping[str, MLERating]
    writer: str
    """The writer that computed it."""
    results: int
    """How many PvP results it rated."""
    digest: str
    """`results_digest` of those results."""


def results_digest(rated: RatedTable) -> str:
    """The identity of a set of rated results: the sha256 of their sorted match ids."""
    return hashlib.sha256("\n".join(sorted(map(str, rated.ids))).encode()).hexdigest()


def fit_path(root: Path, writer: str) -> Path:
    """Where `writer` keeps its fit in the history folder `root` (and the dataset)."""
    return Path(root) / FOLDER / f"fit-{writer}.json"


def write_fit(path: Path, fit: PublishedFit) -> None:
    """Replace the fit at `path` by `fit`, whole or not at all."""
    document = {"version": VERSION, "writer": fit.writer, "bootstrap": fit.bootstrap, "shards": list(fit.shards),
                "results": fit.results, "digest": fit.digest, "mle": {player: asdict(rating) for player, rating in sorted(fit.mle.items())}}
    write_atomically(path, json.dumps(document, separators=(",", ":")))


def read_fits(root: Path) -> list[PublishedFit]:
    """Every readable fit in the history folder `root`. One that cannot be read (damaged, or
    of another layout version) is skipped with a warning: it is only a shortcut, and the
    standings are then fitted here."""
    fits = []
    for path in sorted((Path(root) / FOLDER).glob("fit-*.json")):
        try:
            document = json.loads(path.read_text())
            if document.get("version") != VERSION:
                log.warning("published fit %s is of layout version %s, not %s: not used", path.name,
                            document.get("version"), VERSION)
                continue
            fits.append(PublishedFit(shards=tuple(document["shards"]), bootstrap=int(document["bootstrap"]),
                                     mle={p: MLERating(**r) for p, r in document["mle"].items()},
                                     writer=str(document["writer"]), results=int(document["results"]),
                                     digest=str(document["digest"])))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("published fit %s cannot be read (%s): not used", path.name, exc)
    return fits


def choose(fits: Iterable[PublishedFit], *, rated: RatedTable, source: Source,
           bootstrap: int) -> tuple[PublishedFit, Source] | None:
    """The published fit to show for the PvP results `rated` of the shards `source`, and the
    shards it is then of (see the module docstring); None when none may be shown."""
    fits = [f for f in fits if f.bootstrap == bootstrap]
    if not fits:
        return None
    digest = results_digest(rated)
    for fit in fits:
        if fit.results == len(rated) and fit.digest == digest:
            return fit, source
    held = set(source.shards)
    usable = [f for f in fits if f.shards and set(f.shards) <= held]
    best = max(usable, key=lambda f: (len(f.shards), f.writer), default=None)
    return None if best is None else (best, Source(best.shards, published=best.shards))
