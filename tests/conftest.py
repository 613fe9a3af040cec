"""Shared fixtures."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def stage1_opponents():
    """The 15 built-in teams of PvE stage 1."""
    from arena.rules import stage_opponents
    from matchmaking.policy import builtin

    return [builtin(name) for name in stage_opponents(1)]


@pytest.fixture(scope="session")
def local_hub(tmp_path_factory):
    """The embedded local Hub on a free port, for tests that use the real client over HTTP."""
    from localhub import LocalHub

    hub = LocalHub(tmp_path_factory.mktemp("hub"), write_token="test-token").start()
    yield hub
    hub.stop()


@pytest.fixture()
def hub_api(local_hub):
    from huggingface_hub import HfApi

    return HfApi(endpoint=local_hub.endpoint, token="test-token")
