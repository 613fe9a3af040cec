"""Results on the model's page: the decision (pure), the card's metadata, and the pull
request on the embedded Hub over real HTTP, down to the Arena's own flow end to end."""

from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np
import pytest
from huggingface_hub import HfApi, metadata_load
from huggingface_hub.community import DiscussionCommit

from arena.errors import CardMetadataError
from arena.lifecycle import StageFigures, Status
from arena.ratings import TRUESKILL_SIGMA, EloState, TrueSkillRating, TrueSkillState
from arena.revision import Revision
from arena.settling import FALLBACK_GAIN, SETTLED_SIGMA, is_settled, matches_to_settle, precision_gain
from arena.simulation import Population, play
from history.statuses import StatusLog
from history.store import HistoryStore
from leaderboard.refresher import StandingsRefresher
from leaderboard.standings import Standings
from modelcards.card import description, eval_results, opted_out, with_results
from modelcards.ledger import PublicationLedger
from modelcards.publications import CardResults, ProvisionalPvP, Published, PublishRule, PvPFigures, due, results_for
from modelcards.publisher import PR_TITLE, ModelCardPublisher
from tests_support import EXAMPLES, push_policy, record_lifecycle

DATASET = "nmmo-arena/match-history"
STAGES = (StageFigures(1, 0.8, 31.25, 10), StageFigures(2, 0.4, 22.0, 10))


# -- the decision, pure -------------------------------------------------------------------

def _standings(ratings: dict[str, TrueSkillRating]) -> Standings:
    return Standings(trueskill=TrueSkillState(ratings=ratings), elo=EloState(), mle={})


def _qualified(tmp_path, repo_id="ann/team", revision="a" * 40, status=Status.QUALIFIED):
    log = StatusLog(tmp_path / f"statuses-{repo_id.replace('/', '-')}-{status.value}.jsonl")
    record_lifecycle(log, repo_id, revision, status, "qualified", pve=STAGES)
    return log.states()


def test_published_at_qualification_then_only_as_the_rating_settles(tmp_path):
    player = "ann/team@" + "a" * 40
    states = _qualified(tmp_path)
    rule = PublishRule(min_interval_s=600)
    first = due(_standings({}), states, published={}, declined=(), rule=rule, now=1000.0)
    assert [(p.results.id.policy_id, p.reason) for p in first] == [("ann/team", "qualified for PvP")]
    assert first[0].results.pve == STAGES and first[0].results.pvp is None  # no PvP yet: PvE figures only
    # ... and a note instead: no match yet, the meter's count at the fallback gain (nobody has played)
    assert first[0].results.provisional == ProvisionalPvP(0, matches_to_settle(TRUESKILL_SIGMA, gain=FALLBACK_GAIN))

    def after(mu: float, sigma: float, matches: int, last: CardResults, at: float, now: float, how: PublishRule = rule):
        standings = _standings({player: TrueSkillRating(mu, sigma, matches)})
        return due(standings, states, published={Revision("ann/team", "a" * 40): Published(last, at)}, declined=(), rule=how, now=now)

    base = first[0].results
    assert after(26.0, 4.5, 1, base, 1000.0, 5000.0) == []  # sigma 4.5: far from settled, nothing to say
    assert after(26.0, 3.9, 2, base, 1000.0, 5000.0) == []  # (was a step of 4) unsettled: PvP figures wait
    assert after(26.0, 0.95, 23, base, 1000.0, 5000.0) == []  # nearly settled (0.95 > 0.942) is still unsettled
    news = after(26.0, 0.9, 25, base, 1000.0, 5000.0)
    assert [p.reason for p in news] == ["PvP rating settled after 25 PvP matches (TrueSkill sigma 0.90)"]
    assert after(26.0, 0.9, 25, base, 1000.0, 1500.0) == []  # within the interval: waits
    settled = news[0].results
    assert settled.pvp == PvPFigures(mu=26.0, sigma=0.9, conservative=23.3, matches=25) and settled.provisional is None
    assert after(26.0, 0.9, 25, settled, 5000.0, 99999.0) == []  # same figures: never republished
    assert after(28.0, 0.85, 30, settled, 5000.0, 99999.0) == []  # moved 2.15, no step crossed: not news
    moved = after(20.5, 0.8, 33, settled, 5000.0, 99999.0)
    assert [p.reason for p in moved] == ["conservative score moved by -5.20 to 18.10 since the last publication"]
    step = after(26.0, 0.49, 84, settled, 5000.0, 99999.0)  # the default's one step below the settled level
    assert [p.reason for p in step] == ["TrueSkill sigma fell below 0.5 (0.49 after 84 PvP matches)"]
    finer = PublishRule(sigma_steps=(0.8, 0.6, 0.5), min_interval_s=600)
    jump = after(26.0, 0.55, 70, settled, 5000.0, 99999.0, finer)  # several steps at once: one publication naming the lowest
    assert [p.reason for p in jump] == ["TrueSkill sigma fell below 0.6 (0.55 after 70 PvP matches)"]
    once = after(26.0, 0.45, 100, base, 1000.0, 5000.0)  # settled and below a step at once: one publication, settling
    assert [p.reason for p in once] == ["PvP rating settled after 100 PvP matches (TrueSkill sigma 0.45)"]
    earlier = replace(settled, pve=STAGES[:1])  # qualified once stage 1 was decided; stage 2 ended since
    assert [p.reason for p in after(26.0, 0.9, 25, earlier, 5000.0, 99999.0)] == ["PvE stage 2 ended"] == \
        [rule.news(earlier, settled)][:1]


def test_an_unsettled_rating_publishes_no_pvp_figures_and_says_provisional(tmp_path):
    player = "ann/team@" + "a" * 40
    states = _qualified(tmp_path)
    rule = PublishRule(min_interval_s=600)
    standings = _standings({player: TrueSkillRating(26.0, 1.45, 10), "crowd/p1@sim": TrueSkillRating(25.0, 0.5, 60)})
    [first] = due(standings, states, published={}, declined=(), rule=rule, now=0.0)
    left = matches_to_settle(1.45, gain=precision_gain(1.45, 10))  # from its own gain per match, as the meter
    assert first.results.pvp is None and first.results.provisional == ProvisionalPvP(10, left) and left > 5
    assert not [r for r in eval_results(first.results, dataset=DATASET, dataset_url="http://x") if r.dataset_config == "pvp"]
    text = description(first.results, first.reason, dataset=DATASET, dataset_url="http://x")
    assert f"PvP rating: provisional after 10 PvP matches (about {left} more needed); published here once settled." in text
    assert "| PvP | rating | provisional" in text and "TrueSkill mu - 3 sigma" not in text and "MLE rating" not in text
    # before it settles nothing republishes but PvE news, however long and however much the rating moves
    key = Revision("ann/team", "a" * 40)
    dropped = _standings({player: TrueSkillRating(10.0, 1.2, 15)})
    [pve] = due(dropped, states, published={key: Published(replace(first.results, pve=STAGES[:1]), 0.0)}, declined=(),
                rule=rule, now=1e6)
    assert pve.reason == "PvE stage 2 ended" and pve.results.pvp is None and pve.results.provisional.matches == 15
    for mu, sigma, matches in ((10.0, 1.2, 15), (40.0, 1.0, 21), (5.0, 0.95, 24)):
        moved = _standings({player: TrueSkillRating(mu, sigma, matches)})
        assert due(moved, states, published={key: Published(pve.results, 0.0)}, declined=(), rule=rule, now=1e6) == []
    # the one definition decides, on the unrounded sigma: 0.9425 rounds to 0.94 but is not settled
    assert results_for(_standings({player: TrueSkillRating(26.0, SETTLED_SIGMA + 5e-4, 23)}), states[0]).pvp is None
    at = results_for(_standings({player: TrueSkillRating(26.0, SETTLED_SIGMA, 23)}), states[0])
    assert at.pvp is not None and at.provisional is None and is_settled(SETTLED_SIGMA)
    # settled: the figures, the text without the note; the ledger reads both forms back, and its older records
    [settles] = due(_standings({player: TrueSkillRating(26.0, 0.9, 25)}), states, published={
        Revision("ann/team", "a" * 40): Published(first.results, 0.0)}, declined=(), rule=rule, now=1e6)
    assert settles.reason.startswith("PvP rating settled after 25 PvP matches")
    text = description(settles.results, settles.reason, dataset=DATASET, dataset_url="http://x")
    assert "| PvP | TrueSkill mu - 3 sigma | 23.30 (mu 26.00, sigma 0.90) |" in text and "provisional" not in text
    for results in (first.results, settles.results):
        assert CardResults.from_dict(results.to_dict()) == results
    legacy = {k: v for k, v in replace(first.results, pvp=PvPFigures(26.0, 3.9, 14.3, 2)).to_dict().items() if k != "provisional"}
    old = CardResults.from_dict(legacy)  # written before the rule: unsettled figures, no note
    assert old.provisional is None and rule.news(old, settles.results) == settles.reason


def test_nothing_is_due_for_declined_superseded_or_unqualified_revisions(tmp_path):
    rule = PublishRule()
    assert due(_standings({}), _qualified(tmp_path), published={}, declined={Revision("ann/team", "a" * 40)}, rule=rule, now=0) == []
    assert due(_standings({}), _qualified(tmp_path, status=Status.EVALUATED), published={}, declined=(), rule=rule, now=0) == []
    log = StatusLog(tmp_path / "two.jsonl")
    record_lifecycle(log, "ann/team", "a" * 40, Status.QUALIFIED, "qualified", pve=STAGES)
    log.record(Revision("ann/team", "b" * 40), Status.QUEUED)  # a newer push supersedes it
    assert due(_standings({}), log.states(), published={}, declined=(), rule=rule, now=0) == []
    with pytest.raises(ValueError):
        PublishRule(sigma_steps=(2.0, 4.0))
    with pytest.raises(ValueError, match="below the settled sigma"):
        PublishRule(sigma_steps=(1.0, 0.5))  # above the settled level a step would publish nothing new
    assert PublishRule().sigma_steps == (0.5,) and PublishRule(sigma_steps=(0.8, 0.6)).sigma_steps == (0.8, 0.6)


# -- the card -----------------------------------------------------------------------------

RESULTS = CardResults(Revision("ann/team", "a" * 40), STAGES, PvPFigures(30.0, 2.5, 22.5, 40, 1.73, 1.21, 2.3))


def test_the_card_carries_the_results_as_model_index_and_keeps_the_rest():
    own = ("---\ntags:\n- nmmo-arena\nteam_name: Ann\nmodel-index:\n- name: ann-team\n  results:\n"
           "  - task: {type: reinforcement-learning}\n    dataset: {name: mine, type: ann/private-eval}\n"
           "    metrics:\n    - {type: score, value: 7}\n---\n# Ann's team\n\nText.\n")
    card = with_results(own, eval_results(RESULTS, dataset=DATASET, dataset_url="http://hub/datasets/" + DATASET),
                        dataset=DATASET, model_name="team")
    meta = metadata_load_text(card)
    assert meta["team_name"] == "Ann" and meta["tags"] == ["nmmo-arena"] and card.endswith("# Ann's team\n\nText.\n")
    index = meta["model-index"][0]
    assert index["name"] == "ann-team"  # the owner's model name stays
    by_config = {r["dataset"].get("config"): r for r in index["results"]}
    assert set(by_config) == {None, "pvp", "pve-stage-1", "pve-stage-2"}  # the owner's own result is kept
    pvp = {m["type"]: m["value"] for m in by_config["pvp"]["metrics"]}
    assert pvp == {"trueskill_conservative": 22.5, "trueskill_mu": 30.0, "trueskill_sigma": 2.5, "mle_rating": 1.73,
                   "mle_rating_low": 1.21, "mle_rating_high": 2.3, "matches": 40}
    assert by_config["pvp"]["source"] == {"name": DATASET, "url": "http://hub/datasets/" + DATASET}
    assert {m["type"]: m["value"] for m in by_config["pve-stage-2"]["metrics"]} == {"top1_ratio": 0.4, "mean_achievement": 22.0, "matches": 10}
    again = with_results(card, eval_results(replace(RESULTS, pvp=None), dataset=DATASET, dataset_url="http://x"),
                         dataset=DATASET, model_name="team")  # the Arena's results are replaced, not appended
    configs = [r["dataset"].get("config") for r in metadata_load_text(again)["model-index"][0]["results"]]
    assert sorted(c or "" for c in configs) == ["", "pve-stage-1", "pve-stage-2"]
    with pytest.raises(CardMetadataError, match="Fix the YAML"):
        with_results("---\ntags: [unclosed\n---\n", [], dataset=DATASET, model_name="x")


def metadata_load_text(text: str) -> dict:
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "README.md"
        path.write_text(text)
        return metadata_load(path)


def test_opting_out():
    assert opted_out({"nmmo_arena": {"model_index": False}}) and opted_out({"nmmo_arena": {"model_index": "no"}})
    assert not opted_out({"nmmo_arena": {"model_index": True}}) and not opted_out({"nmmo_arena": "x"})
    assert not opted_out(None) and not opted_out({})


# -- the pull request, over real HTTP -------------------------------------------------------

#: The worlds' rule: finer steps below the settled level than the default's, so that a few
#: dozen matches give news after settling.
WORLD_RULE = PublishRule(sigma_steps=(0.85, 0.75), min_interval_s=600)


class World:
    """A repo on the embedded Hub, its qualified revision, a history of PvP matches it
    plays in, the standings kept by the leaderboard's refresher, and a publisher with a
    clock the test moves."""

    def __init__(self, api: HfApi, tmp_path, repo_id: str, *, card_extra: str = ""):
        self.api, self.tmp, self.repo_id = api, tmp_path, repo_id
        self.revision = push_policy(api, repo_id, EXAMPLES / "gatherer", name="Gatherer")
        if card_extra:
            readme = api.hf_hub_download(repo_id, "README.md", local_dir=tmp_path / "card")
            text = open(readme).read().replace("team_name:", card_extra + "\nteam_name:")
            self.revision = api.upload_file(path_or_fileobj=text.encode(), path_in_repo="README.md", repo_id=repo_id).oid
        self.statuses = StatusLog(tmp_path / "statuses.jsonl")
        record_lifecycle(self.statuses, repo_id, self.revision, Status.QUALIFIED, "qualified", pve=STAGES)
        self.store = HistoryStore(tmp_path / "history")
        self.refresher = StandingsRefresher(self.store, statuses=self.statuses.states, bootstrap=20, mle_every_s=0)
        self.crowd = Population.random(15, seed=3, prefix="crowd/p")
        self.rng = np.random.default_rng(0)
        self.played = 0
        self.now = 1_000_000.0

    def play(self, matches: int) -> None:
        for _ in range(matches):
            lineup = [self.repo_id, *self.crowd.ids]
            result = play(lineup, [1.0, *self.crowd.skills], rng=self.rng, index=self.played)
            teams = tuple(replace(t, revision=self.revision) if t.policy_id == self.repo_id else t for t in result.teams)
            self.store.record(replace(result, match_id=f"{self.repo_id.replace('/', '-')}-{self.played:05d}", teams=teams))
            self.played += 1
        self.store.flush()
        self.refresher.refresh()

    def publisher(self, api: HfApi | None = None, ledger: str = "model_cards.jsonl") -> ModelCardPublisher:
        return ModelCardPublisher(api=api or self.api, standings=self.refresher.standings, statuses=self.statuses.states,
                                  ledger=PublicationLedger(self.tmp / ledger), dataset=DATASET,
                                  rule=WORLD_RULE, clock=lambda: self.now)

    def prs(self) -> list:
        return list(self.api.get_repo_discussions(self.repo_id, discussion_type="pull_request"))

    def settle(self, rule: PublishRule = WORLD_RULE) -> None:
        """Play until the rating's next news (it settles, or sigma crosses its next step),
        and let the publication interval pass."""
        player = f"{self.repo_id}@{self.revision}"

        def stage() -> tuple[bool, int]:
            pvp = results_for(self.refresher.standings(), self.state()).pvp
            return pvp is not None, rule.level(pvp)

        start = stage()
        while stage() == start:
            self.play(1)
            assert self.played < 200, player
        self.now += 601

    def state(self):
        return self.statuses.get(Revision(self.repo_id, self.revision))


def test_a_qualified_revision_gets_one_pull_request_updated_as_its_rating_settles(hub_api, tmp_path):
    world = World(hub_api, tmp_path, "cards/settles")
    world.play(2)
    publisher = world.publisher()
    [opened] = publisher.run_once()
    assert (opened.action, opened.detail) == ("opened", "qualified for PvP")
    [pr] = world.prs()
    assert (pr.num, pr.title, pr.status, pr.author) == (opened.pr_num, PR_TITLE, "open", "arena")

    def card() -> dict:
        info = hub_api.model_info(world.repo_id, revision=f"refs/pr/{pr.num}")
        return {(r.dataset_config, r.metric_type): r.metric_value for r in info.card_data.eval_results}

    read = card()
    assert not [key for key in read if key[0] == "pvp"]  # 2 PvP matches: provisional, no PvP figures yet
    assert read[("pve-stage-1", "top1_ratio")] == 0.8 and read[("pve-stage-1", "mean_achievement")] == 31.25
    assert read[("pve-stage-2", "top1_ratio")] == 0.4
    info = hub_api.model_info(world.repo_id, revision=f"refs/pr/{pr.num}")
    source = {(r.source_name, r.source_url) for r in info.card_data.eval_results}
    assert source == {(DATASET, f"{hub_api.endpoint}/datasets/{DATASET}")}
    meta = metadata_load(hub_api.hf_hub_download(world.repo_id, "README.md", revision=f"refs/pr/{pr.num}", local_dir=tmp_path / "pr"))
    assert meta["team_name"] == "Gatherer" and "nmmo-arena" in meta["tags"] and meta["model-index"][0]["name"] == "settles"
    assert hub_api.model_info(world.repo_id).sha == world.revision  # main is the owner's to merge into
    details = hub_api.get_discussion_details(world.repo_id, pr.num)
    assert "PvE stage 1 | Top1Ratio / mean Achievement | 0.80 / 31.2" in details.events[0].content
    assert "nmmo_arena: {model_index: false}" in details.events[0].content
    assert "PvP rating: provisional after 2 PvP matches (about " in details.events[0].content

    world.play(1)
    assert publisher.run_once() == []  # one more match: not news (and within the interval)
    world.now += 601
    assert publisher.run_once() == []  # unsettled: nothing, the interval past or not
    stage3 = StageFigures(3, 0.5, 20.0, 10)
    world.statuses.record(Revision(world.repo_id, world.revision), Status.QUALIFIED, "PvE stage 3", pve=(*STAGES, stage3))
    [pve] = publisher.run_once()  # PvE news is published while the PvP rating is provisional
    assert (pve.action, pve.detail, pve.pr_num) == ("updated", "PvE stage 3 ended", pr.num)
    read = card()
    assert read[("pve-stage-3", "top1_ratio")] == 0.5 and not [key for key in read if key[0] == "pvp"]
    comment = hub_api.get_discussion_details(world.repo_id, pr.num).events[-1].content
    assert comment.startswith("Updated: PvE stage 3 ended") and "provisional after 3 PvP matches" in comment

    world.settle()
    [updated] = publisher.run_once()
    assert updated.action == "updated" and updated.pr_num == pr.num
    assert updated.detail.startswith(f"PvP rating settled after {world.played} PvP matches")
    assert [p.num for p in world.prs()] == [pr.num]  # still one pull request
    details = hub_api.get_discussion_details(world.repo_id, pr.num)
    assert len([e for e in details.events if isinstance(e, DiscussionCommit)]) == 3
    assert details.events[-1].content.startswith("Updated: PvP rating settled after")
    assert "provisional" not in details.events[-1].content
    figures = results_for(world.refresher.standings(), world.state())
    read = card()
    assert read[("pvp", "trueskill_mu")] == figures.pvp.mu and read[("pvp", "trueskill_sigma")] == figures.pvp.sigma <= 0.94
    rating = world.refresher.standings().trueskill.ratings[f"{world.repo_id}@{world.revision}"]
    assert is_settled(rating.sigma)
    assert read[("pvp", "trueskill_conservative")] == round(rating.mu - 3 * rating.sigma, 2) == figures.pvp.conservative
    assert read[("pvp", "mle_rating")] == figures.pvp.mle and read[("pvp", "mle_rating_low")] < figures.pvp.mle < read[("pvp", "mle_rating_high")]
    assert read[("pvp", "matches")] == world.played

    # a restart (a new publisher on the same ledger) neither reopens nor republishes
    assert world.publisher().run_once() == []
    # even a lost ledger reopens nothing: the open pull request is found on the Hub, its card already current
    [again] = world.publisher(ledger="lost.jsonl").run_once()
    assert (again.action, again.pr_num) == ("unchanged", pr.num)
    assert [p.num for p in world.prs()] == [pr.num]
    assert len([e for e in hub_api.get_discussion_details(world.repo_id, pr.num).events if isinstance(e, DiscussionCommit)]) == 3


def test_an_opted_out_card_gets_no_pull_request(hub_api, tmp_path, caplog):
    world = World(hub_api, tmp_path, "cards/private", card_extra="nmmo_arena:\n  model_index: false")
    world.play(2)
    publisher = world.publisher()
    with caplog.at_level(logging.INFO, logger="modelcards.publisher"):
        [declined] = publisher.run_once()
    assert declined.action == "declined" and "opts out" in declined.detail
    assert "not published: its card opts out" in caplog.text
    world.settle()
    assert publisher.run_once() == [] and world.publisher().run_once() == []  # decided once, kept across restarts
    assert world.prs() == []


def test_closed_by_the_owner_is_an_opt_out_for_that_revision_and_a_merge_ends_the_pr(hub_api, tmp_path, caplog):
    world = World(hub_api, tmp_path, "cards/owner")
    world.play(2)
    publisher = world.publisher()
    [first] = publisher.run_once()
    hub_api.change_discussion_status(world.repo_id, first.pr_num, "closed", comment="No thanks")
    world.settle()
    with caplog.at_level(logging.INFO, logger="modelcards.publisher"):
        [declined] = publisher.run_once()
    assert declined.action == "declined" and f"closed pull request #{first.pr_num}" in declined.detail
    assert "treated as opting out for that revision" in caplog.text
    world.settle()
    assert publisher.run_once() == [] and world.publisher().run_once() == []
    assert [(p.num, p.status) for p in world.prs()] == [(first.pr_num, "closed")]

    # a new revision of the same repo starts afresh: a new pull request; merged, it is done
    world.revision = push_policy(hub_api, world.repo_id, EXAMPLES / "explorer", name="Explorer")
    record_lifecycle(world.statuses, world.repo_id, world.revision, Status.QUALIFIED, "qualified", pve=STAGES)
    [fresh] = publisher.run_once()
    assert fresh.action == "opened" and fresh.pr_num != first.pr_num
    hub_api.merge_pull_request(world.repo_id, fresh.pr_num)
    assert hub_api.model_info(world.repo_id).card_data.eval_results  # the results are on main now
    world.now += 601
    assert publisher.run_once() == []  # merged, and the results did not change: no new pull request
    world.settle()
    [after_merge] = publisher.run_once()
    assert after_merge.action == "opened" and after_merge.pr_num not in (first.pr_num, fresh.pr_num)
    assert sorted(p.status for p in world.prs()) == ["closed", "merged", "open"]


def test_hub_failures_are_logged_once_and_retried_later(hub_api, local_hub, tmp_path, caplog):
    world = World(hub_api, tmp_path, "cards/refused")
    world.play(2)
    refused = world.publisher(api=HfApi(endpoint=local_hub.endpoint, token="wrong-token"))
    with caplog.at_level(logging.WARNING, logger="modelcards.publisher"):
        [failed] = refused.run_once()
        assert refused.run_once() == []  # waits before trying that repo again
        refused._failing["cards/refused"] = (*refused._failing["cards/refused"][:1], 0.0, 60.0)  # the wait is over
        [again] = refused.run_once()
    assert failed.action == again.action == "failed" and "refused the Space's token (401)" in failed.detail
    assert "NMMO_ARENA_MODEL_CARDS=0" in failed.detail
    assert caplog.text.count("not published") == 1  # logged once
    assert refused._failing["cards/refused"][2] == 120.0  # the wait doubles
    away = world.publisher(api=HfApi(endpoint="http://127.0.0.1:9", token="t"), ledger="away.jsonl")
    [unreachable] = away.run_once()
    assert unreachable.action == "failed" and "is the Hub reachable?" in unreachable.detail
    assert world.prs() == []
    [opened] = world.publisher().run_once()  # with the right token it works
    assert opened.action == "opened"


# -- end to end: the Arena's own flow -------------------------------------------------------

@pytest.mark.slow
def test_end_to_end_from_pve_and_pvp_matches_to_the_pull_request(tmp_path, monkeypatch):
    from app import model_card_publisher
    from arena.settings import ArenaSettings
    from localhub import LocalHub
    from matchmaking.service.space import Arena

    hub = LocalHub(tmp_path / "hub", write_token="t").start()
    try:
        owner = HfApi(endpoint=hub.endpoint, token="t")
        revision = push_policy(owner, "eve/gatherer", EXAMPLES / "gatherer")
        settings = ArenaSettings(data_dir=tmp_path / "data", hub_endpoint=hub.endpoint, match_horizon=24, workers=2,
                                 pve_matches_per_stage=1, next_stage_top1=1.0, qualify_achievement=0.0, seed_examples=False)
        monkeypatch.setenv("HF_TOKEN", "t")  # the Space's token, as on a real Hub
        arena = Arena.start(settings, schedule=False)
        try:
            m = arena.matchmaker
            assert m.sync() == 1
            m.validate()
            for _ in range(5):
                if m.play_pve() == 0:
                    break
            state = arena.statuses.get(Revision("eve/gatherer", revision))
            assert state.status is Status.QUALIFIED, state.reason
            assert m.play_pvp() == 2
            m.flush()
            refresher = StandingsRefresher(arena.store, statuses=arena.statuses.states, bootstrap=20)
            refresher.refresh()
            publisher = model_card_publisher(settings, arena.api, refresher, arena.statuses)
            [opened] = publisher.run_once()
            assert opened.action == "opened"
            info = owner.model_info("eve/gatherer", revision=f"refs/pr/{opened.pr_num}")
            read = {(r.dataset_config, r.metric_type): r.metric_value for r in info.card_data.eval_results}
            rating = refresher.standings().trueskill.ratings[f"eve/gatherer@{revision}"]
            assert rating.matches == 2 and not is_settled(rating.sigma)  # 2 PvP matches: provisional
            assert not [key for key in read if key[0] == "pvp"]
            text = owner.get_discussion_details("eve/gatherer", opened.pr_num).events[0].content
            assert "PvP rating: provisional after 2 PvP matches" in text
            stage1 = next(s for s in state.pve if s.stage == 1)
            assert read[("pve-stage-1", "top1_ratio")] == round(stage1.top1_ratio, 2)
            assert {r.source_name for r in info.card_data.eval_results} == {settings.history_repo}
            # the ledger is part of the history dataset: a Space restarted on an empty disk reads it back
            assert (tmp_path / "data" / "history" / "modelcards" / "publications.jsonl").exists()
            assert model_card_publisher(settings, arena.api, refresher, arena.statuses).run_once() == []  # restart: nothing
        finally:
            arena.stop()
    finally:
        hub.stop()


def test_the_pull_request_writes_the_hubs_eval_results_and_the_benchmark_ranks_them(hub_api, tmp_path):
    """Beside `model-index`, the pull request writes `.eval_results/nmmo-arena.yaml`: the Hub
    reads it (`model_info(expand=["evalResults"])`, through huggingface_hub's own parser),
    each entry linking the revision's page on the Arena; the history dataset declares the
    benchmark (`eval.yaml`, written by the history store), and its leaderboard lists the
    revision's PvP rating once settled."""
    from history.store.layout import EVAL_YAML

    world = World(hub_api, tmp_path, "cards/evals")
    world.play(2)
    publisher = ModelCardPublisher(api=hub_api, standings=world.refresher.standings, statuses=world.statuses.states,
                                   ledger=PublicationLedger(tmp_path / "ledger.jsonl"), dataset=DATASET,
                                   rule=WORLD_RULE, clock=lambda: world.now, space_url="https://arena.example")
    [opened] = publisher.run_once()
    ref = f"refs/pr/{opened.pr_num}"

    def entries() -> dict:
        info = hub_api.model_info(world.repo_id, revision=ref, expand=["evalResults"])
        return {e.task_id: e for e in info.eval_results or []}

    found = entries()
    assert set(found) == {"pve-stage-1", "pve-stage-2"}  # PvP provisional: no PvP entry yet
    stage1 = found["pve-stage-1"]
    assert (stage1.dataset_id, stage1.value, stage1.source_name) == (DATASET, 0.8, "NMMO Arena")
    assert stage1.source_url == f"https://arena.example/?policy={world.repo_id}@{world.revision}"
    assert stage1.notes.startswith(f"revision {world.revision[:7]}; ")

    hub_api.create_repo("cards/not-a-benchmark", repo_type="dataset", exist_ok=True)
    with pytest.raises(Exception, match="no benchmark"):
        hub_api.get_dataset_leaderboard("cards/not-a-benchmark")
    hub_api.create_repo(DATASET, repo_type="dataset", exist_ok=True)
    hub_api.upload_file(path_or_fileobj=EVAL_YAML.encode(), path_in_repo="eval.yaml", repo_id=DATASET, repo_type="dataset")

    def ranked() -> list:  # (other tests' repos on this Hub may have entries too)
        return [row for row in hub_api.get_dataset_leaderboard(DATASET) if row.model_id == world.repo_id]

    assert ranked() == []  # the headline task (pvp) has no entry of this revision yet

    world.settle()
    [updated] = publisher.run_once()
    assert updated.action == "updated"
    pvp = entries()["pvp"]
    figures = results_for(world.refresher.standings(), world.state()).pvp
    assert pvp.value == figures.conservative and f"{figures.matches} PvP matches" in pvp.notes
    [row] = ranked()
    assert (row.model_id, row.value, row.pull_request) == (world.repo_id, figures.conservative, opened.pr_num)
    ranks = [r.rank for r in hub_api.get_dataset_leaderboard(DATASET)]
    assert ranks == list(range(1, len(ranks) + 1))
    assert [o.action for o in publisher.run_once()] == []  # nothing new: no commit
