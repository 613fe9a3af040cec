"""The packages' imports show the one-way flow: Hub -> matchmaking -> history -> leaderboard
-> model cards (results published back to the submissions' repos, after the standings).

Checked two ways: statically (every import of every module, top-level or inside a
function) and by running the UI with nmmo made unimportable.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: What each package may import besides the standard library.
ALLOWED = {
    "arena": {"arena", "numpy", "scipy", "trueskill", "numba"},  # numba: the compiled rating loops (arena/kernels.py)
    "history": {"arena", "history", "pyarrow", "huggingface_hub"},
    "leaderboard": {"arena", "history", "leaderboard", "gradio", "pandas", "numpy", "plotly"},  # plotly: the Analytics figures (gr.Plot)
    "modelcards": {"arena", "history", "leaderboard", "modelcards", "huggingface_hub", "yaml"},
    "matchmaking": None,  # anything but what comes after it
}

#: Packages the matchmaker must never import: they come after it.
DOWNSTREAM_OF_MATCHMAKING = {"leaderboard", "modelcards"}


def imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"__future__"}


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_each_package_imports_only_what_comes_before_it(package):
    for path in sorted((ROOT / package).rglob("*.py")):
        found = imports(path)
        if ALLOWED[package] is None:
            assert not found & DOWNSTREAM_OF_MATCHMAKING, f"{path.relative_to(ROOT)} imports {sorted(found & DOWNSTREAM_OF_MATCHMAKING)}"
        else:
            extra = found - ALLOWED[package]
            assert not extra, f"{path.relative_to(ROOT)} imports {sorted(extra)}"


BLOCKER = """
import sys
class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {BLOCKED}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked by the test)")
        return None
sys.meta_path.insert(0, Blocked())
"""


def run_blocked(blocked: set[str], code: str) -> subprocess.CompletedProcess:
    script = BLOCKER.format(BLOCKED=sorted(blocked)) + code
    return subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=180)


def test_the_whole_ui_starts_without_nmmo(tmp_path):
    done = run_blocked({"nmmo", "scripted", "matchmaking"}, f"""
from pathlib import Path
from history.store import HistoryStore
from history.statuses import StatusLog
from leaderboard.pages import build
from leaderboard.refresher import StandingsRefresher
store = HistoryStore(Path({str(tmp_path)!r}) / "history")
refresher = StandingsRefresher(store, statuses=StatusLog(Path({str(tmp_path)!r}) / "s.jsonl").states, bootstrap=0)
refresher.refresh()
demo = build(refresher)
print("built", type(demo).__name__, "nmmo" in sys.modules)
""")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("built Blocks False")


def test_the_shared_core_needs_neither_engine_nor_ui_nor_hub():
    done = run_blocked({"nmmo", "gradio", "pyarrow", "huggingface_hub", "pandas", "matchmaking", "history", "leaderboard"}, """
import arena.lifecycle, arena.ratings, arena.replay, arena.rules, arena.schema, arena.scoring, arena.settings, arena.simulation
print("ok")
""")
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_readme_layout_names_every_module():
    readme = (ROOT / "README.md").read_text()
    layout = readme[readme.index("## Layout"):]
    for package in ("arena", "history", "leaderboard", "matchmaking", "modelcards"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name == "__init__.py":
                continue
            relative = path.relative_to(ROOT).as_posix()
            assert f"`{relative}`" in layout or f"`{path.name}`" in layout, f"{relative} is missing from the README's layout"


def test_the_readme_lists_every_setting():
    from dataclasses import fields

    from arena.settings import ArenaSettings

    readme = (ROOT / "README.md").read_text()
    for f in fields(ArenaSettings):
        assert f"| `{f.metadata['env']}` |" in readme, f"{f.metadata['env']} is missing from the README's configuration table"
