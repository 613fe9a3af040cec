"""Paths and helpers shared by the tests (importable; fixtures live in conftest.py)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
POLICIES = TESTS / "policies"
EXAMPLES = TESTS.parent / "examples" / "policies"


def policy_dir(name: str) -> Path:
    """Folder of one of the adversarial test policies under tests/policies."""
    return POLICIES / name
