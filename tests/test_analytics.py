"""Analytics from replays: a recorded match's numbers agree with its record, the causes of
death follow nmmo's rules on hand-made replays, and the accumulator grows one new replay
at a time (incremental == batch, saved and loaded whole, damaged replays skipped)."""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pytest

from arena.analytics import CAUSES, Analytics, analyse, death_causes, trajectories
from arena.policies import builtin
from arena.replay import KILL, ReplayRecorder, encode, read
from history.index import with_players
from history.store import HistoryStore
from leaderboard.analytics import AnalyticsKeeper, analytics_json, task_profile
from leaderboard.refresher import StandingsRefresher
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec, run_match
from matchmaking.teams.factory import in_process_host

pytestmark = pytest.mark.slow

LINEUP = ("random", "forage", "combat", "elite")


def _play(seed: int, horizon: int, names=LINEUP):
    recorder = ReplayRecorder()
    lineup = tuple(builtin(n) for n in names * (16 // len(names)))
    result = run_match(MatchSpec(seed=seed, policies=lineup, config=MatchConfig(horizon=horizon), track="pvp"), recorder=recorder, host_factory=in_process_host)
    return result, recorder.data


@pytest.fixture(scope="module")
def matches():
    """Two real matches: one long enough for starvation, kills by players and by NPCs."""
    return [_play(3, 100), _play(5, 30, ("forage", "melee"))]


def test_visits_alive_and_deaths_agree_with_the_match(matches):
    result, data = matches[0]
    header, arrays = read(data)
    teams = analyse(header, arrays)
    health = arrays["players"][:, :, 2]
    for team, record in zip(teams, result.teams):
        index = np.asarray(header["teams"][str(team.slot)]) - 1
        assert int(team.visits.sum()) == int((health[:, index] > 0).sum())  # every alive member-frame, once
        assert team.alive.tolist() == (health[:, index] > 0).sum(axis=1).tolist()
        assert team.alive[0] == 8 and team.alive[-1] == record.alive  # the engine's own count at the end
        assert len(team.deaths) == record.deaths
    causes = {d.cause for t in teams for d in t.deaths}
    assert {"starved", "player", "npc"} <= causes, causes  # this seed has all three
    team_of = {a: int(s) for s, agents in header["teams"].items() for a in agents}
    by_others = [d for t in teams for d in t.deaths if d.cause == "player" and team_of[d.killer] != team_of[d.agent]]
    assert len(by_others) == sum(t.player_kills for t in result.teams)  # the record's Eliminate count


def test_trajectories_follow_each_member_while_alive(matches):
    result, data = matches[0]
    header, arrays = read(data)
    paths = trajectories(header, arrays, [0, 3])
    deaths = death_causes(header, arrays)
    for slot in (0, 3):
        assert sorted(paths[slot]) == header["teams"][str(slot)]
        for agent, path in paths[slot].items():
            ticks = [p[0] for p in path]
            assert ticks == list(range(len(ticks)))  # from the spawn, one point a tick
            if agent in deaths:
                assert ticks[-1] == deaths[agent].tick - 1
            else:
                assert ticks[-1] == result.ticks
            t, row, col = path[-1]
            assert [row, col] == arrays["players"][t, agent - 1, :2].tolist()


def _hand_made(match_id: str = "hand") -> tuple[dict, dict]:
    """Two teams of three on an 8x8 map, 4 frames; each member dies of a different cause."""
    frames, agents = 4, 6
    players = np.zeros((frames, agents, 5), np.uint8)
    players[:, :, 0], players[:, :, 1] = 2, 3  # everyone on tile (2, 3)
    players[:, :, 2:] = [50, 80, 80]
    deaths = {1: (2, 0, 80), 2: (2, 80, 0), 3: (3, 0, 0), 4: (1, 0, 0), 5: (3, 80, 80), 6: (2, 80, 80)}  # tick, food, water before
    for agent, (tick, food, water) in deaths.items():
        players[tick - 1, agent - 1, 3:] = [food, water]
        players[tick:, agent - 1] = 0
    events = [
        [1, KILL, -7, 4, 0, 0],   # an NPC kills agent 4 (its bars were empty: the kill counts)
        [3, KILL, 2, 5, 0, 0],    # agent 2 (other team) kills agent 5: but agent 2 died at tick 2: still credited
        [2, KILL, 5, -9, 0, 0],   # a player kills an NPC: no player died of it
        [1, KILL, 4, 6, 0, 0],    # a kill of agent 6 on another tick than its death: not its cause
    ]
    header = {"version": 2, "match_id": match_id, "ticks": frames - 1, "num_agents": agents,
              "teams": {"0": [1, 2, 3], "1": [4, 5, 6]}, "policies": ["a", "b"], "events": events,
              "tiers": [], "tasks": [], "tier_points": [], "faults": []}
    arrays = {"map": np.full((8, 8), 2, np.uint8), "players": players, "npc_count": np.zeros(frames, np.uint8),
              "npcs": np.zeros((frames, 1, 4), np.int16)}
    return read(encode(header, arrays))  # through the real format


def test_causes_of_death_follow_nmmo_rules_on_a_hand_made_replay():
    header, arrays = _hand_made()
    deaths = death_causes(header, arrays)
    assert {a: (d.tick, d.cause, d.killer) for a, d in deaths.items()} == {
        1: (2, "starved", 0), 2: (2, "dehydrated", 0), 3: (3, "starved_and_dehydrated", 0),
        4: (1, "npc", -7), 5: (3, "player", 2), 6: (2, "other", 0),
    }
    teams = analyse(header, arrays)
    assert [t.alive.tolist() for t in teams] == [[3, 3, 1, 0], [3, 2, 1, 0]]
    assert teams[0].visits[2, 3] == 7 and teams[0].visits.sum() == 7


def _book(pairs) -> Analytics:
    book = Analytics()
    for result, data in pairs:
        header, arrays = read(data)
        players = {t.slot: t.policy_id for t in result.teams}
        assert book.add(result.match_id, header, arrays, players, map_id=result.map_id, horizon=result.horizon)
    return book


def _same(a: Analytics, b: Analytics) -> None:
    assert sorted(a.players) == sorted(b.players) and a.analysed == b.analysed and a.skipped == b.skipped
    for name, p in a.players.items():
        q = b.players[name]
        assert (p.visits == q.visits).all() and p.deaths == q.deaths and p.matches == q.matches and p.maps == q.maps
        for key in ("alive_sum", "alive_count", "field_sum", "field_count"):
            assert getattr(p, key).tolist() == getattr(q, key).tolist(), key
        assert (p.team_frames, p.teams) == (q.team_frames, q.teams)


def test_accumulator_sums_match_the_records_and_round_trips(matches):
    book = _book(matches)
    elite = book.players["builtin:elite"]
    records = [t for result, _ in matches for t in result.teams if t.policy_id == "builtin:elite"]
    assert elite.teams == len(records) and sum(elite.deaths.values()) == sum(t.deaths for t in records)
    assert set(elite.deaths) == set(CAUSES)
    # alive over ticks: frame 0 has all 8 of every team; the mean is over its teams
    assert elite.alive_mean()[0] == 8 and elite.alive_count[0] == len(records)
    last = matches[0][0].ticks
    assert elite.alive_sum[last] == sum(t.alive for t in matches[0][0].teams if t.policy_id == "builtin:elite")
    assert elite.field_count[0] == 12  # the other 12 teams of its one match with elite
    assert int(elite.visits.sum()) == int(elite.alive_sum.sum())  # member-frames, both ways
    _same(book, Analytics.from_bytes(book.to_bytes()))
    with pytest.raises(ValueError, match="not saved analytics"):
        Analytics.from_bytes(b"garbage")


def test_incremental_equals_batch(matches):
    one = _book(matches[:1])
    again = Analytics.from_bytes(one.to_bytes())  # a restart in between
    result, data = matches[1]
    header, arrays = read(data)
    assert again.add(result.match_id, header, arrays, {t.slot: t.policy_id for t in result.teams}, map_id=result.map_id)
    assert not again.add(result.match_id, header, arrays, {t.slot: t.policy_id for t in result.teams})  # once only
    _same(again, _book(matches))


def test_the_keeper_reads_only_new_replays_and_skips_damaged_ones(tmp_path, matches):
    store = HistoryStore(tmp_path / "history")
    (first, first_data), (second, second_data) = matches
    store.record(first, replay=first_data)
    store.flush()  # the standings, and so the analytics, follow the shards
    data = StandingsRefresher(store, bootstrap=0, mle_every_s=0, analytics=AnalyticsKeeper(store, cache=tmp_path / "cache"))
    data.refresh()
    assert data.analytics.reads == 1
    data.refresh()
    assert data.analytics.reads == 1  # nothing new: nothing read
    store.record(second, replay=second_data)
    broken = type(first)(**{**first.__dict__, "match_id": "broken0000000000000"})
    store.record(broken, replay=gzip.compress(b"NMRP not a replay"))
    store.flush()
    data.refresh()
    assert data.analytics.reads == 3  # the two new ones only
    assert "damaged" in data.analytics.book.skipped["broken0000000000000"]
    assert store.replay_path("broken0000000000000") is not None  # left for the viewer's checked read to quarantine
    data.refresh()
    assert data.analytics.reads == 3  # a skipped replay is not read again
    assert sorted(data.analytics.book.analysed) == sorted([first.match_id, second.match_id])
    # a restart loads the saved accumulator and reads nothing again
    restarted = AnalyticsKeeper(store, cache=tmp_path / "cache")
    rows = with_players(store.table().to_pandas())
    assert restarted.update(rows) == 0 and restarted.reads == 0
    _same(restarted.book, data.analytics.book)
    # the API's answer for one player
    answer = analytics_json(restarted, rows, "builtin:elite")
    assert set(answer) >= {"player", "matches", "visits", "deaths", "alive", "tasks", "trajectories"}
    assert answer["matches"] == [first.match_id]
    assert answer["visits"]["shape"] == list(read(first_data)[1]["map"].shape)
    assert sum(answer["deaths"].values()) == sum(t.deaths for t in first.teams if t.policy_id == "builtin:elite")
    assert answer["trajectories"]["match_id"] == first.match_id and len(answer["trajectories"]["members"]) == 32


def test_a_replay_of_another_match_is_skipped():
    header, arrays = _hand_made("other")
    book = Analytics()
    assert not book.add("hand", header, arrays, {0: "a", 1: "b"})
    assert "is of match 'other'" in book.skipped["hand"] and not book.players
    header, arrays = _hand_made("hand")
    assert not book.add("hand", header, arrays, {0: "a", 1: "b"})  # already named as skipped: not retried
    fresh = Analytics()
    assert not fresh.add("hand", header, arrays, {0: "a"}) and "no team in slots [1]" in fresh.skipped["hand"]


def test_task_profile_is_against_the_teams_met(matches):
    import pandas as pd

    from arena.schema import rows

    table = with_players(pd.DataFrame([r for result, _ in matches for r in rows(result)]))
    profile = task_profile(table, "builtin:elite")
    elite = [t for t in matches[0][0].teams if t.policy_id == "builtin:elite"]
    others = [t for t in matches[0][0].teams if t.policy_id != "builtin:elite"]
    for task in ("travel", "forage", "equipment", "eliminate"):
        assert profile["policy"][task] == pytest.approx(np.mean([t.tasks[task].points for t in elite]), abs=1e-3)
        assert profile["field"][task] == pytest.approx(np.mean([t.tasks[task].points for t in others]), abs=1e-3)


def test_each_update_reads_only_the_rows_after_what_it_has_handled(tmp_path, monkeypatch):
    """A restored history of many matches without replays: the keeper marks them without a
    read, `scan_per_update` at a time, taking the rows a window at a time; once through, an
    update looks at no old match again (its cost follows the new rows, not the history's
    size); rows read anew start it over."""
    from arena.schema import rows as team_rows
    from arena.simulation import Population, random_history
    from leaderboard import analytics

    monkeypatch.setattr(analytics, "WINDOW_MATCHES", 5)
    matches = random_history(Population.random(20, seed=4), 30, seed=4)
    frame = with_players(pd.DataFrame([r for m in matches for r in team_rows(m)]))
    store = HistoryStore(tmp_path / "history")
    keeper = AnalyticsKeeper(store, per_update=2, scan_per_update=8)
    asked: list[str] = []
    knows = keeper.book.knows
    keeper.book.knows = lambda m: (asked.append(m), knows(m))[1]  # type: ignore[method-assign]
    read = store.replay_bytes
    store.replay_bytes = lambda *a, **k: pytest.fail("a match without a replay was read")  # type: ignore[method-assign]
    rounds = 0
    looked: list[int] = []
    while True:
        asked.clear()
        keeper.update(frame)
        looked.append(len(set(asked)))
        rounds += 1
        if not keeper.backlog:
            break
    assert rounds == 4 and len(keeper.book.skipped) == 30  # 8 + 8 + 8 + 6, each without a replay
    assert set(keeper.book.skipped.values()) == {analytics.NO_REPLAY}
    assert max(looked) <= 8 + 5, looked  # up to the window that holds the eighth, never the whole chunk
    asked.clear()
    assert keeper.update(frame) == 0 and asked == []  # nothing after the cursor: no match looked at
    store.replay_bytes = read  # type: ignore[method-assign]
    more = random_history(Population.random(20, seed=5), 2, seed=5)
    more = [type(m)(**{**m.__dict__, "match_id": f"new{k:017d}"}) for k, m in enumerate(more)]
    grown = pd.concat([frame, with_players(pd.DataFrame([r for m in more for r in team_rows(m)]))], ignore_index=True)
    keeper.update(grown)
    assert sorted(set(asked)) == sorted(m.match_id for m in more) and len(keeper.book.skipped) == 32


def test_matches_with_a_replay_are_read_and_the_rest_marked_without_a_read(tmp_path, matches):
    """Among matches without replays, those with one are read, `per_update` an update and in
    their order, whatever lies between them; the others are marked without opening a file."""
    store = HistoryStore(tmp_path / "history")
    (first, first_data), (second, second_data) = matches
    def at(match, minute: int, match_id: str | None = None):  # the history's rows are in the order of their start
        return type(match)(**{**match.__dict__, "match_id": match_id or match.match_id,
                              "started_at": f"2026-12-01T10:{minute:02d}:00+00:00"})

    for k in range(12):
        store.record(at(first, k + (k >= 5) + (k >= 10), f"bare{k:016d}"))
    store.record(at(first, 5), replay=first_data)
    store.record(at(second, 11), replay=second_data)
    store.flush()
    everyone = [(m, "2026-12-01T10:00:00+00:00") for m in (first.match_id, second.match_id, "bare0000000000000000")]
    assert store.replays_among(everyone) == {first.match_id, second.match_id}  # loose
    store.compact()
    assert store.replay_path(first.match_id) is None and store.has_replay(first.match_id)  # in its day's bundle
    assert store.replays_among(everyone) == {first.match_id, second.match_id}
    assert store.replays_among([(first.match_id, "")]) == {first.match_id}  # no day: every bundle
    rows = with_players(store.table().to_pandas())
    keeper = AnalyticsKeeper(store, per_update=1)
    opened: list[str] = []
    read = store.replay_bytes
    store.replay_bytes = lambda m, **k: (opened.append(m), read(m, **k))[1]  # type: ignore[method-assign]
    assert keeper.update(rows) == 1 and opened == [first.match_id]
    assert len(keeper.book.skipped) == 10 and keeper.backlog  # up to the second, which waits for the next update
    assert keeper.update(rows) == 1 and opened == [first.match_id, second.match_id]
    assert sorted(keeper.book.analysed) == sorted([first.match_id, second.match_id]) and len(keeper.book.skipped) == 12
    assert keeper.update(rows) == 0 and not keeper.backlog


def test_a_hub_that_cannot_be_listed_marks_no_match(tmp_path, matches, caplog):
    """Which matches have a replay on the Hub cannot be read: nothing is marked as without one
    (the next update asks again), and the log says so once."""
    from history.store import HistoryReader

    class Away:
        def has(self, kind, match_id, *, started_at):
            raise ConnectionError("the Hub is unreachable")

    (first, _), _ = matches
    store = HistoryStore(tmp_path / "history")
    store.record(first)
    store.flush()
    rows = with_players(store.table().to_pandas())
    keeper = AnalyticsKeeper(HistoryReader(tmp_path / "history", remote=Away()))
    for _ in range(3):
        assert keeper.update(rows) == 0
    assert keeper.book.skipped == {} and keeper.book.analysed == set()
    assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1
    assert "the Hub is unreachable" in caplog.records[0].message
