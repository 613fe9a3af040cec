"""`examples/recompute_ratings.py`, run as anyone would run it on a snapshot of the
dataset, reproduces the Space's own PvP table: every rating, interval, rank and position
range, at the table's precision."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from arena import ratings
from arena.rules import ANCHORS
from arena.schema import V1_DEFAULTS, rows
from history.store import HistoryStore
from leaderboard import tables
from leaderboard.refresher import StandingsRefresher
from leaderboard.standings import Source, compute
from tests_support import TESTS
from tests_synthetic import TWICE, arena_history, revision

SCRIPT = TESTS.parent / "examples" / "recompute_ratings.py"
HUB = "http://hub.example"
COLUMNS = ["Rank", "Policy", "TrueSkill", "mu", "sigma", "MLE", "95% interval", "Position range", "Elo", "Matches", "Achievement"]


def write_v1_shard(store: HistoryStore, results) -> Path:
    """A shard as schema version 1 wrote it: without the set, spawn and held-out columns."""
    records = [{k: v for k, v in row.items() if k not in V1_DEFAULTS} | {"schema_version": 1}
               for r in results for row in rows(r)]
    path = store.data / "teams-20260101T000000000000-00000001.parquet"  # sorts first: written first
    pq.write_table(pa.Table.from_pylist(records), path)
    return path


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    """A history written through the real store: a version 1 shard, two shards of
    version 2 (duplicate sets, an incomplete one, a policy seated twice, ties, anchors),
    and matches still in the WAL; the Space's standings over it."""
    root = tmp_path_factory.mktemp("recompute")
    store = HistoryStore(root / "history")
    history = arena_history(matches=70, sets=4, seed=7)
    singles = [r for r in history if not r.set_id]
    sets = [r for r in history if r.set_id]
    write_v1_shard(store, singles[:20])
    for r in singles[20:50]:
        store.record(r)
    store.flush()
    for r in singles[50:65] + sets:
        store.record(r)
    store.flush()
    for r in singles[65:]:
        store.record(replace(r, started_at="2026-02-01T00:00:00+00:00"))  # in the WAL only: not rated
    store.recover()  # as a restart would: the v1 shard's matches are known
    standings = StandingsRefresher(store, bootstrap=200, mle_every_s=0.0).refresh()
    return store, standings


def space_table(standings) -> pd.DataFrame:
    return tables.pvp_table(standings, hub_url=HUB)[COLUMNS]


def script_table(data: Path, tmp_path: Path, *extra: str) -> pd.DataFrame:
    out = tmp_path / "table.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--data", str(data), "--json", str(out), *extra],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    table = pd.DataFrame(json.loads(out.read_text()))

    def link(player: str) -> str:  # the Space's Policy cell
        if player.startswith("builtin:"):
            return f"{player} (anchor)"
        policy, revision = player.split("@")
        return f"[{policy}]({HUB}/{policy})@{revision[:7]}"

    table["Policy"] = table["Policy"].map(link)
    return table[COLUMNS]


def test_the_history_has_every_case(space):
    store, standings = space
    assert len(store.shards()) == 3 and standings.source.shards == tuple(p.name for p in store.shards())
    assert standings.matches == 70 - 5 + 4 * 4 + 2  # the WAL's 5 are not in
    assert standings.rated_results == 65 + 4  # four complete sets, one result each; the incomplete one waits
    seats = standings.teams.groupby(["match_id", "player"]).size()
    assert (seats.xs(f"{TWICE}@{revision(TWICE)}", level="player") == 2).any()  # a submission seated twice
    assert set(ANCHORS) <= set(standings.mle)
    table = space_table(standings)
    assert table["Rank"].nunique() > 2 and (table["Rank"].duplicated()).any()  # shared ranks, and several


def test_the_script_reproduces_the_spaces_table(space, tmp_path):
    store, standings = space
    expected = space_table(standings)
    got = script_table(store.root, tmp_path, "--through", standings.source.through)
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)


def test_through_a_shard_reproduces_the_table_of_the_shards_up_to_it(space, tmp_path):
    store, _ = space
    names = [p.name for p in store.shards()][:2]
    standings = compute(store.shard_table(names).to_pandas(), bootstrap=200, source=Source(tuple(names)))
    got = script_table(store.data, tmp_path, "--through", names[-1])  # data/ itself works too
    pd.testing.assert_frame_equal(got, space_table(standings), check_dtype=False)


def test_the_script_stands_alone_and_states_the_spaces_constants():
    tree = ast.parse(SCRIPT.read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level == 0}
    assert imported - set(sys.stdlib_module_names) == {"numpy", "pandas", "scipy", "trueskill"}
    spec = importlib.util.spec_from_file_location("recompute_ratings", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = script  # its dataclasses look their module up
    try:
        spec.loader.exec_module(script)
    finally:
        del sys.modules[spec.name]
    assert script.ANCHORS == ANCHORS
    assert (script.TS_MU, script.TS_SIGMA, script.TS_BETA, script.TS_DRAW_PROBABILITY, script.TS_PER_PL) == (
        ratings.TRUESKILL_MU, ratings.TRUESKILL_SIGMA, ratings.TRUESKILL_BETA, ratings.DRAW_PROBABILITY, ratings.TRUESKILL_PER_PL)
    assert (script.ELO_START, script.ELO_K, script.ELO_PER_PL) == (ratings.ELO_START, ratings.ELO_K, ratings.ELO_PER_PL)
    assert script.V1_DEFAULTS == V1_DEFAULTS
    mle = inspect.signature(ratings.plackett_luce).parameters
    assert (script.MLE_L2, script.BOOTSTRAP, script.SEED) == (mle["l2"].default, mle["bootstrap"].default, mle["seed"].default)
    assert script.TS_ANCHOR_SIGMA == inspect.signature(ratings.trueskill_ratings).parameters["anchor_sigma"].default
