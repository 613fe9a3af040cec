"""Every verdict on the submitter's repo (`modelcards.verdicts`), over HTTP against the
embedded Hub: one discussion per revision, a comment per verdict, never twice, a rejected
revision's validation match recorded with its replay and linked."""

from __future__ import annotations

import pytest
from huggingface_hub import HfApi

from arena.lifecycle import Status
from arena.revision import Revision
from history.statuses import StatusLog
from leaderboard.refresher import StandingsRefresher
from modelcards.verdicts import VerdictLedger, marker, title
from tests_support import EXAMPLES, POLICIES, push_policy

SPACE = "http://space.example"


@pytest.mark.slow
def test_each_verdict_reaches_the_repo_once_across_restarts(tmp_path, monkeypatch):
    from app import verdict_poster
    from arena.settings import ArenaSettings
    from localhub import LocalHub
    from matchmaking.service.space import Arena

    hub = LocalHub(tmp_path / "hub", write_token="t").start()
    try:
        owner = HfApi(endpoint=hub.endpoint, token="t")
        good = Revision("eve/gatherer", push_policy(owner, "eve/gatherer", EXAMPLES / "gatherer"))
        bad = Revision("dan/broken", push_policy(owner, "dan/broken", POLICIES / "import_error"))
        settings = ArenaSettings(data_dir=tmp_path / "data", hub_endpoint=hub.endpoint, match_horizon=24, workers=2,
                                 pve_matches_per_stage=2, next_stage_top1=1.0, qualify_achievement=0.0, seed_examples=False)
        monkeypatch.setenv("HF_TOKEN", "t")  # the Space's token, as on a real Hub
        arena = Arena.start(settings, schedule=False)
        try:
            m = arena.matchmaker
            assert m.sync() == 2
            m.validate()
            for _ in range(5):
                if m.play_pve() == 0:
                    break
            assert arena.statuses.get(bad).status is Status.REJECTED
            assert arena.statuses.get(good).status is Status.QUALIFIED
            refresher = StandingsRefresher(arena.index, statuses=arena.statuses.states, bootstrap=0)
            refresher.refresh()
            poster = verdict_poster(settings, arena, refresher, space_url=SPACE)
            posted = {p.id: p for p in poster.run_once()}
            assert {(p.id, p.status, p.action) for p in posted.values()} == {(bad, Status.REJECTED, "opened"),
                                                                              (good, Status.QUALIFIED, "opened")}

            def thread(rev: Revision) -> list[str]:
                [found] = [d for d in owner.get_repo_discussions(rev.policy_id, discussion_type="discussion")]
                assert found.title == title(rev)
                return [e.content for e in owner.get_discussion_details(rev.policy_id, found.num).events
                        if getattr(e, "content", None)]

            [rejected] = thread(bad)
            assert marker(bad, Status.REJECTED) in rejected and "is rejected" in rejected
            assert "ImportNotAllowedError" in rejected and "python -m matchmaking.evaluate FOLDER" in rejected
            [validation] = [r for r in arena.store.results() if r.track == "validation" and r.teams[0].policy_id == bad.policy_id]
            assert f"[its validation match]({SPACE}/?match={validation.match_id})" in rejected
            assert arena.store.replay(validation.match_id)  # kept in the dataset: the link plays
            [qualified] = thread(good)
            assert "is qualified" in qualified and "| PvE stage 1 | Top1Ratio" in qualified and "PvE match `" in qualified
            assert poster.run_once() == []  # nothing new

            # a restart on an empty disk whose ledger lines were lost: found on the Hub, not posted again
            settings.verdict_ledger.parent.joinpath(settings.verdict_ledger.name).unlink(missing_ok=True)
            for stale in settings.verdict_ledger.parent.glob("verdicts*.jsonl"):
                stale.unlink()
            again = verdict_poster(settings, arena, refresher, space_url=SPACE)
            assert {p.action for p in again.run_once()} == {"already"}
            assert len(thread(bad)) == 1 and len(thread(good)) == 1

            # a later verdict of the same revision: a comment in the same discussion
            arena.statuses.record(good, Status.WITHDRAWN, "withdrawn by its owner")
            [withdrawn] = again.run_once()
            assert (withdrawn.status, withdrawn.action) == (Status.WITHDRAWN, "commented")
            comments = thread(good)
            assert len(comments) == 2 and marker(good, Status.WITHDRAWN) in comments[1]
            assert again.run_once() == [] and poster.run_once() == []  # the other poster reads the same ledger
        finally:
            arena.stop()
    finally:
        hub.stop()


def test_a_second_writers_ledger_is_read_with_ours(tmp_path):
    """Every writer's ledger file counts: what writer `a` posted is not due for writer `b`."""
    rev = Revision("ann/team", "a" * 40)
    VerdictLedger(tmp_path / "verdicts.jsonl", writer="a").record(rev, Status.REJECTED, 3, how="opened")
    seen = VerdictLedger(tmp_path / "verdicts.jsonl", writer="b").posted()
    assert seen == {(rev, "rejected"): 3}


def test_the_discussion_quotes_what_the_team_printed_as_text(tmp_path):
    """The team's own words are bounded and quoted as text: a fence in them cannot end the block."""
    from arena.logs import LogLine, TeamLog
    from modelcards.verdicts import LOG_LINES, Evidence, body
    from tests_support import record_lifecycle

    statuses = StatusLog(tmp_path / "s.jsonl")
    rev = Revision("ann/team", "a" * 40)
    record_lifecycle(statuses, rev.policy_id, rev.sha, Status.REJECTED, "ERROR at tick 3: RuntimeError: boom")
    lines = tuple(LogLine(3, "stderr", "```<script>alert(1)</script>") for _ in range(LOG_LINES + 5))
    log = TeamLog(slot=0, policy_id=rev.policy_id, revision=rev.sha, lines=lines, total_bytes=999)
    text = body(statuses.get(rev), Evidence("m1", (), log, "m1"), space_url=SPACE, qualify=25.0)
    assert text.count("```") == 2  # only the block's own fences
    assert f"(the first {LOG_LINES} lines; 5 more in the Replay tab)" in text
    assert text.count("[tick 3 stderr] '''<script>") == LOG_LINES
    quiet = body(statuses.get(rev), Evidence("m1", ()), space_url=SPACE, qualify=25.0)
    assert "What your team printed" not in quiet and f"({SPACE}/?match=m1)" in quiet
