"""The matchmaker end to end on the local Hub: statuses, PvE, PvP, kill -9 and restart, Ray."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest
from huggingface_hub import HfApi

from arena.lifecycle import Status
from arena.ratings import outcomes, trueskill_ratings
from arena.revision import Revision
from arena.settings import ArenaSettings
from history.statuses import StatusLog
from history.store import HistoryStore
from leaderboard.standings import compute
from localhub import LocalHub
from matchmaking.engine.config import MatchConfig
from tests_support import EXAMPLES, POLICIES, TESTS, patient, push_policy

pytestmark = pytest.mark.slow


@pytest.fixture()
def hub(tmp_path):
    hub = LocalHub(tmp_path / "hub").start()
    api = HfApi(endpoint=hub.endpoint, token="t")
    push_policy(api, "alice/gatherer", EXAMPLES / "gatherer")
    # a team that never moves scores 0 on every map: a random walker (the `wanderer` example)
    # reaches travel's first tier on some, and the seeds change with each run's commit shas
    push_policy(api, "bob/idler", POLICIES / "adversarial" / "idle")
    push_policy(api, "carol/crashes", POLICIES / "late_crash")
    yield hub
    hub.stop()


def test_rounds_take_submissions_through_pve_to_pvp(hub, tmp_path):
    from matchmaking.service.space import Arena

    settings = ArenaSettings(
        data_dir=tmp_path / "data", hub_endpoint=hub.endpoint, match_horizon=80, workers=2, next_stage_top1=0.0,
        pve_matches_per_stage=2, qualify_achievement=1.0, seed_examples=False, error_after_faulty_matches=2,
    )
    arena = Arena.start(settings, schedule=False)
    try:
        m = arena.matchmaker
        assert m.sync() == 3
        m.validate()
        states = {s.id.policy_id: s for s in arena.statuses.states()}
        assert states["carol/crashes"].status is Status.EVALUATING  # passes the 16-tick validation, crashes at tick 21
        queue = m.queue()  # before any match: every revision placed, in push order, no duration to forecast with
        assert sorted(e.place for e in queue.values()) == [1, 2, 3] and all(e.eta_s is None for e in queue.values())
        assert {e.id.policy_id for e in queue.values()} == {"alice/gatherer", "bob/idler", "carol/crashes"}
        validation = [r for r in arena.store.results() if r.track == "validation"]  # recorded, with replay and log
        assert sorted(r.teams[0].policy_id for r in validation) == ["alice/gatherer", "bob/idler", "carol/crashes"]
        assert all(arena.store.replay(r.match_id) and arena.store.logs(r.match_id) for r in validation)
        assert m.play_pve() == 2  # one match per worker, each a first match: two revisions, not one revision's two
        first = [r.teams[0].policy_id for r in arena.store.results() if r.track == "pve"]
        assert len(set(first)) == 2, first
        queue = m.queue()
        assert all(e.eta_s is not None and e.eta_s > 0 for e in queue.values() if e.matches_left)  # timed from those two
        for _ in range(10):
            if m.play_pve() == 0:
                break
        states = {s.id.policy_id: s for s in arena.statuses.states()}
        assert states["alice/gatherer"].status is Status.QUALIFIED, states["alice/gatherer"].reason
        assert states["bob/idler"].status is Status.EVALUATED
        assert "below the 1 that qualifies" in states["bob/idler"].reason
        assert states["carol/crashes"].status is Status.ERROR  # ... so matches found it out
        assert "CRASH" in states["carol/crashes"].reason and "push a new commit" in states["carol/crashes"].reason
        assert m.play_pvp() == 2
        m.flush()
        results = arena.store.results()
        pvp = [r for r in results if r.track == "pvp"]
        assert len(pvp) == 2 and all(len(r.teams) == 16 for r in pvp)
        assert all(any(t.policy_id == "alice/gatherer" for t in r.teams) for r in pvp)  # the one qualified, filled with anchors
        assert all(arena.store.replay_path(r.match_id) for r in results)
        for r in results:  # each submitted team's log beside the replay; built-ins have none
            submitted = [t.slot for t in r.teams if not t.policy_id.startswith("builtin:")]
            assert [log.slot for log in arena.store.logs(r.match_id)] == submitted
        from arena.replay import read as read_replay

        crashed = [r for r in results if r.track != "validation" and any(t.policy_id == "carol/crashes" for t in r.teams)]
        for r in crashed:  # the crash is on the replay's timeline, at its tick
            slot = next(t.slot for t in r.teams if t.policy_id == "carol/crashes")
            header, _ = read_replay(arena.store.replay(r.match_id))
            assert [f[:3] for f in header["faults"] if f[1] == slot] == [[21, slot, "CRASH"]]
        pve = [r for r in results if r.track == "pve" and r.teams[0].policy_id == "alice/gatherer"]
        assert set(Counter(r.stage for r in pve)) == {1, 2, 3}  # every stage opens (threshold 0 here) ...
        assert all(n <= 2 for n in Counter(r.stage for r in pve).values())  # ... each ending when decided
    finally:
        arena.stop()


def test_kill_9_mid_match_and_mid_write_then_restart(hub, tmp_path):
    data = tmp_path / "data"
    script = TESTS / "scripts" / "matchmaker_forever.py"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)])}
    rng = random.Random(3)
    recorded: list[str] = []
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, str(script), str(data), "24", hub.endpoint], stdout=subprocess.PIPE, text=True, env=env, start_new_session=True)
        lines: list[str] = []
        first = threading.Event()

        def read(out=proc.stdout, lines=lines, first=first) -> None:
            for line in out:
                lines.append(line.strip())
                first.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        # a random moment once matches are being recorded (waiting for the first rather than
        # a fixed 25-45 s: the same kills, a minute less of sleeping)
        assert first.wait(180), "no match recorded within 3 minutes of the start"
        time.sleep(rng.uniform(0.5, 8))
        os.killpg(proc.pid, signal.SIGKILL)  # the matchmaker and its match workers, mid-whatever
        proc.wait()
        reader.join(10)
        recorded += [line for line in lines if line]
    store = HistoryStore(data / "history")  # the restart's recovery
    table = store.table()
    rows = Counter(table.column("match_id").to_pylist())
    assert set(recorded) <= set(rows)  # nothing lost
    tracks = dict(zip(table.column("match_id").to_pylist(), table.column("track").to_pylist()))
    assert {rows[m] for m in rows if tracks[m] != "validation"} == {16}  # nothing doubled, no partial match
    assert {rows[m] for m in rows if tracks[m] == "validation"} <= {2}  # the validation matches: the revision and forage
    assert len(recorded) == len(set(recorded))  # no match recorded twice across restarts
    results = store.results()
    per_stage = Counter((r.teams[0].policy_id, r.stage) for r in results if r.track == "pve")
    assert max(per_stage.values()) <= 3  # PvE plans replayed, never doubled
    full = trueskill_ratings(outcomes(results))
    standings = compute(table.to_pandas(), bootstrap=0)
    assert standings.trueskill == full  # ratings equal a full recomputation
    registry = StatusLog(data / "history" / "submissions" / "statuses.jsonl")
    assert {s.id.policy_id for s in registry.states()} == {"alice/gatherer", "bob/idler", "carol/crashes"}


@pytest.mark.cluster
@pytest.mark.xdist_group("ray")
def test_ray_executor_gives_the_same_results(hub, tmp_path):
    """A local Ray runtime plays what the local pool plays, each from its own fetch of the
    commit (the Ray task from the node's cache; `tests/test_ray_cluster.py` for real nodes)."""
    pytest.importorskip("ray")
    from arena.policies import PolicyRef, builtin
    from arena.rules import stage_opponents
    from matchmaking.engine.match import MatchSpec, policies_for
    from matchmaking.sandbox.host import sandboxed_host
    from matchmaking.service.executor import LocalExecutor, RayExecutor

    api = HfApi(endpoint=hub.endpoint, token="t")
    sha = str(api.model_info("alice/gatherer").sha)
    download = tmp_path / "download"
    api.snapshot_download("alice/gatherer", revision=sha, local_dir=download)
    lineup = policies_for(PolicyRef(Revision("alice/gatherer", sha), path=download), [builtin(n) for n in stage_opponents(1)])
    specs = [MatchSpec(seed=s, policies=lineup, config=patient(MatchConfig(horizon=16))) for s in (1, 2)]  # no tick times out
    ray_executor = RayExecutor(num_cpus=2, hub=hub.endpoint, host_factory=sandboxed_host)
    try:
        on_ray = {o.spec.seed: o for o in ray_executor.run(specs)}
    finally:
        ray_executor.close()
    local_executor = LocalExecutor(2, host_factory=sandboxed_host)
    try:
        here = {o.spec.seed: o for o in local_executor.run(specs)}
    finally:
        local_executor.close()
    for seed in (1, 2):
        assert on_ray[seed].error is None, on_ray[seed].error
        assert on_ray[seed].node and on_ray[seed].spec == specs[seed - 1]
        assert on_ray[seed].result.outcome() == here[seed].result.outcome()
        assert on_ray[seed].replay and here[seed].replay


def test_kill_9_while_validating_then_restart_resumes_every_revision(hub, tmp_path):
    """A Space killed mid-validation leaves revisions `validating`; the next start resumes
    them, and every revision reaches a final or evaluating state."""
    from arena.lifecycle import FINAL
    from matchmaking.service.space import Arena

    api = HfApi(endpoint=hub.endpoint, token="t")
    push_policy(api, "dora/slow", POLICIES / "slow_start")
    data = tmp_path / "data"
    log = data / "history" / "submissions" / "statuses.jsonl"  # the log's name: each writer appends to statuses-<writer>.jsonl

    def lines() -> list[str]:
        return [line for path in sorted(log.parent.glob("statuses*.jsonl")) for line in path.read_text().splitlines()]

    script = TESTS / "scripts" / "matchmaker_forever.py"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)])}
    proc = subprocess.Popen([sys.executable, str(script), str(data), "16", hub.endpoint], stdout=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # until dora/slow is in its validation match
            if any('"dora/slow"' in line and "playing a validation match" in line for line in lines()):
                break
            time.sleep(0.2)
        else:
            raise AssertionError("dora/slow never reached its validation match")
        time.sleep(2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    before = {s.id.policy_id: s.status for s in StatusLog(log).states()}
    assert before["dora/slow"] is Status.VALIDATING

    settings = ArenaSettings(data_dir=data, hub_endpoint=hub.endpoint, match_horizon=16, seed_examples=False)
    arena = Arena.start(settings, schedule=False)
    try:
        arena.matchmaker.validate()
        after = {s.id.policy_id: s for s in arena.statuses.states()}
    finally:
        arena.stop()
    assert set(after) == {"alice/gatherer", "bob/idler", "carol/crashes", "dora/slow"}
    for state in after.values():
        assert state.status in FINAL or state.status in (Status.EVALUATING, Status.QUALIFIED, Status.EVALUATED), (state.id.policy_id, state.status)
    assert after["dora/slow"].status is Status.EVALUATING
    reasons = [json.loads(line)["reason"] for line in lines() if '"dora/slow"' in line]
    assert "its validation was interrupted (the Space restarted); validating again" in reasons
