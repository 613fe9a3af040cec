"""Damaged history state costs only itself: quarantined, named, and everything else loads."""

from __future__ import annotations

import threading

import pytest

from arena.errors import DamagedFileError
from arena.simulation import Population, random_history
from history.store import HistoryReader, HistoryStore

MATCHES = random_history(Population.random(20, seed=3), 30, seed=3)


def shard_per_ten(store: HistoryStore) -> None:
    for i, result in enumerate(MATCHES):
        store.record(result, replay=b"")
        if i % 10 == 9:
            store.flush()


def test_a_truncated_shard_is_quarantined_and_the_rest_loads(tmp_path):
    store = HistoryStore(tmp_path / "history")
    shard_per_ten(store)
    shards = store.shards()
    assert len(shards) == 3
    shards[1].write_bytes(shards[1].read_bytes()[:300])  # cut short, as a full disk would
    restarted = HistoryStore(tmp_path / "history")  # the Space starts again: it does not stop
    assert len(restarted.results()) == 20
    assert len(restarted.damaged) == 1 and shards[1].name in restarted.damaged[0] and "moved to quarantine/" in restarted.damaged[0]
    assert not shards[1].exists() and len(list((tmp_path / "history" / "quarantine").iterdir())) == 1
    assert len(HistoryStore(tmp_path / "history").damaged) == 0  # quarantined once


def test_a_reader_quarantines_a_shard_damaged_while_running(tmp_path):
    store = HistoryStore(tmp_path / "history")
    shard_per_ten(store)
    reader = HistoryReader(tmp_path / "history")
    store.shards()[0].write_bytes(b"PAR1 not really")
    assert len(reader.results()) == 20 and len(reader.damaged) == 1


def test_a_corrupt_replay_is_refused_and_set_aside(tmp_path):
    from arena.replay import encode, read

    store = HistoryStore(tmp_path / "history")
    import numpy as np

    good = encode({"version": 1, "match_id": "m1", "ticks": 1, "teams": {}, "policies": []},
                  {"map": np.zeros((4, 4), np.uint8), "players": np.zeros((2, 1, 5), np.uint8),
                   "npc_count": np.zeros(2, np.uint8), "npcs": np.zeros((2, 1, 4), np.int16)})
    read(good)
    store.record(MATCHES[0], replay=good)
    store.record(MATCHES[1], replay=good[: len(good) // 2])  # torn
    assert store.replay(MATCHES[0].match_id) == good
    with pytest.raises(DamagedFileError, match="damaged and cannot be played"):
        store.replay(MATCHES[1].match_id)
    assert store.replay_path(MATCHES[1].match_id) is None and len(store.damaged) == 1
    assert store.replay("no-such-match") is None


def test_readers_are_safe_while_a_flush_deletes_the_wal(tmp_path):
    """Reading while flushes move matches from the WAL into shards: never an exception,
    never a match missing or doubled."""
    store = HistoryStore(tmp_path / "history")
    reader = HistoryReader(tmp_path / "history")
    errors: list[BaseException] = []
    seen: list[int] = []
    done = threading.Event()

    def read_forever():
        while not done.is_set():
            try:
                table = reader.table()
                reader.signature()
                ids = table.column("match_id").to_pylist()
                assert len(ids) == 16 * len(set(ids))
                seen.append(len(set(ids)))
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)
                return

    thread = threading.Thread(target=read_forever)
    thread.start()
    for i, result in enumerate(MATCHES):
        store.record(result)
        if i % 3 == 2:
            store.flush()
    store.flush()
    done.set()
    thread.join()
    assert errors == []
    assert seen == sorted(seen) and len(seen) > 10  # the count only grows: no match vanished mid-flush
    assert len(reader.results()) == len(MATCHES)
