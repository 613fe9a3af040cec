"""What the Arena's writers to the submitters' repos share: rounds in the background, only
while this Space leads the dataset's writers, a failing repo retried after a doubling wait,
and the Space's own account name (`modelcards.publisher`, `modelcards.verdicts`)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from huggingface_hub import HfApi

log = logging.getLogger(__name__)

#: Waits before trying a failed repo again: the first, doubling up to the last.
RETRY_S = (60.0, 3600.0)


def next_wait(previous: float) -> float:
    """The wait after a failure, given the last one (0: the first failure)."""
    return RETRY_S[0] if not previous else min(2 * previous, RETRY_S[1])


def in_background(run_once: Callable[[], Any], *, every_s: float, stop: threading.Event,
                  leads: Callable[[], bool] | None, name: str) -> threading.Thread:
    """Run `run_once` every `every_s` seconds in a daemon thread until `stop` is set, and
    only while `leads()` (None: always); a round that fails is logged, the next one tries again."""

    def loop() -> None:
        while not stop.wait(every_s):
            if leads is not None and not leads():
                continue
            try:
                run_once()
            except Exception:  # noqa: BLE001 - e.g. standings not computable yet; the next round tries again
                log.exception("%s round failed", name)

    thread = threading.Thread(target=loop, daemon=True, name=name)
    thread.start()
    return thread


def account(api: HfApi) -> str | None:
    """The Space's account name on the Hub (None if the token cannot say: searches by
    author then take any author's)."""
    try:
        return str(api.whoami()["name"])
    except Exception:  # noqa: BLE001 - only narrows a search
        return None
