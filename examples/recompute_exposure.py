"""Recompute the NMMO Arena's exposure ledger from the published match history, alone.

The ledger says what each revision's figures rest on: how many matches it played in each
track, against whom (each opponent's share of the seats it faced), on which maps (published
or held-out), and from which seats (slot, spawn edge, point along the edge). Unequal
sampling moves ranks (Singh et al., "The Leaderboard Illusion", 2025): the ledger publishes
it. The Space shows it on each policy's page and serves it at its `/exposure` API; this
script is that computation as code, standalone (pandas, the standard library and its
sibling `recompute_ratings.py` for reading the shards; never the Arena's code), so it checks the Space from outside. Its definitions are the docstring of
`leaderboard/exposure.py`, and docs/history.md ("The exposure ledger").

Get the data as for `examples/recompute_ratings.py` (a snapshot of the Hub dataset, or the
history folder of a local Space):

    huggingface-cli download --repo-type dataset nmmo-arena/match-history \\
        --include "data/*.parquet" --local-dir match-history

Run it:

    python examples/recompute_exposure.py --data match-history                      # every revision's totals
    python examples/recompute_exposure.py --data match-history --revision alice/team@3f2a9c...   # one ledger, as /exposure
    python examples/recompute_exposure.py --data match-history --json ledger.json  # every ledger, as JSON

`--revision` takes a revision (`repo@sha`, or a built-in's name such as `builtin:random`) or
a policy (`repo`: each of its revisions). `--through SHARD` stops at a shard, as for the
ratings (the PvP tab names the last shard the Space read).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

# the shards are read as the ratings' script reads them (the same file, beside this one):
# sorted by name, version 1 shards given their missing columns, each (match, slot) once
from recompute_ratings import read_rows

# -- the conventions (leaderboard/exposure.py) -------------------------------------------

#: Names of the map's edges, by spawn_side (0 north, 1 east, 2 south, 3 west); -1 is a seat
#: recorded without its spawn (schema version 1).
SIDES = ("north", "east", "south", "west")
UNKNOWN = "unknown"
#: Spawn points along an edge, and slots (nmmo's team ids) in a 16-team match.
POINTS, SLOTS = 4, 16
#: Tracks in the ledger's order; any other follows by name.
TRACK_ORDER = ("pvp", "pve", "local")



@dataclass
class Args:
    """What to read and what to print (the command line)."""

    data: Path
    """a folder holding the dataset's shards (in data/, or directly)"""
    through: str | None = None
    """stop at this shard (its file name)"""
    revision: str | None = None
    """print this revision's ledger (or each revision's of this policy) as JSON"""
    json: Path | None = None
    """also write every revision's ledger and totals as JSON here"""


# -- 1. read the shards (as examples/recompute_ratings.py reads them) -------------------


def track_order(track: str) -> tuple[int, str]:
    return (TRACK_ORDER.index(track) if track in TRACK_ORDER else len(TRACK_ORDER), track)


# -- 2. one revision's ledger ---------------------------------------------------------------


def spawn_counts(values: pd.Series, names: list[str]) -> dict[str, int]:
    """Seats per spawn value 0..len(names)-1 under its name, then the unknown ones."""
    counts = values.astype(int).value_counts()
    named = {name: int(counts.get(i, 0)) for i, name in enumerate(names)}
    named[UNKNOWN] = int(len(values) - sum(named.values()))
    return named


def track_ledger(track: str, mine: pd.DataFrame, others: pd.DataFrame) -> dict:
    """A revision's exposure in one track: its own seats `mine`, the other seats of those matches `others`."""
    per_match = mine.drop_duplicates("match_id")
    # opponents: seats and matches per other player; the share is of all opponent seats
    faced = others.groupby("player")["match_id"].agg(["nunique", "size"]).reset_index()
    total = int(faced["size"].sum())
    opponents = [{"opponent": r.player, "matches": int(r.nunique), "seats": int(r.size), "share": int(r.size) / total}
                 for r in faced.itertuples()]
    opponents.sort(key=lambda o: (-o["seats"], -o["matches"], o["opponent"]))
    # maps: matches per (held out, map id), most played first
    played = per_match.groupby([per_match["held_out"].astype(bool), per_match["map_id"].astype(int)]).size()
    maps = [{"map_id": int(m), "held_out": bool(h), "matches": int(n)} for (h, m), n in played.items()]
    maps.sort(key=lambda m: (-m["matches"], m["held_out"], m["map_id"]))
    slots = mine["slot"].astype(int).value_counts()
    # teammates: matches where another revision of the same owner (the repo's namespace) sat
    owner = None if not len(mine) or str(mine["policy_id"].iloc[0]).startswith("builtin:") else \
        str(mine["policy_id"].iloc[0]).partition("/")[0]
    same = others["policy_id"].astype(str).str.partition("/")[0] == owner
    return {
        "track": track, "matches": len(per_match), "seats": len(mine),
        "stages": ({str(int(s)): int(n) for s, n in sorted(per_match["stage"].value_counts().items())}
                   if track == "pve" else {}),
        "distinct_opponents": len(opponents),
        "teammate_matches": int(others.loc[same, "match_id"].nunique()) if owner is not None else 0,
        "opponents": opponents,
        "published_maps": sum(1 for m in maps if not m["held_out"]),
        "held_out_maps": sum(1 for m in maps if m["held_out"]),
        "held_out_matches": sum(m["matches"] for m in maps if m["held_out"]),
        "maps": maps,
        "sides": spawn_counts(mine["spawn_side"], list(SIDES)),
        "points": spawn_counts(mine["spawn_index"], [str(i) for i in range(POINTS)]),
        "slots": {str(s): int(slots.get(s, 0)) for s in range(SLOTS)},
    }


def ledger(rows: pd.DataFrame, player: str) -> dict:
    """One revision's ledger, per track it played (as the `/exposure` API answers it)."""
    mine = rows[rows["player"] == player]
    others = rows[rows["match_id"].isin(mine["match_id"]) & (rows["player"] != player)]
    tracks = [track_ledger(t, mine[mine["track"] == t], others[others["track"] == t])
              for t in sorted(mine["track"].unique(), key=track_order)]
    policy_id, revision = (str(mine["policy_id"].iloc[0]), str(mine["revision"].iloc[0])) if len(mine) else (player, "")
    return {"player": player, "policy_id": policy_id, "revision": revision,
            "matches": sum(t["matches"] for t in tracks), "seats": sum(t["seats"] for t in tracks), "tracks": tracks}


# -- 3. every revision's totals ---------------------------------------------------------


def totals(rows: pd.DataFrame) -> pd.DataFrame:
    """Per revision and track: matches, seats, distinct published and held-out maps, matches on held-out maps."""
    keys = ["player", "track"]
    per_match = rows.drop_duplicates(["player", "match_id"])
    maps = rows.drop_duplicates(["player", "track", "held_out", "map_id"])
    table = pd.DataFrame({
        "matches": per_match.groupby(keys).size(),
        "seats": rows.groupby(keys).size(),
        "published_maps": maps[~maps["held_out"].astype(bool)].groupby(keys).size(),
        "held_out_maps": maps[maps["held_out"].astype(bool)].groupby(keys).size(),
        "held_out_matches": per_match[per_match["held_out"].astype(bool)].groupby(keys).size(),
    }).fillna(0).astype(int).reset_index()
    table["order"] = [track_order(t) for t in table["track"]]
    return table.sort_values(["player", "order"]).drop(columns="order").reset_index(drop=True)


def revisions_named(rows: pd.DataFrame, query: str) -> list[str]:
    """A revision itself, or every revision of a policy (repo id)."""
    players = set(rows["player"])
    if query in players:
        return [query]
    return sorted(p for p in players if not p.startswith("builtin:") and p.partition("@")[0] == query)


def parse(argv: list[str] | None = None) -> Args:
    parser = argparse.ArgumentParser(description="Recompute the NMMO Arena's exposure ledger from its match history.")
    parser.add_argument("--data", type=Path, required=True, help="a folder holding the dataset's shards (in data/, or directly)")
    parser.add_argument("--through", help="stop at this shard (its file name)")
    parser.add_argument("--revision", help="print this revision's ledger (repo@sha or builtin:NAME), or each of a policy's (repo)")
    parser.add_argument("--json", type=Path, help="also write every revision's ledger and the totals as JSON here")
    return Args(**vars(parser.parse_args(argv)))


if __name__ == "__main__":
    args = parse()
    rows, shards = read_rows(args.data, args.through)
    print(f"{rows['match_id'].nunique():,} matches in {len(shards)} shard{'s' if len(shards) > 1 else ''} through {shards[-1]}")
    table = totals(rows)
    if args.revision:
        named = revisions_named(rows, args.revision)
        if not named:
            sys.exit(f"--revision {args.revision}: no revision or policy of that name played a recorded match")
        print(json.dumps([ledger(rows, p) for p in named], indent=1))
    else:
        print(table.to_string(index=False))
    if args.json:
        ledgers = [ledger(rows, p) for p in sorted(set(rows["player"]))]
        args.json.write_text(json.dumps({"revisions": ledgers, "totals": table.to_dict(orient="records")}, indent=1))
