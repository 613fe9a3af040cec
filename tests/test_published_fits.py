"""A writer publishes its Plackett-Luce fit beside the shards, and a Space that holds those
shards shows it instead of fitting again (`leaderboard.standings.fits`): the same table at
once, its own fit later, and never a fit of shards it does not hold."""

from __future__ import annotations

import json
import shutil

from arena.simulation import Population, random_history
from history.store import HistoryStore
from leaderboard import tables
from leaderboard.refresher import StandingsRefresher
from leaderboard.standings.fits import fit_path, read_fits
from leaderboard.tables import source_line

WRITER = "w0123456789ab"
OTHER = "wba9876543210"


def published_refresher(store: HistoryStore, *, bootstrap: int = 5, writer: str | None = None) -> StandingsRefresher:
    """A refresher over the shards of `store` as if all were in the dataset."""
    return StandingsRefresher(store, bootstrap=bootstrap, mle_every_s=0.0, published=store.shard_names,
                              publish_fit=(fit_path(store.root, writer), writer) if writer else None)


def a_writer(tmp_path, shards: int = 2):
    store = HistoryStore(tmp_path / "writer" / "history")
    matches = random_history(Population.random(30, seed=4), 8 * shards + 6, seed=4)  # the last 6: later
    for i in range(shards):
        for m in matches[8 * i:8 * (i + 1)]:
            store.record(m)
        store.flush()
    return store, matches


def restored(tmp_path, writer_store: HistoryStore, name: str = "restored") -> HistoryStore:
    """What a restore leaves: the writer's shards and published fits (`history.restore`)."""
    root = tmp_path / name / "history"
    shutil.copytree(writer_store.data, root / "data")
    shutil.copytree(writer_store.root / "fits", root / "fits")
    return HistoryStore(root)


def test_a_restored_space_shows_the_writers_fit_then_its_own(tmp_path):
    store, matches = a_writer(tmp_path)
    writer = published_refresher(store, writer=WRITER)
    theirs = writer.refresh()
    assert theirs.mle and theirs.mle_writer == ""  # fitted here ...
    (fit,) = read_fits(store.root)  # ... and published, of the shards it was fitted on
    assert (fit.writer, fit.bootstrap, fit.shards, fit.mle) == (WRITER, 5, theirs.mle_source.shards, theirs.mle)

    copy = restored(tmp_path, store)
    ours = published_refresher(copy, writer=OTHER)
    first = ours.refresh()
    assert first.mle_writer == WRITER and first.mle == theirs.mle  # every float as the writer had it
    assert first.mle_source == theirs.mle_source == first.source
    assert tables.pvp_table(first, hub_url="h").equals(tables.pvp_table(theirs, hub_url="h"))
    assert f"the fit writer `{WRITER}` published" in source_line(first)
    assert not fit_path(copy.root, OTHER).exists()  # nothing of its own to publish yet

    for m in matches[-6:]:
        copy.record(m)
    copy.flush()
    moved = ours.refresh()  # a new shard: its own fit of all of them, published under its own name
    assert moved.mle_writer == "" and moved.mle_source == moved.source and len(moved.source.shards) == 3
    assert {f.writer: len(f.shards) for f in read_fits(copy.root)} == {WRITER: 2, OTHER: 3}
    assert "the fit writer" not in source_line(moved)


def test_a_fit_is_used_only_for_shards_held_and_the_same_bootstrap(tmp_path):
    store, _ = a_writer(tmp_path, shards=3)
    theirs = published_refresher(store, writer=WRITER).refresh()

    other_bootstrap = published_refresher(restored(tmp_path, store, "b"), bootstrap=6).refresh()
    assert other_bootstrap.mle_writer == ""

    missing = restored(tmp_path, store, "c")
    (missing.data / theirs.source.shards[-1]).unlink()  # a shard it names is not held (compacted away, not pulled)
    fitted_here = published_refresher(missing).refresh()
    assert fitted_here.mle_writer == "" and len(fitted_here.source.shards) == 2

    # an older fit of fewer shards is taken, and its shards named, until a fit of its own
    older = restored(tmp_path, store, "d")
    document = json.loads(fit_path(older.root, WRITER).read_text())
    document["shards"] = document["shards"][:2]
    fit_path(older.root, OTHER).write_text(json.dumps(document | {"writer": OTHER}))
    (older.data / theirs.source.shards[-1]).unlink()
    partial = published_refresher(older).refresh()
    assert partial.mle_writer == OTHER and partial.mle_source.shards == theirs.source.shards[:2]


def test_a_fit_of_the_same_matches_is_used_whatever_shards_hold_them_now(tmp_path):
    """A compaction renames shards, never matches: the fit of the same PvP results is the fit
    of the shards that hold them now."""
    store, _ = a_writer(tmp_path)
    theirs = published_refresher(store, writer=WRITER).refresh()
    copy = restored(tmp_path, store)
    document = json.loads(fit_path(copy.root, WRITER).read_text())
    fit_path(copy.root, WRITER).write_text(json.dumps(document | {"shards": ["2020-01-01/compacted-away.parquet"]}))
    standings = published_refresher(copy).refresh()
    assert standings.mle_writer == WRITER and standings.mle_source == standings.source and standings.mle == theirs.mle

    fit_path(copy.root, WRITER).write_text(json.dumps(document | {"shards": ["2020-01-01/compacted-away.parquet"],
                                                                  "digest": "0" * 64}))
    assert published_refresher(copy).refresh().mle_writer == ""  # other matches, and a shard not held


def test_a_damaged_fit_is_skipped_not_trusted(tmp_path, caplog):
    store, _ = a_writer(tmp_path)
    published_refresher(store, writer=WRITER).refresh()
    copy = restored(tmp_path, store)
    fit_path(copy.root, WRITER).write_text('{"version": 1, "shards": ["')
    standings = published_refresher(copy).refresh()
    assert standings.mle and standings.mle_writer == ""
    assert "cannot be read" in caplog.text


def test_tables_asked_during_the_restore_wait_then_show_the_writers_fit(tmp_path):
    """The pages ask for tables while the restore runs (the index waits for it): they are
    those of no match meanwhile, and the first after it are the whole history's, with the
    writer's fit (a refresh during the wait once made the first after it an update of the
    empty tables, which then fitted again instead)."""
    from history.index import HistoryIndex

    store, _ = a_writer(tmp_path)
    theirs = published_refresher(store, writer=WRITER).refresh()
    copy = restored(tmp_path, store)
    done = [False]
    ours = StandingsRefresher(HistoryIndex(copy, ready=lambda: done[0]), bootstrap=5, mle_every_s=3600.0,
                              published=copy.shard_names)
    for _ in range(3):
        waiting = ours.refresh()
        assert waiting.matches == 0 and not ours.covers(copy.shard_names())
    done[0] = True
    first = ours.refresh()
    assert first.mle_writer == WRITER and first.mle == theirs.mle and ours.covers(copy.shard_names())


def test_a_long_history_without_a_fit_shows_its_rows_first_then_fits_them(tmp_path, monkeypatch):
    """Past `FIT_LATER_FROM` PvP results and with no published fit, the first standings come
    without the whole-history columns, and say so (the table in TrueSkill's order); the next
    refresh fits them, equal to standings computed whole at once. No model card is written
    in between (it would lack the MLE rating)."""
    from huggingface_hub import HfApi

    from leaderboard import refresher
    from leaderboard.standings import compute
    from modelcards.ledger import PublicationLedger
    from modelcards.publisher import ModelCardPublisher

    store, _ = a_writer(tmp_path)
    monkeypatch.setattr(refresher, "FIT_LATER_FROM", 5)
    data = published_refresher(store)
    first = data.refresh()
    assert first.fitting and not first.mle and not first.head_to_head.players and first.trueskill.ratings
    assert tables.FITTING in source_line(first) and "TrueSkill's order" in source_line(first)
    table = tables.pvp_table(first, hub_url="http://hub")
    assert len(table) and list(table["Rank"]) == list(range(1, len(table) + 1)) and table["MLE"].isna().all()
    asked: list[int] = []
    publisher = ModelCardPublisher(api=HfApi(endpoint="http://127.0.0.1:9"), standings=data.standings,
                                   statuses=lambda: asked.append(1) or [], ledger=PublicationLedger(tmp_path / "cards.json"),
                                   dataset="nmmo-arena/match-history")
    assert publisher.run_once() == [] and asked == []  # it waits: no revision even looked at
    fitted = data.refresh()
    assert publisher.run_once() == [] and asked == [1]
    whole = compute(fitted.folded, bootstrap=5, source=fitted.source)
    assert not fitted.fitting and fitted.mle == whole.mle and fitted.head_to_head.players == whole.head_to_head.players
    assert tables.FITTING not in source_line(fitted)
    monkeypatch.setattr(refresher, "FIT_LATER_FROM", 10**9)
    assert not published_refresher(store).refresh().fitting  # a short history: fitted with its first standings
