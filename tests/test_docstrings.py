"""Every example in the packages' docstrings runs, in `make check` and `make test`: none rots unseen.

The modules are found by their text (a `>>> ` line in a production package), so a new
example runs without being listed here, and only those modules are imported (not every
module of the packages, which would start nmmo, Gradio and Ray for nothing). Each example
runs for real: a match of built-in teams, an embedded Hub in a temporary folder. Only
those that need what no test has (the Hub on the network, a running Space, a replay's
arrays) say `# doctest: +SKIP`, and they are still found and parsed.
"""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: The production packages (what `pip install .` ships).
PACKAGES = ("arena", "history", "leaderboard", "localhub", "matchmaking", "modelcards")

EXAMPLE = re.compile(r"^\s*>>> ", re.MULTILINE)


def modules_with_examples() -> dict[str, int]:
    """Module name -> how many `>>> ` lines its source holds."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            count = len(EXAMPLE.findall(path.read_text(encoding="utf-8")))
            if count:
                found[".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")] = count
    return found


EXAMPLES = modules_with_examples()


def test_the_examples_are_found():
    assert len(EXAMPLES) >= 20 and "arena.scoring" in EXAMPLES and "modelcards.card" in EXAMPLES


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_docstring_example_runs(name, capsys):
    module = importlib.import_module(name)
    tests = doctest.DocTestFinder().find(module)
    found = sum(len(test.examples) for test in tests)
    assert found == EXAMPLES[name], (
        f"{name} has {EXAMPLES[name]} `>>> ` lines but doctest finds {found} examples: an example sits where doctest "
        "does not look (a nested function, a plain string, an object imported from elsewhere). Move it into the "
        "docstring of the module, or of one of its classes or functions.")
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in tests:
        runner.run(test)
    failed = runner.summarize(verbose=False).failed
    assert not failed, f"{failed} example(s) of {name} failed:\n{capsys.readouterr().out}"
