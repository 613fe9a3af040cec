"""The leaderboard rates one consistent set of matches: whole shards, never the WAL's
matches, and with a Hub mirror only the shards already pushed (asked of the mirror over
real HTTP against the embedded Hub); the standings and the PvP tab say which."""

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


def test_the_standings_are_the_published_shards_never_the_wal(tmp_path, hub_api):
    store = HistoryStore(tmp_path / "history")
    mirror = HubMirror(store, api=hub_api, repo_id="arena/standings", every_minutes=60)
    refresher = StandingsRefresher(store, bootstrap=5, mle_every_s=0.0, published=mirror.published)
    matches = history(10, seed=1)
    try:
        for m in matches[:4]:
            store.record(m)
        first = store.flush()
        unpushed = refresher.refresh()  # the Hub not reached yet: the local shards, said so
        assert (unpushed.matches, unpushed.source.published, unpushed.source.through) == (4, False, name(store, first))
        assert "local shards" in source_line(unpushed) and "Not yet confirmed" in source_line(unpushed)
        assert mirror.push_now()
        for m in matches[4:7]:
            store.record(m)
        store.flush()  # a second shard, not pushed
        for m in matches[7:]:
            store.record(m)  # and three matches in the WAL
        standings = refresher.refresh()
        assert standings.source.shards == (name(store, first),) and standings.source.published
        assert standings.matches == standings.pvp_matches == standings.rated_results == 4
        assert set(standings.teams.frame()["match_id"]) == {m.match_id for m in matches[:4]}
        assert set(standings.trueskill.ratings) <= standings.teams.players()
        assert source_line(standings) == (f"Computed from 4 matches in the published shards through `{name(store, first)}` "
                                          "(4 PvP).")
        assert mirror.push_now()
        store.flush()
        assert refresher.refresh().matches == 7  # what the second push published; the WAL's 3 wait
        assert mirror.push_now()
        everything = refresher.refresh()
        assert everything.matches == 10 and everything.source.shards == tuple(shards_on_hub(hub_api, "arena/standings"))
    finally:
        mirror.stop()


def test_without_a_mirror_the_local_shards_and_only_whole_ones(tmp_path):
    store = HistoryStore(tmp_path / "history")
    refresher = StandingsRefresher(store, bootstrap=0, mle_every_s=0.0)
    matches = history(5, seed=2)
    for m in matches:
        store.record(m)
    empty = refresher.refresh()
    assert empty.matches == 0 and empty.source.shards == ()  # recorded, not yet in a shard
    assert source_line(empty).startswith("Computed from 0 matches")
    shard = store.flush()
    standings = refresher.refresh()
    assert standings.matches == 5 and standings.source.through == name(store, shard) and not standings.source.published


def test_new_shards_move_the_ratings_at_once_and_the_fit_on_its_schedule(tmp_path):
    """While the bootstrap may not rerun yet (`mle_every_s`), TrueSkill, Elo and the tables
    move to the new shards from their rows alone; the Plackett-Luce fit stays on the shards
    it was computed from (`mle_source`), and moves when it is due."""
    store = HistoryStore(tmp_path / "history")
    refresher = StandingsRefresher(store, bootstrap=5, mle_every_s=3600.0)
    matches = history(8, seed=3)
    for m in matches[:4]:
        store.record(m)
    first_shard = store.flush()
    first = refresher.refresh()
    for m in matches[4:]:
        store.record(m)
    store.flush()
    read = []
    batches = store.shard_batches
    store.shard_batches = lambda names=None: read.append(tuple(names or ())) or batches(names)
    moved = refresher.refresh()
    assert read == [moved.source.shards[1:]]  # only the new shard read
    full = compute(store.shard_table().to_pandas(), bootstrap=5)
    assert moved.matches == 8 and moved.trueskill == full.trueskill and moved.trueskill != first.trueskill
    assert moved.pvp_players.equals(full.pvp_players) and moved.match_summary.equals(full.match_summary)
    assert moved.mle is first.mle and moved.mle_source.through == name(store, first_shard)
    refresher.mle_every_s = 0.0
    due = refresher.refresh()
    assert due.mle_source == due.source == moved.source and set(due.mle) >= set(first.mle)
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
        assert before.matches == 9 and len(before.source.shards) == 3
        assert mirror.compact_now() is not None
        after = refresher.refresh()
        assert after.source.shards == tuple(store.shard_names()) == tuple(shards_on_hub(hub_api, "arena/compacted-standings"))
        assert [n.split("/")[-1][:4] for n in after.source.shards] == ["day-"]  # the synthetic matches' one day
        assert after.matches == 9 and after.trueskill.ratings == before.trueskill.ratings
    finally:
        mirror.stop()


def test_shards_compacted_away_while_the_standings_read_them_are_read_again_by_their_new_names(tmp_path):
    store = HistoryStore(tmp_path / "history")
    for k, m in enumerate(history(6, seed=5)):
        store.record(m)
        if k % 2:
            store.flush()
    old = store.shard_names()
    store.compact()  # as if between the refresher's listing and its reading
    answers = iter([old])
    refresher = StandingsRefresher(store, bootstrap=0, mle_every_s=0.0, published=lambda: next(answers, store.shard_names()))
    standings = refresher.refresh()
    assert standings.matches == 6 and standings.source.shards == tuple(store.shard_names())
