"""How the match runner talks to one team, and how a team's failures become faults.

The runner owns failure (the kaggle-environments habit): it builds each team, asks it for
actions once per tick and times it; whatever the team does wrong becomes a `Fault` of a
closed set of kinds and the team's agents idle for that tick. Nothing a team does ends
the match.

`TeamHost` is the protocol the runner uses; `InProcessTeam` hosts a team in the match's
own process (built-in teams, trusted local runs). `matchmaking.sandbox` hosts a team in
its own OS process behind the same protocol.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol

from matchmaking.config import MatchConfig
from matchmaking.records import Fault, FaultKind


@dataclass(frozen=True)
class Answer:
    """A team's reply to one tick: its raw actions, or the fault that replaced them."""

    actions: Any = None
    fault: Fault | None = None


class TeamHost(Protocol):
    """What the runner needs from a team, wherever it lives."""

    def start(self) -> Fault | None:
        """Build the team; an INIT fault if it cannot be built (it then idles all match)."""

    def act(self, tick: int, observations: Mapping[int, Mapping[str, Any]]) -> Answer:
        """The team's actions for `tick`, given its alive members' observations."""

    def close(self) -> None:
        """Release the team (and its process, if any)."""


def describe_exception(exc: BaseException, *, limit: int) -> str:
    """`Type: message (at file:line)`, cut to `limit` characters, for a fault record."""
    where = ""
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        where = f" (at {last.filename.rsplit('/', 1)[-1]}:{last.lineno})"
    text = f"{type(exc).__name__}: {exc}{where}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


class InProcessTeam:
    """A team whose code runs in the calling process (no isolation: trusted code only).

    Exceptions (and `SystemExit`) from the team's constructor, `reset` or `act` become
    faults. A reply later than `config.step_timeout_s` is dropped as TIMEOUT; a team in an
    endless loop cannot be stopped here, which is why untrusted teams use the sandbox.
    """

    def __init__(
        self,
        factory: Callable[[int, dict[str, Any]], Any],
        *,
        team_id: int,
        env_config: dict[str, Any],
        config: MatchConfig,
    ):
        self.factory = factory
        self.team_id = team_id
        self.env_config = env_config
        self.config = config
        self.team: Any = None

    def start(self) -> Fault | None:
        try:
            self.team = self.factory(self.team_id, dict(self.env_config))
            reset = getattr(self.team, "reset", None)
            if callable(reset):
                reset()
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - the runner owns every team failure
            self.team = None
            return Fault(0, FaultKind.INIT, describe_exception(exc, limit=self.config.fault_message_chars))
        return None

    def act(self, tick: int, observations: Mapping[int, Mapping[str, Any]]) -> Answer:
        if self.team is None:
            return Answer(actions={})  # failed to start: idles silently, its INIT fault is recorded
        started = time.perf_counter()
        try:
            actions = self.team.act(observations)
        except (Exception, SystemExit) as exc:  # noqa: BLE001
            return Answer(fault=Fault(tick, FaultKind.ERROR, describe_exception(exc, limit=self.config.fault_message_chars)))
        elapsed = time.perf_counter() - started
        if elapsed > self.config.step_timeout_s:
            return Answer(
                fault=Fault(
                    tick,
                    FaultKind.TIMEOUT,
                    f"act() took {elapsed * 1000:.0f} ms, over the {self.config.step_timeout_s * 1000:.0f} ms limit",
                )
            )
        return Answer(actions=actions)

    def close(self) -> None:
        self.team = None
