"""The contract in docs/participants.md ("Writing a policy") is exactly what the Arena
enforces: each of its rules is a test here, played through the validation match in the
sandbox as the Space plays it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from arena.policies import local
from matchmaking.teams.loading import IMPORTABLE
from tests_support import TESTS

DOCS = TESTS.parent / "docs" / "participants.md"

TEAM = '''
class Team:
    def __init__(self, team_id, env_config):
        self.ok = OK

    def act(self, observations):
        return {member: {"Move": {"Direction": 4}} for member in observations}
'''


def policy(tmp_path: Path, name: str, head: str, **files: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "policy.py").write_text(head + TEAM)
    for file, text in files.items():
        (folder / file).write_text(text)
    return folder


def validated(folder: Path):
    from matchmaking.service.validation import validate

    return validate(local(folder), ticks=4)


def test_the_docs_list_exactly_the_packages_a_policy_may_import():
    """'What a policy may import: the Python standard library, its own folder's modules, and
    what the Arena installs and preloads' (the table): the table is `IMPORTABLE`, with the
    versions installed."""
    from importlib.metadata import version

    text = DOCS.read_text()
    table = dict(re.findall(r"^  \| `(\w+)` \| ([^|]+) \|", text, flags=re.M))
    assert set(table) == set(IMPORTABLE) - {"scripted"}  # nmmo's row names its `scripted` baselines
    for package, listed in table.items():
        assert listed.strip() == version(package), (package, listed, version(package))


def test_the_standard_library_its_own_modules_and_the_installed_packages_validate(tmp_path):
    head = "import json, collections\nimport numpy as np\nimport helper\nfrom nmmo.lib import material\nOK = helper.VALUE\n"
    report = validated(policy(tmp_path, "fine", head, **{"helper.py": "import math\nVALUE = math.pi\n"}))
    assert report.ok, report.reason


def test_anything_else_fails_validation_saying_what_is_allowed(tmp_path):
    """'Nothing else is installed in the sandbox': pandas is installed for the Arena's own
    use, and a policy that imports it is refused all the same, in its own files only."""
    report = validated(policy(tmp_path, "pandas", "import pandas\nOK = 1\n"))
    assert not report.ok
    assert "policy.py imports 'pandas', which the Arena does not provide to policies" in report.reason
    assert all(name in report.reason for name in ("numpy", "torch", "onnxruntime", "nmmo", "standard library"))
    helper = validated(policy(tmp_path, "helper", "import helper\nOK = 1\n", **{"helper.py": "import scipy\n"}))
    assert not helper.ok and "helper.py imports 'scipy'" in helper.reason


def test_a_fallback_for_a_missing_package_still_works(tmp_path):
    """A refused import is a missing module: `except ImportError` takes the fallback."""
    head = "try:\n    import pandas\n    OK = 'pandas'\nexcept ImportError:\n    OK = 'fallback'\n"
    report = validated(policy(tmp_path, "fallback", head))
    assert report.ok, report.reason


@pytest.mark.parametrize("name", sorted(IMPORTABLE))
def test_each_listed_package_imports_in_the_sandbox(tmp_path, name):
    report = validated(policy(tmp_path, f"uses-{name}", f"import {name}\nOK = 1\n"))
    assert report.ok, report.reason
