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
    "arena": {"arena", "numpy", "scipy", "trueskill", "numba"},  # numba: the compiled rating loops (arena/kernels/)
    "history": {"arena", "history", "numpy", "pandas", "pyarrow", "huggingface_hub"},  # pandas: the read side (history/index/)
    "leaderboard": {"arena", "history", "leaderboard", "gradio", "pandas", "numpy", "plotly",  # plotly: the Analytics figures (gr.Plot)
                    "starlette",  # starlette: the gzip middleware of the app Gradio builds (`leaderboard.pages.launch_options`)
                    "orjson",  # orjson: an address's page saved as Gradio saves a deep link (`leaderboard.served`)
                    "markdown_it"},  # markdown_it: the PvP table's first rows drawn in the page's HTML (`leaderboard.served`)
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


#: The rooms inside `matchmaking/` (its own top level holds the command-line tools).
MATCHMAKING_ROOMS = ("engine", "teams", "sandbox", "hub", "service")


def _room_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "matchmaking" and len(parts) > 1 and parts[1] in MATCHMAKING_ROOMS:
        return f"matchmaking.{parts[1]}"
    return parts[0]


def _room(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return _room_of(".".join(parts)) if len(parts) > 1 else path.stem


def _imported_rooms(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
        if isinstance(node, ast.ImportFrom) and node.module in [f"matchmaking.{r}" for r in MATCHMAKING_ROOMS]:
            names = [node.module]  # `from matchmaking.engine import game`: the room itself
        elif isinstance(node, ast.ImportFrom) and node.module == "matchmaking":
            names = [f"matchmaking.{a.name}" for a in node.names]
        for name in names:
            if name.split(".")[0] in ROOMS:
                found.add(_room_of(name))
    return found


#: Imports that must never exist, whatever the page draws: (room, room it must not import, why).
NEVER = [
    ("matchmaking.engine", "matchmaking.teams", "the engine is told how to host a team (`HostFactory`), never which teams exist"),
    ("matchmaking.engine", "matchmaking.sandbox", "the engine never knows whether a team is confined"),
    ("matchmaking.teams", "matchmaking.sandbox", "a team is the same code in the match process and in a sandbox"),
    ("matchmaking.sandbox", "matchmaking.service", "isolation depends on no scheduling"),
    ("matchmaking.hub", "matchmaking.engine", "finding and fetching submissions plays no match"),
    *[(room, "matchmaking", "nothing but benchmarks and tests imports the command-line tools")
      for room in ("matchmaking.engine", "matchmaking.teams", "matchmaking.sandbox", "matchmaking.hub", "matchmaking.service")],
]


@pytest.mark.parametrize("room, forbidden, why", NEVER)
def test_rooms_never_import_what_comes_after_them(room, forbidden, why):
    offenders = sorted(path.relative_to(ROOT).as_posix() for path in ROOT.joinpath(*room.split(".")).rglob("*.py")
                       if forbidden in _imported_rooms(path))
    assert not offenders, f"{offenders} import {forbidden}: {why}"


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


def _private_imports(path: Path) -> list[str]:
    """`from room.module import _name`, and `module._name` on a module imported from a room."""
    tree = ast.parse(path.read_text())
    found, modules = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.split(".")[0] in ROOMS:
            found += [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            modules.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})
        elif isinstance(node, ast.Import):
            modules.update({a.asname: a.name for a in node.names if a.asname and a.name.split(".")[0] in ROOMS})
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.append(f"{modules[node.value.id]}.{node.attr}")
    return found


def test_no_module_imports_another_modules_private_names():
    """A leading underscore means "this module's own": a neighbour that needs it gets a public name."""
    offenders = {}
    for path in [ROOT / "app.py", *[p for room in ROOMS[1:] for p in (ROOT / room).rglob("*.py")]]:
        if found := _private_imports(path):
            offenders[path.relative_to(ROOT).as_posix()] = sorted(set(found))
    assert not offenders, f"private names imported across modules: {offenders}"


#: Builtin exceptions that are not errors of the Arena: control flow, signals and broken invariants.
NOT_ERRORS = {"KeyboardInterrupt", "SystemExit", "StopIteration", "GeneratorExit", "NotImplementedError",
              "AssertionError"}  # an invariant broken: a bug, never an error a caller handles


def test_every_error_the_arena_raises_is_an_arena_error():
    """`raise ValueError(...)` says nothing a caller can catch precisely: each error the Arena
    raises on purpose is a class under `arena.errors.ArenaError` (which also subclasses the
    nearest builtin, so broad handlers keep working)."""
    import builtins

    builtin_errors = {name for name, value in vars(builtins).items()
                      if isinstance(value, type) and issubclass(value, BaseException)} - NOT_ERRORS
    offenders = []
    for path in [ROOT / "app.py", *[p for room in ("arena", "history", "leaderboard", "localhub", "matchmaking", "modelcards")
                                    for p in (ROOT / room).rglob("*.py")]]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and node.exc is not None:
                called = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(called, ast.Name) and called.id in builtin_errors:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} raises {called.id}")
            elif (isinstance(node, ast.ClassDef) and node.name != "ArenaError"
                  and any(isinstance(b, ast.Name) and b.id in builtin_errors for b in node.bases)):
                if not any(isinstance(b, ast.Name) and (b.id == "ArenaError" or b.id.endswith("Error") and b.id not in builtin_errors)
                           for b in node.bases):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} class {node.name} is not under ArenaError")
    assert not offenders, "\n".join(offenders)


#: Where text may be split on "@" other than `arena/revision.py`: the `--against OWNER/NAME[@REV]`
#: argument names a repo at a commit *or a branch, or at nothing* (resolved on the Hub), not
#: a revision yet.
AT_SPLIT_ALLOWED = {"matchmaking/practice.py"}


def test_a_revisions_text_form_is_read_in_one_place():
    """`owner/name@sha` is `Revision.player` written and `Revision.parse` read: a module that
    splits a player name on "@" itself is a second, drifting definition of it."""
    offenders = []
    for path in [ROOT / "app.py", *[p for room in ROOMS[1:] for p in (ROOT / room).rglob("*.py")]]:
        relative = path.relative_to(ROOT).as_posix()
        if relative in AT_SPLIT_ALLOWED | {"arena/revision.py"}:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("split", "rsplit", "partition", "rpartition")
                    and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == "@"):
                offenders.append(f"{relative}:{node.lineno}")
    assert not offenders, f"player names split by hand (use arena.revision.Revision.parse): {offenders}"
