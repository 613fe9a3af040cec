"""Text a submitted policy controls: how much of it the Arena keeps, and who may read it.

A policy writes its own exception messages and printed output, and its author writes its
model card's team name and description. All of it is bounded here and the pages show it
as text, never as markup or HTML.

What a running policy says is the one channel out of its sandbox that the Arena opens on
purpose. Where the isolation self-test found the Space's files or the network open to
submitted code and the operator let it run anyway (`NMMO_ARENA_ISOLATION=warn`), a policy
could read a file of the Space's user and say it. There, a match is played with
`MatchConfig.withhold_policy_words`: what a team says goes to the operator's log (the
Space's own log, which only its owners read) and every record the public sees (the
faults of the match record, the team's log, a rejection's reason, the dataset, the
author's discussion) keeps the fault's kind and tick with `WITHHELD` in place of the words.
A TIMEOUT's message is the host's own (how late, against what limit) and is kept.

Model card fields are read from the Hub, where the author wrote them before any code ran:
they are bounded and shown as text, not withheld.
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace

from arena.logs import LogLine, TeamLog
from arena.schema import Fault, FaultKind

#: Where withheld words go: the Space's log (stderr), for its operator alone.
OPERATOR = logging.getLogger("nmmo_arena.withheld")

#: Characters of a model card's team name and description the Arena keeps.
NAME_CHARS = 64
DESCRIPTION_CHARS = 500

#: Characters of one team's output sent to the operator's log per match, when withheld.
OPERATOR_LOG_CHARS = 20_000

#: What the public records say in place of a policy's own words where isolation is missing.
WITHHELD = ("[the policy's own words are withheld: this Space cannot isolate submitted code "
            "(NMMO_ARENA_ISOLATION=warn), so what a policy says reaches only the operator's log]")

#: Fault kinds whose message the host writes alone (kept where words are withheld).
HOST_WORDS = frozenset({FaultKind.TIMEOUT})

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u200b-\u200f\u2028-\u202e\u2066-\u2069]")


def bounded(text: str, limit: int, *, one_line: bool = False) -> str:
    """`text` without control characters (or bidirectional overrides), at most `limit`
    characters (cut with an ellipsis); `one_line`: every run of whitespace one space."""
    text = _CONTROL.sub("", str(text))
    if one_line:
        text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def withheld_fault(fault: Fault, *, where: str) -> Fault:
    """`fault` as the public may read it where words are withheld; its words to the operator."""
    if fault.kind in HOST_WORDS:
        return fault
    OPERATOR.warning("withheld from %s: %s at tick %d: %s", where, fault.kind.value, fault.tick, fault.message)
    return Fault(fault.tick, fault.kind, WITHHELD)


def withheld_log(log: TeamLog, *, where: str) -> TeamLog:
    """`log` as the public may read it where words are withheld (one line saying so, and its
    size); its lines to the operator."""
    if not log.lines:
        return log
    text = "\n".join(f"[tick {line.tick} {line.stream}] {line.text}" for line in log.lines)
    OPERATOR.warning("withheld from %s, %s's output (%d bytes):\n%s", where, log.policy_id, log.total_bytes,
                     bounded(text, OPERATOR_LOG_CHARS))
    return replace(log, lines=(LogLine(log.lines[0].tick, "stderr", WITHHELD),), dropped_bytes=log.total_bytes, gap_at=1)
