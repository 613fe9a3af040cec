"""The embedded Hub's pull requests and discussions, driven by the unmodified
huggingface_hub client over real HTTP (what the model-card publisher relies on)."""

from __future__ import annotations

import pytest
from huggingface_hub import CommitOperationAdd, HfApi, ModelCard
from huggingface_hub.community import DiscussionComment, DiscussionCommit, DiscussionStatusChange
from huggingface_hub.errors import HfHubHTTPError

CARD = "---\ntags:\n- nmmo-arena\nteam_name: T\n---\n# T\n"


def _repo(api: HfApi, repo_id: str) -> str:
    api.create_repo(repo_id, exist_ok=True)
    return api.upload_file(path_or_fileobj=CARD.encode(), path_in_repo="README.md", repo_id=repo_id).oid


def _card(tag: str) -> bytes:
    return CARD.replace("team_name: T", f"team_name: {tag}").encode()


def test_a_commit_with_create_pr_opens_a_pull_request_on_its_own_ref(hub_api, tmp_path):
    main = _repo(hub_api, "pr/opened")
    info = hub_api.create_commit("pr/opened", operations=[CommitOperationAdd("README.md", _card("changed"))],
                                 commit_message="Change the card", commit_description="Why it changes", create_pr=True)
    assert info.pr_num == 1 and info.pr_revision == "refs/pr/1" and info.pr_url.endswith("/pr/opened/discussions/1")
    assert hub_api.model_info("pr/opened").sha == main  # main untouched
    assert hub_api.model_info("pr/opened", revision="refs/pr/1").card_data["team_name"] == "changed"
    path = hub_api.hf_hub_download("pr/opened", "README.md", revision="refs/pr/1", local_dir=tmp_path)
    assert ModelCard.load(path).data.team_name == "changed"

    second = hub_api.create_commit("pr/opened", operations=[CommitOperationAdd("README.md", _card("again"))],
                                   commit_message="Change it again", revision="refs/pr/1")
    assert second.pr_num is None
    details = hub_api.get_discussion_details("pr/opened", 1)
    assert details.is_pull_request and details.status == "open" and details.target_branch == "refs/heads/main"
    assert details.title == "Change the card" and details.author == "arena"
    assert isinstance(details.events[0], DiscussionComment) and details.events[0].content == "Why it changes"
    commits = [e for e in details.events if isinstance(e, DiscussionCommit)]
    assert [c.summary for c in commits] == ["Change the card", "Change it again"] and commits[-1].oid == second.oid
    assert "-team_name: T" in details.diff and "+team_name: again" in details.diff
    refs = hub_api.list_repo_refs("pr/opened", include_pull_requests=True)
    assert [b.name for b in refs.branches] == ["main"]
    assert [(r.ref, r.target_commit) for r in refs.pull_requests] == [("refs/pr/1", second.oid)]
    assert [c.commit_id for c in hub_api.list_repo_commits("pr/opened", revision="refs/pr/1")][:2] == [second.oid, info.oid]


def test_discussions_are_listed_filtered_commented_closed_and_reopened(hub_api):
    _repo(hub_api, "pr/talk")
    talk = hub_api.create_discussion("pr/talk", "A question", description="How does it rank?")
    empty = hub_api.create_pull_request("pr/talk", "An empty pull request")
    hub_api.create_commit("pr/talk", operations=[CommitOperationAdd("x.txt", b"x")], commit_message="Add x", create_pr=True)
    assert (talk.num, empty.num) == (1, 2) and not talk.is_pull_request and empty.status == "draft"

    every = list(hub_api.get_repo_discussions("pr/talk"))
    assert [(d.num, d.is_pull_request, d.status) for d in every] == [(3, True, "open"), (2, True, "draft"), (1, False, "open")]
    assert [d.num for d in hub_api.get_repo_discussions("pr/talk", discussion_type="pull_request")] == [3, 2]
    assert [d.num for d in hub_api.get_repo_discussions("pr/talk", discussion_type="discussion")] == [1]
    assert [d.num for d in hub_api.get_repo_discussions("pr/talk", discussion_status="open")] == [3, 2, 1]  # drafts are open
    assert [d.num for d in hub_api.get_repo_discussions("pr/talk", author="arena")] == [3, 2, 1]
    assert list(hub_api.get_repo_discussions("pr/talk", author="somebody-else")) == []

    comment = hub_api.comment_discussion("pr/talk", 1, "It ranks third.")
    assert isinstance(comment, DiscussionComment) and comment.content == "It ranks third."
    closed = hub_api.change_discussion_status("pr/talk", 3, "closed", comment="Not wanted")
    assert isinstance(closed, DiscussionStatusChange) and closed.new_status == "closed"
    assert hub_api.get_discussion_details("pr/talk", 3).status == "closed"
    assert [d.num for d in hub_api.get_repo_discussions("pr/talk", discussion_status="closed")] == [3]
    assert [d.num for d in hub_api.get_repo_discussions("pr/talk", discussion_status="open")] == [2, 1]
    hub_api.change_discussion_status("pr/talk", 3, "open")
    events = hub_api.get_discussion_details("pr/talk", 3).events
    assert [getattr(e, "new_status", None) for e in events if isinstance(e, DiscussionStatusChange)] == ["closed", "open"]
    assert "Not wanted" in [e.content for e in events if isinstance(e, DiscussionComment)]
    with pytest.raises(HfHubHTTPError) as missing:
        hub_api.get_discussion_details("pr/talk", 99)
    assert missing.value.response.status_code == 404


def test_many_discussions_come_back_over_several_pages(hub_api):
    _repo(hub_api, "pr/busy")
    for i in range(55):  # the Hub's pages hold 50
        hub_api.create_discussion("pr/busy", f"Question {i:02d}")
    numbers = [d.num for d in hub_api.get_repo_discussions("pr/busy")]
    assert numbers == list(range(55, 0, -1))


def test_merging_makes_the_pull_requests_commit_mains(hub_api):
    _repo(hub_api, "pr/merged")
    info = hub_api.create_commit("pr/merged", operations=[CommitOperationAdd("README.md", _card("merged"))],
                                 commit_message="Card", create_pr=True)
    hub_api.merge_pull_request("pr/merged", info.pr_num, comment="Thanks")
    assert hub_api.model_info("pr/merged").sha == info.oid  # fast-forward: the PR's commit is main's
    assert hub_api.model_info("pr/merged").card_data["team_name"] == "merged"
    details = hub_api.get_discussion_details("pr/merged", info.pr_num)
    assert details.status == "merged" and details.merge_commit_oid == info.oid
    assert [d.status for d in hub_api.get_repo_discussions("pr/merged", discussion_status="closed")] == ["merged"]
    with pytest.raises(HfHubHTTPError) as again:  # a merged pull request cannot be merged or reopened
        hub_api.merge_pull_request("pr/merged", info.pr_num)
    assert again.value.response.status_code == 400
    with pytest.raises(HfHubHTTPError):
        hub_api.change_discussion_status("pr/merged", info.pr_num, "open")


def test_merging_after_main_moved_merges_or_reports_the_conflict(hub_api):
    _repo(hub_api, "pr/moved")
    card_pr = hub_api.create_commit("pr/moved", operations=[CommitOperationAdd("README.md", _card("pr"))],
                                    commit_message="Card", create_pr=True)
    clash = hub_api.create_commit("pr/moved", operations=[CommitOperationAdd("policy.py", b"# from the PR\n")],
                                  commit_message="Policy", create_pr=True)
    moved = hub_api.upload_file(path_or_fileobj=b"# on main\n", path_in_repo="policy.py", repo_id="pr/moved").oid

    hub_api.merge_pull_request("pr/moved", card_pr.pr_num)  # README changed only in the PR: merged
    head = hub_api.model_info("pr/moved", files_metadata=True)
    assert head.sha not in (moved, card_pr.oid) and head.card_data["team_name"] == "pr"
    assert [c.title for c in hub_api.list_repo_commits("pr/moved")][:2] == ["Merge refs/pr/1: Card", "Upload policy.py with huggingface_hub"]
    assert hub_api.get_discussion_details("pr/moved", card_pr.pr_num).merge_commit_oid == head.sha

    assert hub_api.get_discussion_details("pr/moved", clash.pr_num).conflicting_files == ["policy.py"]
    with pytest.raises(HfHubHTTPError) as conflict:
        hub_api.merge_pull_request("pr/moved", clash.pr_num)
    assert conflict.value.response.status_code == 409 and "policy.py" in str(conflict.value)
    assert hub_api.model_info("pr/moved").sha == head.sha  # nothing changed


def test_discussion_writes_need_the_token(local_hub, hub_api):
    _repo(hub_api, "pr/guarded")
    anonymous = HfApi(endpoint=local_hub.endpoint, token=False)
    for write in (
        lambda: anonymous.create_discussion("pr/guarded", "Spam spam"),
        lambda: anonymous.create_commit("pr/guarded", operations=[CommitOperationAdd("a", b"a")], commit_message="x", create_pr=True),
    ):
        with pytest.raises(HfHubHTTPError) as refused:
            write()
        assert refused.value.response.status_code == 401
    number = hub_api.create_discussion("pr/guarded", "Fine").num
    with pytest.raises(HfHubHTTPError) as refused:
        anonymous.change_discussion_status("pr/guarded", number, "closed")
    assert refused.value.response.status_code == 401
    assert list(anonymous.get_repo_discussions("pr/guarded"))[0].title == "Fine"  # reading is open
