"""Where everything lives in a history folder, and the form of its tables.

The layout itself is drawn in the package's docstring (`history.store`); this module holds
what every reader and writer of the folder agrees on: the names files may have, the day
folders, the Arrow schema of the team table, and how a table read from any shard is made
current (schema upgrade) and unique (one row per match and slot).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from arena.schema import TEAM_COLUMNS, V1_DEFAULTS

#: What a match id may look like where it names a file (runner ids are 20 hex digits):
#: a reader given any other string finds nothing, so no request reaches outside the folders.
MATCH_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")

#: What a shard's name may look like where a caller names it: its path inside `data/`,
#: a plain file name (the flat layout) or in a day folder (`2026/12/01/teams-....parquet`),
#: never anything else. Names sort by day, then in the order the day's shards were written.
SHARD_NAME = re.compile(r"(\d{4}/\d{2}/\d{2}/)?[A-Za-z0-9_-][A-Za-z0-9_.-]*\.parquet")

#: The tag that ended the names of files made before writers (`history.writers`).
LEGACY_TAG = re.compile(r"[0-9a-f]{8}")

#: A day, as the folders name it and as `started_at` begins.
_DAY = re.compile(r"(\d{4})-(\d{2})-(\d{2})")

#: The Arrow form of the history table (`arena.schema.TEAM_COLUMNS`).
TEAM_SCHEMA = pa.schema([pa.field(name, getattr(pa, kind)()) for name, kind in TEAM_COLUMNS])

#: Bundle indexes a reader keeps in memory (about 32 KB each for 1,000 matches).
INDEX_CACHE = 512

#: At most this many flushed shards go into one compaction (migrating a long flat history
#: takes several, each one commit).
MAX_COMPACTED_SHARDS = 2000

#: The card's configs: `datasets.load_dataset(repo, NAME)` and the Hub's dataset viewer read
#: them. Every config reads parquet (`datasets` builds all of a repo's configs with the
#: builder its first one chooses): the team rows, filtered by track or columns, and the
#: parquet views of the JSON-lines logs (`history.views`).
TEAM_ROWS = "data/**/*.parquet"
EXPOSURE_COLUMNS = ("match_id", "started_at", "track", "stage", "map_id", "held_out", "slot", "policy_id",
                    "revision", "spawn_side", "spawn_index")
CONFIGS: tuple[dict[str, Any], ...] = (
    {"config_name": "default", "path": TEAM_ROWS},
    {"config_name": "pvp", "path": TEAM_ROWS, "filters": [["track", "==", "pvp"]]},
    {"config_name": "pve", "path": TEAM_ROWS, "filters": [["track", "==", "pve"]]},
    *({"config_name": f"pve-stage-{n}", "path": TEAM_ROWS, "filters": [["track", "==", "pve"], ["stage", "==", n]]}
      for n in (1, 2, 3)),
    {"config_name": "exposure", "path": TEAM_ROWS, "columns": list(EXPOSURE_COLUMNS)},
    {"config_name": "statuses", "path": "tables/statuses*.parquet"},
    {"config_name": "incidents", "path": "tables/incidents*.parquet"},
)


def _configs_yaml() -> str:
    lines = ["configs:"]
    for config in CONFIGS:
        lines += [f"- config_name: {config['config_name']}", "  data_files:", "  - split: train",
                  f"    path: {config['path']}"]
        if "filters" in config:
            lines.append("  filters:")
            lines += [f"  - [{column}, \"{op}\", {value}]" for column, op, value in config["filters"]]
        if "columns" in config:
            lines.append(f"  columns: [{', '.join(config['columns'])}]")
    return "\n".join(lines) + "\n"


DATASET_CARD = """---
license: mit
tags:
- nmmo-arena
- neural-mmo
- multi-agent
- benchmark
""" + _configs_yaml() + """---
# NMMO Arena match history

Every match played by the NMMO Arena: one row per team per match (16 rows a match), in
parquet shards under `data/`, one folder a day (`data/YYYY/MM/DD/`): shards as the Arena
flushed them, compacted every few hours into one shard of the matches started that day.
Ratings and tables on the Arena are computed from these rows alone, so anyone can
recompute them. Replays are under `replays/`, team logs (what each sandboxed team printed,
capped at 64 KiB a team and match) under `logs/`: one file a match while recent
(`replays/loose/`), then packed into bundles, one folder a day, each bundle starting with
an index (match id -> offset and length) so that one replay is read by range (see
`history/bundle.py` in the NMMO Arena). Submission statuses are under `submissions/`, the
Arena's audits (recorded matches played again, and whether they reproduced) under
`audits/`, matches the platform lost under `incidents/`.

Configs (`load_dataset("REPO_ID", NAME, split="train")`):

| Config | Rows |
|---|---|
| `default` | every team of every match, all tracks |
| `pvp`, `pve` | the teams of PvP, of PvE matches |
| `pve-stage-1`, `-2`, `-3` | the teams of one PvE stage's matches |
| `exposure` | every seat (match, track, map, slot, spawn, policy and revision): what the exposure ledger counts |
| `statuses` | every status event of every submitted revision (`tables/`, a parquet copy of `submissions/`) |
| `incidents` | every match attempt the platform lost, never rated (`tables/`, a copy of `incidents/`) |

```python
from datasets import load_dataset
pvp = load_dataset("REPO_ID", "pvp", split="train").to_pandas()
```

`eval.yaml` declares the dataset a benchmark (tasks `pvp`, `pve-stage-1` to `-3`); the
Arena writes each revision's results in its model repo's `.eval_results/nmmo-arena.yaml`.
Columns, and SQL that recomputes the tables: the NMMO Arena's docs/history.md (schema
version {version}).
"""

#: The benchmark declaration at the dataset's root (`eval.yaml`): each task a config, and
#: the figure the model repos' `.eval_results/` give for it (`modelcards.card`).
EVAL_YAML = """name: NMMO Arena
description: >-
  Neural MMO 2 team policies (8 agents a team) in free-for-all matches of 16 teams on
  128x128 maps for 1024 ticks. PvP: the conservative TrueSkill rating (mu - 3 sigma) among
  qualified submissions. PvE: Top1Ratio, the share of a stage's matches the team won
  (highest Achievement) against 15 built-in teams.
evaluation_framework: nmmo-arena
tasks:
- id: pvp
  name: PvP rating (TrueSkill mu - 3 sigma)
  config: pvp
  split: train
""" + "".join(f"""- id: pve-stage-{n}
  name: PvE stage {n} Top1Ratio
  config: pve-stage-{n}
  split: train
""" for n in (1, 2, 3))


def day_folder(started_at: str) -> str | None:
    """The folder (`YYYY/MM/DD`) of a day; None if `started_at` does not start with one.

    >>> day_folder("2026-12-01T23:59:59+00:00")
    '2026/12/01'
    """
    found = _DAY.match(started_at or "")
    return "/".join(found.groups()) if found else None


@dataclass(frozen=True)
class FileKind:
    """A kind of per-match file: where it lies loose, and how its bundles are named."""

    folder: str
    suffix: str
    prefix: str

    def loose(self, match_id: str, writer: str | None = None) -> str:
        """Where a match's file lies loose: named by the match, then by the writer that
        recorded it (`history.writers`; none: a folder with one writer)."""
        tag = f".{writer}" if writer else ""
        return f"{self.folder}/loose/{match_id[:2]}/{match_id}{tag}{self.suffix}"

    def flat(self, match_id: str) -> str:
        """Where the layout before bundles kept it."""
        return f"{self.folder}/{match_id}{self.suffix}"


REPLAYS = FileKind("replays", ".replay", "replays")
LOGS = FileKind("logs", ".json.gz", "logs")


def parquet_writer(table: pa.Table) -> Callable[[Any], None]:
    """Writes `table` as a shard (zstd parquet) to an open file: `write_atomically`'s `data`."""
    def write(f: Any) -> None:
        pq.write_table(table, f, compression="zstd")
    return write


def upgraded(table: pa.Table) -> pa.Table:
    """A shard written before schema version 2 read as version 2: the columns it lacks
    (read as nulls) take their defaults (`arena.schema.V1_DEFAULTS`)."""
    for name, default in V1_DEFAULTS.items():
        index = table.schema.get_field_index(name)
        column = table.column(index)
        if column.null_count:
            table = table.set_column(index, name, pc.fill_null(column, pa.scalar(default, column.type)))
    return table


def dedupe(table: pa.Table) -> pa.Table:
    """Keep the first row of each (match_id, slot), in the table's order (columnar: every
    reader of every shard passes here)."""
    if not table.num_rows:
        return table
    keys = pc.binary_join_element_wise(table.column("match_id"), pc.cast(table.column("slot"), pa.string()), ":")
    if pc.count_distinct(keys).as_py() == table.num_rows:
        return table
    first = pa.table({"key": keys, "row": pa.array(range(table.num_rows), pa.int64())}).group_by("key").aggregate([("row", "min")])
    rows = first.column("row_min")
    return table.take(pc.take(rows, pc.array_sort_indices(rows)))
