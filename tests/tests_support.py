"""Paths and helpers shared by the tests (importable; fixtures live in conftest.py)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from arena import PROJECT_ROOT
from localhub.process import HubProcess

TESTS = Path(__file__).resolve().parent
POLICIES = TESTS / "policies"
EXAMPLES = TESTS.parent / "examples" / "policies"
#: A newcomer's own policy, written from the docs (the benchmarks push it too): like no other entry.
NEWCOMER = TESTS.parent / "bench" / "policies" / "newcomer"


def policy_dir(name: str) -> Path:
    """Folder of one of the adversarial test policies under tests/policies."""
    return POLICIES / name


def patient(config):
    """`config` (a `MatchConfig`) with time limits no tick reaches, however loaded the machine:
    for tests that compare two plays of one game. A late answer is dropped by design, and then
    the games differ; the limits themselves are tested in `test_match.py` and `test_sandbox.py`."""
    from dataclasses import replace

    return replace(config, step_timeout_s=60.0, time_bank_s=0.0)


def push_policy(api, repo_id: str, folder: Path | None, *, tags=("nmmo-arena",), extra: dict[str, bytes] | None = None, name: str = "") -> str:
    """Push a policy folder (plus extra files) as a tagged model repo; return the commit sha."""
    from matchmaking.hub.pushing import push_submission, submission_card

    return push_submission(api, repo_id, folder=folder, files=extra, card=submission_card(tags, name or repo_id.split("/")[1]))


def record_lifecycle(statuses, repo_id: str, revision: str, status, reason: str = "", **details):
    """Record a revision's way to `status` along the shortest path the lifecycle allows
    (fixtures need revisions in every status, and the status log refuses shortcuts)."""
    from collections import deque

    from arena.lifecycle import TRANSITIONS

    previous = {None: None}
    queue = deque([None])
    while queue:
        current = queue.popleft()
        for nxt in sorted(TRANSITIONS[current], key=lambda s: s.value):
            if nxt not in previous:
                previous[nxt] = current
                queue.append(nxt)
    path = []
    step = status
    while step is not None:
        path.append(step)
        step = previous[step]
    from arena.revision import Revision

    for step in reversed(path[1:]):
        statuses.record(Revision(repo_id, revision), step, "")
    return statuses.record(Revision(repo_id, revision), status, reason, **details)


def fault_of(result, name: str):
    """The team of local policy `name` in a match, and its faults as one line of
    `tick:KIND:message` entries (what the sandbox tests read)."""
    team = next(t for t in result.teams if t.policy_id == f"local:{name}")
    return team, " / ".join(f"{f.tick}:{f.kind.value}:{f.message}" for f in team.faults)


# -- browser tests (Debian's Chromium through Playwright; never a downloaded browser) -----
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: How long a browser test waits for what a page should show: a page on a busy machine (two
#: busy loops beside the suite, Chromium starved) once took 15 s to filter a table. A bound
#: for the wait, not a measure: a test that times the page measures it itself.
UI_WAIT_MS = 60_000

BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
#: Where browser tests keep their screenshots (test artifacts).
SCREENSHOTS = TESTS.parent / ".cache" / "screenshots"


def free_port() -> int:
    """A TCP port free on this machine now, for an app under test."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_app(data, **build_kwargs) -> tuple:
    """The Space's pages over `data` (a `StandingsRefresher`), served on a free local port
    with the Space's CSS, for browser tests: (the Gradio app, its URL)."""
    from leaderboard.pages import build, launch_options

    demo = build(data, **build_kwargs)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_options(demo))
    return demo, f"http://127.0.0.1:{port}/"


#: `python -m localhub` in its own process (see `localhub.process`).
ServedHub = HubProcess


def hub_dataset_files(api, repo_id: str, folder: str) -> dict[str, bytes]:
    """Every file of a Hub dataset under `folder` (path -> bytes), read over HTTP."""
    from huggingface_hub.errors import EntryNotFoundError

    try:
        paths = [f.path for f in api.list_repo_tree(repo_id, path_in_repo=folder, recursive=True, repo_type="dataset")
                 if hasattr(f, "blob_id")]
    except EntryNotFoundError:
        return {}
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        for path in paths:
            out[path] = Path(api.hf_hub_download(repo_id, path, repo_type="dataset", cache_dir=cache)).read_bytes()
    return out


def hub_match_ids_by_shard(api, repo_id: str) -> dict[str, list[str]]:
    """Each shard of a Hub dataset and the match ids it holds."""
    import io

    import pyarrow.parquet as pq

    return {path: sorted(set(pq.read_table(io.BytesIO(data), columns=["match_id"]).column("match_id").to_pylist()))
            for path, data in hub_dataset_files(api, repo_id, "data").items() if path.endswith(".parquet")}


def hub_status_events(api, repo_id: str) -> list[str]:
    """Every status event line in every writer's status file of a Hub dataset, canonical JSON."""
    import json

    events = []
    for path, data in hub_dataset_files(api, repo_id, "submissions").items():
        if path.endswith(".jsonl") and ".damaged" not in path:
            events += [json.dumps(json.loads(line), sort_keys=True) for line in data.decode().splitlines() if line.strip()]
    return events


def unprivileged(command: list[str], *, uid: int = 65534) -> list[str]:
    """`command` as an ordinary user (`uid`, no groups), as a Space runs its app.

    Where this machine keeps Python under a folder other users may not enter (pyenv under
    /root, mode 0700), the command runs in a private mount namespace in which that folder
    is a tmpfs open to passing through (0711) with Python bound back into it: the layout of
    a Space's image, whose interpreter every user can run. Needs root (to switch users)."""
    from matchmaking.sandbox.confine import closed_to_others

    switch = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
    closed = closed_to_others([Path(sys.base_prefix), Path(sys.prefix), PROJECT_ROOT])
    if not closed:
        return switch + command
    return open_interpreter(switch + command)


def open_interpreter(command: list[str]) -> list[str]:
    """`command` in a private mount namespace where the folder that closes Python to other
    users (e.g. /root) is replaced by a tmpfs of mode 0711 holding only Python, bound back."""
    from matchmaking.sandbox.confine import closed_to_others

    closed = Path(closed_to_others([Path(sys.base_prefix), Path(sys.prefix), PROJECT_ROOT]).split(" (mode")[0])
    keep = [p for p in (Path(sys.base_prefix), Path(sys.prefix), PROJECT_ROOT) if closed in p.parents]
    tops = sorted({closed / p.relative_to(closed).parts[0] for p in keep})
    stash = [f"/tmp/.nmmo-arena-open-{i}" for i in range(len(tops))]
    lines = ["set -e"]
    for top, hold in zip(tops, stash, strict=True):
        lines += [f"mkdir -p {hold}", f"mount --bind {top} {hold}"]
    lines.append(f"mount -t tmpfs -o mode=0711 tmpfs {closed}")
    for top, hold in zip(tops, stash, strict=True):
        lines += [f"mkdir -p {top}", f"mount --bind {hold} {top}"]
    lines.append('exec "$@"')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(lines), "sh", *command]
