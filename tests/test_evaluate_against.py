"""Practice against the field: `python -m matchmaking.evaluate FOLDER --against ...` fetches
revisions pushed to a real embedded Hub (over HTTP), validates them, plays them sandboxed
with the built-ins in the seats left over, ranks `top:K` from the history dataset on that
Hub as the PvP table does, and records nothing anywhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from arena.revision import Revision
from arena.rules import ANCHORS, POOL_FILL
from arena.schema import MatchResult
from arena.simulation import play
from tests_support import EXAMPLES, TESTS, policy_dir, push_policy

ROOT = TESTS.parent
HISTORY = "arena/match-history"
EMPTY_HISTORY = "arena/pve-only-history"
NAMES = ("alice/explorer", "bob/wanderer", "carol/gatherer")


def evaluate(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "matchmaking.evaluate", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, env={**os.environ, **env})


def synthetic_history(players: dict[str, float], *, matches: int, start: int, seed: int,
                      track: str = "pvp") -> list[MatchResult]:
    """`matches` PvP matches of `players` (player id -> hidden skill) and the anchors in the
    seats left over, each team's revision the player's, started one second apart."""
    rng = np.random.default_rng(seed)
    lineup = list(players) + [POOL_FILL[i % 3] for i in range(16 - len(players))]
    skills = [players.get(p, ANCHORS.get(p, 0.0)) for p in lineup]
    history = []
    for index in range(start, start + matches):
        played = play(lineup, skills, rng=rng, index=index, track=track)
        teams = tuple(replace(t, policy_id=t.policy_id.split("@")[0],
                              revision=t.policy_id.split("@")[1] if "@" in t.policy_id else "builtin")
                      for t in played.teams)
        history.append(replace(played, teams=teams, stage=1 if track == "pve" else 0))
    return history


def publish_history(api, repo_id: str, history: list[MatchResult], folder: Path) -> list[str]:
    """Write `history` into shards as the Space does and push them to dataset `repo_id`: the shard names."""
    from history.store import HistoryStore

    store = HistoryStore(folder)
    for result in history:
        store.record(result)
    store.flush()
    api.create_repo(repo_id, repo_type="dataset", exist_ok=True)
    api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=store.data, path_in_repo="data")
    return store.shard_names()


@pytest.fixture(scope="module")
def field(local_hub, tmp_path_factory):
    """Four submissions on the Hub, one of them in two revisions, and a history dataset in
    which the older revision of carol/gatherer is the strongest of all but no longer plays."""
    from huggingface_hub import HfApi

    api = HfApi(endpoint=local_hub.endpoint, token="test-token")
    sha = {name: push_policy(api, name, EXAMPLES / name.split("/")[1]) for name in NAMES}
    old_carol = sha["carol/gatherer"]
    sha["carol/gatherer"] = push_policy(api, "carol/gatherer", EXAMPLES / "gatherer", extra={"NOTES.md": b"v2\n"})
    sha["dave/broken"] = push_policy(api, "dave/broken", policy_dir("raise_every_tick"))
    players = {f"alice/explorer@{sha['alice/explorer']}": 4.0, f"bob/wanderer@{sha['bob/wanderer']}": -1.0}
    early = synthetic_history(players | {f"carol/gatherer@{old_carol}": 6.0}, matches=30, start=0, seed=1)
    late = synthetic_history(players | {f"carol/gatherer@{sha['carol/gatherer']}": 2.0}, matches=30, start=100, seed=2)
    folder = tmp_path_factory.mktemp("published")
    shards = publish_history(api, HISTORY, early + late, folder / "history")
    publish_history(api, EMPTY_HISTORY, synthetic_history(players, matches=2, start=500, seed=3, track="pve"),
                    folder / "pve-only")
    return {"api": api, "sha": sha, "old_carol": old_carol, "shards": shards, "history": folder / "history"}


def hub_state(api) -> dict[str, object]:
    """Everything a run could have written to the Hub: every repo's head, and discussions."""
    models = sorted((m.id, api.model_info(m.id).sha) for m in api.list_models())
    datasets = sorted((d.id, api.dataset_info(d.id).sha) for d in api.list_datasets())
    discussions = {m: len(list(api.get_repo_discussions(m))) for m, _ in models}
    return {"models": models, "datasets": datasets, "discussions": discussions}


def test_top_k_is_the_pvp_tables_order_of_current_revisions(field, tmp_path):
    """`field_ranking` from the Hub dataset gives the PvP tab's default table (superseded
    revisions hidden) in its order, computed by the leaderboard's own code."""
    from history.store import HistoryReader
    from leaderboard import tables
    from leaderboard.standings import Source, compute
    from matchmaking.practice import field_ranking

    sha = field["sha"]
    ranking = field_ranking(field["api"], HISTORY, tmp_path / "cache")
    assert [e.id for e in ranking] == [Revision(repo, sha[repo]) for repo in ("alice/explorer", "carol/gatherer", "bob/wanderer")]
    assert all(e.matches == 60 for e in ranking if e.id.policy_id != "carol/gatherer")

    standings = compute(HistoryReader(field["history"]).shard_table(field["shards"]).to_pandas(), bootstrap=200,
                        source=Source(tuple(field["shards"])))
    latest = {e.id.player for e in ranking}
    table = tables.pvp_table(standings, hub_url="http://hub", latest=latest)
    shown = [row.Policy for row in table.itertuples() if "(anchor)" not in row.Policy]
    assert shown == [tables.revision_cell(e.id, "http://hub") for e in ranking]
    assert [int(r) for r, p in zip(table["Rank"], table["Policy"]) if "(anchor)" not in p] == [e.rank for e in ranking]
    assert {f"carol/gatherer@{field['old_carol']}"} & {e.id.player for e in ranking} == set()


def test_top_k_skips_the_callers_own_submissions(field, tmp_path):
    """Practising against yourself teaches nothing: top:K passes over the submissions of the
    namespaces the caller's token speaks for, and says so."""
    from arena.settings import ArenaSettings
    from matchmaking.practice import AgainstArgs, choose_opponents

    settings = ArenaSettings(data_dir=tmp_path / "data", cache_dir=tmp_path / "cache", history_repo=HISTORY)
    said: list[str] = []
    chosen = choose_opponents(field["api"], AgainstArgs((), 2), settings=settings, say=said.append,
                              mine=frozenset({"alice"}))
    assert [o.id.policy_id for o in chosen] == ["carol/gatherer", "bob/wanderer"]
    assert any("skipping alice/explorer@" in line and "your own" in line for line in said)


@pytest.mark.slow  # real sandboxed matches: make test, not make check
def test_against_named_and_top_plays_sandboxed_and_records_nothing(field, local_hub, tmp_path):
    api, sha = field["api"], field["sha"]
    before = hub_state(api)
    env = {"NMMO_ARENA_DATA": str(tmp_path / "data"), "NMMO_ARENA_CACHE": str(tmp_path / "cache"),
           "NMMO_ARENA_HISTORY_REPO": HISTORY, "NMMO_ARENA_HUB": "", "HF_ENDPOINT": ""}
    run = evaluate(str(EXAMPLES / "wanderer"), "--against", f"alice/explorer@{sha['alice/explorer']}", "--against", "top:2",
                   "--hub", local_hub.endpoint, "--matches", "2", "--horizon", "8", "--workers", "1", "--seed", "3", "--json",
                   env=env)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    # alice is named and in the top 2: she plays once; carol plays her current revision
    assert [(o["repo_id"], o["revision"]) for o in report["opponents"]] == [
        ("alice/explorer", sha["alice/explorer"]), ("carol/gatherer", sha["carol/gatherer"])]
    assert report["opponents"][0]["why"].startswith("--against alice/explorer@") and report["opponents"][1]["why"].startswith("top:2 (rank ")
    records = [MatchResult.from_dict(m) for m in report["matches"]]
    assert [r.seed for r in records] == [3, 4] and all(r.ticks == 8 and r.track == "local" for r in records)
    for record in records:
        seated = sorted((t.policy_id, t.revision) for t in record.teams if not t.policy_id.startswith("builtin:"))
        assert seated == sorted([("alice/explorer", sha["alice/explorer"]), ("carol/gatherer", sha["carol/gatherer"]),
                                 ("local:wanderer", record.team("local:wanderer").revision)])
        fill = sorted(t.policy_id for t in record.teams if t.policy_id.startswith("builtin:"))
        assert fill == sorted(POOL_FILL[i % 3] for i in range(13))
        assert all(not t.faults for t in record.teams)  # sandboxed Hub teams played every tick
    # seats drawn from each match's seed, as a PvP pool's are random: TARGET is lineup[0]
    assert [r.team("local:wanderer").slot for r in records] == [
        list(np.random.default_rng(seed).permutation(16)).index(0) for seed in (3, 4)]
    lineup = {row["policy_id"]: row for row in report["lineup"]}
    assert lineup["builtin:random"]["seats"] == 4 and lineup["alice/explorer"]["met"] == 2
    assert "top:2: alice/explorer@" in run.stderr and "validating carol/gatherer@" in run.stderr
    # nothing recorded: no data folder, the Hub as it was
    assert not (tmp_path / "data").exists()
    assert hub_state(api) == before
    assert (tmp_path / "cache" / "practice" / "submissions" / "carol" / "gatherer" / sha["carol/gatherer"] / "policy.py").is_file()


@pytest.mark.slow  # real sandboxed matches: make test, not make check
def test_the_embedded_hub_of_the_data_folder_by_default(tmp_path):
    """No Hub configured and no Space running: the data folder's embedded Hub is started for
    the run, and the folder is left exactly as it was."""
    from huggingface_hub import HfApi

    from arena.settings import ArenaSettings
    from matchmaking.hub.embedded import start_local_hub

    data = tmp_path / "data"
    settings = ArenaSettings.from_env({"NMMO_ARENA_DATA": str(data), "NMMO_ARENA_LOCAL_HUB_PORT": "0"})
    hub = start_local_hub(settings)
    try:
        api = HfApi(endpoint=hub.endpoint, token=settings.local_hub_token_file.read_text().strip())
        sha = push_policy(api, "erin/explorer", EXAMPLES / "explorer")
    finally:
        hub.stop()
    files = {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(data.rglob("*"))}
    env = {"NMMO_ARENA_DATA": str(data), "NMMO_ARENA_CACHE": str(tmp_path / "cache"), "NMMO_ARENA_HUB": "", "HF_ENDPOINT": ""}
    run = evaluate("builtin:forage", "--against", "erin/explorer", "--matches", "1", "--horizon", "8", "--workers", "1",
                   env=env)
    assert run.returncode == 0, run.stderr
    assert f"the embedded Hub of {data / 'hub'}, started for this practice run" in run.stderr
    assert "Matches       1 against 1 submission from the Hub and 14 built-in teams" in run.stdout
    assert f"erin/explorer@{sha[:7]}" in run.stdout and "you above it" in run.stdout
    assert {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(data.rglob("*"))} == files


def test_bad_opponents_are_refused_with_what_to_do(field, local_hub, tmp_path, monkeypatch, capsys):
    """Each refusal exits 2 with one line naming the problem and what to do (the command's
    `main`, in this process, but for the validation, which runs the revision's code)."""
    from matchmaking.evaluate import main

    sha = field["sha"]
    env = {"NMMO_ARENA_DATA": str(tmp_path / "data"), "NMMO_ARENA_CACHE": str(tmp_path / "cache"),
           "NMMO_ARENA_HISTORY_REPO": HISTORY, "NMMO_ARENA_HUB": "", "HF_ENDPOINT": ""}
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    def refused(*against: str, history: str = HISTORY) -> str:
        monkeypatch.setenv("NMMO_ARENA_HISTORY_REPO", history)
        capsys.readouterr()
        code = main(["builtin:forage", *[a for name in against for a in ("--against", name)], "--hub", local_hub.endpoint])
        out, err = capsys.readouterr()
        assert code == 2 and out == "", (out, err)
        return err

    unknown = refused("nobody/nothing")
    assert "no such repo" in unknown and "Check OWNER/NAME" in unknown
    assert "no such revision" in refused(f"alice/explorer@{'0' * 40}")
    assert "neither OWNER/NAME[@REV]" in refused("just-a-name")
    assert "from 1 to 15" in refused("top:0") and "from 1 to 15" in refused("top:16")
    many = refused(*[f"alice/explorer@{sha['alice/explorer']}"] * 16)
    assert "16 opponents" in many and "name fewer" in many
    assert "holds 3 submissions. Ask for top:3 or fewer" in refused("top:4")
    assert "holds no PvP match yet" in refused("top:1", history=EMPTY_HISTORY)
    assert "has no dataset arena/no-such-history (NMMO_ARENA_HISTORY_REPO)" in refused("top:1", history="arena/no-such-history")

    broken = evaluate("builtin:forage", "--against", f"dave/broken@{sha['dave/broken']}", "--hub", local_hub.endpoint,
                      env=env)
    assert broken.returncode == 2 and broken.stdout == "" and "Traceback" not in broken.stderr
    assert "fails the Arena's validation match (ERROR at tick 1: RuntimeError: deliberate failure" in broken.stderr
    assert not (tmp_path / "data").exists()
