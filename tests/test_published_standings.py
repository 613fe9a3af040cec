"""The leaderboard counts every match as soon as it is recorded (from the WAL, before a
flush or a push), each once through flushes and compactions, and says which of its shards
the Hub dataset holds (asked of the mirror over real HTTP against the embedded Hub)."""

from __future__ import annotations

from arena.simulation import Population, random_history
from history.mirror import HubMirror
from history.store import HistoryStore
from leaderboard.refresher import StandingsRefresher
from leaderboard.standings import compute
from leaderboard.tables import source_line


def history(n: int, seed: int = 0):
    return random_history(Population.random(30, seed=seed), n, seed=seed)


def name(store: HistoryStore, shard) -> str:
    """A shard's name as the standings give it: its path inside `data/` (a day folder)."""
    return shard.relative_to(store.data).as_posix()


def shards_on_hub(api, repo_id: str) -> list[str]:
    files = api.list_repo_files(repo_id, repo_type="dataset")
    return sorted(f.removeprefix("data/") for f in files if f.startswith("data/") and f.endswith(".parquet"))


def test_the_mirror_names_exactly_the_shards_the_dataset_holds(tmp_path, hub_api):
    store = HistoryStore(tmp_path / "history")
    mirror = HubMirror(store, api=hub_api, repo_id="arena/published", every_minutes=60)
    matches = history(9)
    try:
        assert mirror.published() is None  # not started: it cannot tell
        for m in matches[:3]:
            store.record(m)
        first = store.flush()
        assert mirror.push_now()
        assert mirror.published() == (name(store, first),) == tuple(shards_on_hub(hub_api, "arena/published"))
        for m in matches[3:6]:
            store.record(m)
        second = store.flush()  # flushed, not pushed
        for m in matches[6:]:
            store.record(m)  # in the WAL only
        assert mirror.published() == (name(store, first),)
        assert mirror.push_now()
        assert mirror.published() == (name(store, first), name(store, second)) == tuple(shards_on_hub(hub_api, "arena/published"))
    finally:
        mirror.stop()


def test_every_recorded_match_counts_at_once_and_the_source_says_what_the_dataset_holds(tmp_path, hub_api):
    store = HistoryStore(tmp_path / "history")
    mirror = HubMirror(store, api=hub_api, repo_id="arena/standings", every_minutes=60)
    refresher = StandingsRefresher(store, bootstrap=5, mle_every_s=0.0, published=mirror.published)
    matches = history(10, seed=1)
    try:
        for m in matches[:4]:
            store.record(m)
        recorded = refresher.refresh()  # in the WAL only, and the Hub not reached yet
        assert (recorded.matches, recorded.source.unsharded, recorded.source.shards) == (4, 4, ())
        assert recorded.source.published is None and "Not yet confirmed" in source_line(recorded)
        first = store.flush()
        assert mirror.push_now()
        pushed = refresher.refresh()
        assert pushed.trueskill == recorded.trueskill  # the same four matches, now in a pushed shard
        assert pushed.source.shards == pushed.source.published == (name(store, first),) and pushed.source.on_hub
        assert source_line(pushed) == (f"Computed from 4 matches (4 PvP), each counted as it ended. All are in the Hub "
                                       f"dataset, shards through `{name(store, first)}`.")
        for m in matches[4:7]:
            store.record(m)
        store.flush()  # a second shard, not pushed
        for m in matches[7:]:
            store.record(m)  # and three matches in the WAL
        standings = refresher.refresh()
        assert standings.matches == standings.pvp_matches == standings.rated_results == 10
        assert set(standings.teams.frame()["match_id"]) == {m.match_id for m in matches}
        assert set(standings.trueskill.ratings) <= standings.teams.players()
        assert standings.source.published == (name(store, first),) and standings.source.unsharded == 3
        assert not standings.source.on_hub
        assert source_line(standings) == (f"Computed from 10 matches (10 PvP), each counted as it ended. In the Hub dataset: "
                                          f"the shards through `{name(store, first)}`; 1 shard and 3 matches recorded here "
                                          "wait for the next push.")
        store.flush()
        assert mirror.push_now()
        everything = refresher.refresh()
        assert everything.matches == 10 and everything.source.shards == tuple(shards_on_hub(hub_api, "arena/standings"))
        assert everything.source.on_hub and everything.trueskill == standings.trueskill
    finally:
        mirror.stop()


def test_without_a_mirror_every_recorded_match_counts(tmp_path):
    store = HistoryStore(tmp_path / "history")
    refresher = StandingsRefresher(store, bootstrap=0, mle_every_s=0.0)
    assert source_line(refresher.refresh()).startswith("Computed from 0 matches")
    matches = history(5, seed=2)
    for m in matches:
        store.record(m)
    recorded = refresher.refresh()
    assert recorded.matches == 5 and recorded.source.shards == () and recorded.source.unsharded == 5
    shard = store.flush()
    standings = refresher.refresh()
    assert standings.matches == 5 and standings.source.through == name(store, shard) and standings.source.published is None
    assert standings.trueskill == recorded.trueskill and "Not yet confirmed" in source_line(standings)


def test_new_matches_move_the_ratings_at_once_and_the_fit_on_its_schedule(tmp_path):
    """While the bootstrap may not rerun yet (`mle_every_s`), TrueSkill, Elo and the tables
    move with each new match, each shard read once; the Plackett-Luce fit stays on the
    matches it was computed from (`mle_source`), and moves when it is due."""
    store = HistoryStore(tmp_path / "history")
    refresher = StandingsRefresher(store, bootstrap=5, mle_every_s=3600.0)
    matches = history(8, seed=3)
    for m in matches[:4]:
        store.record(m)
    store.flush()
    first = refresher.refresh()
    read = []
    read_shard = store.read_shard
    store.read_shard = lambda path: read.append(path.name) or read_shard(path)
    for m in matches[4:]:
        store.record(m)
    moved = refresher.refresh()
    assert read == []  # the new matches from the WAL alone
    store.flush()
    assert refresher.refresh().trueskill == moved.trueskill and len(read) == 1  # their shard read once, nothing new
    full = compute(store.shard_table().to_pandas(), bootstrap=5)
    assert moved.matches == 8 and moved.trueskill == full.trueskill and moved.trueskill != first.trueskill
    assert moved.pvp_players.equals(full.pvp_players) and moved.match_summary.equals(full.match_summary)
    assert moved.mle is first.mle and moved.mle_source == first.source
    refresher.mle_every_s = 0.0
    due = refresher.refresh()
    assert due.mle_source == due.source and set(due.mle) >= set(first.mle)
    # warm-started: the same optimum within L-BFGS-B's stopping rule (8 matches: a flat likelihood)
    assert max(abs(due.mle[p].rating - full.mle[p].rating) for p in full.mle) <= 1e-3


def test_after_a_compaction_the_standings_follow_the_commit_with_every_match(tmp_path, hub_api):
    store = HistoryStore(tmp_path / "history")
    mirror = HubMirror(store, api=hub_api, repo_id="arena/compacted-standings", every_minutes=60)
    refresher = StandingsRefresher(store, bootstrap=0, mle_every_s=0.0, published=mirror.published)
    matches = history(9, seed=4)
    try:
        for k, m in enumerate(matches):
            store.record(m)
            if k % 3 == 2:
                store.flush()
        assert mirror.push_now()
        before = refresher.refresh()
        assert before.matches == 9 and len(before.source.shards) == 3 and before.source.on_hub
        assert mirror.compact_now() is not None
        after = refresher.refresh()
        assert after.source.shards == tuple(store.shard_names()) == tuple(shards_on_hub(hub_api, "arena/compacted-standings"))
        assert [n.split("/")[-1][:4] for n in after.source.shards] == ["day-"]  # the synthetic matches' one day
        assert after.matches == 9 and after.trueskill.ratings == before.trueskill.ratings and after.source.on_hub
    finally:
        mirror.stop()


def test_shards_compacted_away_while_the_index_lists_them_are_read_by_their_new_names(tmp_path):
    store = HistoryStore(tmp_path / "history")
    for k, m in enumerate(history(6, seed=5)):
        store.record(m)
        if k % 2:
            store.flush()
    old = store.shard_names()
    names = store.shard_names
    store.shard_names = lambda: (store.compact(), old)[1] if names() == old else names()  # compacted as it was listed
    refresher = StandingsRefresher(store, bootstrap=0, mle_every_s=0.0)
    standings = refresher.refresh()  # listed, then gone: listed again, and read by their new names
    assert standings.matches == 6 and standings.source.shards == tuple(names())
