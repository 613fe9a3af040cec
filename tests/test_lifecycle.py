"""The revision lifecycle as data, and the status log that keeps it through damage."""

from __future__ import annotations

import json
import time

import pytest

from arena.errors import TransitionError
from arena.lifecycle import (
    FINAL,
    TRANSITIONS,
    Measurements,
    RejectionCause,
    StageFigures,
    Status,
    StatusEvent,
    SubmissionInfo,
)
from arena.revision import Revision
from history.statuses import StatusLog
from tests_support import record_lifecycle

SHA = "1" * 40


def test_every_status_is_reachable_and_final_ones_lead_nowhere_but_reconsideration():
    reachable = {None}
    frontier = [None]
    while frontier:
        for nxt in TRANSITIONS[frontier.pop()]:
            if nxt not in reachable:
                reachable.add(nxt)
                frontier.append(nxt)
    assert reachable - {None} == set(Status)
    assert TRANSITIONS[Status.ERROR] == {Status.WITHDRAWN}  # an owner may still withdraw it
    assert TRANSITIONS[Status.WITHDRAWN] == frozenset()
    assert TRANSITIONS[Status.EVALUATED] == {Status.EVALUATED, Status.ERROR, Status.WITHDRAWN}  # later PvE stages still played
    assert TRANSITIONS[Status.REJECTED] == {Status.QUEUED, Status.WITHDRAWN}  # only a size rejection, once the limit changed
    assert all(Status.WITHDRAWN in TRANSITIONS[s] for s in Status if s is not Status.WITHDRAWN)  # any revision can be withdrawn
    assert FINAL == {Status.REJECTED, Status.ERROR, Status.WITHDRAWN}


def test_the_log_refuses_transitions_the_lifecycle_does_not_allow(tmp_path):
    log = StatusLog(tmp_path / "s.jsonl")
    with pytest.raises(TransitionError, match="unseen to qualified"):
        log.record(Revision("a/b", SHA), Status.QUALIFIED)
    log.record(Revision("a/b", SHA), Status.QUEUED)
    with pytest.raises(TransitionError, match="queued to evaluating; allowed: queued, validating"):
        log.record(Revision("a/b", SHA), Status.EVALUATING)
    record_lifecycle(log, "c/d", SHA, Status.ERROR, "broken")
    with pytest.raises(TransitionError, match="error to queued; allowed: withdrawn"):
        log.record(Revision("c/d", SHA), Status.QUEUED)
    log.record(Revision("c/d", SHA), Status.WITHDRAWN, "withdrawn by its owner")
    with pytest.raises(TransitionError, match="it is final"):
        log.record(Revision("c/d", SHA), Status.QUEUED)
    assert [line for line in (tmp_path / "s.jsonl").read_text().splitlines()]  # refused events wrote nothing
    assert all(json.loads(line)["status"] != "qualified" for line in (tmp_path / "s.jsonl").read_text().splitlines())


def test_typed_details_survive_the_log(tmp_path):
    path = tmp_path / "s.jsonl"
    log = StatusLog(path)
    info = SubmissionInfo(author="alice", team_name="Alice's", files=(("policy.py", 120),), size_mb=0.1)
    log.record(Revision("alice/x", SHA), Status.QUEUED, "waiting", submission=info)
    log.record(Revision("alice/x", SHA), Status.VALIDATING, "playing", download_path="/tmp/x")
    log.record(Revision("alice/x", SHA), Status.EVALUATING, "ok", measurements=Measurements(12.5, 300.0))
    log.record(Revision("alice/x", SHA), Status.QUALIFIED, "qualified", pve=(StageFigures(1, 0.6, 30.0, 10),))
    again = StatusLog(path).get(Revision("alice/x", SHA))
    assert again == log.get(Revision("alice/x", SHA))
    assert again.submission == info and again.download_path == "/tmp/x"
    assert again.measurements == Measurements(12.5, 300.0) and again.pve[0].mean_achievement == 30.0


def test_the_first_log_format_is_still_read(tmp_path):
    path = tmp_path / "s.jsonl"
    old = [
        {"repo_id": "a/b", "revision": SHA, "status": "queued", "reason": "waiting", "at": 1.0,
         "details": {"author": "a", "team_name": "T", "files": [["policy.py", 10]], "size_mb": 0.0}},
        {"repo_id": "a/b", "revision": SHA, "status": "validating", "reason": "playing", "at": 2.0, "details": {"path": "/d"}},
        {"repo_id": "a/b", "revision": SHA, "status": "evaluated", "reason": "below", "at": 3.0,
         "details": {"peak_memory_mb": 200.0, "max_step_cpu_ms": 5.0, "pve": {"1": {"top1_ratio": 0.1, "mean_achievement": 9.0}}}},
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in old))
    state = StatusLog(path).get(Revision("a/b", SHA))
    assert state.status is Status.EVALUATED and state.submission.team_name == "T" and state.download_path == "/d"
    assert state.measurements.peak_memory_mb == 200.0 and state.pve == (StageFigures(1, 0.1, 9.0, 0),)


def test_a_torn_line_is_set_apart_and_never_glued_to_the_next_event(tmp_path):
    path = tmp_path / "s.jsonl"
    log = StatusLog(path)
    log.record(Revision("a/b", SHA), Status.QUEUED, "waiting", submission=SubmissionInfo(author="a", team_name="Team A"))
    with open(path, "a") as f:
        f.write('{"repo_id": "a/b", "revision": "11')  # killed mid-write
    reopened = StatusLog(path)
    assert len(reopened.damaged) == 1 and "line 2 is damaged" in reopened.damaged[0]
    assert path.read_text().endswith("\n")
    reopened.record(Revision("a/b", SHA), Status.VALIDATING, "checking files")  # appended after the repair
    third = StatusLog(path)
    state = third.get(Revision("a/b", SHA))
    assert third.damaged == []  # the repair is done once
    assert state.status is Status.VALIDATING and state.submission.team_name == "Team A"  # nothing lost
    kept = [json.loads(line) for line in (tmp_path / "s.damaged.jsonl").read_text().splitlines()]
    assert kept[0]["text"] == '{"repo_id": "a/b", "revision": "11' and kept[0]["line"] == 2


def test_a_damaged_line_in_the_middle_costs_only_that_line(tmp_path):
    path = tmp_path / "s.jsonl"
    log = StatusLog(path)
    log.record(Revision("a/b", SHA), Status.QUEUED)
    log.record(Revision("c/d", SHA), Status.QUEUED)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "\x00\x00garbage", lines[1]]) + "\n")
    reopened = StatusLog(path)
    assert {s.id.policy_id for s in reopened.states()} == {"a/b", "c/d"}
    assert len(reopened.damaged) == 1


def test_events_round_trip():
    event = StatusEvent(Revision("a/b", SHA), Status.REJECTED, "too big", cause=RejectionCause.SIZE, limit_mb=2.0, failed_attempts=0)
    assert StatusEvent.from_dict(json.loads(json.dumps(event.to_dict()))) == event


def test_status_only_moves_forward_across_writers(tmp_path):
    """Two writers, one planning from less of the history: its stale verdict, with PvE
    figures behind the dataset's, is not recorded; met in older data (both writers' files),
    the more advanced state is kept whatever the order of the files."""
    rev = Revision("a/b", SHA)
    ahead = StatusLog(tmp_path / "s.jsonl", writer="w" + "a" * 12)
    record_lifecycle(ahead, "a/b", SHA, Status.QUALIFIED, "qualified",
                     pve=(StageFigures(1, 0.5, 30.0, 10), StageFigures(2, 0.3, 25.0, 10), StageFigures(3, 0.2, 22.0, 6)))
    behind = StatusLog(tmp_path / "s.jsonl", writer="w" + "b" * 12)
    stale = (StageFigures(1, 0.5, 30.0, 10), StageFigures(2, 0.3, 24.0, 4))
    kept = behind.record(rev, Status.QUALIFIED, "PvE stage 2 being played", pve=stale)
    assert kept.pve[-1] == StageFigures(3, 0.2, 22.0, 6) and not behind.own.exists()  # not recorded
    assert behind.record(rev, Status.ERROR, "faulty").status is Status.ERROR  # forward still goes
    # an older dataset holding the stale event after the advanced one: readers keep the advanced
    older = tmp_path / "older"
    older.mkdir()
    log = StatusLog(older / "s.jsonl", writer="w" + "c" * 12)
    record_lifecycle(log, "a/b", SHA, Status.QUALIFIED, "qualified",
                     pve=(StageFigures(1, 0.5, 30.0, 10), StageFigures(2, 0.3, 25.0, 10), StageFigures(3, 0.2, 22.0, 6)))
    late = StatusEvent(rev, Status.QUALIFIED, "PvE stage 2 being played", pve=stale, at=time.time() + 60)
    back = StatusEvent(rev, Status.EVALUATING, "playing PvE again", at=time.time() + 61)
    with open(older / f"s-{'w' + 'd' * 12}.jsonl", "w") as f:
        f.write(json.dumps(late.to_dict()) + "\n" + json.dumps(back.to_dict()) + "\n")
    state = StatusLog(older / "s.jsonl").get(rev)
    assert state.status is Status.QUALIFIED and state.pve[-1].stage == 3
