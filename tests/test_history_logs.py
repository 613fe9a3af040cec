"""Team logs in the history: kept beside the replay, exactly once, damage set aside, pushed
to the Hub dataset with the replays."""

from __future__ import annotations

import pytest

from arena.errors import DamagedFileError
from arena.logs import BoundedLog, MatchLogs
from arena.simulation import Population, random_history
from history.mirror import HubMirror
from history.store import HistoryStore

MATCHES = random_history(Population.random(20, seed=5), 4, seed=5)


def logs_of(match_id: str, text: str) -> bytes:
    log = BoundedLog()
    log.feed("stdout", 3, f"{text}\n".encode())
    logs = MatchLogs()
    logs.add(log.close(slot=2, policy_id="alice/a", revision="a" * 40))
    return logs.finish(match_id=match_id)


def test_logs_round_trip_beside_the_replay_exactly_once(tmp_path):
    store = HistoryStore(tmp_path / "history")
    first = MATCHES[0]
    assert store.record(first, replay=b"r", logs=logs_of(first.match_id, "hello"))
    assert not store.record(first, logs=logs_of(first.match_id, "again"))  # recorded once: the first logs stay
    assert store.record(MATCHES[1])  # a match of built-ins only has no logs
    teams = store.logs(first.match_id)
    assert [(t.slot, [line.text for line in t.lines]) for t in teams] == [(2, ["hello"])]
    assert (tmp_path / "history" / "logs" / "loose" / first.match_id[:2] / f"{first.match_id}.json.gz").is_file()
    assert store.logs(MATCHES[1].match_id) is None and store.logs("no-such-match") is None
    store.flush()
    assert HistoryStore(tmp_path / "history").logs(first.match_id) == teams  # after a restart too


def test_only_recorded_matches_logs_are_served(tmp_path):
    store = HistoryStore(tmp_path / "history")
    store.record(MATCHES[0], logs=logs_of(MATCHES[0].match_id, "mine"))
    (tmp_path / "secret.json.gz").write_bytes(logs_of("secret", "not yours"))
    for bad in ("../secret", "../../etc/passwd", "/etc/passwd", "a/b", "", "x" * 65, MATCHES[0].match_id + "\n"):
        assert store.logs(bad) is None and store.replay(bad) is None
    with pytest.raises(ValueError, match="cannot name a file"):
        store.record(type(MATCHES[1])(**{**MATCHES[1].__dict__, "match_id": "../escape"}))


def test_damaged_logs_are_quarantined_and_the_rest_loads(tmp_path):
    store = HistoryStore(tmp_path / "history")
    a, b, c = MATCHES[:3]
    good = logs_of(a.match_id, "fine")
    store.record(a, logs=good)
    store.record(b, logs=good[: len(good) // 2])  # torn, as a full disk would leave it
    store.record(c, logs=logs_of("another-match", "misfiled"))  # somebody else's file
    assert store.logs(a.match_id)[0].lines[0].text == "fine"
    with pytest.raises(DamagedFileError, match="damaged"):
        store.logs(b.match_id)
    with pytest.raises(DamagedFileError, match="belong to match another-match"):
        store.logs(c.match_id)
    assert store.logs_path(b.match_id) is None and len(store.damaged) == 2
    assert len(list((tmp_path / "history" / "quarantine").iterdir())) == 2
    assert len(store.results()) == 3  # the matches themselves are untouched


def test_a_torn_temporary_log_is_removed_at_start(tmp_path):
    store = HistoryStore(tmp_path / "history")
    (store.logs_dir / ".m.json.gz.tmp").write_bytes(b"half")
    HistoryStore(tmp_path / "history")
    assert list(store.logs_dir.iterdir()) == []


def test_logs_are_pushed_with_the_replays(tmp_path, local_hub, hub_api):
    store = HistoryStore(tmp_path / "history")
    for m in MATCHES[:2]:
        store.record(m, replay=b"replay", logs=logs_of(m.match_id, "pushed"))
    store.flush()
    mirror = HubMirror(store, api=hub_api, repo_id="arena/history-logs", every_minutes=60)
    try:
        assert mirror.push_now()
        remote = set(hub_api.list_repo_files("arena/history-logs", repo_type="dataset"))
        assert {f"logs/loose/{m.match_id[:2]}/{m.match_id}.json.gz" for m in MATCHES[:2]} <= remote
        assert {f"replays/loose/{m.match_id[:2]}/{m.match_id}.replay" for m in MATCHES[:2]} <= remote
        from huggingface_hub import hf_hub_download

        path = hf_hub_download("arena/history-logs", f"logs/loose/{MATCHES[0].match_id[:2]}/{MATCHES[0].match_id}.json.gz", repo_type="dataset",
                               endpoint=hub_api.endpoint, token="test-token", cache_dir=tmp_path / "hf")
        from arena.logs import read

        assert read(open(path, "rb").read())[1][0].lines[0].text == "pushed"
    finally:
        mirror.stop()
