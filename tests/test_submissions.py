"""Submissions from the Hub: discovery, format checks, validation with reasons, revisions."""

from __future__ import annotations

import json
import threading
import time

import pytest

from arena.lifecycle import Status
from arena.revision import Revision
from history.statuses import StatusLog
from matchmaking.hub.discovery import discover
from matchmaking.service.submissions import sync, validate_queued
from tests_support import EXAMPLES, POLICIES, push_policy


@pytest.fixture(scope="module")
def pushed(local_hub):
    from huggingface_hub import HfApi

    api = HfApi(endpoint=local_hub.endpoint, token="test-token")
    return {
        "good": push_policy(api, "alice/explorer", EXAMPLES / "explorer", name="Alice's Explorers"),
        "nested": push_policy(api, "bob/nested", None, extra={"team/policy.py": b"class Team: pass\n"}),
        "huge": push_policy(api, "carol/huge", EXAMPLES / "gatherer", extra={"weights.bin": bytes(3 * 2**20)}),
        "broken": push_policy(api, "dave/broken", POLICIES / "import_error"),
        "untagged": push_policy(api, "erin/untagged", EXAMPLES / "explorer", tags=("other",)),
        "api": api,
    }


def test_discovery_finds_tagged_repos_pinned_to_their_commit(pushed):
    found = {s.id.policy_id: s for s in discover(pushed["api"], tag="nmmo-arena")}
    assert set(found) == {"alice/explorer", "bob/nested", "carol/huge", "dave/broken"}
    assert found["alice/explorer"].id.sha == pushed["good"]
    assert found["alice/explorer"].team_name == "Alice's Explorers"
    assert found["carol/huge"].size_bytes > 3 * 2**20


def test_validation_accepts_good_and_rejects_bad_with_reasons(pushed, tmp_path):
    api = pushed["api"]
    registry = StatusLog(tmp_path / "status.jsonl")
    queued = sync(api, registry, tag="nmmo-arena")
    assert {s.id.policy_id for s in queued} == {"alice/explorer", "bob/nested", "carol/huge", "dave/broken"}
    assert all(s.status is Status.QUEUED for s in queued)
    assert sync(api, registry, tag="nmmo-arena") == []  # nothing new the second time

    validate_queued(api, registry, downloads=tmp_path / "downloads", max_mb=2)
    state = {s.id.policy_id: s for s in registry.states()}
    assert state["alice/explorer"].status is Status.EVALUATING
    assert "without a fault" in state["alice/explorer"].reason
    assert state["alice/explorer"].measurements.peak_memory_mb > 0
    assert (tmp_path / "downloads" / "alice/explorer" / pushed["good"] / "policy.py").is_file()

    assert state["bob/nested"].status is Status.REJECTED
    assert "No policy.py at the root" in state["bob/nested"].reason and "team/policy.py" in state["bob/nested"].reason
    assert state["carol/huge"].status is Status.REJECTED
    assert "over the 2 MB limit" in state["carol/huge"].reason and "weights.bin" in state["carol/huge"].reason
    assert not (tmp_path / "downloads" / "carol/huge").exists()  # refused before downloading
    assert state["dave/broken"].status is Status.REJECTED
    assert "INIT while being built" in state["dave/broken"].reason
    assert "ImportNotAllowedError" in state["dave/broken"].reason

    # the log is the state: a new registry on the same file sees the same
    again = {s.id.policy_id: (s.status, s.reason) for s in StatusLog(tmp_path / "status.jsonl").states()}
    assert again == {s.id.policy_id: (s.status, s.reason) for s in registry.states()}


def test_a_new_commit_is_a_new_revision(pushed, tmp_path):
    api = pushed["api"]
    registry = StatusLog(tmp_path / "status.jsonl")
    sync(api, registry, tag="nmmo-arena")
    newer = api.upload_file(path_or_fileobj=b"# tuned\n", path_in_repo="NOTES.md", repo_id="alice/explorer").oid
    new = sync(api, registry, tag="nmmo-arena")
    assert [s.id for s in new] == [Revision("alice/explorer", newer)]
    old = registry.get(Revision("alice/explorer", pushed["good"]))
    assert old is not None and not old.latest and registry.get(Revision("alice/explorer", newer)).latest
    assert [s.id.sha for s in registry.with_status(Status.QUEUED) if s.id.policy_id == "alice/explorer"] == [newer]


def test_torn_last_line_is_skipped(tmp_path):
    registry = StatusLog(tmp_path / "s.jsonl")
    registry.record(Revision("a/b", "1" * 40), Status.QUEUED)
    with open(tmp_path / "s.jsonl", "a") as f:
        f.write('{"repo_id": "a/b", "revision": "11')  # killed mid-write
    assert [s.status for s in StatusLog(tmp_path / "s.jsonl").states()] == [Status.QUEUED]


def test_a_hub_that_never_serves_the_files_ends_the_revision_in_error(tmp_path):
    from huggingface_hub import HfApi

    from localhub import LocalHub
    from matchmaking.service.submissions import Validator

    hub = LocalHub(tmp_path / "hub").start()
    try:
        api = HfApi(endpoint=hub.endpoint, token="t")
        sha = push_policy(api, "erin/lost", EXAMPLES / "wanderer", extra={"unique.txt": b"erin's own bytes"})
        for blob in (tmp_path / "hub" / "objects").glob("*/*"):  # the Hub lists the files, never serves them
            blob.unlink()
        statuses = StatusLog(tmp_path / "s.jsonl")
        sync(api, statuses, tag="nmmo-arena")
        validator = Validator(api, statuses, tmp_path / "downloads", 10, attempts=3, retry_after_s=0.01)
        try:
            deadline = time.monotonic() + 60
            while statuses.get(Revision("erin/lost", sha)).status is not Status.ERROR and time.monotonic() < deadline:
                validator.run_until_idle(timeout_s=30)
                time.sleep(0.05)  # the retries wait 0.01 s, 0.02 s, ...
        finally:
            validator.close()
        state = statuses.get(Revision("erin/lost", sha))
        assert state.status is Status.ERROR, state.reason
        assert "downloading it failed" in state.reason and "Failed 3 times" in state.reason and state.failed_attempts == 3
        reasons = [json.loads(line)["reason"] for line in (tmp_path / "s.jsonl").read_text().splitlines()]
        assert any("attempt 1 of 3 failed" in r for r in reasons) and any("attempt 2 of 3 failed" in r for r in reasons)
    finally:
        hub.stop()


@pytest.mark.slow
def test_an_unreachable_hub_is_not_the_revisions_fault(tmp_path):
    from huggingface_hub import HfApi

    from localhub import LocalHub
    from matchmaking.hub.health import HubHealth
    from matchmaking.service.submissions import Validator

    hub = LocalHub(tmp_path / "hub").start()
    api = HfApi(endpoint=hub.endpoint, token="t")
    sha = push_policy(api, "fred/away", EXAMPLES / "wanderer")
    statuses = StatusLog(tmp_path / "s.jsonl")
    sync(api, statuses, tag="nmmo-arena")
    hub.stop()  # the Hub goes away between discovery and download
    health = HubHealth(hub.endpoint, setting="test")
    validator = Validator(api, statuses, tmp_path / "downloads", 10, attempts=1, health=health)
    try:
        validator.run_until_idle(timeout_s=120)
    finally:
        validator.close(wait=True)
    state = statuses.get(Revision("fred/away", sha))
    assert state.status is Status.QUEUED and state.failed_attempts == 0  # one attempt allowed, none counted
    assert "the Hub is unreachable, will retry" in state.reason
    assert health.reachable is False and "UNREACHABLE" in health.state().line() and hub.endpoint in health.state().line()


@pytest.mark.slow
def test_a_slow_validation_holds_no_other_and_is_cut_off(pushed, tmp_path):
    """The limit (12 s) must hold dave's validation on a busy machine: a short match whose
    team fails to import, 4 s here with the load average at 10, once the sandbox's zygote
    has its imports (started first, outside the clock). Alice's hangs until the test lets
    it go: that it was cut off is seen in its state, not in a duration."""
    from matchmaking.sandbox.host import start_zygote
    from matchmaking.service.submissions import Validator
    from matchmaking.service.validation import validate

    api = pushed["api"]
    statuses = StatusLog(tmp_path / "s.jsonl")
    sync(api, statuses, tag="nmmo-arena")
    assert start_zygote(wait_s=120)
    released, hang_over = threading.Event(), threading.Event()

    def validator(ref, **kwargs):
        if ref.policy_id == "alice/explorer":
            released.wait(60)  # a download that hangs, as far as the queue can tell
            hang_over.set()
            raise TimeoutError("let go")  # long since cut off: nobody reads this
        return validate(ref, **kwargs)

    runner = Validator(api, statuses, tmp_path / "downloads", 2, timeout_s=12, attempts=2, workers=2, validator=validator)
    try:
        runner.run_until_idle(timeout_s=120)  # longer than the hang: waiting for it would end it
        still_hanging = not hang_over.is_set()
    finally:
        released.set()
        runner.close(wait=True)
    state = {s.id.policy_id: s for s in statuses.states()}
    assert state["dave/broken"].status is Status.REJECTED, state["dave/broken"].reason  # validated while alice's hung
    assert state["alice/explorer"].status is Status.QUEUED and state["alice/explorer"].failed_attempts == 1
    assert "took longer than 12 s; will retry (attempt 1 of 2 failed)" in state["alice/explorer"].reason
    assert still_hanging  # cut off at its limit, not waited for


def test_a_rejection_by_the_spaces_own_size_limit_is_reconsidered_when_it_changes(pushed, tmp_path):
    api = pushed["api"]
    statuses = StatusLog(tmp_path / "s.jsonl")
    sync(api, statuses, tag="nmmo-arena")
    validate_queued(api, statuses, downloads=tmp_path / "downloads", max_mb=0.5)
    huge = next(s for s in statuses.states() if s.id.policy_id == "carol/huge")
    assert huge.status is Status.REJECTED and huge.limit_mb == 0.5
    broken = next(s for s in statuses.states() if s.id.policy_id == "dave/broken")
    validate_queued(api, statuses, downloads=tmp_path / "downloads", max_mb=0.5)  # same limit: nothing moves
    assert statuses.get(huge.id).status is Status.REJECTED
    validate_queued(api, statuses, downloads=tmp_path / "downloads", max_mb=10)  # the operator raised it
    assert statuses.get(huge.id).status is Status.EVALUATING, statuses.get(huge.id).reason
    assert statuses.get(broken.id).status is Status.REJECTED  # a policy's own fault is never reconsidered


def test_a_commit_that_changes_only_the_card_is_the_same_policy(tmp_path):
    """Merging the Arena's results pull request (or editing the description) must not start
    the policy over as a new revision; changing a policy file must."""
    from huggingface_hub import HfApi

    from localhub import LocalHub

    hub = LocalHub(tmp_path / "hub", write_token="t").start()
    try:
        api = HfApi(endpoint=hub.endpoint, token="t")
        first = push_policy(api, "erin/explorer", EXAMPLES / "explorer")
        statuses = StatusLog(tmp_path / "s.jsonl")
        assert [s.id.sha for s in sync(api, statuses, tag="nmmo-arena")] == [first]
        api.upload_file(path_or_fileobj=b"---\ntags:\n- nmmo-arena\ndescription: now with a description\n---\n# Explorer\n",
                        path_in_repo="README.md", repo_id="erin/explorer", commit_message="edit the card")
        assert api.model_info("erin/explorer").sha != first
        assert sync(api, statuses, tag="nmmo-arena") == [] and sync(api, statuses, tag="nmmo-arena", repo_ids=["erin/explorer"]) == []
        assert [(s.id.sha, s.latest) for s in statuses.states()] == [(first, True)]
        api.upload_file(path_or_fileobj=b"# a new helper\n", path_in_repo="helper.py", repo_id="erin/explorer")
        changed = sync(api, statuses, tag="nmmo-arena")
        assert len(changed) == 1 and changed[0].id.sha == api.model_info("erin/explorer").sha
        assert [s.latest for s in statuses.states()] == [True, False]
    finally:
        hub.stop()


def test_a_cards_name_and_description_are_bounded_text(local_hub):
    """The model card is the author's text: kept to `NAME_CHARS` (one line) and
    `DESCRIPTION_CHARS`, without control or direction-override characters."""
    from huggingface_hub import HfApi

    from arena.untrusted import DESCRIPTION_CHARS, NAME_CHARS
    from matchmaking.hub.pushing import push_submission, submission_card

    api = HfApi(endpoint=local_hub.endpoint, token="test-token")
    name = "Mallory\u202e's\x07 team\n" + "x" * 300
    card = submission_card(("bounds-test",), name, "line one\n\x1b[31mred\x1b[0m " + "y" * 5000)
    push_submission(api, "mallory/bounded", folder=EXAMPLES / "explorer", card=card)
    found = {s.id.policy_id: s for s in discover(api, tag="bounds-test")}["mallory/bounded"]
    assert found.team_name.startswith("Mallory's team xxx") and len(found.team_name) == NAME_CHARS
    assert found.team_name.endswith("…") and "\n" not in found.team_name
    assert found.description.startswith("line one\n[31mred[0m yyy") and len(found.description) == DESCRIPTION_CHARS
