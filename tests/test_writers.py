"""Several writers of one history dataset: their ids, journals, heartbeats and leader, and
what each may push (`history.writers`, `history.journal`, `history.mirror.own_patterns`)."""

from __future__ import annotations

import json

from huggingface_hub.utils import filter_repo_objects

from arena.lifecycle import Status
from arena.revision import Revision
from history.journal import Journal
from history.mirror import NOT_PUSHED, own_patterns
from history.statuses import StatusLog
from history.store import HistoryStore
from history.writers import WRITER_ID, Writers, identity

SHA = "a" * 40


def test_each_writer_appends_to_its_own_file_and_readers_take_the_union_once(tmp_path):
    path = tmp_path / "submissions" / "statuses.jsonl"
    a, b = StatusLog(path, writer="w000000000001"), StatusLog(path, writer="w000000000002")
    a.record(Revision("x/one", SHA), Status.QUEUED, "seen")
    b.record(Revision("x/two", SHA), Status.QUEUED, "seen")
    a.record(Revision("x/one", SHA), Status.VALIDATING, "playing")
    assert sorted(p.name for p in path.parent.iterdir()) == ["statuses-w000000000001.jsonl", "statuses-w000000000002.jsonl"]
    # each writer sees the other's events once it reloads (a pull brought the file; a record reloads first)
    assert b.get(Revision("x/one", SHA)).status is Status.QUEUED and b.reload() and b.get(Revision("x/one", SHA)).status is Status.VALIDATING
    # a copy of the same event in two files (a migration's, a restored file) counts once
    (path.parent / "statuses.jsonl").write_bytes((path.parent / "statuses-w000000000001.jsonl").read_bytes())
    merged = StatusLog(path, writer="w000000000003")
    assert [(s.id.policy_id, s.status) for s in merged.states()] == [("x/two", Status.QUEUED), ("x/one", Status.VALIDATING)]
    assert len(merged.journal.read()) == 3


def test_a_torn_line_in_another_writers_file_is_skipped_and_named_not_repaired(tmp_path):
    path = tmp_path / "statuses.jsonl"
    StatusLog(path, writer="w000000000001").record(Revision("x/one", SHA), Status.QUEUED)
    other = tmp_path / "statuses-w000000000001.jsonl"
    with open(other, "ab") as f:
        f.write(b'{"repo_id": "x/one", "rev')
    before = other.read_bytes()
    log = StatusLog(path, writer="w000000000002")
    assert log.get(Revision("x/one", SHA)).status is Status.QUEUED
    assert len(log.damaged) == 1 and "line 2 is damaged" in log.damaged[0]
    assert other.read_bytes() == before  # not this writer's file to rewrite
    log.record(Revision("x/one", SHA), Status.VALIDATING)
    assert StatusLog(path).get(Revision("x/one", SHA)).status is Status.VALIDATING


def test_journal_lines_never_glue_and_records_order_by_time(tmp_path):
    journal = Journal(tmp_path / "a.jsonl", writer="w000000000001", order=lambda r: r["at"])
    journal.append({"at": 2})
    with open(journal.own, "ab") as f:
        f.write(b'{"at": 9')  # torn
    journal.append({"at": 1})
    Journal(tmp_path / "a.jsonl", writer="w000000000002").append({"at": 1.5})
    assert [r["at"] for r in journal.read()] == [1, 1.5, 2]
    assert journal.own.read_bytes().endswith(b'{"at": 9\n{"at": 1}\n')


def test_identity_is_made_once_and_migrates_the_single_files_without_losing_an_event(tmp_path):
    data = tmp_path / "data"
    history = data / "history"
    old = StatusLog(history / "submissions" / "statuses.jsonl")  # the layout before writers
    old.record(Revision("x/one", SHA), Status.QUEUED)
    (history / "data").mkdir(parents=True)
    (history / "data" / "teams-20261201T000000000000-0123abcd.parquet").write_bytes(b"x")
    (data / "model_cards.jsonl").write_text('{"event": "merged", "repo_id": "x/one", "revision": "r", "at": 1}')
    me = identity(data, history, ledger=data / "model_cards.jsonl")
    assert WRITER_ID.fullmatch(me.writer) and me.legacy
    assert identity(data, history) == me  # kept in DATA/writer.json
    mine = history / "submissions" / f"statuses-{me.writer}.jsonl"
    assert mine.read_bytes() == (history / "submissions" / "statuses.jsonl").read_bytes()
    assert (history / "modelcards" / f"publications-{me.writer}.jsonl").read_text().endswith("\n")
    log = StatusLog(history / "submissions" / "statuses.jsonl", writer=me.writer)
    assert len(log.journal.read()) == 1 and log.get(Revision("x/one", SHA)).status is Status.QUEUED
    log.record(Revision("x/one", SHA), Status.VALIDATING)
    assert len((history / "submissions" / "statuses.jsonl").read_text().splitlines()) == 1  # never written again
    fresh = identity(tmp_path / "other", tmp_path / "other" / "history")
    assert fresh.writer != me.writer and not fresh.legacy


def test_the_earliest_live_writer_leads_once_it_has_caught_up(tmp_path):
    now = [1000.0]
    a = Writers(tmp_path, "w00000000000a", ttl_s=60, clock=lambda: now[0])
    now[0] += 5
    b = Writers(tmp_path, "w00000000000b", ttl_s=60, clock=lambda: now[0])
    assert not a.leads()  # has not read the dataset's heartbeats yet
    a.caught_up.set()
    b.caught_up.set()
    a.beat()
    b.beat()
    assert a.leads() and not b.leads() and b.leader() == "w00000000000a"
    assert "follower" in b.role()
    now[0] += 61  # a was killed: its heartbeat grows old
    b.beat()
    assert b.leads()
    now[0] += 1
    a.beat()  # a comes back (same run): it started first, so it leads again
    assert a.leads() and not b.leads()
    a.beat(stopped=True)  # a clean stop hands the lead over at once
    assert b.leads() and not a.leads() and a.leader() == "w00000000000b"


def test_a_writer_pushes_and_compacts_only_its_own_files(tmp_path):
    me, other = "w00000000000a", "w00000000000b"
    files = [
        f"data/2026/12/03/teams-20261203T000000000000-{me}.parquet",
        f"data/2026/12/03/teams-20261203T000000000000-{other}.parquet",
        f"data/2026/12/03/day-20261203T000000000000-{other}.parquet",
        "data/2026/12/01/day-20261201T000000000000-0123abcd.parquet",
        f"replays/2026/12/03/replays-20261203T000000000000-{me}.bundle",
        f"replays/2026/12/03/replays-20261203T000000000000-{other}.bundle",
        f"replays/loose/ab/ab01.{me}.replay",
        f"submissions/statuses-{me}.jsonl", f"submissions/statuses-{other}.jsonl", "submissions/statuses.jsonl",
        f"audits/audits-{me}.jsonl", f"modelcards/publications-{me}.jsonl",
        f"writers/{me}.json", f"writers/{other}.json", "README.md", "wal/x.json", "submissions/statuses.damaged.jsonl",
        f"replays/loose/ab/ab02.{other}.replay", "replays/loose/01/0123456789abcdef0123.replay",
    ]
    pushed = set(filter_repo_objects(files, allow_patterns=own_patterns(me), ignore_patterns=NOT_PUSHED))
    assert pushed == {files[0], files[4], files[6], files[7], files[10], files[11], files[12], "README.md"}
    legacy = set(filter_repo_objects(files, allow_patterns=own_patterns(me, legacy=True), ignore_patterns=NOT_PUSHED))
    assert legacy == pushed | {files[3], files[-1]}
    store = HistoryStore(tmp_path / "h", writer=me, legacy=False)
    assert store.owns(files[0]) and not store.owns(files[1]) and not store.owns(files[3])
    assert HistoryStore(tmp_path / "h2", writer=me, legacy=True).owns(files[3])
    day, stamp = store.stamp()
    assert stamp.endswith(f"-{me}")


def test_heartbeat_files_are_json_with_the_fields_readers_need(tmp_path):
    w = Writers(tmp_path, "w00000000000a", ttl_s=60)
    w.beat()
    data = json.loads((tmp_path / "writers" / "w00000000000a.json").read_text())
    assert {"writer", "started_at", "at", "stopped", "host"} <= set(data)


def test_a_leader_restarted_on_its_own_disk_before_its_heartbeat_dies_keeps_the_lead(tmp_path):
    """Leadership follows the data: a leader killed and restarted within `ttl_s` goes on with
    its run (its start kept), so the lead never passes to a writer that started after it
    while the old leader's last matches are only on its disk; restarted after its heartbeat
    died, or after a clean stop, it starts a new run and follows."""
    now = [1000.0]
    clock = lambda: now[0]  # noqa: E731
    a = Writers(tmp_path, "w00000000000a", ttl_s=60, clock=clock)
    now[0] += 5
    b = Writers(tmp_path, "w00000000000b", ttl_s=60, clock=clock)
    for w in (a, b):
        w.caught_up.set()
        w.beat()
    assert a.leads()
    now[0] += 30  # a is killed (no clean stop) and restarted on its own disk
    again = Writers(tmp_path, "w00000000000a", ttl_s=60, clock=clock)
    again.caught_up.set()
    again.beat()
    assert again.started_at == a.started_at and again.leads() and not b.leads()
    now[0] += 61  # killed again, back after its heartbeat died: b leads meanwhile, and on
    b.beat()
    assert b.leads()
    late = Writers(tmp_path, "w00000000000a", ttl_s=60, clock=clock)
    late.caught_up.set()
    late.beat()
    assert late.started_at == now[0] and b.leads() and not late.leads()
    late.beat(stopped=True)  # and after a clean stop, a new run too
    assert Writers(tmp_path, "w00000000000a", ttl_s=60, clock=clock).started_at == now[0]


def test_a_live_writers_claims_are_played_by_no_other(tmp_path):
    now = [1000.0]
    clock = lambda: now[0]  # noqa: E731
    a = Writers(tmp_path, "w00000000000a", ttl_s=60, clock=clock, recorded=lambda: ["m-recorded"])
    b = Writers(tmp_path, "w00000000000b", ttl_s=60, clock=clock)
    with a.claiming(["m-playing"]):
        a.beat()  # a heartbeat written while it plays names what it plays and what it recorded
    assert b.claimed_elsewhere() == {"m-playing", "m-recorded"} and a.claimed_elsewhere() == set()
    assert json.loads(a.own.read_text())["claims"] == ["m-playing", "m-recorded"]
    a.beat()
    assert b.claimed_elsewhere() == {"m-recorded"}  # played: no longer claimed
    now[0] += 61
    assert b.claimed_elsewhere() == set()  # a dead writer's claims die with it
