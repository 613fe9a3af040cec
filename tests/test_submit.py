"""`python -m matchmaking.submit`, the real CLI as a subprocess, against the embedded Hub as
the Space runs it (started and published by `matchmaking.hub.embedded`, the code the Space
uses), read back with the real `huggingface_hub` client and by discovery itself.

And the project as a package: built with pip from a copy of the checkout and installed
with `--target` into a temporary folder (`--no-deps --no-build-isolation`: the
dependencies are this virtualenv's, so nothing is downloaded or compiled again, and the
folder replaces the repository's layout on `PYTHONPATH`); its console scripts then check,
evaluate and submit a policy from a folder outside the repository.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from huggingface_hub import HfApi, ModelCard

from arena.settings import ArenaSettings
from matchmaking.hub import embedded as embedded_hub
from matchmaking.hub.discovery import discover

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "policies"
POLICIES = ROOT / "tests" / "policies"


@pytest.fixture()
def space_hub(tmp_path):
    """The embedded Hub exactly as a Space on `tmp_path/data` starts and publishes it."""
    settings = ArenaSettings(data_dir=tmp_path / "data", local_hub_port=0)
    hub = embedded_hub.start_local_hub(settings)
    embedded_hub.publish(settings, endpoint=hub.endpoint, space_url="http://127.0.0.1:7860")
    yield {"hub": hub, "data": settings.data_dir, "api": HfApi(endpoint=hub.endpoint, token=settings.local_hub_token_file.read_text())}
    embedded_hub.withdraw(settings)
    hub.stop()


#: Where each `clean_env` gets its own empty HF_HOME; removed when the tests' process ends.
HF_HOMES = Path(tempfile.mkdtemp(prefix="hf-homes-"))
atexit.register(shutil.rmtree, HF_HOMES, True)


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without any Arena or Hub setting, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NMMO_ARENA_", "HF_"))}
    # HF_HOME: an empty one, so no login stored on this machine is used
    return {**env, "HF_HOME": tempfile.mkdtemp(dir=HF_HOMES), "HF_HUB_DISABLE_TELEMETRY": "1", **extra}


def submit(*args: str, data: Path | None = None, cwd: Path = ROOT, env: dict[str, str] | None = None,
           command: tuple[str, ...] = (sys.executable, "-m", "matchmaking.submit")) -> subprocess.CompletedProcess:
    env = env if env is not None else clean_env()
    if data is not None:
        env = {**env, "NMMO_ARENA_DATA": str(data)}
    return subprocess.run([*command, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=240)


def team(tmp_path: Path, name: str = "team", source: Path = EXAMPLES / "explorer") -> Path:
    folder = tmp_path / name
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def test_help_says_how():
    done = submit("--help")
    assert done.returncode == 0
    for words in ("--repo", "--hub", "--data", "--validate", "Exit status: 0 pushed; 2 something to fix"):
        assert words in done.stdout


def test_a_folder_is_checked_tagged_pushed_and_discovered(space_hub, tmp_path):
    folder = team(tmp_path)
    (folder / "README.md").write_text("---\nteam_name: Far Walkers\ntags:\n- ppo\nlicense: mit\n---\n# Far Walkers\n\nThey walk.\n")
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "policy.cpython-311.pyc").write_bytes(b"\0" * 100)
    done = submit(str(folder), "--repo", "alice/walkers", data=space_hub["data"])
    assert done.returncode == 0, done.stderr
    api = space_hub["api"]
    info = api.model_info("alice/walkers", files_metadata=True)
    assert f"Commit: {info.sha}" in done.stdout
    assert f"Repo: {space_hub['hub'].endpoint}/alice/walkers" in done.stdout
    assert "embedded Hub of the Space on" in done.stdout and "Submissions tab of http://127.0.0.1:7860" in done.stdout
    assert "Added the tag 'nmmo-arena'" in done.stdout
    assert "Validated in the sandbox:" in done.stdout  # by default, as the Space will
    assert sorted(s.rfilename for s in info.siblings) == ["README.md", "policy.py"]  # no caches
    card = ModelCard.load(folder / "README.md")  # the card kept its metadata and text, and gained the tag
    assert card.data.tags == ["ppo", "nmmo-arena"] and card.data.team_name == "Far Walkers" and card.data.license == "mit"
    assert card.text.strip() == "# Far Walkers\n\nThey walk."
    found = {s.id.policy_id: s for s in discover(api, tag="nmmo-arena")}
    assert found["alice/walkers"].id.sha == info.sha and found["alice/walkers"].team_name == "Far Walkers"

    with open(folder / "policy.py", "a") as f:
        f.write("# walk further\n")
    again = submit(str(folder), "--repo", "alice/walkers", "--message", "second", "--no-validate", data=space_hub["data"])
    assert again.returncode == 0 and "Added the tag" not in again.stdout  # tagged once
    assert "Validated" not in again.stdout  # --no-validate skips the match
    titles = [c.title for c in api.list_repo_commits("alice/walkers")]
    assert titles[0] == "second" and f"Commit: {api.model_info('alice/walkers').sha}" in again.stdout
    same = submit(str(folder), "--repo", "alice/walkers", data=space_hub["data"])
    assert same.returncode == 0 and "Nothing changed since the last push" in same.stdout
    assert [c.title for c in api.list_repo_commits("alice/walkers")] == titles


def test_a_folder_without_a_card_gets_one(space_hub, tmp_path):
    folder = team(tmp_path, "bare", EXAMPLES / "wanderer")
    done = submit(str(folder), "--repo", "bob/bare", data=space_hub["data"])
    assert done.returncode == 0, done.stderr
    assert ModelCard.load(folder / "README.md").data.tags == ["nmmo-arena"]
    assert [m.id for m in space_hub["api"].list_models(filter="nmmo-arena")] == ["bob/bare"]


def _nested(folder: Path) -> None:
    (folder / "src").mkdir()
    (folder / "policy.py").rename(folder / "src" / "policy.py")


PROBLEMS = {
    "no policy.py": (_nested, {}, ["No policy.py at the root", "found src/policy.py: move it to the root"]),
    "too large": (lambda f: None, {"NMMO_ARENA_MAX_MB": "0.001"}, ["over the 0.001 MB limit", "largest file: policy.py"]),
    "syntax error": (lambda f: (f / "policy.py").write_text("class Team(:\n"), {}, ["policy.py does not parse", "line 1"]),
    "no Team": (lambda f: (f / "policy.py").write_text("class Teem:\n    pass\n"), {}, ["defines no top-level `Team`"]),
    "broken card": (lambda f: (f / "README.md").write_text("---\ntags: [a\n---\n"), {}, ["README.md: its metadata", "does not parse"]),
    "bad setting": (lambda f: None, {"NMMO_ARENA_MAX_MB": "lots"}, ["NMMO_ARENA_MAX_MB='lots' is not accepted"]),
}


@pytest.mark.parametrize("problem", sorted(PROBLEMS))
def test_a_problem_in_the_folder_exits_2_saying_what_to_fix_and_pushes_nothing(space_hub, tmp_path, problem):
    spoil, env, words = PROBLEMS[problem]
    folder = team(tmp_path)
    spoil(folder)
    done = submit(str(folder), "--repo", "carol/spoilt", data=space_hub["data"], env=clean_env(**env))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith("Not submitted.") and "Traceback" not in done.stderr
    for w in words:
        assert w in done.stderr
    assert not space_hub["api"].repo_exists("carol/spoilt")


def test_hub_problems_exit_2_saying_what_to_do(space_hub, tmp_path):
    folder = team(tmp_path)
    bad_id = submit(str(folder), "--repo", "a/b/c", data=space_hub["data"])
    assert bad_id.returncode == 2 and "--repo 'a/b/c' is not a repo id the Hub accepts" in bad_id.stderr
    no_owner = submit(str(folder), "--repo", "lonely", data=space_hub["data"])
    assert no_owner.returncode == 2 and "must be OWNER/NAME" in no_owner.stderr

    nothing = submit(str(folder), "--repo", "dave/x", data=tmp_path / "no-space-here")
    assert nothing.returncode == 2 and "No Hub to push to: none is configured" in nothing.stderr
    assert "Start the Space (`make run`)" in nothing.stderr and "--data DIR" in nothing.stderr

    refused = submit(str(folder), "--repo", "dave/x", env=clean_env(NMMO_ARENA_HUB=space_hub["hub"].endpoint, HF_TOKEN="wrong"))
    assert refused.returncode == 2 and "refused your token (HF_TOKEN or `hf auth login`) (HTTP 401)" in refused.stderr
    no_token = submit(str(folder), "--repo", "dave/x", "--hub", space_hub["hub"].endpoint)
    assert no_token.returncode == 2 and "No token for" in no_token.stderr and "hf auth login" in no_token.stderr
    assert not space_hub["api"].repo_exists("dave/x")

    right = submit(str(folder), "--repo", "dave/x", env=clean_env(NMMO_ARENA_HUB=space_hub["hub"].endpoint,
                                                                 HF_TOKEN=space_hub["api"].token))
    assert right.returncode == 0 and "NMMO_ARENA_HUB, with your token" in right.stdout  # a real Hub's way
    assert "Watch its status on the Arena Space's Submissions tab" in right.stdout

    space_hub["hub"].stop()  # the Space is gone, its address file left behind (a kill -9)
    gone = submit(str(folder), "--repo", "dave/y", data=space_hub["data"])
    assert gone.returncode == 2 and "does not answer" in gone.stderr and "Is the Space running?" in gone.stderr


def test_validate_plays_the_validation_match_before_pushing(space_hub, tmp_path):
    broken = team(tmp_path, "broken", POLICIES / "import_error")
    done = submit(str(broken), "--repo", "erin/broken", "--validate", data=space_hub["data"])
    assert done.returncode == 2 and "the validation match rejected it: INIT while being built" in done.stderr
    assert not space_hub["api"].repo_exists("erin/broken")
    good = team(tmp_path, "good", EXAMPLES / "wanderer")
    done = submit(str(good), "--repo", "erin/good", "--validate", data=space_hub["data"])
    assert done.returncode == 0, done.stderr
    assert "Validated in the sandbox: Played 16 ticks without a fault" in done.stdout


@pytest.mark.slow
def test_the_installed_package_evaluates_and_submits_from_outside_the_repository(space_hub, tmp_path):
    source = tmp_path / "source"  # pip builds in the source tree: build a copy, leave the checkout clean
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", ".venv", ".cache", "data", "build", "*.egg-info",
                                                                 "__pycache__", ".pytest_cache", "tests", "bench", "training"))
    target = tmp_path / "installed"
    built = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                            "--target", str(target), str(source)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    assert (target / "leaderboard" / "static" / "viewer.js").is_file()  # package data
    assert not (target / "examples").exists()

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = clean_env(PYTHONPATH=str(target))
    where = subprocess.run([sys.executable, "-c", "import matchmaking.submit as m; print(m.__file__)"], cwd=outside,
                           env=env, capture_output=True, text=True, timeout=60)
    assert where.stdout.strip() == str(target / "matchmaking" / "submit.py"), where.stderr
    alone = subprocess.run([sys.executable, "-c", "import matchmaking"], cwd=outside, env=clean_env(), capture_output=True)
    assert alone.returncode != 0  # without the installed folder nothing here provides the project

    assert submit("--help", cwd=outside, env=env, command=(str(target / "bin" / "nmmo-arena-submit"),)).returncode == 0
    folder = team(outside, "my-team")
    evaluated = subprocess.run([str(target / "bin" / "nmmo-arena-evaluate"), str(folder), "--matches", "1", "--horizon", "8",
                                "--workers", "1"], cwd=outside, env=env, capture_output=True, text=True, timeout=240)
    assert evaluated.returncode == 0 and "Top1Ratio" in evaluated.stdout, evaluated.stderr[-3000:]
    done = submit(str(folder), "--repo", "frank/installed", cwd=outside, env=env, data=space_hub["data"],
                  command=(str(target / "bin" / "nmmo-arena-submit"),))
    assert done.returncode == 0, done.stderr
    assert space_hub["api"].model_info("frank/installed").sha in done.stdout


def test_the_about_tab_gives_the_command_and_where_the_hub_is(tmp_path):
    from leaderboard.about import about_markdown

    embedded = ArenaSettings(data_dir=tmp_path / "data")
    text = about_markdown(embedded, hub_url="http://127.0.0.1:7861")
    assert "python -m matchmaking.submit ./your-team --repo YOUR-USER/YOUR-TEAM" in text
    assert "nmmo-arena-submit ./your-team" in text and "**`nmmo-arena`**" in text
    assert "embedded Hub at http://127.0.0.1:7861" in text and str(tmp_path / "data" / "local-hub-token") in text
    real = about_markdown(ArenaSettings(hub_endpoint="https://huggingface.co"), hub_url="https://huggingface.co")
    assert "Hub at **https://huggingface.co**" in real and "hf auth login" in real and "local-hub-token" not in real


def test_withdraw_takes_a_submission_out_and_keeps_its_history(space_hub, tmp_path):
    """`--withdraw OWNER/NAME` removes the Arena's tag from the card, in one commit; the
    Space's next look withdraws the repo's latest revision (out of every pool, its history
    kept); pushed again with the tag, the policy takes part again, as a new revision."""
    from arena.lifecycle import Status
    from history.statuses import StatusLog
    from matchmaking.service.submissions import sync

    api = space_hub["api"]
    folder = team(tmp_path)
    assert submit(str(folder), "--repo", "gina/walkers", "--no-validate", data=space_hub["data"]).returncode == 0
    statuses = StatusLog(tmp_path / "statuses.jsonl")
    (queued,) = sync(api, statuses, tag="nmmo-arena")
    done = submit("--withdraw", "gina/walkers", data=space_hub["data"])
    assert done.returncode == 0, done.stderr
    assert "Removed the tag 'nmmo-arena' from gina/walkers's card" in done.stdout
    assert [c.title for c in api.list_repo_commits("gina/walkers")][0] == "Withdraw from the NMMO Arena"
    assert "nmmo-arena" not in (api.model_info("gina/walkers").tags or [])
    assert sync(api, statuses, tag="nmmo-arena") == []
    state = statuses.get(queued.id)
    assert state.status is Status.WITHDRAWN and "no longer carries the tag" in state.reason
    again = submit("--withdraw", "gina/walkers", data=space_hub["data"])
    assert again.returncode == 0 and "carries no tag" in again.stdout  # nothing to do
    assert submit("--withdraw", "gina/nothing", data=space_hub["data"]).returncode == 2  # no such repo: said so
    # back in: the same policy, its card (with the tag, as the folder still has it) pushed again: a new revision
    assert submit(str(folder), "--repo", "gina/walkers", "--no-validate", data=space_hub["data"]).returncode == 0
    (back,) = sync(api, statuses, tag="nmmo-arena")
    assert back.id != queued.id and back.status is Status.QUEUED and statuses.get(queued.id).status is Status.WITHDRAWN
