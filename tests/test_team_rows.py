"""The standings' rows in chunks read as the one frame they stand for."""

from __future__ import annotations

import numpy as np
import pandas as pd

from history.index import TeamRows


def batch(start: int, matches: int) -> pd.DataFrame:
    ids = [f"m{i:04d}" for i in range(start, start + matches) for _ in range(4)]
    players = [f"p{(i * 7 + s) % 9}" for i in range(start, start + matches) for s in range(4)]
    frame = pd.DataFrame({"match_id": ids, "player": players, "slot": list(range(4)) * matches,
                          "achievement": np.arange(len(ids)) % 13})
    return frame.astype({"match_id": "category", "player": "category"})


def test_appended_batches_read_as_one_frame_in_few_chunks():
    rows, whole = TeamRows(), []
    for k in range(60):
        part = batch(k * 3, 3)
        rows, whole = rows.append(part), whole + [part]
        assert len(rows.chunks) <= np.log2(3 * (k + 1) + 1) + 1  # each chunk under half the one before
    expected = pd.concat([w.astype(object) for w in whole], ignore_index=True)
    got = rows.frame()
    assert (got.dtypes[["match_id", "player"]] == "category").all()  # still narrow
    pd.testing.assert_frame_equal(got.astype(object), expected.astype(object))
    assert len(rows) == len(expected) and rows.players() == set(expected["player"])
    mine = rows.of_player("p3")
    pd.testing.assert_frame_equal(mine, expected[expected["player"] == "p3"].reset_index(drop=True), check_dtype=False)
    assert mine["match_id"].dtype == object  # a selection sorts by value, not by a category's code
    assert list(rows.of_match("m0100")["slot"]) == [0, 1, 2, 3]
    assert rows.of_player("nobody").empty and list(rows.of_player("nobody").columns) == list(expected.columns)
    assert [m for ids in rows.match_ids() for m in ids] == list(dict.fromkeys(expected["match_id"]))


def test_appending_leaves_the_earlier_rows_as_they_were():
    first = TeamRows.of(batch(0, 8))
    second = first.append(batch(8, 8))  # merged into one chunk: the first object still holds 8 matches
    assert len(first) == 32 and len(second) == 64 and len(second.chunks) == 1
    assert first.append(batch(0, 0)) is first


def test_a_players_opponents_are_the_other_rows_of_its_matches_in_every_chunk():
    """`TeamRows.opponents` (`history.index.rows.same_matches`: by the match ids' codes) gives
    what `isin` over the whole frame gives, on categorical chunks and plain ones alike, a
    missing match id in none."""
    plain = batch(40, 5).astype({"match_id": object, "player": object})
    plain.loc[3, "match_id"] = None  # a row of no match is nobody's opponent
    rows = TeamRows.of(batch(0, 20)).append(batch(20, 20)).append(plain)
    whole = rows.frame().astype(object)
    for player in ("p3", "p0", "nobody"):
        met = whole.loc[whole["player"] == player, "match_id"].dropna()
        expected = whole[whole["match_id"].isin(met) & (whole["player"] != player)].reset_index(drop=True)
        got = rows.opponents(player)
        pd.testing.assert_frame_equal(got.astype(object), expected, check_dtype=False)
        assert (player == "nobody") == got.empty
        # the rows of its matches (`around`: what its page reads) answer for it as every row does
        around = rows.around(player)
        expected_around = whole[whole["match_id"].isin(met)].reset_index(drop=True)
        pd.testing.assert_frame_equal(around.frame().astype(object), expected_around, check_dtype=False)
        assert len(around) < len(rows) and (player == "nobody") == around.empty
        pd.testing.assert_frame_equal(around.opponents(player), got)
        pd.testing.assert_frame_equal(around.of_player(player), rows.of_player(player))


def test_many_batches_extend_the_rows_as_appending_them_one_by_one_would(monkeypatch):
    """`TeamRows.extend` (a restart's whole history at once): runs of batches within the cap,
    each copied once; the same rows, still narrow, the rows extended left as they were."""
    from history.index import team_rows

    monkeypatch.setattr(team_rows, "MAX_CHUNK_ROWS", 40)
    parts = [batch(k * 3, 3) for k in range(20)]  # 12 rows each: runs of 3 batches
    first = TeamRows.of(parts[0])
    extended = first.extend(parts[1:])
    one_by_one = first
    for part in parts[1:]:
        one_by_one = one_by_one.append(part)
    pd.testing.assert_frame_equal(extended.frame(), one_by_one.frame())
    assert (extended.frame().dtypes[["match_id", "player"]] == "category").all()
    assert max(len(c) for c in extended.chunks) <= 40 and len(first) == 12
    assert first.extend([]) is first and first.extend([batch(0, 0)]) is first
