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


@pytest.mark.slow
def test_an_owner_past_its_limits_is_told_why_and_when_and_its_oldest_retires(local_hub, tmp_path):
    """At most 2 new revisions a day and 1 taking part at once, here: the third waits, saying
    until when; the second validated retires the first, whose history stays."""
    from matchmaking.service.submissions import OwnerLimits

    api = HfApi(endpoint=local_hub.endpoint, token="test-token")
    names = ("explorer", "wanderer", "gatherer")
    pushed = [Revision(f"olga/{n}", push_policy(api, f"olga/{n}", EXAMPLES / n)) for n in names]
    statuses = StatusLog(tmp_path / "statuses.jsonl")
    sync(api, statuses, tag="nmmo-arena", repo_ids=[r.policy_id for r in pushed])  # only these: no other owner's copies
    limits = OwnerLimits(active=1, daily=2, exempt=frozenset({"nmmo-arena"}))
    validate_queued(api, statuses, downloads=tmp_path / "subs", max_mb=200, limits=limits)
    states = {s.id: s for s in statuses.states() if s.id in pushed}
    waiting = [s for s in states.values() if s.status is Status.QUEUED]
    latest = max(states.values(), key=lambda s: (s.first_seen, s.id))
    assert len(waiting) == 1 and waiting[0].id == latest.id, [(s.id.policy_id, s.status, s.reason[:90], s.first_seen) for s in states.values()]
    assert waiting[0].reason.startswith("waiting: olga has had 2 new revisions validated in the last 24 hours, the limit "
                                        "of 2 a day per owner (NMMO_ARENA_OWNER_DAILY); the next slot opens at 20")
    taking_part = [s for s in states.values() if s.status is Status.EVALUATING]
    retired = [s for s in states.values() if s.status is Status.WITHDRAWN]
    assert len(taking_part) == 1 and len(retired) == 1 and retired[0].first_seen <= taking_part[0].first_seen
    assert retired[0].reason.startswith("retired: newer revisions of olga take part")
    assert "at most 1 revisions taking part at once (NMMO_ARENA_OWNER_ACTIVE); its matches and figures stay" in retired[0].reason
    # another owner is not held up by olga's limits, and an exempt owner has none
    other = Revision("paul/apprentice", push_policy(api, "paul/apprentice", EXAMPLES / "apprentice-onnx"))
    sync(api, statuses, tag="nmmo-arena", repo_ids=[other.policy_id])
    validate_queued(api, statuses, downloads=tmp_path / "subs", max_mb=200, limits=limits)
    assert statuses.get(other).status is Status.EVALUATING
    now = statuses.get(latest.id).first_seen
    assert limits.waits(statuses.get(latest.id), statuses.states(), now)
    assert not OwnerLimits(daily=2, exempt=frozenset({"olga"})).waits(statuses.get(latest.id), statuses.states(), now)


@pytest.mark.slow
def test_an_owner_keeps_a_revision_active_from_its_card(local_hub, tmp_path):
    """One revision taking part at once, here: a card that says `nmmo_arena: {keep: true}`
    keeps its revision when a newer one validates (the newer one retires instead, saying
    why); once the card no longer keeps it (an edit of the card alone, no new validation),
    the next newer revision retires it, as by default."""
    import yaml

    from matchmaking.hub.pushing import push_submission
    from matchmaking.service.submissions import OwnerLimits

    def card(keep: bool) -> str:
        meta = {"tags": ["nmmo-arena"], "team_name": "Quinn", "nmmo_arena": {"keep": keep}}
        return f"---\n{yaml.safe_dump(meta)}---\n# Quinn\n"

    api = HfApi(endpoint=local_hub.endpoint, token="test-token")
    limits = OwnerLimits(active=1)
    statuses = StatusLog(tmp_path / "statuses.jsonl")

    def push_and_validate(repo: str, folder, keep: bool) -> Revision:
        revision = Revision(repo, push_submission(api, repo, folder=folder, card=card(keep)))
        sync(api, statuses, tag="nmmo-arena", repo_ids=[repo])
        validate_queued(api, statuses, downloads=tmp_path / "subs", max_mb=200, limits=limits)
        return revision

    favourite = push_and_validate("quinn/favourite", EXAMPLES / "explorer", keep=True)
    newer = push_and_validate("quinn/newer", EXAMPLES / "wanderer", keep=False)
    assert statuses.get(favourite).status is Status.EVALUATING
    assert statuses.get(newer).status is Status.WITHDRAWN
    assert statuses.get(newer).reason.startswith("retired: the cards of quinn's other repos keep them (nmmo_arena: {keep: true}: quinn/favourite)")

    api.upload_file(path_or_fileobj=card(False).encode(), path_in_repo="README.md", repo_id=favourite.policy_id,
                    commit_message="No longer kept")
    sync(api, statuses, tag="nmmo-arena", repo_ids=[favourite.policy_id])  # a card edit: no new revision
    assert statuses.get(favourite).latest and statuses.get(favourite).status is Status.EVALUATING
    newest = push_and_validate("quinn/newer", EXAMPLES / "gatherer", keep=False)
    assert statuses.get(newest).status is Status.EVALUATING
    assert statuses.get(favourite).status is Status.WITHDRAWN
    assert statuses.get(favourite).reason.startswith("retired: newer revisions of quinn take part, and an owner has at most 1")


def test_no_pvp_match_of_a_long_run_seats_two_revisions_of_one_owner():
    """300 PvP matches of pools the Arena draws (the default rule) among 8 owners with 3
    revisions each, recorded and read back through the exposure ledger: no revision ever
    met a revision of its own owner, and every revision played."""
    from dataclasses import replace

    import numpy as np

    from arena.rules import Pairing
    from arena.schema import rows
    from arena.simulation import play
    from leaderboard.exposure import revision_exposure
    from matchmaking.service.pairing import make_pool

    entries = [f"owner{o}/team{t}@{str(t) * 40}" for o in range(8) for t in range(3)]
    rng, counts, recorded = np.random.default_rng(7), {p: 0 for p in entries}, []
    for index in range(300):
        pool = make_pool(entries, counts=counts, rng=rng, how=Pairing.GUARANTEE, uncertainty={})
        result = play([p.partition("@")[0] for p in pool], [0.0] * 16, rng=rng, index=index)
        teams = tuple(replace(t, revision=p.partition("@")[2] or "builtin") for t, p in zip(result.teams, pool))
        recorded.append(replace(result, teams=teams))
        for p in pool:
            counts[p] = counts.get(p, 0) + 1
    import pandas as pd

    frame = pd.DataFrame([row for r in recorded for row in rows(r)])
    frame["player"] = [p if p.startswith("builtin:") else f"{p}@{v}" for p, v in zip(frame["policy_id"], frame["revision"])]
    for entry in entries:
        pvp = revision_exposure(frame, entry).track("pvp")
        assert pvp is not None and pvp.matches > 0 and pvp.teammate_matches == 0, entry
