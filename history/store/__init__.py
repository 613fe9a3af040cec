"""The match history on disk: every played match exactly once, readable while it is written
and while it is compacted.

Layout of the history folder (a Hub dataset repo as it stands; `datasets.load_dataset` and
DuckDB read it directly). `D` is a day, `YYYY/MM/DD` (UTC), so that no folder grows past a
few hundred entries however many years the Arena runs:

    README.md                             dataset card, with the `configs:` block for `datasets`
    data/D/teams-<time>-<tag>.parquet     shards as flushed (day D: when): one row per team per match
    data/D/day-<time>-<tag>.parquet       compacted: every match started on day D, in one shard
    replays/loose/<id[:2]>/<id>.<w>.replay one compact replay per match (arena.replay), until compacted
    replays/D/replays-<time>-<tag>.bundle compacted: the replays of matches started on day D (history.bundle)
    logs/loose/<id[:2]>/<id>.<w>.json.gz  the sandboxed teams' stdout and stderr of a match (arena.logs)
    logs/D/logs-<time>-<tag>.bundle       compacted: the logs of matches started on day D
    submissions/statuses.jsonl            the submissions' status log (history.statuses)
    audits/audits.jsonl                   recorded matches rerun by the Space, and the verdicts (history.audits)
    wal/<match id>.json                   local only: matches recorded but not yet in a shard
    compaction/<time>-<tag>.json          local only: a compaction's journal, until it is complete
    quarantine/                           local only: damaged files moved aside

The layout before compaction existed (`data/teams-*.parquet`, `replays/<id>.replay`,
`logs/<id>.json.gz`, all flat) still reads, and the next compaction moves it into this one.

How a match is recorded exactly once, whatever happens (`HistoryStore`):

1. `record()` writes the match's replay and logs (each to a temporary name, fsync,
   rename), then the match to `wal/<match id>.json` the same way: from then on it is
   durable, and a recorded match always has the replay and logs it was recorded with. A match id already known is refused, so a match played
   twice (a restart replays an interrupted plan) is recorded once.
2. `flush()` writes the WAL's matches into one new shard (temporary name, fsync, rename),
   then deletes those WAL files. A crash between the two leaves matches in both places;
   `recover()` at start-up deletes WAL files whose ids are already in a shard, and
   readers also deduplicate by match id. A crash mid-write leaves only a temporary file,
   which `recover()` removes; the WAL still holds the matches.
3. `compact()` (on a schedule: `history.mirror`) replaces the flushed shards and the loose
   replays and logs by one shard and one bundle of each per day, in this order: it writes
   its journal (what it will write, what that replaces), writes the new files, has them
   published (the Hub mirror commits the new files and deletes the replaced ones in ONE
   commit), deletes the replaced files, then the journal. Every match is in the replaced
   files or the new ones (or both) at every moment. Killed before all new files are
   written, its journal is rolled back (the partial new files deleted); killed after, the
   next `compact()` rolls it forward (publishes again, deletes what is left).
4. `history.mirror.HubMirror` pushes the folder to the Hub dataset.
5. Another writer may record a match first (two leaders across a network partition, or a
   writer restarted after others played on): `reconcile()` drops this writer's copies
   from its WAL and its shards not yet pushed; their loose replays and logs (`orphans()`)
   are never pushed, and the next compaction deletes them, here and in the dataset.

Reading (`HistoryReader`) needs no lock. The Space reads the folder through its one read
side (`history.index`), shard by shard and the WAL's matches as they are recorded; it, like
`table()`, reads the WAL first and lists the shards after, so a match that a flush moves from the WAL into a new shard
meanwhile is found in one place or the other; a shard that vanishes under the reader
(compacted away) makes it list again, since compaction writes before it deletes; and
duplicates are dropped. A replay or log is looked for loose first, then in the bundles:
a loose file vanishing under the reader was bundled first. Damaged files (a truncated
shard, a corrupt replay or log file) are moved into `quarantine/`, named in the log and in
`damaged` (the UI's operator line), and everything else loads.
"""

from history.store.compaction import CompactionPlan, CompactionReport, Publish, StageHook
from history.store.layout import (
                                  INDEX_CACHE,
                                  LOGS,
                                  MATCH_ID,
                                  MAX_COMPACTED_SHARDS,
                                  REPLAYS,
                                  SHARD_NAME,
                                  TEAM_SCHEMA,
                                  FileKind,
                                  day_folder,
)
from history.store.reader import HistoryReader
from history.store.writer import HistoryStore

__all__ = [
    "INDEX_CACHE", "LOGS", "MATCH_ID", "MAX_COMPACTED_SHARDS", "REPLAYS", "SHARD_NAME", "TEAM_SCHEMA",
    "CompactionPlan", "CompactionReport", "FileKind", "HistoryReader", "HistoryStore", "Publish", "StageHook",
    "day_folder",
]
