"""The match history: exactly once through kill -9, readable by datasets, pushed through outages."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

import pyarrow.parquet as pq
import pytest

from arena.schema import results_from_rows, rows
from arena.simulation import Population, random_history
from history.mirror import HubMirror
from history.store import TEAM_SCHEMA, HistoryStore
from tests_support import TESTS


def history(n, seed=0):
    return random_history(Population.random(30, seed=seed), n, seed=seed)


def test_round_trip_and_exactly_once(tmp_path):
    store = HistoryStore(tmp_path)
    matches = history(20)
    assert all(store.record(m) for m in matches[:12])
    assert store.flush() is not None
    assert all(store.record(m) for m in matches[12:])
    assert not store.record(matches[3]) and not store.record(matches[15])  # sharded, and in the WAL
    assert store.results() == matches  # shards and WAL together, in rating order
    store.flush()
    assert store.flush() is None
    assert store.results() == matches
    assert HistoryStore(tmp_path).results() == matches  # a restart reads the same
    assert results_from_rows(rows(matches[0])) == [matches[0]]
    table = pq.read_table(store.shards()[0])
    assert table.schema.equals(TEAM_SCHEMA, check_metadata=False)
    assert table.num_rows == 12 * 16


def test_crash_between_shard_and_wal_cleanup_duplicates_nothing(tmp_path):
    store = HistoryStore(tmp_path)
    matches = history(5)
    for m in matches:
        store.record(m)
    wal = {p.name: p.read_bytes() for p in store.wal.glob("*.json")}
    store.flush()
    for name, data in wal.items():  # as if killed right after the shard's rename
        (store.wal / name).write_bytes(data)
    (store.data / ".teams-partial.parquet.x").write_bytes(b"PAR1 cut short")  # and a torn temporary file
    again = HistoryStore(tmp_path)
    assert again.results() == matches
    assert list(again.wal.glob("*")) == [] and not list(again.data.glob(".*"))


@pytest.mark.slow
def test_kill_9_at_random_moments_loses_and_doubles_nothing(tmp_path):
    rng = random.Random(7)
    durable: set[str] = set()
    for run in range(6):
        writer = subprocess.Popen(
            [sys.executable, str(TESTS / "scripts" / "record_forever.py"), str(tmp_path), str(run)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)])},
        )
        time.sleep(rng.uniform(1.5, 3.0))
        os.kill(writer.pid, signal.SIGKILL)
        out, _ = writer.communicate()
        durable.update(out.split())
    store = HistoryStore(tmp_path)
    table = store.table()
    ids = table.column("match_id").to_pylist()
    per_match = {}
    for match_id in ids:
        per_match[match_id] = per_match.get(match_id, 0) + 1
    assert durable, "the writer recorded nothing before being killed"
    assert durable <= set(per_match)  # nothing reported durable was lost
    assert set(per_match.values()) == {16}  # no match doubled, no partial match
    assert all(store.replay_path(m) is not None for m in per_match)  # every match has its replay
    for shard in store.shards():  # and every shard on disk is whole
        pq.read_table(shard)


@pytest.mark.slow
def test_hub_push_survives_an_outage(tmp_path, caplog):
    """Each push says in one log line what it sent (files, bytes, seconds, commit) or why it
    failed; the files of a failed one wait on disk for the next."""
    import logging

    from huggingface_hub import HfApi

    from localhub import LocalHub

    caplog.set_level(logging.INFO, logger="history.mirror")

    hub = LocalHub(tmp_path / "hub").start()
    port = hub.port
    api = HfApi(endpoint=hub.endpoint, token="t")
    store = HistoryStore(tmp_path / "history")
    mirror = HubMirror(store, api=api, repo_id="arena/history", every_minutes=60)
    matches = history(9)
    for m in matches[:3]:
        store.record(m, replay=b"replay")
    store.flush()
    assert mirror.push_now()
    sent = re.findall(r"history push: (\d+) files, ([\d.]+) MB in [\d.]+ s, commit [0-9a-f]{12}", caplog.text)
    assert sent and int(sent[0][0]) >= 5  # the card, the shard, three replays, the heartbeat
    assert mirror.last_push() is not None and not mirror.last_push().error
    hub.stop()  # the Hub goes away
    for m in matches[3:]:
        store.record(m, replay=b"replay")
    store.flush()
    mirror.push_now()  # fails quietly: files stay on disk
    failed = mirror.last_push()
    assert failed is not None and failed.error and failed.waiting >= 7 and "failed" in failed.age()
    assert "history push failed after" in caplog.text
    assert len(store.results()) == 9
    hub = LocalHub(tmp_path / "hub", port=port).start()  # and comes back
    try:
        assert mirror.push_now()
        remote = set(api.list_repo_files("arena/history", repo_type="dataset"))
        assert {f"data/{name}" for name in store.shard_names()} <= remote
        assert {f"replays/loose/{m.match_id[:2]}/{m.match_id}.replay" for m in matches} <= remote
        assert not any(name.startswith("wal/") for name in remote)
    finally:
        mirror.stop()
        hub.stop()


def test_threads_pushing_at_once_start_one_pusher(tmp_path):
    """When the Hub returns, the restore and a round both push: one pusher must start, or a
    second one pushes the same folder and the first's record of what it sent is lost (files
    seen as waiting that were pushed)."""
    import gc

    from huggingface_hub import HfApi

    from history.mirror import HistoryPusher
    from localhub import LocalHub

    hub = LocalHub(tmp_path / "hub").start()
    store = HistoryStore(tmp_path / "history")
    for m in history(2):
        store.record(m, replay=b"replay")
    store.flush()
    mirror = HubMirror(store, api=HfApi(endpoint=hub.endpoint, token="t"), repo_id="arena/history", every_minutes=60)
    start = threading.Barrier(8)
    pushed: list[bool] = []

    def push() -> None:
        start.wait()
        pushed.append(mirror.push_now())

    threads = [threading.Thread(target=push) for _ in range(8)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert pushed == [True] * 8
        ours = [o for o in gc.get_objects() if isinstance(o, HistoryPusher) and o.folder_path == store.root.resolve()]
        assert len(ours) == 1  # (other tests' pushers in this process, of other folders, are not counted)
        assert mirror.pending() == 0
    finally:
        mirror.stop()
        hub.stop()


def test_datasets_loads_the_pushed_history(tmp_path):
    """`datasets.load_dataset` reads the Hub dataset through the unmodified client (it reads
    HF_ENDPOINT at import, hence a fresh interpreter)."""
    from huggingface_hub import HfApi

    from localhub import LocalHub

    hub = LocalHub(tmp_path / "hub").start()
    try:
        store = HistoryStore(tmp_path / "history")
        for m in history(4):
            store.record(m)
        store.flush()
        mirror = HubMirror(store, api=HfApi(endpoint=hub.endpoint, token="t"), repo_id="arena/history")
        assert mirror.push_now()
        mirror.stop()
        code = (
            "from datasets import load_dataset; "
            "d = load_dataset('arena/history', split='train'); "
            "print(d.num_rows, len(set(d['match_id'])))"
        )
        env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_DISABLE_TELEMETRY": "1"}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.split()[-2:] == ["64", "4"]
    finally:
        hub.stop()
