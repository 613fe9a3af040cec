"""The isolation doctor: does the sandbox hold on this machine?

Usage::

    python -m matchmaking.isolation [--json]

Runs the self-test (`matchmaking.sandbox.isolation`), prints the table of mechanisms (or
the whole report as one JSON object) and exits 0 only when every mechanism holds, 1 when
one is missing, 2 when `NMMO_ARENA_ISOLATION` is not accepted.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from arena.errors import SettingsError
from arena.settings import ArenaSettings
from matchmaking.sandbox.isolation import self_test


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m matchmaking.isolation", description="Run the isolation self-test: does the sandbox hold on this machine?")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    args = parser.parse_args(argv)
    try:
        mode = ArenaSettings.read("isolation")
    except SettingsError as exc:
        print(f"error: {' '.join(exc.problems)}", file=sys.stderr)
        return 2
    report = self_test(mode)
    print(json.dumps(report.to_dict()) if args.json else report.table())
    return 0 if report.holds else 1


if __name__ == "__main__":
    sys.exit(main())
