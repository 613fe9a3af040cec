"""The embedded Hub, driven by the unmodified huggingface_hub client over real HTTP."""

from __future__ import annotations

import pytest
from huggingface_hub import HfApi, HfFileSystem, snapshot_download
from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError, RevisionNotFoundError

from localhub import LocalHub


def test_repos_commits_revisions_and_downloads(hub_api, tmp_path):
    hub_api.create_repo("ann/files", exist_ok=True)
    hub_api.create_repo("ann/files", exist_ok=True)  # exists: fine with exist_ok
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "a.txt").write_text("alpha")
    (src / "sub" / "b.bin").write_bytes(bytes(range(256)) * 40)
    (src / "README.md").write_text("---\ntags:\n- demo\n---\nhello\n")
    first = hub_api.upload_folder(repo_id="ann/files", folder_path=src, commit_message="one").oid
    second = hub_api.upload_file(path_or_fileobj=b"beta", path_in_repo="a.txt", repo_id="ann/files").oid
    assert first != second

    info = hub_api.model_info("ann/files", files_metadata=True)
    assert info.sha == second and info.tags == ["demo"]
    assert {s.rfilename: s.size for s in info.siblings} == {"README.md": 27, "a.txt": 4, "sub/b.bin": 10240}
    assert [c.title for c in hub_api.list_repo_commits("ann/files")][:2] == ["Upload a.txt with huggingface_hub", "one"]

    old = snapshot_download("ann/files", revision=first, local_dir=tmp_path / "old", endpoint=hub_api.endpoint)
    assert (tmp_path / "old" / "a.txt").read_text() == "alpha" and old
    snapshot_download("ann/files", revision=second, local_dir=tmp_path / "new", endpoint=hub_api.endpoint)
    assert (tmp_path / "new" / "a.txt").read_text() == "beta"
    assert (tmp_path / "new" / "sub" / "b.bin").read_bytes() == bytes(range(256)) * 40

    fs = HfFileSystem(endpoint=hub_api.endpoint, token="test-token")
    assert sorted(fs.ls("ann/files", detail=False)) == ["ann/files/README.md", "ann/files/a.txt", "ann/files/sub"]
    with fs.open("ann/files/sub/b.bin", "rb", block_size=64) as f:  # ranged reads
        f.seek(300)
        assert f.read(10) == (bytes(range(256)) * 40)[300:310]

    assert [m.id for m in hub_api.list_models(filter="demo")] == ["ann/files"]
    import urllib.request

    page = urllib.request.urlopen(f"{hub_api.endpoint}/ann/files").read().decode()  # where leaderboard links go
    assert "ann/files" in page and "sub/b.bin" in page and second in page
    assert not hub_api.repo_exists("ann/missing")
    assert not hub_api.file_exists("ann/files", "nope.txt")
    with pytest.raises(RevisionNotFoundError):
        hub_api.model_info("ann/files", revision="f" * 40)
    with pytest.raises(RepositoryNotFoundError):
        hub_api.model_info("ann/missing")


def test_datasets_and_deletions(hub_api):
    hub_api.create_repo("ann/data", repo_type="dataset", exist_ok=True)
    hub_api.upload_file(path_or_fileobj=b"1", path_in_repo="x/one.txt", repo_id="ann/data", repo_type="dataset")
    hub_api.upload_file(path_or_fileobj=b"2", path_in_repo="x/two.txt", repo_id="ann/data", repo_type="dataset")
    hub_api.delete_file("x/one.txt", repo_id="ann/data", repo_type="dataset")
    assert hub_api.list_repo_files("ann/data", repo_type="dataset") == ["x/two.txt"]
    assert "ann/data" in [d.id for d in hub_api.list_datasets()]


def test_writes_need_the_token_and_listing_pages(local_hub, tmp_path):
    anonymous = HfApi(endpoint=local_hub.endpoint, token=False)
    with pytest.raises(HfHubHTTPError) as error:
        anonymous.create_repo("eve/intruder")
    assert error.value.response.status_code == 401
    paged = LocalHub(tmp_path / "paged", page_size=2).start()  # pagination through Link headers
    try:
        api = HfApi(endpoint=paged.endpoint, token="t")
        for i in range(5):
            api.create_repo(f"ann/m{i}")
        assert [m.id for m in api.list_models()] == [f"ann/m{i}" for i in range(5)]
    finally:
        paged.stop()


def test_state_survives_a_restart(tmp_path):
    hub = LocalHub(tmp_path / "hub").start()
    HfApi(endpoint=hub.endpoint, token="t").upload_file(
        path_or_fileobj=b"kept", path_in_repo="f.txt", repo_id=HfApi(endpoint=hub.endpoint, token="t").create_repo("ann/kept").repo_id
    )
    hub.stop()
    again = LocalHub(tmp_path / "hub").start()
    try:
        api = HfApi(endpoint=again.endpoint)
        assert api.list_repo_files("ann/kept") == ["f.txt"]
    finally:
        again.stop()
