"""What a node does before it plays: portable specs, and fetching a revision from the Hub
into its own cache, checked file by file against the Hub's record of the commit."""

from __future__ import annotations

import pytest

from arena.errors import NotPortableError, SubmissionIntegrityError
from arena.policies import PolicyRef, builtin, local
from arena.revision import Revision
from arena.rules import stage_opponents
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec, policies_for
from matchmaking.service.nodes import NodeCache, git_blob_id, portable
from tests_support import EXAMPLES, push_policy


def lineup(ref):
    return policies_for(ref, [builtin(n) for n in stage_opponents(1)])


@pytest.fixture()
def pushed(hub_api):
    return PolicyRef(Revision("omar/explorer", push_policy(hub_api, "omar/explorer", EXAMPLES / "explorer")))


def test_a_portable_spec_names_submissions_by_hub_revision_only(tmp_path, pushed, local_hub):
    spec = MatchSpec(seed=5, policies=lineup(PolicyRef(pushed.id, path=tmp_path / "dl")),
                     config=MatchConfig(horizon=8, cache_dir=tmp_path / "maps"))
    sent = portable(spec, local_hub.endpoint)
    assert sent.match_id == spec.match_id and sent.config.cache_dir is None
    assert [(p.id, p.path) for p in sent.policies] == [(p.id, None) for p in spec.policies]
    assert sent.policies[0].hub == local_hub.endpoint and all(p.hub == "" for p in sent.policies if p.is_builtin)
    with pytest.raises(NotPortableError, match="Push it to the Hub"):
        portable(MatchSpec(seed=1, policies=lineup(local(EXAMPLES / "explorer")), config=MatchConfig(horizon=4)), "x")


def test_a_node_fetches_pinned_revisions_into_its_cache_and_checks_them(tmp_path, pushed, local_hub, hub_api):
    cache = NodeCache(tmp_path / "node")
    spec = portable(MatchSpec(seed=5, policies=lineup(pushed), config=MatchConfig(horizon=8)), local_hub.endpoint)
    ref = spec.policies[0]
    playable = cache.localize(spec)
    folder = playable.policies[0].path
    assert folder == tmp_path / "node" / "submissions" / pushed.policy_id / pushed.id.sha
    assert (folder / "policy.py").read_bytes() == (EXAMPLES / "explorer" / "policy.py").read_bytes()
    assert playable.config.cache_dir == tmp_path / "node" and (folder / ".checked").is_file()
    # a later commit does not change what this revision fetches
    push_policy(hub_api, "omar/explorer", EXAMPLES / "gatherer")
    assert cache.fetch(ref) == folder and (folder / "policy.py").read_bytes() == (EXAMPLES / "explorer" / "policy.py").read_bytes()
    # a copy damaged before its check is refused, removed, and fetched whole the next time
    (folder / ".checked").unlink()
    original = (folder / "policy.py").read_bytes()
    (folder / "policy.py").write_bytes(original[:-2] + b"#\n")  # same size, other content
    with pytest.raises(SubmissionIntegrityError, match="policy.py does not match its git blob id.*fetches it again"):
        cache.fetch(ref)
    assert not folder.exists()
    assert (cache.fetch(ref) / "policy.py").read_bytes() == (EXAMPLES / "explorer" / "policy.py").read_bytes()


def test_git_blob_ids_are_the_hubs(hub_api, pushed, tmp_path):
    files = {f.path: f.blob_id for f in hub_api.list_repo_tree(pushed.policy_id, revision=pushed.id.sha, recursive=True)}
    assert git_blob_id(EXAMPLES / "explorer" / "policy.py") == files["policy.py"]
    (tmp_path / "empty").write_bytes(b"")
    assert git_blob_id(tmp_path / "empty") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"  # git's own empty blob
