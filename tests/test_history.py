"""The match history: exactly once through kill -9, readable by datasets, pushed through outages."""

from __future__ import annotations

import json
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


def test_each_config_of_the_card_loads_from_the_hub(tmp_path):
    """The card's configs as `datasets.load_dataset(repo, NAME)` reads them over HTTP from the
    embedded Hub (a fresh interpreter: HF_ENDPOINT is read at import): the team rows by track
    and by PvE stage, the seats (`exposure`: its columns only), and the status and incident
    logs through their parquet views (`history.views`); with the benchmark's `eval.yaml`."""
    from dataclasses import replace

    from huggingface_hub import HfApi

    from arena.lifecycle import Status
    from history.incidents import Cause, Incident, IncidentLog, incident_log_path
    from history.statuses import StatusLog
    from history.store.layout import EVAL_YAML, EXPOSURE_COLUMNS
    from localhub import LocalHub
    from tests_support import record_lifecycle

    hub = LocalHub(tmp_path / "hub").start()
    try:
        store = HistoryStore(tmp_path / "history")
        tracks = [("pvp", 0)] * 3 + [("pve", 1)] * 2 + [("pve", 2), ("validation", 0)]
        for match, (track, stage) in zip(history(7), tracks):
            store.record(replace(match, track=track, stage=stage))
        store.flush()
        statuses = StatusLog(store.root / "submissions" / "statuses.jsonl")
        record_lifecycle(statuses, "ann/team", "a" * 40, Status.QUALIFIED, "qualified")
        events = len(statuses.own.read_text().splitlines())
        IncidentLog(incident_log_path(store.root)).append(Incident(
            match_id="m" * 20, failed_at="2026-12-06T00:00:00+00:00", track="pvp", stage=0, seed=5,
            submissions=("ann/team@" + "a" * 40,), cause=Cause.WORKER_DIED, message="killed", attempt=1,
            max_attempts=3, replanned=True))
        api = HfApi(endpoint=hub.endpoint, token="t")
        mirror = HubMirror(store, api=api, repo_id="arena/configs")
        assert mirror.push_now()
        mirror.stop()
        files = set(api.list_repo_files("arena/configs", repo_type="dataset"))
        assert {"README.md", "eval.yaml", "tables/statuses.parquet", "tables/incidents.parquet"} <= files
        assert api.hf_hub_download("arena/configs", "eval.yaml", repo_type="dataset", local_dir=tmp_path / "dl") \
            and (tmp_path / "dl" / "eval.yaml").read_text() == EVAL_YAML
        code = (
            "import sys; from datasets import load_dataset\n"
            "for name in sys.argv[1:]:\n"
            "    d = load_dataset('arena/configs', name, split='train')\n"
            "    print(name, d.num_rows, ','.join(d.column_names))\n"
        )
        names = ["default", "pvp", "pve", "pve-stage-1", "pve-stage-2", "exposure", "statuses", "incidents"]
        env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_DISABLE_TELEMETRY": "1"}
        out = subprocess.run([sys.executable, "-c", code, *names], env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        loaded = {line.split()[0]: (int(line.split()[1]), line.split()[2].split(",")) for line in out.stdout.splitlines()}
        rows = {name: count for name, (count, _) in loaded.items()}
        assert rows == {"default": 7 * 16, "pvp": 3 * 16, "pve": 3 * 16, "pve-stage-1": 2 * 16, "pve-stage-2": 16,
                        "exposure": 7 * 16, "statuses": events, "incidents": 1}
        assert sorted(loaded["exposure"][1]) == sorted(EXPOSURE_COLUMNS)
        assert {"repo_id", "revision", "status", "reason", "time"} <= set(loaded["statuses"][1])
    finally:
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


def test_the_log_views_skip_torn_lines_and_are_rewritten_only_when_their_log_changes(tmp_path):
    """`history.views`: a torn last line (a crash mid-write) and a damaged file set apart are
    left out of the parquet view; an unchanged log is not rewritten; an appended one is."""
    from history import views

    log = tmp_path / "submissions" / "statuses-w000000000001.jsonl"
    log.parent.mkdir(parents=True)
    event = {"repo_id": "ann/team", "revision": "a" * 40, "status": "queued", "reason": "waiting", "at": 1.5,
             "submission": {"team_name": "Ann"}}
    log.write_text(json.dumps(event) + "\n" + '{"repo_id": "ann/te')
    (log.parent / "statuses.damaged.jsonl").write_text(json.dumps(event) + "\n")
    [view] = views.refresh(tmp_path, writer="w000000000001")
    assert view == tmp_path / "tables" / "statuses-w000000000001.parquet"
    table = pq.read_table(view)
    assert table.num_rows == 1 and table.schema.equals(views.STATUSES_SCHEMA)
    row = table.to_pylist()[0]
    assert (row["status"], row["time"], json.loads(row["details"])) == ("queued", "1970-01-01T00:00:01+00:00", {"submission": {"team_name": "Ann"}})
    assert views.refresh(tmp_path, writer="w000000000001") == []
    log.write_text(json.dumps(event) + "\n" + json.dumps({**event, "status": "validating"}) + "\n")
    assert views.refresh(tmp_path, writer="w000000000001") == [view]
    assert pq.read_table(view).column("status").to_pylist() == ["queued", "validating"]
    assert views.refresh(tmp_path, writer=None) == []  # no other log; the damaged file is never one


def test_a_restored_dataset_with_an_older_card_gets_the_configs(tmp_path):
    """A dataset whose card an older Arena wrote (no configs per track) is pulled by a new
    writer: its card is replaced and pushed, with the benchmark's `eval.yaml`, not taken as
    already pushed."""
    from huggingface_hub import HfApi

    from history.restore import DatasetPull
    from history.writers import Writers
    from localhub import LocalHub

    hub = LocalHub(tmp_path / "hub").start()
    try:
        api = HfApi(endpoint=hub.endpoint, token="t")
        api.create_repo("arena/old-card", repo_type="dataset")
        old = "---\nlicense: mit\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: data/**/*.parquet\n---\n# NMMO Arena match history\n"
        api.upload_file(path_or_fileobj=old.encode(), path_in_repo="README.md", repo_id="arena/old-card", repo_type="dataset")
        folder = tmp_path / "new"
        store = HistoryStore(folder, writer="w00000000000e")
        pull = DatasetPull(store, api=api, repo_id="arena/old-card", writers=Writers(folder, "w00000000000e", ttl_s=60))
        report = pull.run()
        assert folder / "README.md" not in report.marked_pushed
        assert "config_name: pvp" in (folder / "README.md").read_text()
        mirror = HubMirror(store, api=api, repo_id="arena/old-card")
        mirror.mark_pushed(report.marked_pushed)
        assert mirror.push_now()
        mirror.stop()
        card = api.hf_hub_download("arena/old-card", "README.md", repo_type="dataset", local_dir=tmp_path / "dl")
        assert "config_name: pve-stage-1" in open(card).read()
        assert "eval.yaml" in api.list_repo_files("arena/old-card", repo_type="dataset")
    finally:
        hub.stop()
