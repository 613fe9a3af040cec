"""The leaderboard's numbers: standings carried forward equal a recomputation, and each
table shows what the history holds, filtered and ordered as asked."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

from arena.lifecycle import Measurements, Status
from arena.revision import Revision
from arena.schema import rows
from arena.simulation import Population, play, random_history
from history.statuses import StatusLog
from leaderboard import tables
from leaderboard.standings import compute
from tests_support import record_lifecycle


def frame(results) -> pd.DataFrame:
    return pd.DataFrame([row for r in results for row in rows(r)])


def test_standings_carried_forward_equal_a_recomputation():
    history = random_history(Population.random(30, seed=5), 120, seed=5)
    head, tail = history[:80], history[80:]
    first = compute(frame(head), bootstrap=0)
    carried = compute(frame(head + tail), previous=first, refresh_mle=False, bootstrap=0)
    full = compute(frame(head + tail), bootstrap=0)
    assert carried.trueskill == full.trueskill and carried.elo == full.elo
    assert {p: list(t) for p, t in carried.trajectory.items()} == {p: list(t) for p, t in full.trajectory.items()}
    assert carried.matches == full.matches == 120


def test_a_match_arriving_out_of_order_is_recomputed_from_scratch():
    history = random_history(Population.random(30, seed=6), 60, seed=6)
    late = history[10]
    first = compute(frame([r for r in history if r is not late]), bootstrap=0)
    carried = compute(frame(history), previous=first, refresh_mle=False, bootstrap=0)
    assert carried.trueskill == compute(frame(history), bootstrap=0).trueskill


@pytest.fixture(scope="module")
def standings():
    import numpy as np

    rng = np.random.default_rng(0)
    crowd = Population.random(6, seed=2, prefix="crowd/p")
    results = []
    for i in range(60):
        lineup = ["alice/strong", "bob/weak", *crowd.ids, "builtin:random", "builtin:forage", "builtin:combat",
                  "builtin:random", "builtin:forage", "builtin:combat", "builtin:random"]
        skills = [5.0, -5.0, *crowd.skills, 0, 1.88, 2.65, 0, 1.88, 2.65, 0]
        result = play(lineup, skills, rng=rng, index=i)
        teams = tuple(replace(t, revision="a" * 40) if t.policy_id == "alice/strong" else t for t in result.teams)
        results.append(replace(result, teams=teams))
    pve = play(["alice/strong", *["builtin:forage"] * 15], [9.0] + [0.0] * 15, rng=rng, index=1000, track="pve")
    results.append(replace(pve, stage=1, started_at="2026-02-01T00:00:00+00:00",
                           teams=tuple(replace(t, revision="a" * 40) if t.slot == 0 else t for t in pve.teams)))
    return compute(frame(results), bootstrap=20)


def test_the_pvp_table_is_best_first_with_anchors_and_searchable(standings):
    table = tables.pvp_table(standings, hub_url="http://hub")
    assert "alice/strong" in table["Policy"].iloc[0] and "bob/weak" in table["Policy"].iloc[-1]
    assert list(table.columns) == [c.name for c in tables.PVP_COLUMNS]
    assert table["Rank"].is_monotonic_increasing and table["Rank"].iloc[0] == 1
    anchors = table[table["Author"] == "arena"]
    assert len(anchors) == 3 and all("(anchor)" in p for p in anchors["Policy"])
    assert tables.revision_cell(Revision("alice/strong", "a" * 40), "http://hub") == table["Policy"].iloc[0]
    assert table["Policy"].iloc[0] == f"[alice/strong](http://hub/alice/strong)@[aaaaaaa](/?policy=alice/strong@{'a' * 40})"
    found = tables.pvp_table(standings, hub_url="http://hub", search="BOB")
    assert len(found) == 1 and "bob/weak" in found["Policy"].iloc[0]
    seen = tables.pvp_table(standings, hub_url="http://hub", search="alice/strong@aaaa")  # as a reader sees the cell
    assert list(seen["Author"]) == ["alice"] and tables.pvp_table(standings, hub_url="http://hub", search="](").empty
    only_latest = tables.pvp_table(standings, hub_url="http://hub", latest={"alice/strong@" + "a" * 40})
    assert set(only_latest["Author"]) == {"alice", "arena"}  # the anchors always stay


def test_a_table_view_filters_by_owner_status_and_settled_and_chooses_columns(standings):
    """`tables.viewed`: the owner of a row is its Author or the account in its Policy cell
    (`arena` for the built-ins); status and settled filter rows; the columns keep the table's
    order, and names it lacks are left out."""
    from leaderboard.tables import TableView, viewed

    table = tables.pvp_table(standings, hub_url="http://hub")
    assert {"alice", "arena", "bob"} <= set(tables.owners(table))
    bob = viewed(table, TableView(owner="bob"), ())
    assert list(bob["Author"]) == ["bob"]
    assert set(viewed(table, TableView(owner="arena"), ())["Author"]) == {"arena"}
    shown = viewed(table, TableView(columns=("MLE", "Rank", "Policy", "No such column")), ())
    assert list(shown.columns) == ["Rank", "Policy", "MLE"] and len(shown) == len(table)
    marked = table.assign(Settling=["settled", "provisional: about 3 more matches", *[""] * (len(table) - 2)])
    assert len(viewed(marked, TableView(settled="settled"), ())) == 1
    assert list(viewed(marked, TableView(settled="provisional"), ())["Settling"]) == ["provisional: about 3 more matches"]
    assert len(viewed(marked, TableView(settled=""), ())) == len(table)
    cells = pd.DataFrame({"Policy": [tables.revision_cell(Revision("carol/x", "c" * 40), "http://hub"),
                                     tables.revision_cell(Revision("builtin:forage", "builtin"), "http://hub")],
                          "Status": ["rejected", "qualified (superseded)"]})
    assert list(tables.row_owners(cells)) == ["carol", "arena"]
    assert len(viewed(cells, TableView(status="qualified"), ())) == 1
    assert len(viewed(cells, TableView(owner="carol", status="qualified"), ())) == 0
    assert viewed(table.iloc[0:0], TableView(owner="bob", status="x", settled="settled"), ()).empty


def test_the_matches_table_filters(standings):
    everything = tables.matches_table(standings)
    assert len(everything) == 61 and everything["Started"].is_monotonic_decreasing
    assert len(tables.matches_table(standings, track="pve")) == 1
    assert len(tables.matches_table(standings, track="pve", stage=2)) == 0
    assert len(tables.matches_table(standings, policy="bob")) == 60
    assert len(tables.matches_table(standings, since="2026-02-01")) == 1
    assert len(tables.matches_table(standings, until="2026-01-31")) == 60


def test_the_pve_and_submissions_tables_follow_the_statuses(standings, tmp_path):
    statuses = StatusLog(tmp_path / "s.jsonl")
    record_lifecycle(statuses, "alice/strong", "a" * 40, Status.QUALIFIED, "qualified",
                     measurements=Measurements(median_step_ms=3.25, p99_step_ms=7.0))
    record_lifecycle(statuses, "carol/new", "c" * 40, Status.QUEUED, "waiting for validation")
    pve = tables.pve_table(standings, statuses.states(), hub_url="http://hub")
    alice = pve[pve["Policy"].str.contains("alice")].iloc[0]
    assert alice["Status"] == "qualified" and alice["Matches per stage"].startswith("1 / ") and alice["Stage 1 Top1Ratio"] == 1.0
    assert alice["ms / tick"] == 3.25  # the cost measured at validation
    carol = pve[pve["Policy"].str.contains("carol")].iloc[0]
    assert carol["Matches per stage"] == "0 / 0 / 0" and pd.isna(carol["Stage 1 Top1Ratio"]) and pd.isna(carol["ms / tick"])
    pvp = tables.pvp_table(standings, hub_url="http://hub", costs=tables.step_costs(statuses.states()))
    by_policy = dict(zip(pvp["Policy"], pvp["ms / tick"]))
    assert [v for k, v in by_policy.items() if "alice" in k] == [3.25]
    assert all(pd.isna(v) for k, v in by_policy.items() if "anchor" in k)
    record_lifecycle(statuses, "alice/strong", "d" * 40, Status.QUEUED, "a new push")
    subs = tables.submissions_table(statuses.states(), hub_url="http://hub")
    assert [link.split("@[")[1][:7] for link in subs["Policy"]] == ["ddddddd", "ccccccc", "aaaaaaa"]  # newest first
    assert list(subs["Status"]) == ["queued", "queued", "qualified (superseded)"]


def test_a_revision_in_pve_says_where_it_is_now(tmp_path):
    from arena.activity import QueueEntry

    statuses = StatusLog(tmp_path / "s.jsonl")
    record_lifecycle(statuses, "ann/new", "a" * 40, Status.EVALUATING, "Played 16 ticks without a fault: ...")
    record_lifecycle(statuses, "bob/on", "b" * 40, Status.QUALIFIED, "qualified: mean Achievement 30.0 in PvE stage 1")
    ann, bob = (s.id for s in sorted(statuses.states(), key=lambda s: s.id.policy_id))
    queue = {ann: QueueEntry(ann, 1, 1, 6, 170.0, played=4), bob: QueueEntry(bob, 2, 2, 10, None, played=0)}
    subs = tables.submissions_table(statuses.states(), hub_url="http://hub", queue=queue).set_index("Status")
    assert subs.loc["evaluating", "Reason"] == "PvE stage 1: 4 of 10 matches, about 3 min to a verdict"
    assert subs.loc["qualified", "Reason"] == ("PvE stage 2: 0 of 10 matches, the time to the end of stage 2 is known once "
                                               "a match is timed (qualified: mean Achievement 30.0 in PvE stage 1)")
    assert sorted(subs["Queue"]) == ["1st of 2", "2nd of 2"]


def test_a_policy_page_has_its_rating_tasks_matches_and_rivals(standings):
    page = tables.policy_frames(standings, "alice/strong@" + "a" * 40)
    assert len(page["trajectory"]) == 60 and page["trajectory"]["mu"].iloc[-1] > 25
    assert set(page["tasks"]["track"]) == {"pvp", "pve"}
    assert len(page["recent"]) == 20
    rivals = page["head_to_head"].set_index("Opponent")
    assert rivals.loc["bob/weak@sim", "Matches"] == 60 and rivals.loc["bob/weak@sim", "Won"] > 0.9
    # its head to head declares its kinds once (`HEAD_TO_HEAD_KINDS`): the linked first column
    # Markdown, numbers exactly where the frame holds numbers
    frame, kinds = page["head_to_head"], tables.HEAD_TO_HEAD_KINDS
    assert len(kinds) == len(frame.columns) and kinds[0] == "markdown", (list(frame.columns), kinds)
    assert [k == "number" for k in kinds[1:]] == [pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns[1:]]
    # its recent matches as text: a row each, the match linked, numbers right-aligned
    text = tables.markdown_table(tables.linked(page["recent"], "Match", tables.match_cell), "Recent matches")
    lines = text.splitlines()
    assert lines[0] == "**Recent matches**" and len(lines) == 2 + 2 + 20 and lines[3].startswith("|---|---|---|---:")
    assert lines[4].startswith(f"| [{page['recent']['Match'][0]}](/?match={page['recent']['Match'][0]}) | ")
    assert tables.markdown_table(page["recent"].iloc[0:0], "Recent matches") == ""
    # read from the rows of its matches alone (`TeamRows.around`, as the page reads it): the same page
    player = "alice/strong@" + "a" * 40
    around = standings.teams.around(player)
    assert 0 < len(around) <= len(standings.teams)
    for name, frame in tables.policy_frames(standings, player, around).items():
        pd.testing.assert_frame_equal(frame, page[name])
    assert standings.teams.around("nobody").empty and list(standings.teams.around("nobody").chunks[0].columns)


def test_the_head_to_head_is_in_the_standings_and_its_tables(standings):
    h2h = standings.head_to_head
    strong, weak = "alice/strong@" + "a" * 40, "bob/weak@sim"
    i, j = h2h.index(strong), h2h.index(weak)
    assert h2h.met[i, j] == 60 and h2h.share[i, j] > 0.9 and h2h.low[i, j] > 0.5
    table = tables.pvp_table(standings, hub_url="http://hub")
    nash = dict(zip(table["Policy"], table["Nash avg"]))
    assert nash[tables.revision_cell(Revision("alice/strong", "a" * 40), "http://hub")] == 0.0  # the mix is all on the leader
    assert all(v < 0 for k, v in nash.items() if "alice" not in k)
    html = tables.heatmap_html(standings, top=5)
    players = tables.heatmap_players(standings, top=5)
    assert players[0] == strong and len(players) == 5
    assert html.count('class="h2h-cell') == 5 * 4 and html.count('class="h2h-self"') == 5
    assert "95% interval" in html and "best 5 of" in tables.heatmap_caption(standings, top=5)
    answer = tables.head_to_head_json(h2h, player="bob/weak")
    assert set(answer) == {"players", "pairs", "pairs_total", "offset", "next_offset", "cycles", "nash"}
    assert answer["pairs_total"] == len(answer["pairs"]) and answer["next_offset"] is None
    first, second = (tables.head_to_head_json(h2h, player="bob/weak", offset=k, limit=3) for k in (0, 3))
    assert first["next_offset"] == 3 and first["pairs"] + second["pairs"] == answer["pairs"][:6]
    assert all("bob/weak" in (r["a"] + r["b"]) for r in answer["pairs"]) and len(answer["pairs"]) == 2 * (len(h2h.players) - 1)
    assert {r["player"] for r in answer["nash"]} == set(h2h.players)
    assert tables.nash_table(standings)["Player"].iloc[0] == "alice/strong@aaaaaaa"


def test_the_head_to_head_is_empty_without_pvp_and_reused_when_the_mle_is():
    import numpy as np

    pve = [play(["alice/strong", *["builtin:forage"] * 15], [1.0] + [0.0] * 15, rng=np.random.default_rng(k), index=k, track="pve")
           for k in range(3)]
    empty = compute(frame(pve), bootstrap=0)
    assert empty.head_to_head.players == () and tables.heatmap_html(empty) == ""
    assert "none yet" in tables.cycles_markdown(empty.head_to_head) and tables.nash_table(empty).empty
    rng_history = random_history(Population.random(20, seed=4), 20, seed=4)
    first = compute(frame(rng_history[:10]), bootstrap=0)
    carried = compute(frame(rng_history), previous=first, refresh_mle=False, bootstrap=0)
    assert carried.head_to_head is first.head_to_head  # refreshed with the fit, not per match
    fresh = compute(frame(rng_history), bootstrap=0)
    assert fresh.head_to_head.met.sum() > first.head_to_head.met.sum()


def test_the_tables_intervals_and_ranks_are_unchanged_when_start_times_are_permuted():
    """Issue 11: the bootstrap resampled in start-time order, so moving start times moved
    intervals and shared ranks. Now every order-free column of the PvP table (Rank, MLE,
    its interval, the position range) is identical; TrueSkill and Elo, online by design,
    may move."""
    from tests_synthetic import arena_history, permute_start_times

    history = arena_history(matches=80, sets=4, seed=4)
    permuted = permute_start_times(history, seed=5)
    first, second = compute(frame(history), bootstrap=40), compute(frame(permuted), bootstrap=40)
    assert first.mle == second.mle
    columns = ["Rank", "Policy", "MLE", "95% interval", "Position range", "Matches", "Achievement"]
    a = tables.pvp_table(first, hub_url="http://hub")[columns]
    b = tables.pvp_table(second, hub_url="http://hub")[columns]
    pd.testing.assert_frame_equal(a, b)
    assert a["Rank"].nunique() > 1 and (a["Position range"].str.split("-").str[0] != a["Position range"].str.split("-").str[1]).any()
    assert first.trueskill != second.trueskill  # the permutation did change the online order


def test_a_table_sorts_whole_by_a_column_and_shows_a_page_at_a_time():
    """`sorted_by`: numbers as numbers, links by their text, empty cells last either way;
    `paged`: a page past the last is the last; `page_line` says which rows are shown."""
    from leaderboard.tables import page_line, paged, sorted_by

    table = pd.DataFrame({"Rank": [3, 1, 10, None], "Policy": ["[b/x](http://h/b)", "[a/y](http://h/a)", "", "[c/z](http://h/c)"]})
    assert list(sorted_by(table, "Rank")["Rank"].fillna(-1)) == [1, 3, 10, -1]  # 10 after 3: numbers, not text
    assert list(sorted_by(table, "-Rank")["Rank"].fillna(-1)) == [10, 3, 1, -1]  # empty last, descending too
    assert list(sorted_by(table, "Policy")["Policy"]) == ["[a/y](http://h/a)", "[b/x](http://h/b)", "[c/z](http://h/c)", ""]
    assert sorted_by(table, "No such column").equals(table) and sorted_by(table, "").equals(table)
    rows, page, pages = paged(pd.DataFrame({"n": range(120)}), 9, rows=50)
    assert (page, pages, list(rows["n"])[:2], len(rows)) == (3, 3, [100, 101], 20)
    assert page_line(3, 3, 120, rows=50) == "Rows 101-120 of 120 (page 3 of 3)." and page_line(1, 1, 7) == "All 7 rows."
    assert page_line(1, 1, 0) == "No rows."


def test_a_page_is_sent_a_table_again_only_when_its_cells_or_their_order_changed():
    """`only_changed`: the same cells in the same order are a skip; the same cells in another
    order (a sort of a table that fits one page) are sent."""
    import gradio as gr

    from leaderboard.updates import only_changed

    table = pd.DataFrame({"Policy": ["a", "b", "c"], "MLE": [3.0, 2.0, 1.0]})
    first = only_changed([table], None)
    assert first[0] is table
    assert only_changed([table.copy()], first[-1])[0] == gr.skip()
    reordered = table.iloc[::-1].reset_index(drop=True)
    assert only_changed([reordered], first[-1])[0] is reordered


def test_a_policys_head_to_head_counts_each_opponent_once_a_match_and_each_seat_it_faced():
    """`tables.opponents_met` (on the rows' integer codes, chunk by chunk) answers what grouping
    the opponents' rows by name answers: an opponent seated twice in a match met it once, each
    of its seats counts in the shares; a tie is not a win; categorical chunks and plain alike."""
    from history.index import TeamRows

    rows = pd.DataFrame({
        "match_id": ["m1"] * 4 + ["m2"] * 3 + ["m3"] * 2,
        "player": ["me", "a", "a", "b", "me", "b", "c", "a", "b"],  # m3: no "me"
        "achievement": [10, 4, 12, 10, 7, 9, 1, 50, 0],
    })

    def reference(frame: pd.DataFrame, player: str) -> pd.DataFrame:
        mine = frame[frame["player"] == player].drop_duplicates("match_id").set_index("match_id")["achievement"]
        pairs = frame[frame["match_id"].isin(mine.index) & (frame["player"] != player)]
        pairs = pairs.assign(diff=pairs["match_id"].map(mine) - pairs["achievement"])
        return (pairs.assign(won=pairs["diff"] > 0, tied=pairs["diff"] == 0).groupby("player")
                .agg(Matches=("match_id", "nunique"), Won=("won", "mean"), Tied=("tied", "mean"),
                     **{"Score difference": ("diff", "mean")})
                .sort_values("Matches", ascending=False).round(2).reset_index().rename(columns={"player": "Opponent"}))

    expected = reference(rows, "me")
    assert expected.set_index("Opponent").loc["a"].tolist() == [1, 0.5, 0.0, 2.0]  # two seats, one match
    assert expected.set_index("Opponent").loc["b"].tolist() == [2, 0.0, 0.5, -1.0]  # a tie and a loss
    split = TeamRows((rows.iloc[:4].astype({"match_id": "category", "player": "category"}), rows.iloc[4:].copy()))
    for chunks in (TeamRows.of(rows), split):
        got = tables.opponents_met(chunks, "me")
        pd.testing.assert_frame_equal(got.set_index("Opponent").sort_index(), expected.set_index("Opponent").sort_index(),
                                      check_dtype=False)
        assert got["Matches"].tolist() == sorted(got["Matches"], reverse=True)
    assert tables.opponents_met(TeamRows.of(rows), "nobody").empty
    assert list(tables.opponents_met(TeamRows.of(rows), "nobody").columns) == list(expected.columns)
