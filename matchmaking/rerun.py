"""Play a recorded match again from its record, and say whether it came out the same.

Usage::

    python -m matchmaking.rerun MATCH_ID [--data DIR] [--hub URL] [--json]

1. **The record** is read from DIR's history (its shards and its write-ahead log;
   DIR as the Space resolves it: `--data`, else `NMMO_ARENA_DATA`).
2. **The Hub** (`matchmaking.hub.connection`, as `submit` and `evaluate --against` find
   it): `--hub URL`, `NMMO_ARENA_HUB` or `HF_ENDPOINT` (the user's token), else the
   embedded Hub of the Space running on DIR (`DIR/local-hub.json`), else, when no Space
   runs there, the embedded Hub of `DIR/hub` started for this rerun on a free port and
   stopped after it.
3. **The rerun** itself is the Space's audit's (`matchmaking.service.rerun`): the versions
   checked, the spec rebuilt from the record and its derived match id compared, the match
   played as the Space plays it, the first difference named by its path.

Exit status: 0 identical; 1 different; 2 refused or failed (the message says why: unknown
match id, other versions, a `local:` policy, no Hub, a revision the Hub no longer has).
`--json` prints one object on stdout (the steps go to stderr):
`{"match_id", "identical", "difference", "recorded", "duration_s", "derived_match_id", "hub"}`.

The matchmaker's audit (`Matchmaker.audit`) calls `rerun()` here with its own Hub client
and executor, so the Space checks itself with this very code.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from huggingface_hub.errors import HfHubHTTPError

from arena.errors import (
    MatchFailedError,
    MatchNotFoundError,
    MatchSetupError,
    NoHubError,
    NotReproducibleError,
    SettingsError,
    VersionMismatchError,
)
from arena.settings import ArenaSettings
from matchmaking.hub.connection import connect
from matchmaking.hub.health import describe
from matchmaking.service.rerun import HubFetcher, check_versions, find_record, rerun

# -- the command --------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m matchmaking.rerun",
        description="Play a recorded match again from its record (its seed, line-up and revisions, fetched from the "
        "Hub) with the same nmmo and Arena versions, and say whether the new record is identical.",
        epilog="Exit status: 0 identical; 1 different (the first difference is named); 2 refused or failed.",
    )
    parser.add_argument("match_id", help="the match's id (the Matches tab, or the history dataset's match_id column)")
    parser.add_argument("--data", type=Path, default=None, help="the Space's data folder (default: NMMO_ARENA_DATA, "
                        "as the Space reads it)")
    parser.add_argument("--hub", default=None, help="URL of the Hub holding the submissions (default: NMMO_ARENA_HUB, "
                        "HF_ENDPOINT, else the data folder's embedded Hub: the running Space's, or started for the rerun)")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout (the steps go to stderr)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    environ = dict(os.environ)
    if args.data is not None:
        environ["NMMO_ARENA_DATA"] = str(args.data)
    out = sys.stderr if args.json else sys.stdout

    def say(line: str) -> None:
        print(line, file=out, flush=True)

    from huggingface_hub.utils import disable_progress_bars

    from matchmaking.sandbox.host import protect_process

    disable_progress_bars()
    protect_process()  # as the Space: sandboxed teams must not read this process's environment
    try:
        settings = ArenaSettings.from_env(environ)
        record = find_record(settings, args.match_id)
        say(f"Record: match {record.match_id} ({record.track}{f' stage {record.stage}' if record.stage else ''}, "
            f"seed {record.seed}, map {record.map_id}, {record.ticks} of {record.horizon} ticks), played {record.started_at}")
        check_versions(record)
        say(f"Versions: nmmo {record.nmmo_version} and Arena {record.arena_version}, as installed")
        connection = connect(settings, hub=args.hub, environ=environ)
        say(f"Hub: {connection.describe()}")
        try:
            report = rerun(record, fetch=HubFetcher(connection.api, settings.cache_dir / "rerun"), settings=settings,
                           say=say, hub=connection.describe())
        finally:
            connection.close()
    except (SettingsError, MatchNotFoundError, VersionMismatchError, NotReproducibleError, MatchSetupError, NoHubError,
            MatchFailedError, HfHubHTTPError) as exc:
        message = describe(exc) if isinstance(exc, HfHubHTTPError) else str(exc)
        print(f"Not rerun. {message}", file=sys.stderr)
        if args.json:
            json.dump({"match_id": args.match_id, "identical": None, "error": message}, sys.stdout)
            sys.stdout.write("\n")
        return 2
    if report.identical:
        say(f"Verdict: identical: the rerun of {record.match_id} gives the recorded record, wall-clock fields aside")
    else:
        d = report.difference or {}
        say(f"Verdict: DIFFERENT: first at {d.get('path')}: recorded {json.dumps(d.get('recorded'))}, "
            f"rerun {json.dumps(d.get('rerun'))}")
    if args.json:
        json.dump(report.to_dict(), sys.stdout)
        sys.stdout.write("\n")
    return 0 if report.identical else 1


if __name__ == "__main__":
    sys.exit(main())
