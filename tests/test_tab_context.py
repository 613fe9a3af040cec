"""What the tabs keep between events (`leaderboard.tabs.context.TabContext.kept`): one build
per state and arguments, for the last few arguments asked for."""

from __future__ import annotations

import numpy as np

from arena.settings import ArenaSettings
from arena.simulation import Population, play
from history.store import HistoryStore
from leaderboard.refresher import StandingsRefresher
from leaderboard.tabs.context import TabContext


def test_a_kept_value_is_built_once_per_state_for_the_last_slots_asked(tmp_path):
    store = HistoryStore(tmp_path / "history")
    data = StandingsRefresher(store, hub_url="http://hub.example", bootstrap=0)
    data.refresh()
    page = TabContext(data, ArenaSettings(data_dir=tmp_path / "data"), lambda: None)
    built: list[str] = []

    def page_of(player: str) -> dict:
        return page.kept("policy", lambda: built.append(player) or {"player": player}, player, slots=2)

    first = page_of("a")
    assert page_of("a") is first and built == ["a"]  # kept: the same object
    page_of("b")
    page_of("a")  # still kept, and now the most recent
    page_of("c")  # two slots: "b", the least recent, goes
    assert built == ["a", "b", "c"]
    page_of("a")
    assert built == ["a", "b", "c"]
    page_of("b")
    assert built == ["a", "b", "c", "b"]
    assert page.kept("other", lambda: "x") == "x"  # each name its own slots
    crowd = Population.random(16, seed=1)
    store.record(play(list(crowd.ids), list(crowd.skills), rng=np.random.default_rng(0), index=0))
    data.refresh()  # a new state: built again
    assert page_of("b") is not None and built[-1] == "b" and len(built) == 5
