"""Shared fixtures."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def stage1_opponents():
    """The 15 built-in teams of PvE stage 1."""
    from matchmaking.policy import builtin
    from matchmaking.pve import stage_opponents

    return [builtin(name) for name in stage_opponents(1)]
