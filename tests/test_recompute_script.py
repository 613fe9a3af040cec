"""`examples/recompute_ratings.py`, run as anyone would run it on a snapshot of the
dataset, reproduces the Space's own PvP table: every rating, interval, rank and position
range, the Nash average, the held-out rating and the PvE-vs-PvP gap, at the table's
precision; and a script with one convention changed would not."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from arena import head_to_head, ratings
from arena.revision import Revision
from arena.rules import ANCHORS
from arena.schema import V1_DEFAULTS, MatchResult, rows
from arena.simulation import play
from history.store import HistoryStore
from leaderboard import standings as standings_module
from leaderboard import tables
from leaderboard.refresher import StandingsRefresher
from leaderboard.standings import Source, compute
from tests_support import TESTS
from tests_synthetic import SUBMISSIONS, TWICE, arena_history, revision

SCRIPT = TESTS.parent / "examples" / "recompute_ratings.py"
HUB = "http://hub.example"
COLUMNS = ["Rank", "Policy", "TrueSkill", "mu", "sigma", "MLE", "95% interval", "Position range", "Held-out",
           "PvE vs PvP", "Elo", "Nash avg", "Matches", "Achievement"]
#: PvE matches per submission: stage 1 (what the gap compares), and stage 2 (which it must not).
PVE_STAGE1, PVE_STAGE2 = 3, 1


def held_out_some(history: list[MatchResult]) -> list[MatchResult]:
    """Every third single match from the 21st on (version 1 records had no held-out maps)
    and the matches of the first two complete (old) duplicate sets, played on held-out maps."""
    set_ids = list(dict.fromkeys(r.set_id for r in history if r.set_id))[:2]
    singles = [r for r in history if not r.set_id]
    chosen = {r.match_id for r in singles[20::3]} | {r.match_id for r in history if r.set_id in set_ids}
    return [replace(r, held_out=True, map_id=257 + k) if r.match_id in chosen else r for k, r in enumerate(history)]


def pve_history(seed: int) -> list[MatchResult]:
    """PvE matches: each submission against 15 built-ins, its PvE skill unrelated to its
    PvP skill (so PvE and held-out PvP ranks disagree), on published maps."""
    rng = np.random.default_rng(seed)
    skills = dict(zip(SUBMISSIONS, rng.normal(1.5, 1.5, len(SUBMISSIONS)))) | ANCHORS
    fill = ["builtin:combat", "builtin:forage", "builtin:random"]
    history = []
    for i, policy in enumerate(SUBMISSIONS):
        for k in range(PVE_STAGE1 + PVE_STAGE2):
            lineup = [policy] + [fill[j % 3] for j in range(15)]
            played = play(lineup, [skills[p] for p in lineup], rng=rng, index=20_000 + 10 * i + k, track="pve")
            teams = tuple(replace(t, revision="builtin" if t.policy_id.startswith("builtin:") else revision(policy))
                          for t in played.teams)
            history.append(replace(played, teams=teams, stage=1 if k < PVE_STAGE1 else 2,
                                   match_id=f"pve{seed}-{i:02d}-{k}", started_at=f"2026-02-{1 + k:02d}T00:00:{i:02d}+00:00"))
    return history


LATE = "team/late"
"""A submission that so far met only the built-ins: its pairs with the others never met."""


def late_history(seed: int) -> list[MatchResult]:
    """Two PvP matches of `LATE` against 15 built-ins."""
    rng = np.random.default_rng(seed)
    lineup = [LATE] + [("builtin:combat", "builtin:forage", "builtin:random")[j % 3] for j in range(15)]
    skills = [2.0] + [ANCHORS[p] for p in lineup[1:]]
    history = []
    for k in range(2):
        played = play(lineup, skills, rng=rng, index=30_000 + k)
        teams = tuple(replace(t, revision="builtin" if t.policy_id.startswith("builtin:") else revision(LATE)) for t in played.teams)
        history.append(replace(played, teams=teams, match_id=f"late{seed}-{k}", started_at=f"2026-03-02T00:00:0{k}+00:00"))
    return history


def load_script():
    """The script as a module (for its constants, and to run it with one convention changed)."""
    spec = importlib.util.spec_from_file_location("recompute_ratings", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = script  # its dataclasses look their module up
    try:
        spec.loader.exec_module(script)
    finally:
        del sys.modules[spec.name]
    return script


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
    version 2 (matches of duplicate sets as Arenas recorded them before sets were retired,
    an incomplete set among them; a policy seated twice, ties, anchors, matches on held-out
    maps, PvE matches of stages 1 and 2, a newcomer that met only the built-ins), and
    matches in the WAL, flushed last; the Space's standings over it, and before that flush."""
    root = tmp_path_factory.mktemp("recompute")
    store = HistoryStore(root / "history")
    history = held_out_some(arena_history(matches=70, sets=4, seed=7))
    pve = pve_history(seed=7)
    singles = [r for r in history if not r.set_id]
    sets = [r for r in history if r.set_id]
    write_v1_shard(store, singles[:20] + pve[:8])
    for r in singles[20:50] + pve[8:24]:
        store.record(r)
    store.flush()
    for r in singles[50:65] + sets + pve[24:] + late_history(seed=7):
        store.record(r)
    store.flush()
    for r in singles[65:]:
        store.record(replace(r, started_at="2026-02-01T00:00:00+00:00"))  # in the WAL only: counted at once
    store.recover()  # as a restart would: the v1 shard's matches are known
    refresher = StandingsRefresher(store, bootstrap=200, mle_every_s=0.0)
    recorded = refresher.refresh()
    store.flush()  # the WAL's matches into a shard, as the dataset will hold them
    return store, refresher.refresh(), recorded


def space_table(standings) -> pd.DataFrame:
    return tables.pvp_table(standings, hub_url=HUB)[COLUMNS]


def script_table(data: Path, tmp_path: Path, *extra: str) -> pd.DataFrame:
    out = tmp_path / "table.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--data", str(data), "--json", str(out), *extra],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return linked(pd.DataFrame(json.loads(out.read_text())))[COLUMNS]


def linked(table: pd.DataFrame) -> pd.DataFrame:
    """The script's table with the Space's Policy cells (links, anchors marked)."""

    return table.assign(Policy=table["Policy"].map(lambda player: tables.revision_cell(Revision.parse(player), HUB)))


def test_the_history_has_every_case(space):
    store, standings, recorded = space
    assert len(store.shards()) == 4 and standings.source.shards == tuple(store.shard_names())
    pve = len(SUBMISSIONS) * (PVE_STAGE1 + PVE_STAGE2)
    assert standings.matches == 70 + 4 * 4 + 2 + 2 + pve
    assert standings.pvp_matches == standings.matches - pve
    assert standings.rated_results == standings.pvp_matches == 70 + 4 * 4 + 2 + 2  # every match, the old sets' one by one
    # the WAL's 5 counted as soon as they were recorded, before any flush, and said to be waiting
    assert (recorded.matches, recorded.source.unsharded, len(recorded.source.shards)) == (standings.matches, 5, 3)
    assert recorded.trueskill.ratings.keys() == standings.trueskill.ratings.keys()
    seats = standings.teams.frame().groupby(["match_id", "player"]).size()
    assert (seats.xs(f"{TWICE}@{revision(TWICE)}", level="player") == 2).any()  # a submission seated twice
    assert set(ANCHORS) <= set(standings.mle)
    table = space_table(standings)
    assert table["Rank"].nunique() > 2 and (table["Rank"].duplicated()).any()  # shared ranks, and several
    # the new columns are not trivial: a mixed Nash average, held-out ratings unlike the
    # whole-history ones, and PvE-vs-PvP gaps both ways, some far
    h2h = standings.head_to_head
    assert (h2h.met[h2h.index(f"{LATE}@{revision(LATE)}")] == 0).sum() > 1  # pairs that never met
    nash = table["Nash avg"]
    assert (nash == 0).any() and (nash < -0.1).sum() >= 3 and nash.nunique() >= 5
    held = table.dropna(subset=["Held-out"])
    assert len(held) >= 10 and (held["Held-out"] - held["MLE"]).abs().max() > 0.1
    gaps = table["PvE vs PvP"]
    assert gaps.str.contains("PvE better").any() and gaps.str.contains("PvP better").any() and gaps.str.contains("far").any()


def test_old_duplicate_sets_are_read_and_rated_match_by_match(space):
    """Matches of duplicate sets, recorded before sets were retired (2026-12-03), load from
    the shards with their set fields unchanged, and each is a rated result of its own, an
    incomplete set's too: in the Space's standings and in the script alike."""
    store, standings, _ = space
    old = [r for r in store.results() if r.set_id]
    assert len(old) == 4 * 4 + 2 and len({r.set_id for r in old}) == 5  # four complete sets, one incomplete
    assert {r.set_size for r in old} == {4} and {r.set_rotation for r in old} == {0, 1, 2, 3}
    assert any(r.held_out for r in old)
    rated = standings.rated.outcomes()
    ids = {o.key[1] for o in rated}
    assert {r.match_id for r in old} <= ids and not ids & {r.set_id for r in old}  # matches, never sets
    mine = {r.match_id: r for r in old}
    for o in rated:
        if o.key[1] in mine:
            r = mine[o.key[1]]
            assert o.key[0] == r.started_at and o.scores == tuple(t.achievement for t in r.teams)
    held_out_ids = {standings.held_out_rated.key(i)[1] for i in range(len(standings.held_out_rated))}
    assert {r.match_id for r in old if r.held_out} <= held_out_ids
    script = load_script()
    data, _ = script.read_rows(store.root, standings.source.through)
    assert [(r.started_at, r.id, r.players, r.scores) for r in script.rated_results(data)] == \
        [(*o.key, o.players, o.scores) for o in rated]


def test_the_script_reproduces_the_spaces_table(space, tmp_path):
    store, standings, _ = space
    expected = space_table(standings)
    got = script_table(store.root, tmp_path, "--through", standings.source.through)
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)


def test_through_a_shard_reproduces_the_table_of_the_shards_up_to_it(space, tmp_path):
    store, _, _ = space
    names = store.shard_names()[:2]
    standings = compute(store.shard_table(names).to_pandas(), bootstrap=200, source=Source(tuple(names)))
    got = script_table(store.data, tmp_path, "--through", names[-1])  # data/ itself works too
    pd.testing.assert_frame_equal(got, space_table(standings), check_dtype=False)


NEW_COLUMNS = ["Held-out", "PvE vs PvP", "Nash avg"]


def by_policy(table: pd.DataFrame) -> pd.DataFrame:
    return table.set_index("Policy")[NEW_COLUMNS].sort_index()


@pytest.mark.parametrize("change, columns", [
    ("pseudo-win 1/4 each way", {"Nash avg"}),
    ("pairs that never met: the smaller id wins", {"Nash avg"}),
    ("every seat pair a trial", {"Nash avg"}),
    ("held-out flag ignored", {"Held-out", "PvE vs PvP"}),
    ("PvE stage 2", {"PvE vs PvP"}),
    ("far from 6 ranks", {"PvE vs PvP"}),
])
def test_one_convention_changed_changes_the_table(space, change, columns, monkeypatch):
    """The comparison above can fail: each convention the new columns rest on, changed in
    the script alone, moves its columns away from the Space's (and only those)."""
    store, standings, _ = space
    script = load_script()
    data, _ = script.read_rows(store.root, standings.source.through)
    expected = by_policy(space_table(standings))
    pd.testing.assert_frame_equal(by_policy(linked(script.pvp_table(data, bootstrap=0))), expected, check_dtype=False)
    if change == "pseudo-win 1/4 each way":
        monkeypatch.setattr(script, "NASH_PSEUDO_WIN", 0.25)
    elif change == "pairs that never met: the smaller id wins":
        meta_game = script.meta_game

        def never_met_decided(met, wins, ties):
            order = np.sign(np.subtract.outer(np.arange(len(met)), np.arange(len(met))))  # -1 above the diagonal
            return meta_game(met, wins, ties) - np.where(met > 0, 0.0, order)

        monkeypatch.setattr(script, "meta_game", never_met_decided)
    elif change == "every seat pair a trial":
        pair_counts = script.pair_counts

        def per_seat(results, players):
            split = [script.Result(r.started_at, f"{r.id}:{x}:{y}", (r.players[x], r.players[y]), (r.scores[x], r.scores[y]))
                     for r in results for x in range(len(r.players)) for y in range(x + 1, len(r.players))]
            return pair_counts(split, players)

        monkeypatch.setattr(script, "pair_counts", per_seat)
    elif change == "held-out flag ignored":
        data = data.assign(held_out=True)
    elif change == "PvE stage 2":
        monkeypatch.setattr(script, "PVE_STAGE", 2)
    elif change == "far from 6 ranks":
        monkeypatch.setattr(script, "FAR_MIN_RANKS", 6)
    got = by_policy(linked(script.pvp_table(data, bootstrap=0)))
    moved = {c for c in NEW_COLUMNS if not got[c].equals(expected[c])}
    assert moved == columns


def test_the_scripts_equilibrium_is_the_spaces_where_it_is_not_unique():
    """The history above has one equilibrium (the generic case, where the LP decides);
    where there are many, the maximum-entropy step picks the Space's too."""
    script = load_script()
    rps = np.array([[0, 1, -1], [-1, 0, 1], [1, -1, 0]], dtype=float)
    games = {
        "everyone even": np.zeros((4, 4)),
        "rock thrice": rps[np.ix_([0, 1, 2, 0, 0], [0, 1, 2, 0, 0])],  # players 3 and 4 play as rock
        "a pair above the rest": np.array([[0, 0, 1, 2], [0, 0, 1, 1], [-1, -1, 0, 1], [-2, -1, -1, 0]], dtype=float),
        "rock paper scissors": rps,
    }
    for name, a in games.items():
        assert np.allclose(a, -a.T), name
        weights = script.nash_equilibrium(a)
        _, space = head_to_head.nash_average(a)
        assert weights == pytest.approx(space, abs=1e-6), name
    assert script.nash_equilibrium(np.zeros((4, 4))) == pytest.approx([0.25] * 4, abs=1e-6)  # not a vertex: the entropy chose


def test_the_script_stands_alone_and_states_the_spaces_constants():
    tree = ast.parse(SCRIPT.read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level == 0}
    assert imported - set(sys.stdlib_module_names) == {"numpy", "pandas", "scipy", "trueskill"}
    script = load_script()
    assert script.ANCHORS == ANCHORS
    assert (script.TS_MU, script.TS_SIGMA, script.TS_BETA, script.TS_DRAW_PROBABILITY, script.TS_PER_PL) == (
        ratings.TRUESKILL_MU, ratings.TRUESKILL_SIGMA, ratings.TRUESKILL_BETA, ratings.DRAW_PROBABILITY, ratings.TRUESKILL_PER_PL)
    assert (script.ELO_START, script.ELO_K, script.ELO_PER_PL) == (ratings.ELO_START, ratings.ELO_K, ratings.ELO_PER_PL)
    assert script.V1_DEFAULTS == V1_DEFAULTS
    mle = inspect.signature(ratings.plackett_luce).parameters
    assert (script.MLE_L2, script.BOOTSTRAP, script.SEED) == (mle["l2"].default, mle["bootstrap"].default, mle["seed"].default)
    assert script.TS_ANCHOR_SIGMA == inspect.signature(ratings.trueskill_ratings).parameters["anchor_sigma"].default
    assert script.SUPPORT_TOL == head_to_head.SUPPORT_TOL
    assert (script.FAR_MIN_RANKS, script.FAR_FIELD_SHARE) == (standings_module.FAR_MIN_RANKS, standings_module.FAR_FIELD_SHARE)


def test_the_scripts_trueskill_is_the_arenas(space):
    """The script rates with the `trueskill` package alone (its mpmath backend where the float
    maths fails); the Space with its one update, `arena.kernels.rate_ffa`. Before the table
    rounds them, every rated player's mu and sigma agree within 1e-6, the update's tolerance
    against the package (tests/test_trueskill_update.py)."""
    store, standings, _ = space
    script = load_script()
    data, _ = script.read_rows(store.root, standings.source.through)
    theirs = script.trueskill_ratings(script.rated_results(data))
    ours = standings.trueskill.ratings
    assert theirs.keys() == ours.keys() and len(ours) >= 10
    for player, (mu, sigma) in theirs.items():
        assert abs(ours[player].mu - mu) <= 1e-6 and abs(ours[player].sigma - sigma) <= 1e-6, player
