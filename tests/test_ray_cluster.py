"""The Arena on a real multi-node Ray cluster: a head and two worker nodes, each a separate
`ray start` process on this machine (`matchmaking.service.local_cluster`).

How a worker node is kept apart from the Space: its own **mount and PID namespaces**. In
its mount namespace the machine's `/tmp` (this test's data folder, the Space's submission
downloads, its map cache) and the project's checkout are covered by empty tmpfs mounts;
only the Python environment is mounted back, read-only. So a worker node gets the Arena's
code only as Ray ships it (the job's runtime environment) and a submission only from the
Hub; and killing its PID namespace's first process loses the node whole, mid-match.

The Space runs as its own process (`tests/scripts/matchmaker_forever.py`) with
`NMMO_ARENA_RAY=ray://...`, as an operator would start it; the head has no CPU, so every
match runs on a worker node.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from huggingface_hub import HfApi

from arena import PROJECT_ROOT
from history.store import HistoryStore
from tests_support import POLICIES, TESTS, push_policy

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.xdist_group("ray")]

pytest.importorskip("ray")

@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from matchmaking.service.local_cluster import LocalCluster

    c = LocalCluster(tmp_path_factory.mktemp("cluster"))
    try:
        c.start_head()
        c.add_worker(cpus=1)
        c.add_worker(cpus=1)
        yield c
    finally:
        c.stop()


#: Ticks of the Space's matches here (`matchmaker_forever.py`'s argument) ...
HORIZON = 24
#: ... and the latest reported tick at which a match counts as in the middle: reports come
#: about once a second (`matchmaking.service.live`), so a match shown at tick 8 may be some ticks
#: further on, with more than a second of play still left (the probe sleeps 0.1 s a tick):
#: it cannot finish between being seen and its node's loss (one seen near its end did, and
#: was recorded before the kill).
MIDDLE = HORIZON // 3


def in_flight(data: Path) -> dict[str, str]:
    """The matches the Space shows as playing now ("Now playing"), in their middle: match id
    -> the node playing it."""
    from arena.activity import LiveMatch

    try:
        shown = [LiveMatch.from_dict(m) for m in json.loads((data / "live.json").read_text())]
    except (OSError, ValueError):
        return {}
    return {m.match_id: m.node for m in shown if 1 <= m.tick <= MIDDLE}


def test_the_arena_plays_on_worker_nodes_and_survives_losing_one_mid_match(cluster, local_hub, tmp_path):
    api = HfApi(endpoint=local_hub.endpoint, token="test-token")
    probe = "nina/node-probe"
    sha = push_policy(api, probe, POLICIES / "node_probe")
    data = tmp_path / "data"
    env = {**os.environ, **cluster.driver_env(), "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)])}
    script = TESTS / "scripts" / "matchmaker_forever.py"
    space = subprocess.Popen([sys.executable, str(script), str(data), str(HORIZON), local_hub.endpoint, cluster.client_address],
                             stdout=subprocess.PIPE, stderr=(tmp_path / "space.log").open("w"), text=True, env=env,
                             start_new_session=True)
    recorded: list[str] = []
    threading.Thread(target=lambda: recorded.extend(line.strip() for line in space.stdout), daemon=True).start()
    try:
        deadline = time.monotonic() + 240
        while not recorded and time.monotonic() < deadline:
            time.sleep(0.5)
        assert recorded, "no match was recorded in 240 s; the Space's log ends:\n" + \
            (tmp_path / "space.log").read_text()[-3000:]
        # every match so far ran on a worker node, from the node's own checked fetch of the commit
        fetched = [w for w in cluster.workers if
                   w.path(f"/tmp/node/cache/submissions/{probe}/{sha}/.checked").is_file()]
        assert fetched
        for w in cluster.workers:  # and no node sees the Space's data or the project's checkout
            assert not w.path(str(data)).exists() and not w.path(str(PROJECT_ROOT / "arena")).exists()
        # lose a node in the middle of a match, as the Space's "Now playing" shows it (the
        # nodes report to the cluster's board, `matchmaking.service.live.ClusterBoard`)
        victim, lost = None, set()
        while not lost and time.monotonic() < deadline:
            playing = in_flight(data)
            victim = next((w for w in cluster.workers if w.alive and w.node_id in playing.values()), None)
            lost = {m for m, node in playing.items() if victim and node == victim.node_id}
            time.sleep(0.1)
        assert lost, "no match was shown in flight on a worker node"
        victim.kill()  # the other node plays the lost match again
        assert not lost & set(recorded)
        while not lost <= set(recorded) and time.monotonic() < deadline + 240:
            time.sleep(0.5)
    finally:
        os.killpg(space.pid, 9)
        space.wait()
    assert lost <= set(recorded), "a match lost with its node was not played again"
    assert len(recorded) == len(set(recorded))
    store = HistoryStore(data / "history")
    table = store.table()
    played = [m for m, track in zip(table.column("match_id").to_pylist(), table.column("track").to_pylist())
              if track != "validation"]  # the validation match is the Space's own, never a node's
    per_match = Counter(played)
    assert set(per_match) == set(recorded) and set(per_match.values()) == {16}  # nothing lost, nothing doubled
    # the sandboxes on the nodes are confined as on the Space's machine
    for match_id in recorded:
        (team,) = [t for t in store.logs(match_id) if t.policy_id == probe]
        probes = [line.text for line in team.lines if line.text.startswith("probe ")]
        assert len(probes) == 6 and not any(p.endswith("reachable") for p in probes), probes
        assert "probe RAY_AUTH_TOKEN: absent" in probes
    # every worker node ran its own isolation self-test before it played a submission
    said = (tmp_path / "space.log").read_text()
    nodes = {line.split("Ray node ")[1].split(":")[0] for line in said.splitlines() if "Ray node " in line}
    # (the killed node's verdict is logged with its first finished match: it may have had none)
    assert nodes and nodes >= {w.node_id[:12] for w in fetched if w is not victim}, said[-2000:]
    assert "Isolation holds (files held, network held, signals held, processes held" in said
    # and a match played on the cluster replays identically on this machine
    out = subprocess.run([sys.executable, "-m", "matchmaking.rerun", recorded[-1], "--data", str(data), "--json"],
                         env={**env, "NMMO_ARENA_HUB": local_hub.endpoint}, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and '"identical": true' in out.stdout, out.stdout + out.stderr
