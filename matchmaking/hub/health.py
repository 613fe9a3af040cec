"""The Space's connection to the Hub, and whether it works right now.

Every part that talks to the Hub (discovery, downloads, the history push) reports each
call's outcome to one `HubHealth`. It keeps the state an operator needs (reachable or
not, since when, the last error, how many files wait to be pushed), logs one line when
that state changes rather than a traceback every round, and gives the UI its status line.

A failure counts as "unreachable" when the Hub did not answer at all (connection refused,
name not resolved, timed out); an HTTP error status is an answer, about one request.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

log = logging.getLogger(__name__)


def answered(exc: BaseException | None) -> bool:
    """Whether a failed Hub call got an answer (an HTTP status) rather than no connection."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, HfHubHTTPError) and getattr(exc, "response", None) is not None:
            return True
        if isinstance(exc, OfflineModeIsEnabled):
            return False
        exc = exc.__cause__ or exc.__context__
    return False


def describe(exc: BaseException) -> str:
    """One line for a failed Hub call: the error's type and first line."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:300]


@dataclass(frozen=True)
class HubState:
    """What the status line says about the Hub."""

    endpoint: str
    setting: str
    reachable: bool | None
    """None until the first call."""
    since: float
    """When the Hub became reachable or unreachable (Unix time)."""
    last_error: str
    pending_files: int
    """Files of the history not yet pushed."""
    last_push: str = ""
    """How long ago the history was last pushed, and how it went (`history.mirror.Push.age`)."""

    def line(self, now: float | None = None) -> str:
        """`Hub http://...: reachable since 12:04 UTC; 3 files waiting to be pushed`."""
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.since))
        where = f"Hub {self.endpoint} ({self.setting})"
        if self.reachable is None:
            state = "not contacted yet"
        elif self.reachable:
            state = f"reachable since {when}"
        else:
            minutes = ((now or time.time()) - self.since) / 60
            state = f"UNREACHABLE since {when} ({minutes:.0f} min): {self.last_error}"
        waiting = f"{self.pending_files} file{'s' if self.pending_files != 1 else ''} waiting to be pushed"
        return f"{where}: {state}; {waiting}" + (f"; {self.last_push}" if self.last_push else "")


class HubHealth:
    """Reachability of one Hub endpoint, from the outcomes of the calls made to it."""

    def __init__(self, endpoint: str, *, setting: str):
        self.endpoint = endpoint
        self.setting = setting
        self._lock = threading.Lock()
        self._reachable: bool | None = None
        self._since = time.time()
        self._error = ""

    def ok(self) -> None:
        """A call to the Hub got an answer."""
        with self._lock:
            if self._reachable is not True:
                if self._reachable is False:
                    log.info("Hub %s reachable again after %.0f s", self.endpoint, time.time() - self._since)
                self._reachable, self._since, self._error = True, time.time(), ""

    def failed(self, exc: BaseException, *, doing: str) -> bool:
        """A call failed; True if it was the Hub being unreachable (then logged once per outage)."""
        if answered(exc):
            self.ok()
            return False
        with self._lock:
            self._error = f"{doing}: {describe(exc)}"
            if self._reachable is not False:
                self._reachable, self._since = False, time.time()
                log.warning(
                    "Hub %s unreachable (set by %s): %s. Matches go on; discovery, downloads and pushes retry "
                    "on their own schedule and nothing recorded is lost.", self.endpoint, self.setting, self._error
                )
        return True

    @property
    def reachable(self) -> bool | None:
        return self._reachable

    def state(self, *, pending_files: int = 0, last_push: str = "") -> HubState:
        """The Hub's state now, with the history's files waiting to be pushed (`HubMirror.pending`)
        and the last push's age (`HubMirror.last_push`)."""
        with self._lock:
            return HubState(self.endpoint, self.setting, self._reachable, self._since, self._error, pending_files,
                            last_push)
