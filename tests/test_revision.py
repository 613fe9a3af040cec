"""`arena.revision.Revision`: the one value for "this exact version of this policy", and its
text form, the player name of every table."""

from __future__ import annotations

import json

import pytest

from arena.errors import InvalidArgumentError
from arena.lifecycle import Status, StatusEvent
from arena.policies import PolicyRef, builtin, local
from arena.revision import BUILTIN_VERSION, Revision, player_id
from history.statuses import StatusLog
from tests_support import EXAMPLES

SHA = "3f2a9c" + "0" * 34


def test_a_player_name_reads_back_as_the_revision_it_names():
    for revision in (Revision("alice/team", SHA), Revision("builtin:forage", BUILTIN_VERSION)):
        assert Revision.parse(revision.player) == revision
        assert revision.player == player_id(revision.policy_id, revision.sha) == str(revision)
    assert Revision("alice/team", SHA).player == f"alice/team@{SHA}"
    assert Revision("builtin:forage", BUILTIN_VERSION).player == "builtin:forage"  # one version: named alone
    assert Revision("alice/team", SHA).label == "alice/team@3f2a9c0" and Revision("alice/team", SHA).short == SHA[:12]


@pytest.mark.parametrize("text", ["alice/team", "", "@" + SHA, "alice/team@"])
def test_text_that_names_no_revision_is_refused_with_the_forms_it_takes(text):
    with pytest.raises(InvalidArgumentError, match="owner/name@sha, or builtin:NAME|needs a policy id"):
        Revision.parse(text)


def test_a_revision_is_a_value_every_layer_keys_by():
    a, b = Revision("alice/team", "a" * 40), Revision("alice/team", "b" * 40)
    assert a == Revision("alice/team", "a" * 40) and hash(a) == hash(Revision("alice/team", "a" * 40))
    assert sorted([b, a]) == [a, b] and a != ("alice/team", "a" * 40)  # never mistaken for a bare tuple
    assert builtin("Forage").id == Revision("builtin:forage", BUILTIN_VERSION)
    ref = local(EXAMPLES / "explorer")
    assert ref.id.policy_id == "local:explorer" and ref.policy_id == ref.id.policy_id and len(ref.id.sha) == 40
    assert PolicyRef(a, path=EXAMPLES).id == PolicyRef(a).id  # where its files are is not who it is


def test_the_status_log_keys_by_revision_and_its_file_format_is_unchanged(tmp_path):
    path = tmp_path / "statuses.jsonl"
    revision = Revision("alice/team", SHA)
    StatusLog(path).record(revision, Status.QUEUED, "waiting for validation")
    [line] = path.read_text().splitlines()
    written = json.loads(line)
    assert (written["repo_id"], written["revision"]) == ("alice/team", SHA)  # files written before still read
    assert StatusEvent.from_dict(written).id == revision
    state = StatusLog(path).get(revision)
    assert state is not None and state.id == revision and StatusLog(path).get(Revision("alice/team", "b" * 40)) is None
