"""The Arena's learned built-in teams: networks the project trained, played as built-ins.

`apprentice` is the network `training/imitate.py` trained to imitate the scripted `elite`
team. Its folder, `matchmaking/teams/apprentice/` (code and weights, shipped with the
package), is a complete submission: `examples/policies/apprentice-torch` is a link to it,
so the built-in and the example participants push are the same files.
As a built-in it is trusted project code and runs in the match process like the scripted
built-ins, with PyTorch held to one thread (`matchmaking.teams.frameworks`) so that it
takes no more of the match process's core than a scripted team does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from matchmaking.teams.frameworks import pin_threads
from matchmaking.teams.loading import load_team_class

#: Where each learned built-in's folder (policy.py and weights) is.
FOLDERS = {"apprentice": Path(__file__).resolve().parent / "apprentice"}


@cache
def _team_class(name: str) -> type:
    team = load_team_class(FOLDERS[name])
    pin_threads()
    return team


def learned_factory(name: str) -> Callable[[int, Mapping[str, Any]], Any]:
    """A `Team` constructor for learned built-in `name`; its network is loaded on first use."""

    def make(team_id: int, env_config: Mapping[str, Any]) -> Any:
        return _team_class(name)(team_id, env_config)

    make.__name__ = f"builtin:{name}"
    return make
