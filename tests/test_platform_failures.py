"""Matches lost to the platform (a worker killed, out of memory, an engine error): never rated,
recorded as incidents with their cause (`history.incidents`), played again up to the limit,
pushed and pulled with the dataset, listed on the About tab apart from the teams' faults."""

from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import CancelledError
from concurrent.futures.process import BrokenProcessPool
from datetime import datetime

import pytest
from huggingface_hub import HfApi

from arena.errors import MatchFailedError
from arena.policies import builtin
from arena.rules import stage_opponents
from arena.settings import ArenaSettings
from history.incidents import MAX_ATTEMPTS, Cause, Incident, IncidentLog, incident_log_path
from history.mirror import NOT_PUSHED, own_patterns
from history.restore import PULLED_FOLDERS
from history.statuses import StatusLog
from history.store import HistoryStore
from history.writers import Writers
from leaderboard.about import incidents_markdown
from localhub import LocalHub
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec
from matchmaking.service.executor import classify, play_outcome
from matchmaking.teams.factory import in_process_host
from tests_support import EXAMPLES, push_policy


# -- the classification ------------------------------------------------------------------
def test_a_lost_match_is_classified_by_what_was_raised_not_by_its_message():
    assert classify(BrokenProcessPool("A process in the process pool was terminated abruptly")) is Cause.WORKER_DIED
    assert classify(CancelledError()) is Cause.WORKER_DIED  # lost with the pool another worker broke
    assert classify(BrokenProcessPool(), oom_killed=True) is Cause.OUT_OF_MEMORY  # the kernel's OOM killer struck
    assert classify(MemoryError()) is Cause.OUT_OF_MEMORY
    try:
        try:
            raise MemoryError
        except MemoryError as exc:
            raise MatchFailedError("could not allocate the observations") from exc
    except MatchFailedError as exc:
        assert classify(exc) is Cause.OUT_OF_MEMORY  # a MemoryError behind what was raised
    assert classify(KeyError("entity 12")) is Cause.ENGINE_ERROR
    assert classify(MatchFailedError("worker failed: BrokenProcessPool")) is Cause.ENGINE_ERROR  # words do not classify
    exceptions = pytest.importorskip("ray.exceptions")
    assert classify(exceptions.NodeDiedError("node 1 died")) is Cause.NODE_LOST
    assert classify(exceptions.OwnerDiedError("ab" * 14, None, "")) is Cause.NODE_LOST
    assert classify(exceptions.WorkerCrashedError()) is Cause.WORKER_DIED
    assert classify(exceptions.OutOfMemoryError("memory monitor killed the task")) is Cause.OUT_OF_MEMORY


def _memory_host(ref, slot):
    raise MemoryError("no room for the team")


def _broken_host(ref, slot):
    raise KeyError("slot")


def _spec(seed: int = 5, track: str = "pvp") -> MatchSpec:
    lineup = tuple(builtin(n) for n in stage_opponents(1)) + (builtin("forage"),)
    return MatchSpec(seed=seed, policies=lineup, config=MatchConfig(horizon=8), track=track, held_out=False)


def test_a_match_that_raises_carries_its_cause():
    spec = _spec()
    memory = play_outcome(spec, _memory_host)
    assert memory.result is None and memory.cause is Cause.OUT_OF_MEMORY and "MemoryError" in memory.error
    broken = play_outcome(spec, _broken_host)
    assert broken.result is None and broken.cause is Cause.ENGINE_ERROR
    played = play_outcome(spec, in_process_host)
    assert played.result is not None and played.cause is None and played.error is None


# -- the record and the retry limit ------------------------------------------------------
class _Broken:
    """An executor on the real `play_outcome`, whose every match raises in the engine."""

    def __init__(self):
        self.played: list[str] = []

    def run(self, specs):
        for spec in specs:
            self.played.append(spec.match_id)
            yield play_outcome(spec, _broken_host)


def test_a_match_that_always_fails_is_tried_max_attempts_times_then_given_up(tmp_path):
    from matchmaking.service.matchmaker import Matchmaker

    settings = ArenaSettings(data_dir=tmp_path / "data", hub_endpoint="http://127.0.0.1:9", seed_examples=False,
                             match_horizon=8)
    executor = _Broken()
    store = HistoryStore(settings.history_dir, writer="w00000000000a")
    writers = Writers(settings.history_dir, "w00000000000a", ttl_s=60)
    writers.caught_up.set()
    m = Matchmaker(settings, api=None, store=store, statuses=StatusLog(settings.status_log, writer="w00000000000a"),
                   executor=executor, writers=writers)
    spec = _spec()
    assert m._play([spec]) == []
    assert executor.played == [spec.match_id] * MAX_ATTEMPTS  # played again at once, the same match
    assert m._play([spec]) == [] and len(executor.played) == MAX_ATTEMPTS  # given up: never again, after a restart too
    incidents = IncidentLog(incident_log_path(settings.history_dir)).read()
    assert [(i.attempt, i.replanned) for i in incidents] == [(1, True), (2, True), (3, False)]
    assert {(i.match_id, i.cause, i.track, i.seed, i.max_attempts) for i in incidents} == {
        (spec.match_id, Cause.ENGINE_ERROR, "pvp", 5, MAX_ATTEMPTS)}
    assert "KeyError" in incidents[0].message
    assert store.results() == []  # nothing of a lost match is in the history: never rated
    assert (settings.history_dir / "incidents" / "incidents-w00000000000a.jsonl").is_file()  # this writer's own file
    page = incidents_markdown(incidents)
    assert "3 attempts lost, of 1 match" in page and "1 given up" in page and "engine-error" in page
    assert "given up after 3 attempts" in page and "played again (attempt 1 of 3)" in page
    assert "None: no match has been lost" in incidents_markdown([])


def test_the_incident_log_is_pushed_and_pulled_like_the_other_journals():
    me = "w00000000000a"
    files = [f"incidents/incidents-{me}.jsonl", "incidents/incidents-w00000000000b.jsonl", "incidents/incidents.jsonl"]
    from huggingface_hub.utils import filter_repo_objects

    assert set(filter_repo_objects(files, allow_patterns=own_patterns(me), ignore_patterns=NOT_PUSHED)) == {files[0]}
    assert "incidents" in PULLED_FOLDERS


def test_an_incident_round_trips_and_damage_is_skipped(tmp_path):
    log = IncidentLog(tmp_path / "incidents" / "incidents.jsonl", writer="w00000000000a")
    incident = Incident(match_id="ab" * 10, failed_at="2026-12-03T21:00:00+00:00", track="pve", stage=1, seed=7,
                        submissions=("alice/gatherer@" + "0" * 40,), cause=Cause.WORKER_DIED, message="worker failed",
                        attempt=1, max_attempts=MAX_ATTEMPTS, replanned=True)
    log.append(incident)
    with open(log.journal.own, "a") as f:
        f.write('{"match_id": "x", "cause": "gremlins"}\n')  # a cause outside the closed set: skipped
    assert IncidentLog(log.path).read() == [incident]


# -- a worker killed mid-match, end to end -----------------------------------------------
@pytest.fixture()
def hub(tmp_path):
    hub = LocalHub(tmp_path / "hub").start()
    push_policy(HfApi(endpoint=hub.endpoint, token="t"), "alice/gatherer", EXAMPLES / "gatherer")
    yield hub
    hub.stop()


@pytest.mark.slow
def test_a_match_whose_worker_is_killed_is_not_rated_and_is_played_again(hub, tmp_path):
    from history.restore import DatasetPull
    from history.writers import Writers
    from matchmaking.service.space import Arena

    # long enough that the match is seen in its middle: progress is reported once a second,
    # and 48 ticks of these teams took under half a second
    settings = ArenaSettings(data_dir=tmp_path / "data", hub_endpoint=hub.endpoint, match_horizon=600, workers=1,
                             pve_matches_per_stage=1, seed_examples=False, audit_minutes=0)
    arena = Arena.start(settings, schedule=False)
    try:
        m = arena.matchmaker
        assert m.sync() == 1
        m.validate()
        (validation,) = arena.store.results()  # recorded with its replay and log
        played: list[int] = []
        round_ = threading.Thread(target=lambda: played.append(m.play_pve()))
        round_.start()
        deadline = time.monotonic() + 60
        while not any(live.tick >= 3 for live in m.live()):  # mid-match: a few ticks in
            assert time.monotonic() < deadline and round_.is_alive(), "the PvE match never got going"
            time.sleep(0.05)
        (pid,) = m.executor.worker_pids()
        os.kill(pid, signal.SIGKILL)
        round_.join(timeout=120)
        assert not round_.is_alive()
        assert played == [1]  # the match was played again within the round, and recorded once

        (incident,) = IncidentLog(incident_log_path(settings.history_dir)).read()
        assert incident.cause is Cause.WORKER_DIED and incident.replanned and incident.attempt == 1
        assert f"worker {pid} killed by SIGKILL" in incident.message
        assert incident.track == "pve" and incident.stage == 1 and incident.submissions[0].startswith("alice/gatherer@")
        (result,) = [r for r in arena.store.results() if r.match_id != validation.match_id]  # the lost attempt left nothing
        assert result.match_id == incident.match_id and result.seed == incident.seed  # the same match, played again
        assert datetime.fromisoformat(result.started_at).replace(microsecond=0) >= datetime.fromisoformat(incident.failed_at)
        assert len(arena.store.table()) == 16 + 2

        # pushed with the dataset, and pulled by another writer's empty folder
        assert arena.mirror.push_now()
        files = HfApi(endpoint=hub.endpoint, token="t").list_repo_files(settings.history_repo, repo_type="dataset")
        assert f"incidents/incidents-{arena.writers.writer}.jsonl" in files
        other = tmp_path / "other"
        pull = DatasetPull(HistoryStore(other, writer="w0000000000ff"), api=arena.api, repo_id=settings.history_repo,
                           writers=Writers(other, "w0000000000ff", ttl_s=60))
        pull.run()
        assert IncidentLog(incident_log_path(other)).read() == [incident]
        assert "worker-died" in incidents_markdown([incident]) and "none given up" in incidents_markdown([incident])
    finally:
        arena.stop()
