"""The packages' imports show the one-way flow: Hub -> matchmaking -> history -> leaderboard
-> model cards (results published back to the submissions' repos, after the standings).

Checked two ways: statically (every import of every module, top-level or inside a
function) and by running the UI with nmmo made unimportable.
"""

from __future__ import annotations

import ast
import re
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


ROOMS = ("app", "arena", "bench", "history", "leaderboard", "localhub", "matchmaking", "modelcards", "training")


def _room(path: Path) -> str:
    parts = path.relative_to(ROOT).parts
    if parts[:2] == ("matchmaking", "sandbox"):
        return "matchmaking.sandbox"
    return parts[0] if len(parts) > 1 else path.stem


def _imported_rooms(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
        for name in names:
            if name.split(".")[0] in ROOMS:
                found.add("matchmaking.sandbox" if name.startswith("matchmaking.sandbox") else name.split(".")[0])
    return found


def test_the_architecture_pages_arrows_are_the_imports():
    """docs/architecture.md's arrows, checked both ways against every import."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    block = doc.split("```arrows\n")[1].split("```")[0]
    drawn = {(src.strip(), dst.strip()) for line in block.splitlines() if "->" in line
             for src, targets in [line.split("->")] for dst in targets.split(",")}
    found = set()
    for path in [ROOT / "app.py", *[p for room in ROOMS[1:] for p in (ROOT / room).rglob("*.py")]]:
        room = _room(path)
        found |= {(room, other) for other in _imported_rooms(path) if other != room}
    assert not found - drawn, f"imports with no arrow in docs/architecture.md: {sorted(found - drawn)}"
    assert not drawn - found, f"arrows in docs/architecture.md that no import uses: {sorted(drawn - found)}"


def test_the_architecture_page_names_every_module():
    layout = (ROOT / "docs" / "architecture.md").read_text()
    for package in ("arena", "history", "leaderboard", "matchmaking", "modelcards"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name == "__init__.py":
                continue
            relative = path.relative_to(ROOT).as_posix()
            assert f"`{relative}`" in layout or f"`{path.name}`" in layout, f"{relative} is missing from docs/architecture.md"


def test_the_readme_stays_short_and_the_docs_it_names_exist():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 15_000, "the README is for a five-minute read: move detail to docs/"
    for page in sorted(set(re.findall(r"\]\((docs/[a-z_-]+\.md)\)", readme))):
        assert (ROOT / page).is_file(), page
    assert {p.name for p in (ROOT / "docs").glob("*.md")} <= set(re.findall(r"docs/([a-z_-]+\.md)", readme))


def test_the_operators_page_lists_every_setting():
    from dataclasses import fields

    from arena.settings import ArenaSettings

    page = (ROOT / "docs" / "operators.md").read_text()
    for f in fields(ArenaSettings):
        assert f"| `{f.metadata['env']}` |" in page, f"{f.metadata['env']} is missing from docs/operators.md's configuration table"
