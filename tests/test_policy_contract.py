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
    assert "a policy may not import 'pandas'" in report.reason and "(at policy.py:1)" in report.reason
    assert "vendor a small pure-Python dependency" in report.reason
    assert all(name in report.reason for name in ("numpy", "torch", "onnxruntime", "nmmo", "standard library"))
    helper = validated(policy(tmp_path, "helper", "import helper\nOK = 1\n", **{"helper.py": "import scipy\n"}))
    assert not helper.ok and "may not import 'scipy'" in helper.reason and "(at helper.py:1)" in helper.reason


def test_a_fallback_for_a_missing_package_still_works(tmp_path):
    """A refused import is a missing module: `except ImportError` takes the fallback."""
    head = "try:\n    import pandas\n    OK = 'pandas'\nexcept ImportError:\n    OK = 'fallback'\n"
    report = validated(policy(tmp_path, "fallback", head))
    assert report.ok, report.reason


@pytest.mark.parametrize("name", sorted(IMPORTABLE))
def test_each_listed_package_imports_in_the_sandbox(tmp_path, name):
    report = validated(policy(tmp_path, f"uses-{name}", f"import {name}\nOK = 1\n"))
    assert report.ok, report.reason


def test_the_docs_give_the_deadline_and_time_bank_the_runner_applies():
    from matchmaking.engine.config import MatchConfig

    config, text = MatchConfig(), " ".join(DOCS.read_text().split())
    assert f"due within {config.step_timeout_s * 1000:.0f} ms" in text
    assert f"time bank, {config.time_bank_s:.0f} s for the whole match" in text


def test_a_policy_slower_than_the_deadline_every_tick_is_refused_with_its_figure(tmp_path):
    """'Validation ... refuses a policy whose median tick, over a 1024-tick match, would
    overdraw the bank, with the figure': 0.7 s a tick is 0.1 s over, 102 s a match."""
    head = "import time\nOK = 1\n"
    slow = TEAM.replace("        return {", "        time.sleep(0.7)\n        return {")
    folder = tmp_path / "slow"
    folder.mkdir()
    (folder / "policy.py").write_text(head + slow)
    report = validated(folder)
    assert not report.ok and report.reason.startswith("TIMEOUT: act() took 7"), report.reason
    assert "600 ms deadline" in report.reason and "more than the 60 s time bank" in report.reason
    assert not report.faults  # each answer stood: the bank paid for it


def test_the_odd_slow_tick_is_paid_from_the_bank(tmp_path):
    """'the odd slow tick (a garbage collection, a first call that compiles) costs nothing'."""
    head = "import time\nOK = 1\n"
    once = TEAM.replace("        return {", "        if next(iter(observations.values()))['CurrentTick'] == 1:\n"
                                          "            time.sleep(1.5)\n        return {")
    folder = tmp_path / "once"
    folder.mkdir()
    (folder / "policy.py").write_text(head + once)
    report = validated(folder)
    assert report.ok and not report.faults, report.reason


def test_the_docs_observation_and_action_layout_is_what_nmmo_defines():
    """'Written out from nmmo 2.1.2's own definitions ... checked against them by a test'."""
    from matchmaking.engine.layout_reference import BEGIN, END, reference

    text = DOCS.read_text()
    assert text.split(BEGIN)[1].split(END)[0].strip() == reference().strip(), \
        "docs/participants.md's layout is out of date: run python -m matchmaking.engine.layout_reference --write"


def test_what_nmmo_keeps_in_code_is_as_the_layout_says():
    """The two facts nmmo writes in methods, not data: which skill harvests which material
    (and whether from an adjacent tile), and the NPC types' numbers."""
    import inspect

    from nmmo.entity import npc
    from nmmo.lib import material
    from nmmo.systems import skill

    from matchmaking.engine.layout_reference import HARVESTS

    for sk, matl, adjacent in HARVESTS:
        call = f"{'harvest_adjacent' if adjacent else 'harvest'}(material.{matl.__name__}"
        assert call in inspect.getsource(sk.update), (sk.__name__, call)
    skills = [cls for cls in vars(skill).values()
              if isinstance(cls, type) and cls.__module__ == skill.__name__ and "update" in vars(cls)]
    harvesting = {cls for cls in skills if "self.harvest" in inspect.getsource(cls.update)}
    assert harvesting == {sk for sk, _, _ in HARVESTS}, harvesting
    assert {m for _, m, _ in HARVESTS} == {m for m in material.All.materials if getattr(m, "deplete", None) or m is material.Water}
    for cls, number in ((npc.Passive, 1), (npc.PassiveAggressive, 2), (npc.Aggressive, 3)):
        assert f", {number})" in inspect.getsource(cls.__init__), cls
