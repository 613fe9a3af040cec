"""The exposure ledger: what each revision's figures rest on, counted from the history.

A rating or a mean is only as fair as the sampling behind it: a revision that played more
matches, met the same few opponents, or drew friendly maps and spawn points can stand
higher for it (Singh et al., "The Leaderboard Illusion", 2025, showed that unequal
sampling moves ranks). The ledger publishes that sampling, per revision and per track
(`pvp`, `pve`; `local` if a history holds the evaluation tool's matches), from the team
rows alone (one row per team per match, as the dataset stores them):

- **matches**: distinct matches the revision played in the track; in PvE also per stage.
- **seats**: the team places it filled. A seat is one team of one match (one row of the
  history): its `slot` (0-15, nmmo's team id) and where that team spawned, the map's edge
  (`spawn_side` 0 north, 1 east, 2 south, 3 west) and the point along it (`spawn_index`
  0-3, nmmo's clockwise order); a record of schema version 1 has no spawn (-1: "unknown").
  A submission fills one seat a match, so its seats equal its matches; a built-in may fill
  several (seven `random` teams in a PvE stage-1 match, the anchors filling a PvP pool).
- **opponents**: every other player seated in those matches (built-ins by name,
  submissions as `repo@revision`), with the matches they met in, the seats they held there
  and their share of all the opponent seats the revision faced in the track (the shares sum
  to 1). In PvE they are the stage's built-in teams; in PvP the pool's other revisions and
  the anchors that filled it. A revision is never its own opponent.
- **maps**: matches per map, published (ids 1-256, anyone can generate them) and held-out
  (ids from 257, generated from the Space's secret); a map is (held out, id).

`ledger` is pure (a revision's rows and its opponents' rows in, an `Exposure` out);
`revision_exposure` applies it to each chunk of the standings' `TeamRows` on its own
dictionary-encoded columns and `combine`s the chunks' ledgers (every count adds up), so no
string of the history becomes a Python object however long it is. `exposure_totals` counts every
revision at once (matches, seats, maps; not opponents, which would pair every seat of every
match) in whole-column groupbys. `examples/recompute_exposure.py` recomputes the same
ledger from the dataset's shards with pandas alone (docs/history.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from arena.records import Format, Record
from arena.revision import Revision, is_builtin
from arena.rules import MATCH
from history.index import TeamRows
from history.index.rows import codes, same_matches

#: Names of the map's edges, by `spawn_side`.
SIDES: tuple[str, ...] = ("north", "east", "south", "west")
#: Spawn points along an edge, by `spawn_index` (nmmo's clockwise order).
POINTS: tuple[str, ...] = ("0", "1", "2", "3")
#: A seat recorded without a spawn (schema version 1).
UNKNOWN = "unknown"
#: Tracks in the ledger's order; any other track follows, by name.
TRACK_ORDER: tuple[str, ...] = ("pvp", "pve", "local")
#: How the page names them.
TRACK_NAMES: Mapping[str, str] = {"pvp": "PvP", "pve": "PvE", "local": "local"}


@dataclass(frozen=True)
class OpponentExposure(Record):
    """One opponent of a revision in one track."""

    opponent: str
    """The player: a built-in by name, a submission as `repo@revision`."""
    matches: int
    """Matches of the track in which both were seated."""
    seats: int
    """The opponent's seats in those matches (more than `matches` for a built-in filling several)."""
    share: float
    """`seats` over all the opponent seats the revision faced in the track."""


@dataclass(frozen=True)
class MapExposure(Record):
    """How often a revision played one map in one track."""

    map_id: int
    held_out: bool
    """From the held-out pool (the Space's secret), not the published one."""
    matches: int


@dataclass(frozen=True)
class TrackExposure(Record):
    """A revision's exposure in one track (its dict: JSON-able, keys strings, counts plain ints)."""

    track: str
    matches: int
    seats: int
    stages: Mapping[int, int] = field(default_factory=dict)
    """PvE: matches per stage, by stage; empty for other tracks."""
    opponents: tuple[OpponentExposure, ...] = ()
    """Most seats first, then most matches, then by name."""
    maps: tuple[MapExposure, ...] = ()
    """Most matches first, then published before held-out, then by id."""
    sides: Mapping[str, int] = field(default_factory=dict)
    """Seats per spawn edge (`SIDES`, then `UNKNOWN`), each key present."""
    points: Mapping[str, int] = field(default_factory=dict)
    """Seats per spawn point along the edge (`POINTS`, then `UNKNOWN`), each key present."""
    slots: Mapping[int, int] = field(default_factory=dict)
    """Seats per slot, 0 to 15, each slot present."""
    teammate_matches: int = 0
    """Matches in which another revision of the same owner also sat (PvP: never, docs/rules.md,
    "Fair play"); built-ins have no owner."""

    FORMAT = Format(layout=("track", "matches", "seats", "stages", "distinct_opponents", "teammate_matches", "opponents",
                            "published_maps", "held_out_maps", "held_out_matches", "maps", "sides", "points", "slots"))

    @property
    def distinct_opponents(self) -> int:
        return len(self.opponents)

    @property
    def published_maps(self) -> int:
        return sum(1 for m in self.maps if not m.held_out)

    @property
    def held_out_maps(self) -> int:
        return sum(1 for m in self.maps if m.held_out)

    @property
    def held_out_matches(self) -> int:
        return sum(m.matches for m in self.maps if m.held_out)


@dataclass(frozen=True)
class Exposure(Record):
    """One revision's ledger: its exposure in each track it played."""

    player: str
    """The revision as the tables name it: a built-in by name, a submission as `repo@revision`."""
    policy_id: str
    revision: str
    tracks: tuple[TrackExposure, ...] = ()
    """In `TRACK_ORDER`; only tracks it played."""

    FORMAT = Format(layout=("player", "policy_id", "revision", "matches", "seats", "tracks"))

    @property
    def matches(self) -> int:
        return sum(t.matches for t in self.tracks)

    @property
    def seats(self) -> int:
        return sum(t.seats for t in self.tracks)

    def track(self, name: str) -> TrackExposure | None:
        return next((t for t in self.tracks if t.track == name), None)


@dataclass(frozen=True)
class ExposureTotals(Record):
    """A revision's counts in one track, as `exposure_totals` gives them for every revision."""

    player: str
    track: str
    matches: int
    seats: int
    published_maps: int
    held_out_maps: int
    held_out_matches: int


def _track_key(track: str) -> tuple[int, str]:
    return (TRACK_ORDER.index(track) if track in TRACK_ORDER else len(TRACK_ORDER), track)


def _counts(column: pd.Series, keys: tuple[Any, ...]) -> dict[Any, int]:
    """How many rows hold each of `keys` (0 for those absent)."""
    found = column.value_counts()
    return {k: int(found.get(k, 0)) for k in keys}


def _spawn_counts(column: pd.Series, names: tuple[str, ...]) -> dict[str, int]:
    """Seats per spawn value 0..len(names)-1 under its name, then the unknown ones (-1 or missing)."""
    values = pd.to_numeric(column, errors="coerce").fillna(-1).astype(int)
    counts = _counts(values, tuple(range(len(names))))
    named = {name: counts[i] for i, name in enumerate(names)}
    named[UNKNOWN] = int(len(values) - sum(counts.values()))
    return named


def _track(track: str, mine: pd.DataFrame, others: pd.DataFrame) -> TrackExposure:
    """One track of the ledger: the revision's rows in it, and the other players' rows of those matches."""
    per_match = mine.drop_duplicates("match_id")
    stages = ({int(k): int(v) for k, v in sorted(per_match["stage"].value_counts().items())} if track == "pve" else {})
    # -- opponents: seats and matches per player, shares of all opponent seats
    faced = (others.groupby("player", observed=True)["match_id"].agg(["nunique", "size"])
             if len(others) else pd.DataFrame(columns=["nunique", "size"]))
    total = int(faced["size"].sum()) if len(faced) else 0
    opponents = sorted(
        (OpponentExposure(str(p), int(met), int(seats), int(seats) / total)  # one per opponent, not per row
         for p, met, seats in zip(faced.index, faced["nunique"].to_numpy(), faced["size"].to_numpy())),
        key=lambda o: (-o.seats, -o.matches, o.opponent),
    )
    # -- maps: matches per (held out, id)
    played = per_match.groupby([per_match["held_out"].astype(bool), per_match["map_id"].astype(int)]).size()
    maps = sorted((MapExposure(int(map_id), bool(held), int(n)) for (held, map_id), n in played.items()),
                  key=lambda m: (-m.matches, m.held_out, m.map_id))
    # -- teammates: another revision of the same owner in the match
    first = str(mine["policy_id"].iloc[0]) if len(mine) else "builtin:"
    owner = None if first.startswith("builtin:") else first.partition("/")[0]
    # the owner's policies among the distinct ids, then their rows (not a string op per row:
    # a policy seated in 6,000 matches has 90,000 opponent rows)
    kin = ([p for p in pd.unique(others["policy_id"].astype(object)) if str(p).partition("/")[0] == owner]
           if owner is not None and len(others) else [])
    teammates = int(others.loc[others["policy_id"].isin(kin).to_numpy(), "match_id"].nunique()) if kin else 0
    # -- seats: edge, point along it, slot
    return TrackExposure(
        track=track, matches=len(per_match), seats=len(mine), stages=stages, opponents=tuple(opponents),
        maps=tuple(maps), sides=_spawn_counts(mine["spawn_side"], SIDES),
        points=_spawn_counts(mine["spawn_index"], POINTS),
        slots=_counts(mine["slot"].astype(int), tuple(range(MATCH.num_teams))), teammate_matches=teammates,
    )


#: The columns a ledger reads.
COLUMNS = ("match_id", "track", "stage", "map_id", "held_out", "slot", "spawn_side", "spawn_index", "policy_id",
           "revision", "player")


def ledger(mine: pd.DataFrame, others: pd.DataFrame, *, player: str) -> Exposure:
    """A revision's exposure ledger from its own rows and the other teams' rows of its matches.

    Args:
        mine (`pd.DataFrame`): the revision's team rows (the history's columns in `COLUMNS`;
            strings plain or categorical); rows of other players are ignored.
        others (`pd.DataFrame`): rows of other teams, the same columns; those of matches
            the revision did not play, and its own, are ignored.
        player (`str`): the revision, as the tables name it (`repo@revision`, or a built-in's name).

    Returns:
        `Exposure`: one `TrackExposure` per track it played (none if `mine` is empty).

    Example:
        Two PvP matches of `alice/team@3f2a9c`, the second on a held-out map:

        >>> players = ["alice/team@3f2a9c", "builtin:forage", "alice/team@3f2a9c", "bob/b@1", "builtin:forage"]
        >>> rows = pd.DataFrame({"match_id": ["m1", "m1", "m2", "m2", "m2"], "track": "pvp", "stage": 0,
        ...                      "map_id": [3, 3, 300, 300, 300], "held_out": [False, False, True, True, True],
        ...                      "slot": [0, 1, 2, 0, 1], "spawn_side": [0, 1, 2, 0, 3], "spawn_index": 0, "player": players,
        ...                      "policy_id": [Revision.parse(p).policy_id for p in players],
        ...                      "revision": [Revision.parse(p).sha for p in players]})
        >>> pvp = ledger(rows, rows, player="alice/team@3f2a9c").track("pvp")
        >>> pvp.matches, pvp.held_out_matches, [(o.opponent, o.matches, round(o.share, 2)) for o in pvp.opponents]
        (2, 1, [('builtin:forage', 2, 0.67), ('bob/b@1', 1, 0.33)])
    """
    policy_id, revision = (parsed := Revision.parse(player)).policy_id, parsed.sha
    if not len(mine):
        return Exposure(player=player, policy_id=policy_id, revision=revision)
    mine = mine[(mine["player"] == player).to_numpy()]
    if not len(mine):
        return Exposure(player=player, policy_id=policy_id, revision=revision)
    if len(others):
        others = others[(others["match_id"].isin(mine["match_id"]) & (others["player"] != player)
                         & others["player"].notna()).to_numpy()]
    tracks = []
    for track in sorted({str(t) for t in mine["track"].unique()}, key=_track_key):
        own = mine[(mine["track"] == track).to_numpy()]
        rival = others[others["match_id"].isin(own["match_id"]).to_numpy()] if len(others) else others
        tracks.append(_track(track, own, rival))
    return Exposure(player=player, policy_id=str(mine["policy_id"].iloc[0]), revision=str(mine["revision"].iloc[0]),
                    tracks=tuple(tracks))


def _summed(pairs: list[Mapping[Any, int]]) -> dict[Any, int]:
    """Counts added key by key, the first mapping's keys first."""
    total: dict[Any, int] = {}
    for counts in pairs:
        for k, n in counts.items():
            total[k] = total.get(k, 0) + n
    return total


def combine(parts: list[Exposure]) -> Exposure:
    """One revision's ledgers of disjoint sets of matches (each match in one part) as one:
    every count added, the opponents' shares taken again of the summed seats."""
    first = next((p for p in parts if p.tracks), parts[0])
    tracks = []
    for name in sorted({t.track for p in parts for t in p.tracks}, key=_track_key):
        same = [t for p in parts for t in p.tracks if t.track == name]
        met = _summed([{o.opponent: o.matches for o in t.opponents} for t in same])
        faced = _summed([{o.opponent: o.seats for o in t.opponents} for t in same])
        total = sum(faced.values())
        opponents = sorted((OpponentExposure(o, met[o], faced[o], faced[o] / total) for o in faced),
                           key=lambda o: (-o.seats, -o.matches, o.opponent))
        played = _summed([{(m.held_out, m.map_id): m.matches for m in t.maps} for t in same])
        maps = sorted((MapExposure(map_id, held, n) for (held, map_id), n in played.items()),
                      key=lambda m: (-m.matches, m.held_out, m.map_id))
        tracks.append(TrackExposure(
            track=name, matches=sum(t.matches for t in same), seats=sum(t.seats for t in same),
            stages=dict(sorted(_summed([t.stages for t in same]).items())), opponents=tuple(opponents), maps=tuple(maps),
            sides=_summed([t.sides for t in same]), points=_summed([t.points for t in same]),
            slots=_summed([t.slots for t in same]), teammate_matches=sum(t.teammate_matches for t in same),
        ))
    return Exposure(player=first.player, policy_id=first.policy_id, revision=first.revision, tracks=tuple(tracks))


def revision_exposure(teams: TeamRows | pd.DataFrame, player: str) -> Exposure:
    """`ledger` of one revision in `teams` (the standings' rows: `Standings.teams`), chunk
    by chunk on the chunks' own (dictionary-encoded) columns, then `combine`d: a match's
    rows are in one chunk (the standings append whole matches), and no chunk's strings are
    ever made into Python objects, so a built-in seated in millions of matches costs a few
    whole-column operations a chunk."""
    parts = []
    for chunk in TeamRows.of(teams):
        if not len(chunk) or "player" not in chunk:
            continue
        own = (chunk["player"] == player).to_numpy()
        if not own.any():
            continue
        played = same_matches(chunk, own)
        rows = chunk.loc[played, list(COLUMNS)]  # the columns of these matches' rows only: not a copy of the chunk's
        mine = own[played]
        parts.append(ledger(rows[mine], rows[~mine], player=player))
    return combine(parts) if parts else ledger(pd.DataFrame(), pd.DataFrame(), player=player)


def exposure_totals(teams: TeamRows | pd.DataFrame) -> tuple[ExposureTotals, ...]:
    """Every revision's matches, seats and maps per track (no opponents), by player then
    track. Counted chunk by chunk with whole-column groupbys on the columns' integer codes
    (one string made per distinct player and track); a match's rows are in one chunk (the
    standings append whole matches)."""
    counted: list[pd.DataFrame] = []
    maps: list[pd.DataFrame] = []
    for chunk in TeamRows.of(teams):
        if not len(chunk) or "player" not in chunk:
            continue
        player, players = codes(chunk["player"])
        track, tracks = codes(chunk["track"])
        match, _ = codes(chunk["match_id"])
        rows = pd.DataFrame({"player": player, "track": track, "match": match,
                             "held_out": chunk["held_out"].fillna(False).to_numpy(dtype=bool),
                             "map_id": chunk["map_id"].to_numpy(dtype="int64")})
        rows = rows[(player >= 0) & (track >= 0)]
        keys = ["player", "track"]
        once = rows.drop_duplicates(["player", "match"])  # a player's seats of one match, once
        part = pd.DataFrame({
            "seats": rows.groupby(keys).size(), "matches": once.groupby(keys).size(),
            "held_out_matches": once[once["held_out"].to_numpy()].groupby(keys).size(),
        }).fillna(0).astype(int).reset_index()
        distinct = rows.drop_duplicates(["player", "track", "held_out", "map_id"])
        players, tracks = np.asarray(players, dtype=object), np.asarray(tracks, dtype=object)
        for part_, into in ((part, counted), (distinct, maps)):
            into.append(part_.assign(player=players[part_["player"].to_numpy()], track=tracks[part_["track"].to_numpy()]))
    if not counted:
        return ()
    counts = pd.concat(counted).groupby(["player", "track"])[["seats", "matches", "held_out_matches"]].sum()
    per_map = pd.concat(maps)[["player", "track", "held_out", "map_id"]].drop_duplicates().groupby(["player", "track", "held_out"]).size()  # a map in two chunks: once
    return tuple(
        ExposureTotals(player=str(p), track=str(t), matches=int(row["matches"]), seats=int(row["seats"]),
                       published_maps=int(per_map.get((p, t, False), 0)), held_out_maps=int(per_map.get((p, t, True), 0)),
                       held_out_matches=int(row["held_out_matches"]))
        for (p, t), row in sorted(counts.iterrows(), key=lambda kv: (kv[0][0], _track_key(kv[0][1])))
    )


def revisions_named(players: set[str], query: str) -> list[str]:
    """The revisions a query names: itself if it is one (`repo@revision`, or a built-in's
    name), else every revision of the policy `query` (a repo id), sorted."""
    query = query.strip()
    if query in players:
        return [query]
    return sorted(p for p in players if not is_builtin(p) and Revision.parse(p).policy_id == query)


def exposure_json(teams: TeamRows | pd.DataFrame, query: str = "", *,
                  totals: tuple[ExposureTotals, ...] | None = None) -> dict[str, Any]:
    """The `/exposure` answer: `{"query", "revisions", "totals", "note"}`.

    With no query: no ledgers, and the totals of every revision (`exposure_totals`). With a
    revision (`repo@revision` or a built-in's name): its ledger and its totals; with a
    policy (`repo`): those of each of its revisions. A query naming nothing that played
    answers empty lists and says so in `note`. `totals`: `exposure_totals(teams)` if
    already counted (the page keeps them until the rows change).
    """
    rows = TeamRows.of(teams)
    totals = exposure_totals(rows) if totals is None else totals
    if not query.strip():
        return {"query": "", "revisions": [], "totals": [t.to_dict() for t in totals],
                "note": "" if totals else "No match recorded yet."}
    named = revisions_named(rows.players(), query)
    return {
        "query": query.strip(),
        "revisions": [revision_exposure(rows, p).to_dict() for p in named],
        "totals": [t.to_dict() for t in totals if t.player in named],
        "note": "" if named else f"No revision or policy named {query.strip()!r} has played a recorded match.",
    }


# -- the policy page ------------------------------------------------------------------------

#: The page's note on what the ledger is for.
WHY = ("Ratings and means rest on these counts: a revision that played few matches, met mostly the same opponents, "
       "or drew few maps or the same spawn edge is measured less surely than the table's order suggests "
       "(unequal sampling moves ranks: *The Leaderboard Illusion*, 2025). Every revision's ledger: the `/exposure` API.")


#: The section's line before any match is recorded (no revision to show).
EMPTY = ("No match recorded yet. Once a revision has played, its exposure ledger shows here: matches per track and PvE "
         "stage, distinct opponents and each one's share of the seats it faced, published and held-out maps, and the "
         "seats it was dealt (spawn edge, slot). Every revision's: the `/exposure` API.")


def exposure_markdown(exposure: Exposure) -> str:
    """The line over the ledger's tables: how much and on what the revision was measured."""
    if not exposure.tracks:
        return (f"No recorded match for **{exposure.player}** yet: its exposure (matches, opponents, maps, seats) "
                "appears here after its first match.")
    parts = []
    for t in exposure.tracks:
        stages = (" (" + ", ".join(f"stage {s}: {n}" for s, n in t.stages.items()) + ")") if t.stages else ""
        maps = ", ".join(x for x in (f"{t.published_maps} published" if t.published_maps else "",
                                     f"{t.held_out_maps} held-out" if t.held_out_maps else "") if x)
        parts.append(f"**{t.matches} {TRACK_NAMES.get(t.track, t.track)}** match{'es' if t.matches != 1 else ''}{stages} "
                     f"against {t.distinct_opponents} distinct opponent{'s' if t.distinct_opponents != 1 else ''} "
                     f"on {maps} map{'s' if t.published_maps + t.held_out_maps != 1 else ''}")
    return f"**{exposure.player}** played " + "; ".join(parts) + ".\n\n" + WHY


def exposure_frames(exposure: Exposure) -> dict[str, pd.DataFrame]:
    """The page's three tables: `tracks` (counts per track), `seats` (seats per spawn edge
    and slot) and `opponents` (every opponent with its share)."""
    tracks = pd.DataFrame([{
        "Track": TRACK_NAMES.get(t.track, t.track), "Matches": t.matches,
        "PvE stages": ", ".join(f"{s}: {n}" for s, n in t.stages.items()) or "-",
        "Distinct opponents": t.distinct_opponents, "Published maps": t.published_maps, "Held-out maps": t.held_out_maps,
        "Matches on held-out maps": t.held_out_matches,
        "Most matches on one map": max((m.matches for m in t.maps), default=0),
    } for t in exposure.tracks])
    seats = pd.DataFrame([{
        "Track": TRACK_NAMES.get(t.track, t.track), "Seats": t.seats,
        **{side.capitalize(): t.sides.get(side, 0) for side in SIDES}, "Spawn not recorded": t.sides.get(UNKNOWN, 0),
        "Slots used": f"{sum(1 for n in t.slots.values() if n)} of {len(t.slots)}",
        "Most seats in one slot": max(t.slots.values(), default=0),
    } for t in exposure.tracks])
    opponents = pd.DataFrame([{
        "Track": TRACK_NAMES.get(t.track, t.track), "Opponent": o.opponent, "Matches together": o.matches,
        "Seats faced": o.seats, "Share of opponent seats (%)": round(100 * o.share, 1),
    } for t in exposure.tracks for o in t.opponents])
    return {"tracks": tracks, "seats": seats, "opponents": opponents}
