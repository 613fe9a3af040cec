"""Trouble with the Hub shows: a status line (endpoint, since when, pushes waiting) and one
log line per change of state, never a traceback per round."""

from __future__ import annotations

import logging
import re
import socket

from huggingface_hub import HfApi

from arena.settings import ArenaSettings
from localhub import LocalHub
from tests_support import EXAMPLES, push_policy


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_hub_is_reported_once_and_its_return_too(tmp_path, caplog):
    from matchmaking.service.space import Arena

    port = free_port()
    hub = LocalHub(tmp_path / "hub", port=port).start()
    push_policy(HfApi(endpoint=hub.endpoint, token="t"), "alice/w", EXAMPLES / "wanderer")
    hub.stop()
    settings = ArenaSettings(data_dir=tmp_path / "data", hub_endpoint=hub.endpoint, seed_examples=False, match_horizon=16)
    caplog.set_level(logging.INFO)
    arena = Arena.start(settings, schedule=False)
    try:
        m = arena.matchmaker
        assert m.sync() == 0  # no exception: the round reports and returns
        m.flush()  # the history push cannot start either
        line = arena.operator_lines()[0]
        assert f"Hub {hub.endpoint} (NMMO_ARENA_HUB): UNREACHABLE since" in line and "ConnectError" in line
        assert "2 files waiting to be pushed; no push yet" in line  # the dataset card and its eval.yaml
        unreachable = [r for r in caplog.records if "unreachable" in r.getMessage()]
        assert len(unreachable) == 1 and unreachable[0].exc_info is None  # one line, no traceback
        assert not [r for r in caplog.records if r.exc_info]

        back = LocalHub(tmp_path / "hub", port=port).start()  # the Hub returns on the same address
        try:
            assert arena.wait_restored(60)  # nothing is played before the Space has caught up with the dataset
            assert m.sync() == 1
            m.flush()
            assert arena.mirror.push_now()
            line = arena.operator_lines()[0]
            assert "reachable since" in line and "UNREACHABLE" not in line and "0 files waiting to be pushed" in line
            assert re.search(r"; last push at \d\d:\d\d:\d\d UTC: (nothing new|\d+ files)$", line), line
            assert len([r for r in caplog.records if "reachable again" in r.getMessage()]) == 1
        finally:
            arena.stop()
            back.stop()
    finally:
        arena.stop()
