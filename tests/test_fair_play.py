"""Fair play over the embedded Hub: a copy of another owner's entry is refused naming the
original, an owner may replace its own, and idle teams are not taken for copies."""

from __future__ import annotations

import pytest
from huggingface_hub import HfApi

from arena.lifecycle import RejectionCause, Status
from arena.revision import Revision
from history.statuses import StatusLog
from matchmaking.service.submissions import sync, validate_queued
from tests_support import EXAMPLES, POLICIES, push_policy


@pytest.mark.slow
def test_a_clone_is_refused_naming_its_original_and_an_owner_may_replace_its_own(local_hub, tmp_path):
    api = HfApi(endpoint=local_hub.endpoint, token="test-token")
    original = Revision("alice/gatherer", push_policy(api, "alice/gatherer", EXAMPLES / "gatherer"))
    statuses = StatusLog(tmp_path / "statuses.jsonl")
    assert len(sync(api, statuses, tag="nmmo-arena")) == 1
    validate_queued(api, statuses, downloads=tmp_path / "subs", max_mb=200)
    assert statuses.get(original).status is Status.EVALUATING and statuses.get(original).measurements.play_digest

    # a copy under another owner (its card says otherwise: the files are what play), a copy by
    # the same owner, and two idle teams of two owners, which play alike without copying
    copy = Revision("mallory/my-own-forager", push_policy(api, "mallory/my-own-forager", EXAMPLES / "gatherer",
                                                          name="Mallory's forager"))
    mine = Revision("alice/gatherer-v2", push_policy(api, "alice/gatherer-v2", EXAMPLES / "gatherer"))
    idle = [Revision(f"{who}/idle", push_policy(api, f"{who}/idle", POLICIES / "adversarial" / "idle")) for who in ("bob", "carol")]
    sync(api, statuses, tag="nmmo-arena")
    validate_queued(api, statuses, downloads=tmp_path / "subs", max_mb=200)
    refused = statuses.get(copy)
    assert refused.status is Status.REJECTED and refused.cause is RejectionCause.DUPLICATE
    assert refused.reason.startswith(f"DUPLICATE: it plays exactly as alice/gatherer@{original.short}, another owner's entry")
    assert statuses.get(mine).status is Status.EVALUATING  # an owner may replace its own
    assert all(statuses.get(r).status is Status.EVALUATING for r in idle)
    assert all(not statuses.get(r).measurements.play_digest for r in idle)  # never moved: no digest to match
