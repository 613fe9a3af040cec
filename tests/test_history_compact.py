"""Compaction: a history that stays within the Hub's limits (one shard and one bundle of
each kind per day), every match exactly once at every moment, through kill -9 at any
point, and on the Hub in one commit per compaction (the embedded Hub, over real HTTP)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from arena import logs as logs_format
from arena import replay as replay_format
from arena.schema import rows as schema_rows
from arena.simulation import Population, random_history
from bench.history_growth import synthetic_logs, synthetic_replay
from history.mirror import HubMirror
from history.remote import HubFiles
from history.store import REPLAYS, TEAM_SCHEMA, HistoryReader, HistoryStore
from tests_support import TESTS

START = datetime(2026, 12, 1, 20, 0, tzinfo=timezone.utc)
SCRIPT = TESTS / "scripts" / "compact_history.py"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)])}


class Clock:
    def __init__(self, at: datetime = START):
        self.t = at.timestamp()

    def __call__(self) -> float:
        return self.t


def matches(n: int, *, seed: int = 0, first: int = 0, every_minutes: float = 30.0):
    """`n` matches started every `every_minutes` from START (so they span two days)."""
    played = random_history(Population.random(30, seed=seed), n, seed=seed)
    return [replace(m, match_id=f"c{seed}-{first + k:05d}",
                    started_at=(START + timedelta(minutes=every_minutes * (first + k))).isoformat(timespec="seconds"))
            for k, m in enumerate(played)]


def record(store: HistoryStore, clock: Clock, played, *, per_flush: int = 3) -> None:
    for k, m in enumerate(played):
        clock.t = datetime.fromisoformat(m.started_at).timestamp() + 60
        assert store.record(m, replay=synthetic_replay(m.match_id), logs=synthetic_logs(m.match_id))
        if k % per_flush == per_flush - 1:
            store.flush()
    store.flush()


def files(root: Path, folder: str) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in (root / folder).rglob("*") if p.is_file())


def assert_whole(reader: HistoryReader, played) -> None:
    """Every match once, with its replay and logs as recorded."""
    ids = [m.match_id for m in played]
    assert sorted(r.match_id for r in reader.results()) == sorted(ids)
    assert reader.table().num_rows == 16 * len(ids)
    for m in played:  # by id alone, and as the viewer asks (with the match's start)
        assert reader.replay(m.match_id) == synthetic_replay(m.match_id)
        assert reader.replay(m.match_id, started_at=m.started_at) == synthetic_replay(m.match_id)
        assert logs_format.encode(m.match_id, reader.logs(m.match_id, started_at=m.started_at)) == synthetic_logs(m.match_id)


def raw_rows(root: Path) -> int:
    """Rows of every shard on disk, duplicates not dropped."""
    return sum(pq.read_metadata(p).num_rows for p in HistoryReader(root).shards())


def test_a_day_becomes_one_shard_and_one_bundle_of_each_kind(tmp_path):
    clock = Clock()
    store = HistoryStore(tmp_path, clock=clock)
    played = matches(20)  # 20:00 on the 1st to 05:30 on the 2nd
    record(store, clock, played)
    before = store.results()
    assert len(store.shards()) == 7 and len(files(tmp_path, "replays")) == 20
    report = store.compact()
    assert len(report.plans) == 1 and report.plans[0].matches == 20
    assert store.results() == before
    assert store.shard_names() == [f"2026/12/0{d}/{n}" for d in (1, 2) for n in
                                   [p.name for p in (store.data / f"2026/12/0{d}").iterdir()]]
    assert [name.split("/")[-1].split("-")[0] for name in store.shard_names()] == ["day", "day"]
    assert [p.parent.relative_to(store.replays).as_posix() for p in store.bundles()] == ["2026/12/02", "2026/12/01"]
    assert files(tmp_path, "replays") == sorted(p.relative_to(tmp_path).as_posix() for p in store.bundles())
    assert len(files(tmp_path, "logs")) == 2 and raw_rows(tmp_path) == 16 * 20
    assert_whole(store, played)
    replay_format.read(store.replay(played[0].match_id))  # a bundled replay plays
    # a later compaction folds the day's shard in, and adds a bundle
    more = matches(6, first=20)
    record(store, clock, more)
    store.compact()
    assert len(store.shards()) == 2 and len(store.bundles()) == 3
    assert_whole(store, played + more)
    assert store.compact().plans == []  # nothing left to compact
    assert_whole(HistoryStore(tmp_path), played + more)  # a restart reads the same


def test_the_flat_layout_still_reads_and_compaction_moves_it_into_day_folders(tmp_path):
    played = matches(8, seed=1)
    (tmp_path / "data").mkdir(parents=True)
    (tmp_path / "replays").mkdir()
    (tmp_path / "logs").mkdir()
    from arena.schema import rows

    for k in (0, 4):  # as the code before day folders wrote it: flat, one file per match
        table = pa.Table.from_pylist([r for m in played[k:k + 4] for r in rows(m)], schema=TEAM_SCHEMA)
        pq.write_table(table, tmp_path / "data" / f"teams-20261201T00000{k}000000-0000000{k}.parquet")
    for m in played:
        (tmp_path / "replays" / f"{m.match_id}.replay").write_bytes(synthetic_replay(m.match_id))
        (tmp_path / "logs" / f"{m.match_id}.json.gz").write_bytes(synthetic_logs(m.match_id))
    (tmp_path / "README.md").write_text("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n"
                                        "    path: data/*.parquet\n---\n")
    assert_whole(HistoryReader(tmp_path), played)
    store = HistoryStore(tmp_path)
    assert "path: data/**/*.parquet" in (tmp_path / "README.md").read_text()  # the card follows the layout
    store.compact()
    assert not list((tmp_path / "data").glob("*.parquet")) and not list((tmp_path / "replays").glob("*.replay"))
    assert not list((tmp_path / "logs").glob("*.json.gz"))
    assert_whole(store, played)


def test_readers_never_lose_or_double_a_match_while_compactions_run(tmp_path):
    clock = Clock()
    store = HistoryStore(tmp_path, clock=clock)
    first = matches(30, seed=2, every_minutes=20)
    record(store, clock, first, per_flush=2)
    known = {m.match_id for m in first}
    seen: list[str] = []
    stop = threading.Event()

    def read() -> None:
        reader = HistoryReader(tmp_path)
        rng = random.Random(3)
        while not stop.is_set():
            table = reader.table()
            ids = table.column("match_id").to_pylist()
            if len(ids) != len(set(zip(ids, table.column("slot").to_pylist()))) or not known <= set(ids):
                seen.append(f"table: {len(ids)} rows, missing {sorted(known - set(ids))[:3]}")
            shards = reader.shard_table()
            if not known <= set(shards.column("match_id").to_pylist()):
                seen.append("shard_table lost matches")
            match_id = rng.choice(sorted(known))
            if reader.replay(match_id) != synthetic_replay(match_id) or reader.logs(match_id) is None:
                seen.append(f"replay or logs of {match_id} not found")

    threads = [threading.Thread(target=read) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        for round_ in range(6):  # more matches, more shards, compacted while the readers read
            record(store, clock, matches(6, seed=2, first=30 + 6 * round_, every_minutes=20), per_flush=2)
            store.compact()
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert seen == []
    assert len(store.results()) == 66 and raw_rows(tmp_path) == 16 * 66


@pytest.mark.parametrize("stage", ["journal", "writing", "written", "published", "deleting"])
def test_a_compaction_killed_at_any_stage_reads_back_whole_and_the_next_finishes_it(tmp_path, stage):
    clock = Clock()
    store = HistoryStore(tmp_path, clock=clock)
    played = matches(12, seed=4, every_minutes=60)
    record(store, clock, played)
    run = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path), "once", stage], env=ENV,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == -signal.SIGKILL, run.stderr[-2000:]
    assert len(list((tmp_path / "compaction").glob("*.json"))) == 1  # its journal is left
    assert_whole(HistoryReader(tmp_path), played)  # readers see every match once, as it was left
    again = HistoryStore(tmp_path)  # recovery, then the next compaction finishes the job
    again.compact()
    assert list((tmp_path / "compaction").glob("*.json")) == []
    assert [n.split("/")[-1][:4] for n in again.shard_names()] == ["day-", "day-"]
    assert not files(tmp_path, "replays/loose") and not files(tmp_path, "logs/loose")
    assert raw_rows(tmp_path) == 16 * 12  # no match in two shards any more
    assert_whole(again, played)


@pytest.mark.slow
def test_kill_9_at_random_moments_of_recording_and_compacting_loses_and_doubles_nothing(tmp_path):
    rng = random.Random(int(os.environ.get("KILL_SEED", "11")))
    durable: set[str] = set()
    for run in range(6):
        worker = subprocess.Popen([sys.executable, str(SCRIPT), str(tmp_path), "forever", str(run)],
                                  stdout=subprocess.PIPE, text=True, env=ENV)
        durable.add(worker.stdout.readline().strip())  # started (imports take seconds on a busy machine)
        time.sleep(rng.uniform(0.5, 3.0))
        os.kill(worker.pid, signal.SIGKILL)
        out, _ = worker.communicate()
        durable.update(out.split())
        durable.discard("")
        reader = HistoryReader(tmp_path)  # whole as the kill left it, before any repair
        table = reader.table()
        ids = table.column("match_id").to_pylist()
        assert durable <= set(ids) and len(ids) == 16 * len(set(ids))
        for match_id in rng.sample(sorted(durable), min(20, len(durable))):
            assert reader.replay(match_id) == synthetic_replay(match_id)
    assert len(durable) > 12, "the worker recorded too little before being killed"
    store = HistoryStore(tmp_path)
    store.flush()  # the matches the last kill left in the WAL
    store.compact()
    ids = set(store.table().column("match_id").to_pylist())
    assert durable <= ids and raw_rows(tmp_path) == 16 * len(ids)
    assert not files(tmp_path, "replays/loose") and list((tmp_path / "compaction").glob("*.json")) == []
    for match_id in durable:
        assert store.replay(match_id) == synthetic_replay(match_id)


def hub_rows(hub_api, repo: str) -> pa.Table:
    """Every row of every shard in the Hub dataset (no duplicates dropped), through HfFileSystem."""
    from huggingface_hub import HfFileSystem

    fs = HfFileSystem(endpoint=hub_api.endpoint, token="test-token", skip_instance_cache=True)
    names = [n for n in hub_api.list_repo_files(repo, repo_type="dataset") if n.startswith("data/")]
    parts = []
    for name in names:
        with fs.open(f"datasets/{repo}/{name}", "rb") as f:
            parts.append(pq.read_table(f, schema=TEAM_SCHEMA))
    return pa.concat_tables(parts) if parts else TEAM_SCHEMA.empty_table()


def test_a_compaction_is_one_commit_on_the_hub_and_the_dataset_holds_every_match_once(tmp_path, local_hub, hub_api):
    repo = "arena/history-compact"
    clock = Clock()
    store = HistoryStore(tmp_path / "history", clock=clock)
    played = matches(14, seed=5, every_minutes=45)
    record(store, clock, played[:8])
    mirror = HubMirror(store, api=hub_api, repo_id=repo, every_minutes=60, compact_every_minutes=60)
    try:
        assert mirror.push_now()  # flushed shards and loose files, as before compaction
        record(store, clock, played[8:])  # not pushed yet: compacted straight from disk
        from huggingface_hub import HfFileSystem

        loose = HubFiles(repo, fs=HfFileSystem(endpoint=hub_api.endpoint, token="test-token", skip_instance_cache=True))
        assert loose.has(REPLAYS, played[0].match_id, started_at=played[0].started_at)  # loose there: one listing of all
        assert not loose.has(REPLAYS, played[9].match_id, started_at=played[9].started_at)  # not pushed
        assert loose.requests <= 2 + 1 + 1  # each match's day folder, the top folder, every loose file at once
        commits = len(hub_api.list_repo_commits(repo, repo_type="dataset"))
        report = mirror.compact_now()
        assert report is not None and len(report.plans) == 1
        assert len(hub_api.list_repo_commits(repo, repo_type="dataset")) == commits + 1  # ONE commit
        remote = set(hub_api.list_repo_files(repo, repo_type="dataset"))
        assert not any("/loose/" in name or "/teams-" in name for name in remote)
        assert {f"data/{n}" for n in store.shard_names()} <= remote
        assert mirror.published() == tuple(store.shard_names())  # the leaderboard follows the commit
        rows = hub_rows(hub_api, repo)
        ids = rows.column("match_id").to_pylist()
        assert rows.num_rows == 16 * len(played) and set(ids) == {m.match_id for m in played}  # each match once
        # a replay out of a bundle, by range, through the unmodified client
        from huggingface_hub import HfFileSystem

        hub = HubFiles(repo, fs=HfFileSystem(endpoint=hub_api.endpoint, token="test-token", skip_instance_cache=True))
        for m in (played[0], played[-1]):
            assert hub.replay(m.match_id, started_at=m.started_at) == synthetic_replay(m.match_id)
            assert hub.logs(m.match_id, started_at=m.started_at) == synthetic_logs(m.match_id)
            assert hub.has(REPLAYS, m.match_id, started_at=m.started_at)
        assert hub.replay("no-such-match", started_at=played[0].started_at) is None
        assert not hub.has(REPLAYS, "0" * 20, started_at=played[0].started_at)
        # the next push re-sends nothing compaction deleted, nor what it sent
        assert mirror.push_now()
        assert set(hub_api.list_repo_files(repo, repo_type="dataset")) == remote
        assert len(hub_api.list_repo_commits(repo, repo_type="dataset")) == commits + 1
    finally:
        mirror.stop()


@pytest.mark.parametrize("stage", ["written", "published"])
def test_a_compaction_killed_around_its_commit_leaves_the_hub_whole_and_the_next_push_finishes(tmp_path, local_hub, hub_api, stage):
    repo = f"arena/history-killed-{stage}"
    clock = Clock()
    root = tmp_path / "history"
    store = HistoryStore(root, clock=clock)
    played = matches(10, seed=6, every_minutes=60)
    record(store, clock, played)
    mirror = HubMirror(store, api=hub_api, repo_id=repo, every_minutes=60)
    assert mirror.push_now()
    mirror.stop()
    run = subprocess.run([sys.executable, str(SCRIPT), str(root), "hub", local_hub.endpoint, repo, stage],
                         env=ENV, capture_output=True, text=True, timeout=120)
    assert run.returncode == -signal.SIGKILL, run.stderr[-2000:]
    rows = hub_rows(hub_api, repo)  # before the commit, or after it: every match once on the Hub
    assert rows.num_rows == 16 * 10 and len(set(rows.column("match_id").to_pylist())) == 10
    assert_whole(HistoryReader(root), played)  # and locally, before any repair
    store = HistoryStore(root)
    mirror = HubMirror(store, api=hub_api, repo_id=repo, every_minutes=60)
    try:
        assert mirror.push_now()  # the push finishes the compaction first (its journal)
        assert list((root / "compaction").glob("*.json")) == []
        remote = set(hub_api.list_repo_files(repo, repo_type="dataset"))
        assert not any("/loose/" in name or "/teams-" in name for name in remote)
        rows = hub_rows(hub_api, repo)
        assert rows.num_rows == 16 * 10 and len(set(rows.column("match_id").to_pylist())) == 10
        assert_whole(store, played)
    finally:
        mirror.stop()


def test_datasets_loads_the_compacted_history(tmp_path, local_hub, hub_api):
    """`datasets.load_dataset` reads day folders (the card's `data/**/*.parquet`), flushed
    shards and compacted ones together, in a fresh interpreter (HF_ENDPOINT is read at import)."""
    repo = "arena/history-datasets"
    clock = Clock()
    store = HistoryStore(tmp_path / "history", clock=clock)
    played = matches(6, seed=7, every_minutes=90)
    record(store, clock, played[:4])
    store.compact()
    record(store, clock, played[4:])  # flushed, not compacted
    mirror = HubMirror(store, api=hub_api, repo_id=repo, every_minutes=60)
    try:
        assert mirror.push_now()
    finally:
        mirror.stop()
    code = (f"from datasets import load_dataset; d = load_dataset('{repo}', split='train'); "
            "print(d.num_rows, len(set(d['match_id'])))")
    env = {**os.environ, "HF_ENDPOINT": local_hub.endpoint, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_DISABLE_TELEMETRY": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-2:] == [str(16 * 6), "6"]


def test_a_bad_compaction_argument_says_what_to_pass(tmp_path):
    with pytest.raises(ValueError, match="at least one shard"):
        HistoryStore(tmp_path).compact(max_shards=0)


def test_a_compaction_that_loses_a_race_with_another_writer_is_made_again_on_the_new_head(tmp_path, hub_api):
    """Two writers of one dataset: while one compacts, the other commits. The compaction's
    commit names the head it listed (`parent_commit`), is refused, and is made again on the
    new head; neither writer's files are lost and every match is once on the Hub."""
    repo = "arena/history-race"
    clock = Clock()
    mine, other = HistoryStore(tmp_path / "a", clock=clock, writer="w00000000000a", legacy=False), \
        HistoryStore(tmp_path / "b", clock=clock, writer="w00000000000b", legacy=False)
    record(mine, clock, matches(6, seed=11, every_minutes=60))
    record(other, clock, matches(4, seed=12, every_minutes=60))
    a = HubMirror(mine, api=hub_api, repo_id=repo, every_minutes=60, compact_every_minutes=60)
    b = HubMirror(other, api=hub_api, repo_id=repo, every_minutes=60)
    try:
        assert a.push_now() and b.push_now()
        real = hub_api.get_paths_info
        raced, asked = [], []

        def racing(*args, **kwargs):  # the other writer commits between the listing and the compaction's commit
            asked.append(kwargs.get("revision"))
            found = real(*args, **kwargs)
            if not raced:
                raced.append(hub_api.upload_file(path_or_fileobj=b"{}", path_in_repo="writers/w00000000000b.json",
                                                 repo_id=repo, repo_type="dataset").oid)
            return found

        a.scheduler.api.get_paths_info = racing
        report = a.compact_now()
        assert raced and report is not None and report.plans
        assert len(asked) == 2 and asked[0] != asked[1]  # refused on the old head, made again on the new one
        remote = set(hub_api.list_repo_files(repo, repo_type="dataset"))
        assert not any(name.endswith("-w00000000000a.parquet") and "/teams-" in name for name in remote)
        assert any("/teams-" in name and name.endswith("-w00000000000b.parquet") for name in remote)  # not its to compact
        rows = hub_rows(hub_api, repo)
        assert rows.num_rows == 16 * 10 and len(set(rows.column("match_id").to_pylist())) == 10
    finally:
        a.stop()
        b.stop()


def test_a_match_another_writer_recorded_first_is_dropped_with_its_replay_and_logs(tmp_path, hub_api):
    """A writer restarted on its own disk meets, in the dataset, matches it recorded too
    (another writer played them meanwhile): `reconcile` drops its copies from its WAL and
    from its shards the dataset does not hold; their loose replays and logs are never pushed
    again, and the next compaction deletes them here and on the Hub, in its commit."""
    me, other = "w00000000000a", "w00000000000b"
    clock = Clock()
    store = HistoryStore(tmp_path / "history", clock=clock, writer=me)
    mirror = HubMirror(store, api=hub_api, repo_id="arena/two-writers", every_minutes=60)
    played = matches(6, seed=7)
    try:
        for m in played[:2]:  # flushed, not pushed
            assert store.record(m, replay=synthetic_replay(m.match_id), logs=synthetic_logs(m.match_id))
        unpushed = store.flush()
        assert mirror.push_now()  # pushes the shard too: take it back as unpushed below
        for m in played[2:4]:  # in the WAL, their loose files pushed
            assert store.record(m, replay=synthetic_replay(m.match_id), logs=synthetic_logs(m.match_id))
        assert mirror.push_now()
        remote = set(hub_api.list_repo_files("arena/two-writers", repo_type="dataset"))
        assert f"replays/loose/{played[2].match_id[:2]}/{played[2].match_id}.{me}.replay" in remote
        # the other writer's shard holds played[1] and played[2] (it played them meanwhile)
        theirs = store.data / "2026/12/01" / f"teams-20261201T230000000000-{other}.parquet"
        rows = [row for m in (played[1], played[2]) for row in schema_rows(m)]
        pq.write_table(pa.Table.from_pylist(rows, schema=TEAM_SCHEMA), theirs)
        store.note_shard(theirs)
        name = unpushed.relative_to(store.data).as_posix()
        assert store.reconcile(pushed=[]) == 2  # one from its (unpushed) shard, one from its WAL
        assert not unpushed.exists() and store.waiting() == [played[3].match_id]
        ids = sorted(store.table().column("match_id").to_pylist())
        assert sorted(set(ids)) == sorted(m.match_id for m in played[:4]) and len(ids) == 4 * 16  # each once
        dropped = {played[1].match_id, played[2].match_id}
        orphans = store.orphans(older_than_s=0.0)
        assert {p.name.split(".")[0] for p in orphans} == dropped and len(orphans) == 4  # a replay and logs each
        store.flush()
        assert mirror.push_now()
        remote = set(hub_api.list_repo_files("arena/two-writers", repo_type="dataset"))
        assert f"data/{name}" in remote  # (pushed before the reconcile: the compaction replaces it)
        clock.t += 3600
        for path in orphans:  # a minute old: no record() under way writes them (`ORPHAN_AGE_S`)
            os.utime(path, (time.time() - 120, time.time() - 120))
        assert mirror.compact_now() is not None
        remote = set(hub_api.list_repo_files("arena/two-writers", repo_type="dataset"))
        assert not any(m in path for m in dropped for path in remote if "/loose/" in path)  # gone from the Hub
        assert not [p for p in orphans if p.exists()] and store.orphans(older_than_s=0.0) == []  # and from here
    finally:
        mirror.stop()


def test_files_of_a_record_killed_before_its_wal_entry_go_at_the_next_compaction(tmp_path):
    """A `record()` killed between a match's replay and logs and its WAL entry left files of
    a match never recorded: found at the next start, whatever their age, and deleted by the
    next compaction (never pushed meanwhile: `orphans`)."""
    store = HistoryStore(tmp_path, writer="w00000000000a")
    (m,) = matches(1, seed=9)
    for kind, data in (("replays", synthetic_replay(m.match_id)), ("logs", synthetic_logs(m.match_id))):
        path = tmp_path / ({"replays": "replays/loose", "logs": "logs/loose"}[kind]) / m.match_id[:2]
        path.mkdir(parents=True, exist_ok=True)
        (path / f"{m.match_id}.w00000000000a{'.replay' if kind == 'replays' else '.json.gz'}").write_bytes(data)
    assert store.orphans() == []  # this store's own record() could be writing them
    restarted = HistoryStore(tmp_path, writer="w00000000000a")
    assert len(restarted.orphans()) == 2  # left by a process killed before it opened
    restarted.compact()
    assert not files(tmp_path, "replays/loose") and not files(tmp_path, "logs/loose")


def test_reading_many_matches_from_the_hub_lists_each_folder_once(tmp_path):
    """The analytics of a restored Space ask the Hub for the replay of every match in turn: a
    day's folder and a loose folder are listed once for all their matches (within the
    listing's lifetime), a bundle's index is read once, and a match with no file anywhere
    costs no request of its own."""
    calls: list[str] = []

    class Folders:  # what HfFileSystem answers for a dataset with one day's bundle and no loose file
        def ls(self, path, detail=False, refresh=True):
            calls.append(f"ls {path}")
            if path.endswith("replays/2026/12/01"):
                return ["datasets/o/d/replays/2026/12/01/replays-1.bundle"]
            raise FileNotFoundError(path)

        def find(self, path, detail=False, refresh=True):
            calls.append(f"find {path}")
            return []

        def open(self, path, mode="rb", **kwargs):
            calls.append(f"open {path}")
            import io

            from history import bundle as bundles

            data = io.BytesIO()
            bundles.write(data, {"a" * 20: 8}, lambda match_id: b"replay-a")
            data.seek(0)
            return data

    hub = HubFiles("o/d", fs=Folders())
    started = "2026-12-01T10:00:00+00:00"
    assert hub.replay("a" * 20, started_at=started) == b"replay-a"
    for k in range(50):
        assert hub.replay(f"{k:020x}", started_at=started) is None
    assert len([c for c in calls if c.startswith("open")]) == 1  # the bundle's index, once
    assert len([c for c in calls if c.endswith("replays/2026/12/01")]) == 1
    assert len(calls) <= 1 + 1 + 1 + 32  # the day, the bundle, the top folder, at most the loose folders met
    # asked only whether each has one (the analytics' bulk look), the same listings answer, nothing opened
    calls.clear()
    reader = HistoryReader(tmp_path, remote=hub)
    asked = [("a" * 20, started)] + [(f"{k:020x}", started) for k in range(50)] + [("b" * 20, "no day")]
    assert reader.replays_among(asked) == {"a" * 20}
    assert not [c for c in calls if c.startswith("open")]
    assert len([c for c in calls if c.startswith("find")]) == 1 and not [c for c in calls if "/loose/" in c]  # one listing of every loose file
