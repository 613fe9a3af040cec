"""One serialisation for every record (`arena.records`): the rule, each declared exception,
and the formats on disk and on the wire written byte for byte as before the helper."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum

import pytest

from arena.errors import InvalidArgumentError, MissingFieldError
from arena.lifecycle import Measurements, RejectionCause, StageFigures, Status, StatusEvent, SubmissionInfo
from arena.logs import LogLine, TeamLog
from arena.records import Format, Record, from_dict, to_dict
from arena.revision import Revision
from arena.schema import Fault, FaultKind, MatchResult, TaskResult, TeamResult
from history.incidents import Cause, Incident
from modelcards.publications import CardResults, ProvisionalPvP


class Colour(str, Enum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True)
class Cell:
    x: int
    y: int

    FORMAT = Format(row=True)


@dataclass(frozen=True)
class Board(Record):
    name: str
    colour: Colour
    cells: tuple[Cell, ...]
    counts: dict[int, int] = field(default_factory=dict)
    owner: Revision | None = None
    note: str = "none"
    size: float | None = None


@dataclass(frozen=True)
class Entry(Record):
    id: Revision
    score: int
    comment: str | None = None
    added: int = 0

    FORMAT = Format(keys={"id": ("repo_id", "revision"), "score": "points"}, layout=("id", "doubled", "score", "comment"),
                    omit_none=True, defaults={"score": -1})

    @property
    def doubled(self) -> int:
        return 2 * self.score


def test_the_rule_writes_json_values_and_reads_them_back_by_type():
    board = Board("b", Colour.RED, (Cell(0, 1), Cell(2, 3)), {3: 4}, Revision("o/n", "abc"), size=None)
    data = board.to_dict()
    assert data == {"name": "b", "colour": "red", "cells": [[0, 1], [2, 3]], "counts": {"3": 4},
                    "owner": {"policy_id": "o/n", "sha": "abc"}, "note": "none", "size": None}
    assert Board.from_dict(json.loads(json.dumps(data))) == board
    assert to_dict(board) == data and from_dict(Board, data) == board


def test_reading_converts_defaults_what_is_missing_and_ignores_what_is_unknown():
    read = Board.from_dict({"name": 7, "colour": "blue", "cells": [["1", 2.0]], "note": None, "size": "2.5",
                            "added_by_a_newer_arena": {"x": 1}})
    assert read == Board("7", Colour.BLUE, (Cell(1, 2),), size=2.5)  # a null where None is no value: the default
    with pytest.raises(MissingFieldError, match="Board record without its 'colour' key"):
        Board.from_dict({"name": "b", "cells": []})
    with pytest.raises(ValueError):
        Board.from_dict({"name": "b", "colour": "green", "cells": []})


def test_declared_exceptions_spread_rename_derive_order_omit_and_default():
    entry = Entry(Revision("o/n", "abc"), 5)
    assert list(entry.to_dict().items()) == [("repo_id", "o/n"), ("revision", "abc"), ("doubled", 10), ("points", 5)]
    assert Entry.from_dict({**entry.to_dict(), "doubled": 99}) == entry  # derived: written, never read
    assert Entry.from_dict({"repo_id": "o/n", "revision": "abc"}) == Entry(Revision("o/n", "abc"), -1)
    with pytest.raises(KeyError, match="'revision'"):  # a MissingFieldError: readers catch KeyError
        Entry.from_dict({"repo_id": "o/n", "points": 1})


def test_a_format_naming_no_field_property_or_method_is_refused():
    @dataclass(frozen=True)
    class Typo(Record):
        score: int
        FORMAT = Format(keys={"scroe": "points"})

    with pytest.raises(InvalidArgumentError, match="'scroe', which is no field"):
        Typo(1).to_dict()


# -- the formats, byte for byte -----------------------------------------------------------------
# Each string is what the hand-written to_dict of each record wrote before `arena.records`.

def test_the_status_log_line_is_unchanged():
    event = StatusEvent(Revision("o/n", "a" * 4), Status.REJECTED, "too big", 123.0, download_path="/x", failed_attempts=2,
                        limit_mb=2.0, submission=SubmissionInfo("me", "t", "d", "lm", 1.5, (("policy.py", 10),), "c"),
                        measurements=Measurements(1.0, 2.0, 3.0, 4.0), pve=(StageFigures(1, 0.5, 30.0, 10),),
                        cause=RejectionCause.SIZE)
    assert json.dumps(event.to_dict()) == (
        '{"repo_id": "o/n", "revision": "aaaa", "status": "rejected", "reason": "too big", "at": 123.0, '
        '"download_path": "/x", "failed_attempts": 2, "limit_mb": 2.0, "submission": {"author": "me", "team_name": "t", '
        '"description": "d", "last_modified": "lm", "size_mb": 1.5, "files": [["policy.py", 10]], "content": "c"}, '
        '"measurements": {"max_step_cpu_ms": 1.0, "peak_memory_mb": 2.0, "median_step_ms": 3.0, "p99_step_ms": 4.0}, '
        '"pve": [{"stage": 1, "top1_ratio": 0.5, "mean_achievement": 30.0, "matches": 10}], "cause": "size"}')
    assert json.dumps(StatusEvent(Revision("o/n", "b"), Status.QUEUED, at=5.0).to_dict()) == (
        '{"repo_id": "o/n", "revision": "b", "status": "queued", "reason": "", "at": 5.0}')
    legacy = {"repo_id": "o/n", "revision": "b", "status": "evaluating", "at": 3, "details": {
        "author": "x", "files": [["policy.py", 3]], "peak_memory_mb": 5, "path": "/p", "pve": {"1": {"top1_ratio": 0.1, "mean_achievement": 3}}}}
    assert StatusEvent.from_dict(legacy) == StatusEvent(
        Revision("o/n", "b"), Status.EVALUATING, "", 3.0, download_path="/p", submission=SubmissionInfo("x", files=(("policy.py", 3),)),
        measurements=Measurements(peak_memory_mb=5.0), pve=(StageFigures(1, 0.1, 3.0),))


def test_the_match_record_logs_incidents_and_ledger_are_unchanged():
    team = TeamResult(3, "a/b", "f", 14, 2, {"travel": TaskResult(1, 4)}, 8, 1, 0, {"ERROR": 1}, (Fault(5, FaultKind.ERROR, "x"),))
    match = MatchResult("m", 7, 3, 1024, 9, "2.1.2", "0.3.0", "t", 1.5, (team,), "pve", 1)
    assert json.dumps(match.to_dict()) == (
        '{"match_id": "m", "seed": 7, "map_id": 3, "horizon": 1024, "ticks": 9, "nmmo_version": "2.1.2", "arena_version": '
        '"0.3.0", "started_at": "t", "duration_s": 1.5, "teams": [{"slot": 3, "policy_id": "a/b", "revision": "f", '
        '"achievement": 14, "rank": 2, "tasks": {"travel": {"value": 1, "points": 4}}, "alive": 8, "player_kills": 1, '
        '"deaths": 0, "fault_counts": {"ERROR": 1}, "faults": [{"tick": 5, "kind": "ERROR", "message": "x"}], '
        '"spawn_side": -1, "spawn_index": -1}], "track": "pve", "stage": 1, "set_id": "", "set_size": 1, "set_rotation": 0, '
        '"held_out": false, "schema_version": 2}')
    old = {**match.to_dict(), "schema_version": 1}
    assert MatchResult.from_dict(old) == match  # a version 1 record reads as this version's
    log = TeamLog(slot=2, policy_id="p", revision="r", lines=(LogLine(0, "stdout", "hi"),), total_bytes=3)
    assert json.dumps(log.to_dict()) == (
        '{"slot": 2, "policy_id": "p", "revision": "r", "head_bytes": 49152, "tail_bytes": 16384, "total_bytes": 3, '
        '"dropped_bytes": 0, "gap_at": null, "lines": [[0, "stdout", "hi"]]}')
    incident = Incident("m", "t", "pvp", 0, 9, ("a@b",), Cause.NODE_LOST, "gone", 1, 3, True)
    assert json.dumps(incident.to_dict()) == (
        '{"match_id": "m", "failed_at": "t", "track": "pvp", "stage": 0, "seed": 9, "submissions": ["a@b"], "cause": '
        '"node-lost", "message": "gone", "attempt": 1, "max_attempts": 3, "replanned": true, "node": "", "schema_version": 1}')
    assert Incident.from_dict({"match_id": "m", "failed_at": "t", "cause": "node-lost"}).max_attempts == 3
    card = CardResults(Revision("o/n", "c"), (StageFigures(1, 0.5, 30.0, 10),), provisional=ProvisionalPvP(3, 40))
    assert json.dumps(card.to_dict()) == (
        '{"repo_id": "o/n", "revision": "c", "pve": [{"stage": 1, "top1_ratio": 0.5, "mean_achievement": 30.0, '
        '"matches": 10}], "pvp": null, "provisional": {"matches": 3, "matches_left": 40}}')
