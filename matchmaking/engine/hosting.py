"""How the match runner talks to one team, and how a team's failures become faults.

The runner owns failure (the kaggle-environments habit): it builds each team, asks it for
actions once per tick and times it; whatever the team does wrong becomes a `Fault` of a
closed set of kinds and the team's agents idle for that tick. Nothing a team does ends
the match.

`TeamHost` is the protocol the runner uses; `InProcessTeam` hosts a team in the match's
own process (built-in teams, trusted local runs). `matchmaking.sandbox.host` hosts a team in
its own OS process behind the same protocol.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from arena.logs import TeamLog
from arena.schema import Fault, FaultKind
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.observations import ObservationLayout

_ARENA_CODE = str(Path(__file__).resolve().parents[2] / "matchmaking")


@dataclass(frozen=True)
class Answer:
    """A team's reply to one tick: its raw actions, or the fault that replaced them."""

    actions: Any = None
    fault: Fault | None = None


@dataclass(frozen=True)
class TeamSlot:
    """Where a team plays: its slot, what it is told, the rules, and its observations' shape."""

    team_id: int
    env_config: dict[str, Any]
    config: MatchConfig
    layout: ObservationLayout


class TeamHost(Protocol):
    """What the runner needs from a team, wherever it lives.

    Each tick is two calls, so that teams in other processes all think at once: the runner
    hands every team its observations (`request`), then collects every answer (`answer`).
    """

    def start(self) -> Fault | None:
        """Build the team; an INIT fault if it cannot be built (it then idles all match)."""

    def request(self, tick: int, observations: Mapping[int, Mapping[str, Any]]) -> None:
        """Hand over the alive members' observations for `tick`."""

    def answer(self) -> Answer:
        """The team's raw actions for the last request, or the fault that replaced them."""

    def close(self) -> None:
        """Release the team (and its process, if any)."""

    # Four more steps, which only some hosts need (the others do nothing there): a team in
    # its own process (`matchmaking.sandbox.host`) uses all four; a built-in in the match's
    # own process binds to nmmo's observations (`matchmaking.teams.factory.BuiltinHost`).

    def launch(self) -> None:
        """Begin building the team without waiting: the runner launches every team before it
        starts any, so that teams in processes of their own import in parallel."""

    def bind_observations(self, env: Any, agent_ids: list[int]) -> None:
        """From now on, read the members' (`agent_ids`) observations straight from nmmo's
        `env` (a sandbox: through its shared memory)."""

    def settle(self, tick: int) -> Fault | None:
        """The fault the team still owes once the runner stops asking it (the match is over,
        or every member is dead) with an answer outstanding: the error its late answer
        carries, or memory past its limit; None if there is none."""

    def output_log(self) -> TeamLog | None:
        """What the team wrote to stdout and stderr (after `close`); None if it has no
        output of its own (a team in the match's own process writes to the match's)."""


def describe_exception(exc: BaseException, *, limit: int) -> str:
    """`Type: message (at file:line)`, cut to `limit` characters, for a fault record; the
    line is that of the original error when `exc` wraps one, and the last outside the
    Arena's own code (a policy's own line, not the loader's or the import guard's)."""
    where = ""
    frames = traceback.extract_tb((exc.__cause__ or exc).__traceback__)
    outside = [f for f in frames if not f.filename.startswith(_ARENA_CODE)] or frames
    if outside:
        last = outside[-1]
        where = f" (at {last.filename.rsplit('/', 1)[-1]}:{last.lineno})"
    text = f"{type(exc).__name__}: {exc}{where}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


class InProcessTeam(TeamHost):
    """A team whose code runs in the calling process (no isolation: trusted code only).

    Exceptions (and `SystemExit`) from the team's constructor, `reset` or `act` become
    faults, and so does an answer late beyond its time bank (`TimeBank`). A team in an endless
    loop cannot be stopped here, which is why untrusted teams use `matchmaking.sandbox.host`.
    """

    def __init__(self, factory: Callable[[int, dict[str, Any]], Any], slot: TeamSlot):
        self.factory = factory
        self.slot = slot
        self.config = slot.config
        self.team: Any = None
        self.bank = TimeBank(slot.config)
        self._request: tuple[int, Mapping[int, Mapping[str, Any]]] | None = None

    def start(self) -> Fault | None:
        try:
            self.team = self.factory(self.slot.team_id, dict(self.slot.env_config))
            reset = getattr(self.team, "reset", None)
            if callable(reset):
                reset()
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - the runner owns every team failure
            self.team = None
            return Fault(0, FaultKind.INIT, describe_exception(exc, limit=self.config.fault_message_chars))
        return None

    def request(self, tick: int, observations: Mapping[int, Mapping[str, Any]]) -> None:
        self._request = (tick, observations)

    def answer(self) -> Answer:
        if self.team is None or self._request is None:
            return Answer(actions={})  # failed to start: idles silently, its INIT fault is recorded
        tick, observations = self._request
        self._request = None
        # this thread's CPU, not the process's: the team runs here, beside the host's other
        # threads (a test run's leftover servers once charged a built-in 698 ms for one tick)
        wall = time.perf_counter()
        try:
            actions = self.team.act(observations)
        except (Exception, SystemExit) as exc:  # noqa: BLE001
            return Answer(fault=Fault(tick, FaultKind.ERROR, describe_exception(exc, limit=self.config.fault_message_chars)))
        late = self.bank.charge(time.perf_counter() - wall)
        return Answer(fault=Fault(tick, FaultKind.TIMEOUT, late)) if late else Answer(actions=actions)

    def close(self) -> None:
        self.team = None

    def launch(self) -> None:
        pass  # built in `start`: nothing to overlap

    def bind_observations(self, env: Any, agent_ids: list[int]) -> None:
        pass  # observations are handed over as dicts (`BuiltinHost` binds nmmo's own)

    def settle(self, tick: int) -> Fault | None:
        return None  # it answers before the runner goes on: nothing is ever owed

    def output_log(self) -> TeamLog | None:
        return None  # it writes to the match's own output


class TimeBank:
    """A team's time over a match: each answer's deadline (`step_timeout_s`, wall time), and
    the overage it may draw beyond them in all (`time_bank_s`), as Kaggle's agents have."""

    def __init__(self, config: MatchConfig):
        self.deadline_s = config.step_timeout_s
        self.left_s = config.time_bank_s

    @property
    def wait_s(self) -> float:
        """How long the runner waits for an answer now: its deadline and what is left of the bank."""
        return self.deadline_s + self.left_s

    def charge(self, took_s: float) -> str:
        """Charge an answer that took `took_s`: why it is late beyond what the bank covers
        (the answer then stands no more), or "" if it stands."""
        over = took_s - self.deadline_s
        if over <= 0:
            return ""
        if over <= self.left_s:
            self.left_s -= over
            return ""
        self.left_s = 0.0
        return (f"act() took {took_s:.2f} s, over the {self.deadline_s * 1000:.0f} ms deadline, and the team's time bank "
                "for the match is spent")

    def spend(self) -> None:
        """The runner waited the bank out for an answer that did not come."""
        self.left_s = 0.0
