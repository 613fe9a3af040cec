"""Submissions from the Hub: discovery, format checks, validation with reasons, revisions."""

from __future__ import annotations

import pytest

from matchmaking.discovery import discover
from matchmaking.submissions import Status, SubmissionRegistry, sync, validate_queued
from tests_support import EXAMPLES, POLICIES, push_policy


@pytest.fixture(scope="module")
def pushed(local_hub):
    from huggingface_hub import HfApi

    api = HfApi(endpoint=local_hub.endpoint, token="test-token")
    return {
        "good": push_policy(api, "alice/explorer", EXAMPLES / "explorer", name="Alice's Explorers"),
        "nested": push_policy(api, "bob/nested", None, extra={"team/policy.py": b"class Team: pass\n"}),
        "huge": push_policy(api, "carol/huge", EXAMPLES / "explorer", extra={"weights.bin": bytes(3 * 2**20)}),
        "broken": push_policy(api, "dave/broken", POLICIES / "import_error"),
        "untagged": push_policy(api, "erin/untagged", EXAMPLES / "explorer", tags=("other",)),
        "api": api,
    }


def test_discovery_finds_tagged_repos_pinned_to_their_commit(pushed):
    found = {s.repo_id: s for s in discover(pushed["api"], tag="nmmo-arena")}
    assert set(found) == {"alice/explorer", "bob/nested", "carol/huge", "dave/broken"}
    assert found["alice/explorer"].revision == pushed["good"]
    assert found["alice/explorer"].team_name == "Alice's Explorers"
    assert found["carol/huge"].size_bytes > 3 * 2**20


def test_validation_accepts_good_and_rejects_bad_with_reasons(pushed, tmp_path):
    api = pushed["api"]
    registry = SubmissionRegistry(tmp_path / "status.jsonl")
    queued = sync(api, registry, tag="nmmo-arena")
    assert {s.repo_id for s in queued} == {"alice/explorer", "bob/nested", "carol/huge", "dave/broken"}
    assert all(s.status is Status.QUEUED for s in queued)
    assert sync(api, registry, tag="nmmo-arena") == []  # nothing new the second time

    validate_queued(api, registry, downloads=tmp_path / "downloads", max_mb=2)
    state = {s.repo_id: s for s in registry.states()}
    assert state["alice/explorer"].status is Status.EVALUATING
    assert "without a fault" in state["alice/explorer"].reason
    assert state["alice/explorer"].details["peak_memory_mb"] > 0
    assert (tmp_path / "downloads" / "alice/explorer" / pushed["good"] / "policy.py").is_file()

    assert state["bob/nested"].status is Status.REJECTED
    assert "No policy.py at the root" in state["bob/nested"].reason and "team/policy.py" in state["bob/nested"].reason
    assert state["carol/huge"].status is Status.REJECTED
    assert "over the 2 MB limit" in state["carol/huge"].reason and "weights.bin" in state["carol/huge"].reason
    assert not (tmp_path / "downloads" / "carol/huge").exists()  # refused before downloading
    assert state["dave/broken"].status is Status.REJECTED
    assert "INIT while being built" in state["dave/broken"].reason
    assert "ModuleNotFoundError" in state["dave/broken"].reason

    # the log is the state: a new registry on the same file sees the same
    again = {s.repo_id: (s.status, s.reason) for s in SubmissionRegistry(tmp_path / "status.jsonl").states()}
    assert again == {s.repo_id: (s.status, s.reason) for s in registry.states()}


def test_a_new_commit_is_a_new_revision(pushed, tmp_path):
    api = pushed["api"]
    registry = SubmissionRegistry(tmp_path / "status.jsonl")
    sync(api, registry, tag="nmmo-arena")
    newer = api.upload_file(path_or_fileobj=b"# tuned\n", path_in_repo="NOTES.md", repo_id="alice/explorer").oid
    new = sync(api, registry, tag="nmmo-arena")
    assert [(s.repo_id, s.revision) for s in new] == [("alice/explorer", newer)]
    old = registry.get("alice/explorer", pushed["good"])
    assert old is not None and not old.latest and registry.get("alice/explorer", newer).latest
    assert [s.revision for s in registry.with_status(Status.QUEUED) if s.repo_id == "alice/explorer"] == [newer]


def test_torn_last_line_is_skipped(tmp_path):
    registry = SubmissionRegistry(tmp_path / "s.jsonl")
    registry.record("a/b", "1" * 40, Status.QUEUED)
    with open(tmp_path / "s.jsonl", "a") as f:
        f.write('{"repo_id": "a/b", "revision": "11')  # killed mid-write
    assert [s.status for s in SubmissionRegistry(tmp_path / "s.jsonl").states()] == [Status.QUEUED]
