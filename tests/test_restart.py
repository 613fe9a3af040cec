"""Restart anywhere: the history dataset on the Hub is the Arena's state, and the data folder
only its cache. Every test here talks to a `python -m localhub` process over HTTP, as a
Space talks to huggingface.co (`history.restore`, `history.writers`, `history.journal`)."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from arena.lifecycle import StageFigures, Status, pve_progress
from arena.revision import Revision
from arena.settings import ArenaSettings
from history.mirror import own_patterns
from history.statuses import StatusLog
from history.store import HistoryStore
from leaderboard import tables
from leaderboard.refresher import StandingsRefresher
from leaderboard.standings.fits import fit_path
from tests_support import (
    EXAMPLES,
    NEWCOMER,
    TESTS,
    ServedHub,
    hub_dataset_files,
    hub_match_ids_by_shard,
    hub_status_events,
    push_policy,
    record_lifecycle,
)

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]

REPO = "nmmo-arena/match-history"
SECRET = "restart-test-map-secret"


@pytest.fixture()
def served(tmp_path, monkeypatch):
    hub = ServedHub(tmp_path / "hub")
    monkeypatch.setenv("HF_TOKEN", hub.token)  # the Space's own token, as a Space secret gives it
    yield hub
    hub.stop()


def _settings(data: Path, hub: ServedHub, **changes) -> ArenaSettings:
    values = dict(data_dir=data, hub_endpoint=hub.endpoint, match_horizon=16, workers=2, pve_matches_per_stage=3,
                  qualify_achievement=0.0, next_stage_top1=0.5, seed_examples=False, map_secret=SECRET,
                  audit_minutes=0, model_cards=False, push_every_minutes=0.05)
    values.update(changes)
    return ArenaSettings(**values)


def _tables(arena) -> tuple:
    """The PvE and PvP tables and the statuses, as the Space shows them from what it can
    publish (its Plackett-Luce fit too, as app.py's refresher does), and whose fit the
    ratings are."""
    writer = arena.writers.writer
    refresher = StandingsRefresher(arena.store, statuses=arena.statuses.states, hub_url="http://hub", bootstrap=0,
                                   published=arena.mirror.published,
                                   publish_fit=(fit_path(arena.store.root, writer), writer))
    standings = refresher.refresh()
    pve = tables.pve_table(standings, arena.statuses.states(), hub_url="http://hub")
    pvp = tables.pvp_table(standings, hub_url="http://hub")
    states = sorted((s.id, s.status.value, s.reason, s.pve) for s in arena.statuses.states())
    return pve, pvp, states, standings.matches, standings.mle_writer


def _match_ids(store: HistoryStore) -> set[str]:
    return set(store.table().column("match_id").to_pylist())


def test_a_space_restarted_on_an_empty_disk_loses_nothing_and_plays_nothing_twice(served, tmp_path):
    from matchmaking.service.space import Arena

    api = served.api()
    push_policy(api, "alice/gatherer", EXAMPLES / "gatherer")
    push_policy(api, "bob/wanderer", EXAMPLES / "wanderer")
    a = Arena.start(_settings(tmp_path / "a", served), schedule=False)
    try:
        m = a.matchmaker
        assert m.sync() == 2
        m.validate()
        while m.play_pve():
            pass
        assert a.statuses.with_status(Status.QUALIFIED), [s.reason for s in a.statuses.states()]
        assert m.play_pvp() == 2
        push_policy(api, "carol/explorer", EXAMPLES / "explorer")  # pushed late: A plays 1 of its 3 stage-1 matches
        assert m.sync() == 1
        m.validate()
        m.settings = replace(m.settings, pve_matches_per_round=1)
        assert m.play_pve() == 1  # one match cannot decide a Top1Ratio bar of 0.5 over 3: more are owed
        m.flush()
        assert a.mirror.push_now()
        before = _tables(a)
        played_by_a = _match_ids(a.store)
    finally:
        a.stop()  # a clean stop: the last push, the heartbeat says stopped
    events_before = set(hub_status_events(api, REPO))
    assert before[3] == len(played_by_a) >= 2 + 2 + 2

    b = Arena.start(_settings(tmp_path / "b", served), schedule=False)  # a wiped disk
    try:
        assert b.writers.writer != a.writers.writer and b.writers.leads()
        after = _tables(b)
        assert after[0].equals(before[0]), (after[0], before[0])  # the PvE table, status and reasons included
        assert after[1].equals(before[1])  # the PvP table: every rating the same
        assert after[2] == before[2] and after[3] == before[3]
        assert (before[4], after[4]) == ("", a.writers.writer)  # A's fit, pushed at its stop, shown at once
        assert _match_ids(b.store) == played_by_a
        assert b.store.replay_path(next(iter(played_by_a))) is None  # no replay copied ...
        some = next(iter(played_by_a))
        started = next(r.started_at for r in b.store.results() if r.match_id == some)
        assert b.store.replay(some, started_at=started)  # ... each read from the dataset when opened
        assert b.matchmaker.sync() == 0 and b.matchmaker.validate() == 0  # no revision validated again
        owed = {r.match_id for r in b.store.results()}
        while b.matchmaker.play_pve():  # only the PvE matches still owed ...
            pass
        b.matchmaker.flush()
        assert b.mirror.push_now()
        results = b.store.results()
        played_by_b = {r.match_id for r in results} - owed
        assert owed == played_by_a and played_by_b and not played_by_b & played_by_a  # ... none played again
        per_stage = Counter((r.teams[0].policy_id, r.stage) for r in results if r.track == "pve")
        assert max(per_stage.values()) <= 3 and 2 <= per_stage[("carol/explorer", 1)] <= 3
        assert {r.teams[0].policy_id for r in results if r.match_id in played_by_b} == {"carol/explorer"}
    finally:
        b.stop()
    events_after = set(hub_status_events(api, REPO))
    assert events_before <= events_after and len(events_after) > len(events_before)
    shards = hub_match_ids_by_shard(api, REPO)
    counts = Counter(m for ids in shards.values() for m in ids)
    assert set(counts.values()) == {1} and set(counts) == played_by_a | played_by_b  # every match once in the dataset
    assert {p.rsplit("-", 1)[-1].split(".")[0] for p in shards} <= {a.writers.writer, b.writers.writer}


def _synthetic_dataset(served: ServedHub, folder: Path, *, shards: int, per_shard: int, writer: str) -> set[str]:
    """A history of `shards` flushed shards of `per_shard` synthetic matches, pushed by `writer` as
    its Space would push it (its own files, one commit)."""
    from tests_synthetic import arena_history

    store = HistoryStore(folder, writer=writer, legacy=False)
    history = arena_history(matches=shards * per_shard, sets=0)
    history = [r for r in history if not r.set_id][: shards * per_shard]
    for start in range(0, len(history), per_shard):
        for result in history[start:start + per_shard]:
            store.record(result)
        store.flush()
    StatusLog(folder / "submissions" / "statuses.jsonl", writer=writer).record(Revision("x/one", "a" * 40), Status.QUEUED, "seen")
    api = served.api()
    api.create_repo(REPO, repo_type="dataset", exist_ok=True)
    api.upload_folder(repo_id=REPO, repo_type="dataset", folder_path=folder, allow_patterns=own_patterns(writer))
    return {r.match_id for r in history}


def test_a_restore_killed_midway_finishes_at_the_next_start(served, tmp_path):
    ids = _synthetic_dataset(served, tmp_path / "old", shards=120, per_shard=2, writer="w0000000000aa")
    data = tmp_path / "data"
    script = TESTS / "scripts" / "restore_space.py"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)])}

    def start() -> subprocess.Popen:
        return subprocess.Popen([sys.executable, str(script), str(data), served.endpoint], stdout=subprocess.PIPE,
                                text=True, env=env, start_new_session=True)

    proc = start()
    killed_at = None
    for line in proc.stdout:
        if line.startswith("progress"):
            done, total = map(int, line.split()[1:3])
            if 5 <= done < total:
                os.killpg(proc.pid, signal.SIGKILL)  # the Space, mid-restore
                killed_at = done
                break
    proc.wait(timeout=60)
    assert killed_at is not None, "the restore finished before it could be killed"
    left = HistoryStore(data / "history", writer="w0000000000bb", legacy=False).shard_names()
    assert killed_at <= len(left) < 120  # whole shards only: each one read back whole
    proc = start()
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out[-2000:]
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["matches"] == len(ids) and summary["shards"] == 120
    assert summary["restored_now"] == len(ids) - sum(2 for _ in left)  # only what the first run had not brought
    store = HistoryStore(data / "history")
    for shard in store.shards():
        pq.read_table(shard)  # every one whole
    assert set(store.table().column("match_id").to_pylist()) == ids
    assert not (data / "history" / ".restore").exists() or not any((data / "history" / ".restore").rglob("*.parquet"))
    assert summary["statuses"] == 1


def test_a_dataset_with_the_single_status_file_is_migrated_without_losing_an_event(served, tmp_path):
    """An Arena from before writers: `submissions/statuses.jsonl` on the Hub and in its folder.
    Upgraded in place it never rewrites that file; a Space on a fresh disk reads every event once."""
    from matchmaking.service.space import Arena

    api = served.api()
    old = tmp_path / "old"
    log = StatusLog(old / "history" / "submissions" / "statuses.jsonl")  # the single file
    for k in range(3):
        record_lifecycle(log, f"x/p{k}", f"{k}" * 40, Status.EVALUATED, "below the bar")
    api.create_repo(REPO, repo_type="dataset", exist_ok=True)
    api.upload_folder(repo_id=REPO, repo_type="dataset", folder_path=old / "history")
    single = next(f for f in api.list_repo_tree(REPO, path_in_repo="submissions", repo_type="dataset")
                  if f.path == "submissions/statuses.jsonl")
    log.record(Revision("x/p0", "0" * 40), Status.ERROR, "faulty: recorded after the last push")  # not on the Hub yet

    upgraded = Arena.start(_settings(old, served), schedule=False)
    try:
        mine = f"submissions/statuses-{upgraded.writers.writer}.jsonl"
        assert upgraded.statuses.get(Revision("x/p0", "0" * 40)).status is Status.ERROR
        upgraded.matchmaker.flush()
        assert upgraded.mirror.push_now()
    finally:
        upgraded.stop()
    files = {f.path: f for f in api.list_repo_tree(REPO, path_in_repo="submissions", repo_type="dataset")}
    assert files["submissions/statuses.jsonl"].blob_id == single.blob_id  # never rewritten
    assert mine in files

    fresh = Arena.start(_settings(tmp_path / "fresh", served), schedule=False)
    try:
        states = {s.id.policy_id: s.status for s in fresh.statuses.states()}
        assert states == {"x/p0": Status.ERROR, "x/p1": Status.EVALUATED, "x/p2": Status.EVALUATED}
        events = fresh.statuses.journal.read()
        assert len(events) == len({json.dumps(e, sort_keys=True) for e in events}) == 3 * 4 + 1  # each once
    finally:
        fresh.stop()


def _space(data: Path, served: ServedHub, seconds: float) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)]), "HF_TOKEN": served.token}
    return subprocess.Popen([sys.executable, str(TESTS / "scripts" / "space_writer.py"), str(data), served.endpoint,
                             str(seconds)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                            start_new_session=True)


def _wait_for(proc: subprocess.Popen, word: str) -> str:
    for line in proc.stdout:
        if line.startswith(word):
            return line
    raise AssertionError(f"the Space ended before it said {word!r}")


def test_two_spaces_on_one_dataset_play_every_match_once_and_record_every_event_once(served, tmp_path):
    """The old and the new container of a rebuild, side by side: the old one leads (PvE,
    validation); the new one plays PvP meanwhile and leads once the old one stops, taking
    up the revisions pushed after."""
    api = served.api()
    push_policy(api, "alice/gatherer", EXAMPLES / "gatherer")
    push_policy(api, "bob/wanderer", EXAMPLES / "wanderer")
    old = _space(tmp_path / "old", served, 45)
    old_writer = _wait_for(old, "ready").split()[1]
    new = _space(tmp_path / "new", served, 200)
    new_writer = _wait_for(new, "ready").split()[1]
    push_policy(api, "carol/explorer", EXAMPLES / "explorer")  # while both run: the leader takes it
    old_out, _ = old.communicate(timeout=180)
    stopped_at = float(next(line for line in old_out.splitlines() if line.startswith("stopped")).split()[2])
    push_policy(api, "dave/late", NEWCOMER)  # after the old one stopped: the new one leads (a policy of its own: no copy)
    deadline = time.time() + 150
    while time.time() < deadline:
        events = [json.loads(e) for e in hub_status_events(api, REPO)]
        if any(e["repo_id"] == "dave/late" and e["status"] in ("evaluated", "qualified") for e in events):
            break
        time.sleep(3)
    new.terminate()  # SIGTERM, as a Space is stopped: a clean stop
    try:
        new_out, _ = new.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(new.pid, signal.SIGKILL)
        new_out, _ = new.communicate()

    def matches(out: str) -> dict[str, tuple[str, str]]:
        return {p[1]: (p[2], p[3]) for p in (line.split() for line in out.splitlines()) if p and p[0] == "match"}

    by_old, by_new = matches(old_out), matches(new_out)
    assert by_old and by_new and not set(by_old) & set(by_new)  # no match played by both
    shards = hub_match_ids_by_shard(api, REPO)
    counts = Counter(m for ids in shards.values() for m in ids)
    assert set(counts.values()) == {1}  # every match once in the dataset ...
    assert set(by_old) <= set(counts)  # ... and every match the old one played (its last push on its clean stop)
    # the new one played no PvE while the old one led
    from datetime import datetime

    early = [m for m, (track, started) in by_new.items()
             if track == "pve" and datetime.fromisoformat(started).timestamp() < stopped_at - 1]
    assert not early, early
    events = hub_status_events(api, REPO)
    assert len(events) == len(set(events))  # every event once
    decoded = [json.loads(e) for e in events]
    for repo in ("alice/gatherer", "bob/wanderer", "carol/explorer", "dave/late"):
        mine = [e for e in decoded if e["repo_id"] == repo]
        assert [e["status"] for e in mine].count("queued") == 1, (repo, mine)  # discovered by one writer, once
        assert [e["status"] for e in mine].count("evaluating") == 1, (repo, mine)  # validated once
    assert any(e["repo_id"] == "dave/late" and e["status"] in ("evaluated", "qualified") for e in decoded)
    writers = {p.rsplit("-", 1)[-1].split(".")[0] for p in shards}
    assert writers <= {old_writer, new_writer}


def _lines(proc: subprocess.Popen, into: list[str]) -> threading.Thread:
    """Read a Space's stdout into `into`, line by line, in the background."""
    def read() -> None:
        for line in proc.stdout:
            into.append(line.rstrip("\n"))

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def test_a_leader_killed_as_it_pushes_and_restarted_loses_nothing_and_doubles_nothing(served, tmp_path):
    """Two Spaces on one dataset; the leader is killed (SIGKILL) as a push starts, with
    matches only on its disk, and restarted on that disk. It keeps the lead (its heartbeat is
    still alive), pushes what it had recorded before anything else, and the follower never
    plays PvE meanwhile. Read from the Hub's files alone, afterwards: every match once, no
    PvE seed played twice, no revision's status moving backwards, no loose replay or log of
    a match another writer's shard holds."""
    api = served.api()
    repos = {"alice/gatherer": "gatherer", "bob/wanderer": "wanderer", "carol/explorer": "explorer", "dave/forager": "gatherer"}
    for repo, example in repos.items():
        push_policy(api, repo, EXAMPLES / example)
    a_lines: list[str] = []
    a = _space(tmp_path / "a", served, 600)
    a_writer = _wait_for(a, "ready").split()[1]
    _lines(a, a_lines)
    b_lines: list[str] = []
    b = _space(tmp_path / "b", served, 600)
    b_writer = _wait_for(b, "ready").split()[1]
    _lines(b, b_lines)
    deadline = time.time() + 120
    while time.time() < deadline:  # some PvE recorded, then the next push starts: kill it there
        recorded = [line for line in a_lines if line.startswith("match") and " pve " in line]
        if recorded and a_lines and a_lines[-1] == "pushing":
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"the leader recorded no PvE before a push: {a_lines[-5:]}")
    os.killpg(a.pid, signal.SIGKILL)
    a.wait()
    killed_at = time.time()
    again = _space(tmp_path / "a", served, 600)  # on its own disk
    assert _wait_for(again, "ready").split()[1] == a_writer
    again_lines: list[str] = []
    _lines(again, again_lines)
    time.sleep(40)
    for proc in (again, b):
        proc.terminate()  # a clean stop: a last compaction and push
    for proc in (again, b):
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
    # the follower played no PvE while the leader was away
    by_b = [line.split() for line in b_lines if line.startswith("match")]
    assert not [m for m in by_b if m[2] == "pve"], by_b
    # the Hub's files alone
    shards = hub_match_ids_by_shard(api, REPO)
    counts = Counter(m for ids in shards.values() for m in ids)
    assert counts and set(counts.values()) == {1}, [m for m, n in counts.items() if n > 1]  # every match once
    recorded_before_kill = {line.split()[1] for line in a_lines if line.startswith("match")}
    assert recorded_before_kill <= set(counts)  # nothing the killed leader had recorded is lost
    rows = [r for path, data in hub_dataset_files(api, REPO, "data").items() if path.endswith(".parquet")
            for r in pq.read_table(io.BytesIO(data)).to_pylist()]
    pve = {(r["policy_id"], r["revision"], r["stage"], r["seed"]) for r in rows if r["track"] == "pve" and r["slot"] == 0}
    assert len(pve) == len({r["match_id"] for r in rows if r["track"] == "pve"})  # no PvE seed twice
    owner = {m: path.rsplit("-", 1)[-1].split(".")[0] for path, ids in shards.items() for m in ids}
    loose = [path for path in api.list_repo_files(REPO, repo_type="dataset") if "/loose/" in path]
    strays = [p for p in loose if owner.get(p.rsplit("/", 1)[-1].split(".")[0]) not in (None, p.rsplit("/", 1)[-1].split(".")[1])]
    assert not strays, strays  # no loose file of a match another writer's shard holds
    events = sorted((json.loads(e) for e in hub_status_events(api, REPO)), key=lambda e: e["at"])
    for repo in repos:
        progress = [pve_progress(tuple(StageFigures(**f) for f in e["pve"])) for e in events
                    if e["repo_id"] == repo and e.get("pve")]
        assert progress == sorted(progress), (repo, progress)  # no status moving backwards
    assert {owner[m] for m in counts} <= {a_writer, b_writer} and killed_at
