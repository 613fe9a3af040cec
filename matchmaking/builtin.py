"""The import path packaged built-in submissions name: `from matchmaking.builtin import builtin_factory`.

The embedded Hub is seeded with the built-in teams packaged as submissions
(`matchmaking.teams.builtin.packaged_policy`). Their revisions are immutable and recorded in
the match history, so the path their `policy.py` imports must keep working for as long as
those matches can be rerun; the built-in teams themselves live in `matchmaking.teams`.
"""

from matchmaking.teams.builtin import builtin_factory

__all__ = ["builtin_factory"]
