"""What every part of the Arena agrees on: the match record, scoring, ratings, rules.

Pure and light on purpose (the standard library and NumPy, nothing else at import time):
the matchmaker, the history dataset, the leaderboard and even the sandboxed team
processes import it, and none of them should pay for the others' dependencies. The data
flows one way through the packages that use it:

    Hub -> matchmaking (discovery, validation, matches) -> history (the dataset)
        -> leaderboard (standings, tables, pages)
"""

from __future__ import annotations

from pathlib import Path

#: Version of this project, written into every match record.
ARENA_VERSION = "0.3.0"

#: Folder of the repository, for defaults that live beside the code.
PROJECT_ROOT = Path(__file__).resolve().parent.parent
