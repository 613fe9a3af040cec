"""The two map pools: the published maps are the ones they always were, the held-out maps
are the Space's own (a key from its secret), PvP plays them and a sandboxed team cannot
read them or the secret."""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from huggingface_hub import HfApi
from nmmo.core.terrain import MapGenerator

from arena import PROJECT_ROOT
from arena.errors import MatchSetupError, SettingsError
from arena.policies import builtin, local
from arena.settings import ArenaSettings
from localhub import LocalHub
from matchmaking.engine import game, maps
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec, run_match
from matchmaking.sandbox.host import protect_process, sandboxed_host
from matchmaking.teams.factory import in_process_host
from tests_support import EXAMPLES, POLICIES, fault_of, push_policy

KEY = maps.held_out_key("the-space-secret-for-tests")
OTHER_KEY = maps.held_out_key("another-space-secret-entirely")


def old_map_id(seed: int) -> int:
    """The map a seed played before held-out maps existed (the formula as it was)."""
    state = np.random.SeedSequence([seed, 0x6D6170]).generate_state(1)[0]
    return 1 + int(state) % 256


def old_map(map_id: int) -> np.ndarray:
    """A published map's tiles as the code before held-out maps generated them."""
    config = game.ArenaNmmoConfig()
    config.set("MAP_N", 256)
    _, tiles = MapGenerator(config).generate_map(map_id - 1, np.random.default_rng(map_id))
    return tiles.astype(int)


def test_published_maps_are_unchanged(tmp_path):
    config = MatchConfig(cache_dir=tmp_path)
    for seed in (7, 2024, 99991):
        map_id, folder = maps.spec_map(seed, False, None, config)
        assert map_id == old_map_id(seed) and 1 <= map_id <= 256
        assert np.array_equal(np.load(folder / "map1" / "map.npy"), old_map(map_id))
        assert folder == game.ensure_map(map_id, config)  # the same cache folder as before


def test_published_match_ids_are_unchanged():
    spec = MatchSpec(seed=5, policies=(builtin("forage"),) * 16, config=MatchConfig(horizon=8), track="pve", stage=1)
    old = {"seed": 5, "policies": [("builtin:forage", "builtin")] * 16, "rules": [16, 8, 8, 256], "track": "pve", "stage": 1}
    assert spec.match_id == hashlib.sha256(json.dumps(old, sort_keys=True).encode()).hexdigest()[:20]
    held = MatchSpec(seed=5, policies=spec.policies, config=MatchConfig(horizon=8, map_key=KEY), track="pve", stage=1, held_out=True)
    assert held.match_id != spec.match_id


def test_held_out_maps_are_deterministic_for_a_key_and_differ_with_it():
    first, again, other = (maps.generate_held_out(3, KEY)[1], maps.generate_held_out(3, KEY)[1], maps.generate_held_out(3, OTHER_KEY)[1])
    assert np.array_equal(first, again)
    assert not np.array_equal(first, other)
    assert not np.array_equal(first, maps.generate_held_out(4, KEY)[1])


def test_held_out_maps_are_none_of_the_published_ones():
    published = [old_map(i) for i in (1, 2, 64, 128, 200, 256)]
    held = [maps.generate_held_out(k, KEY)[1].astype(int) for k in (1, 2, 500, 1024)]
    interior = np.s_[16:-16, 16:-16]  # the void border is the same on every map
    for h in held:
        for p in published:
            assert (h[interior] == p[interior]).mean() < 0.8
        assert len(np.unique(h)) >= 8  # a real map: water, grass, forest, stone, resources
    # and the same kinds of terrain in similar shares as the published pool
    shares = lambda tiles: np.bincount(tiles[interior].ravel(), minlength=16)[:16] / tiles[interior].size  # noqa: E731
    assert np.abs(np.mean([shares(h) for h in held], 0) - np.mean([shares(p) for p in published], 0)).max() < 0.15


def test_a_held_out_match_records_its_pool_and_its_folder_hides_the_key(tmp_path):
    config = MatchConfig(horizon=2, num_teams=2, cache_dir=tmp_path, map_key=KEY)
    spec = MatchSpec(seed=31, policies=(builtin("forage"), builtin("combat")), config=config, track="pvp", held_out=True)
    result = run_match(spec, host_factory=in_process_host)
    assert result.held_out and result.map_id > maps.PUBLISHED_POOL and result.map_id == maps.map_id_for(31, held_out=True, config=config)
    map_id, folder = maps.spec_map(31, True, KEY, config)
    assert map_id == result.map_id and folder.parent == maps.held_out_folder(KEY, config)
    assert maps.key_fingerprint(KEY) in str(folder) and KEY not in str(folder)
    assert np.array_equal(np.load(folder / "map1" / "map.npy"), maps.generate_held_out(map_id - 256, KEY)[1].astype(int))
    published = run_match(MatchSpec(seed=31, policies=spec.policies, config=config, track="pvp"), host_factory=in_process_host)
    assert not published.held_out and published.map_id == old_map_id(31)
    # the key is in no text a team or a log receives
    assert KEY not in repr(config) and KEY not in json.dumps(game.env_config(config, team_id=0, seed=1))


def test_a_held_out_match_without_a_key_says_what_to_set(tmp_path):
    config = MatchConfig(horizon=2, num_teams=2, cache_dir=tmp_path)
    with pytest.raises(MatchSetupError, match="map_key"):
        MatchSpec(seed=1, policies=(builtin("forage"),) * 2, config=config, held_out=True)
    with pytest.raises(MatchSetupError, match="NMMO_ARENA_MAP_SECRET"):
        maps.spec_map(1, True, None, config)


def test_held_out_maps_are_never_cached_where_a_team_may_read(tmp_path):
    config = MatchConfig(cache_dir=PROJECT_ROOT / "matchmaking" / "cache-here")
    with pytest.raises(MatchSetupError, match="NMMO_ARENA_CACHE"):
        maps.spec_map(1, True, KEY, config)
    assert not (PROJECT_ROOT / "matchmaking" / "cache-here").exists()


def test_the_space_key_comes_from_the_setting_or_a_secret_file_made_once(tmp_path):
    settings = ArenaSettings(data_dir=tmp_path / "data")
    key = maps.space_key(settings)
    secret = settings.map_secret_file
    assert secret.is_file() and stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert maps.space_key(settings) == key and secret.read_text().strip() not in key  # made once, kept; the key is derived
    given = ArenaSettings(data_dir=tmp_path / "other", map_secret="a-space-secret-of-the-operator")
    assert maps.space_key(given) == maps.held_out_key("a-space-secret-of-the-operator") != key
    assert not given.map_secret_file.exists()
    with pytest.raises(SettingsError, match="NMMO_ARENA_MAP_SECRET=\\(hidden: a secret\\)"):
        ArenaSettings.from_env({"NMMO_ARENA_MAP_SECRET": "short"})


def test_a_sandboxed_team_cannot_read_the_secret_or_the_held_out_maps(tmp_path):
    """A team playing on a held-out map tries to read DATA/map-secret, to list the held-out
    cache and to read a map in it; the same team in the match process (no sandbox) can,
    so the files are there and the attempt is real."""
    settings = ArenaSettings(data_dir=tmp_path / "data", cache_dir=tmp_path / "cache")
    key = maps.space_key(settings)
    config = MatchConfig(num_teams=1, horizon=2, cache_dir=settings.cache_dir, map_key=key)
    map_id, folder = maps.spec_map(13, True, key, config)
    thief = tmp_path / "map_thief"
    shutil.copytree(POLICIES / "adversarial" / "map_thief", thief)
    targets = [f"read {settings.map_secret_file}", f"list {folder.parent}", f"read {folder / 'map1' / 'map.npy'}"]
    (thief / "targets.txt").write_text("\n".join(targets))
    spec = MatchSpec(seed=13, policies=(local(thief),), config=replace(config, fault_message_chars=1000), held_out=True, track="pvp")
    protect_process()
    confined = run_match(spec, host_factory=sandboxed_host)
    open_ = run_match(spec, host_factory=in_process_host)
    assert confined.held_out and confined.map_id == map_id
    _, seen = fault_of(open_, "map_thief")
    assert seen.split(" / ")[0].count(": OK") == 3 and str(map_id - 256) in seen  # unconfined, all three succeed
    _, faults = fault_of(confined, "map_thief")
    assert "report" in faults and ": OK" not in faults
    for target in targets:
        assert f"{target}: PermissionError" in faults, faults


@pytest.mark.slow
def test_the_matchmaker_plays_pvp_on_held_out_maps_and_pve_on_published_ones(tmp_path):
    from matchmaking.service.space import Arena

    hub = LocalHub(tmp_path / "hub").start()
    try:
        push_policy(HfApi(endpoint=hub.endpoint, token="t"), "alice/gatherer", EXAMPLES / "gatherer")
        settings = ArenaSettings(
            data_dir=tmp_path / "data", hub_endpoint=hub.endpoint, match_horizon=8, workers=2, next_stage_top1=0.0,
            pve_matches_per_stage=1, qualify_achievement=0.0, seed_examples=False, pvp_matches_per_round=2,
        )
        arena = Arena.start(settings, schedule=False)
        try:
            m = arena.matchmaker
            m.sync()
            m.validate()
            while m.play_pve():
                pass
            assert m.play_pvp() == 2
            results = arena.store.results()
            pve = [r for r in results if r.track == "pve"]
            pvp = [r for r in results if r.track == "pvp"]
            assert pve and all(not r.held_out and r.map_id == old_map_id(r.seed) for r in pve)
            assert len(pvp) == 2 and all(r.held_out and r.map_id == maps.map_id_for(r.seed, held_out=True, config=m.config) for r in pvp)
            assert settings.map_secret_file.is_file()  # made on the first start (a real Hub, no setting)
            assert m.config.map_key == maps.space_key(settings)
            held = maps.held_out_folder(m.config.map_key, m.config)
            assert sorted(int(p.name) for p in held.iterdir() if not p.name.startswith(".")) == sorted({r.map_id - 256 for r in pvp})
        finally:
            arena.stop()
    finally:
        hub.stop()


MAP_DIGEST = """
import hashlib, sys
{first}
import matchmaking.teams.builtin
from matchmaking.engine import maps
deferred = type(sys.modules["scipy.stats"]).__name__, type(sys.modules["scipy.signal"]).__name__
_, tiles = maps.generate_held_out(3, {key!r})
from nmmo.render.render_utils import signal
from scipy.stats import spearmanr
assert signal.convolve2d([[1]], [[2]])[0][0] == 2 and spearmanr([1, 2, 3], [1, 2, 4])[0] == 1
print(*deferred, "scipy.stats._stats_py" in sys.modules, hashlib.sha256(tiles.tobytes()).hexdigest())
"""


def test_scipy_waits_for_its_first_use_and_the_maps_are_the_same():
    """`import nmmo` imports scipy.signal and scipy.stats; `matchmaking` defers both until
    first used (0.25 CPU-s a process): a map generated through the deferred scipy.stats is the
    map generated with SciPy imported first, and both answer once asked."""
    def run(first: str) -> list[str]:
        done = subprocess.run([sys.executable, "-c", MAP_DIGEST.format(first=first, key=KEY)], cwd=PROJECT_ROOT,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.split()

    deferred, imported = run(""), run("import scipy.signal, scipy.stats")
    assert deferred[:2] == ["_Deferred", "_Deferred"] and imported[:2] == ["module", "module"]
    assert deferred[2] == imported[2] == "True"  # both loaded once used
    assert deferred[3] == imported[3]
