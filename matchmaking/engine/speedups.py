"""The engine's hot paths: work of nmmo's own loop that the Arena skips or does faster.

An Arena match is nmmo 2.x's game, played tick for tick as nmmo's own loop plays it; only
the work whose result nobody reads is left out. Each patch here is bound to one `Env`
instance (an attribute of that env, never nmmo's classes: another env in the process, such
as nmmo's own loop in `bench.match_speed`, stays stock), says what it replaces and why, and
is checked against stock nmmo tick by tick: every entity's row of nmmo's datastore
(positions, health, food, water, gold, levels, equipment), every item's row (inventories)
and the event log, every tick (`python -m bench.match_speed --identity-seeds N`,
`tests/test_builtin_identity.py`).

The built-ins' own decisions are compiled in `matchmaking.teams.compiled_builtins`, which
also skips the gym conversion of their observations.
"""

from __future__ import annotations

from typing import Any


def skip_task_rewards(env: Any) -> bool:
    """Skip nmmo's per-tick evaluation of the game's tasks (`Env._compute_rewards`) for `env`.

    Why: every tick nmmo copies the whole entity, item and event tables into a `GameState`,
    indexes each of them row by row in Python (`precompute_index`, a fifth of a match: the
    event table grows all match long) and evaluates every team's task (under `TeamBattle`, a
    survival task, `TickGE`) into rewards and infos. The Arena reads neither: a match is
    scored from nmmo's event log (`arena.scoring`). The evaluation only reads the game; what
    it sets is each task's `completed`, which `TeamBattle` reads into `game.winners` and
    `game.history`, which nothing in nmmo's realm consults and the Arena never reads. So no
    event, position, vital or item changes (checked tick by tick, see the module docstring).

    Returns False, changing nothing, if `env` is not the `Env` this was written against.
    """
    if not callable(getattr(env, "_compute_rewards", None)) or not hasattr(env, "_gamestate_generator"):
        return False
    env._compute_rewards = _no_rewards
    return True


def _no_rewards() -> tuple[dict[int, float], dict[int, dict[str, Any]]]:
    """What `env.step` returns as rewards and infos in an Arena match: nothing (never read)."""
    return {}, {}
