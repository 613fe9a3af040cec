"""The inside of a sandbox: the process that hosts one untrusted team.

Started by `matchmaking.sandbox.host` as `python -m matchmaking.sandbox.worker CTRL_IN CTRL_OUT`
with an empty environment. It reads its instructions, maps the team's shared observation
block, confines itself (`matchmaking.sandbox.confine`), and only then imports the policy. From then on it
answers one request per tick. Nothing here trusts the policy: every failure is reported as
a message, and anything the policy returns is turned into plain JSON before it leaves.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from matchmaking.engine.hosting import describe_exception
from matchmaking.engine.observations import ObservationLayout
from matchmaking.engine.readable import ARENA_CODE
from matchmaking.sandbox.confine import confine, limit_memory
from matchmaking.sandbox.protocol import (
    ObservationReader,
    ProtocolError,
    SharedBlock,
    receive_message,
    send_message,
    to_json_safe,
)
from matchmaking.teams.frameworks import pin_threads


def _build_team(init: dict[str, Any]) -> Any:
    from arena.policies import PolicyRef
    from arena.revision import Revision
    from matchmaking.teams.factory import team_factory

    path = init["policy_path"]
    ref = PolicyRef(Revision(init["policy_id"], init["revision"]), path=None if path is None else Path(path))
    team = team_factory(ref)(int(init["team_id"]), init["env_config"])
    reset = getattr(team, "reset", None)
    if callable(reset):
        reset()
    return team


def serve(ctrl_in: int, ctrl_out: int) -> int:
    init = receive_message(ctrl_in, timeout=None)
    if init is None or init.get("type") != "init":
        return 2
    limit = int(init["message_chars"])
    layout = ObservationLayout.from_dict(init["layout"])
    # map the shared block before dropping privileges: the mapping outlives the permission
    block = SharedBlock(init["shm"], layout.total_bytes, create=False)
    reader = ObservationReader(layout, block.buf)

    try:
        # the Arena's own code and nmmo are loaded before confinement and count as the
        # interpreter's: the memory limit is what the policy may add on top
        import matchmaking.teams.builtin  # noqa: F401
        import matchmaking.teams.factory  # noqa: F401

        limits = init["limits"]
        policy_path = init["policy_path"]
        confinement = confine(
            workdir=Path(limits["workdir"]),
            readable=[*ARENA_CODE, *([Path(policy_path)] if policy_path else [])],
            cpu_index=int(limits["cpu_index"]),
            cpu_count=int(limits["cpu_count"]),
            cpu_seconds=int(limits["cpu_seconds"]),
            max_file_mb=int(limits["max_file_mb"]),
            workdir_mb=int(limits["workdir_mb"]),
            policy=Path(policy_path) if policy_path else None,
        )
        if policy_path:  # as root the team is now another user: it reads its folder from there
            init = {**init, "policy_path": confinement.pop("policy folder")}
        limit_memory(int(limits["memory_limit_mb"]))
        team = _build_team(init)
        pin_threads()  # a framework the policy imported itself, unannounced, gets one thread too
    except BaseException as exc:  # noqa: BLE001 - reported to the runner, whatever it is
        memory = isinstance(exc, MemoryError) or isinstance(exc.__cause__, MemoryError)
        send_message(ctrl_out, {"type": "init_error", "kind": "MEMORY" if memory else "INIT", "message": describe_exception(exc, limit=limit)})
        return 1
    send_message(ctrl_out, {"type": "ready", "confinement": confinement})

    while True:
        try:
            request = receive_message(ctrl_in, timeout=None)
        except ProtocolError:
            return 0  # the match is gone
        if request is None or request.get("type") == "close":
            return 0
        tick = request["tick"]
        observations = {member: reader.read(member) for member in request["members"]}
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            actions = team.act(observations)
        except MemoryError as exc:
            reply = {"type": "error", "tick": tick, "kind": "MEMORY", "message": describe_exception(exc, limit=limit)}
        except BaseException as exc:  # noqa: BLE001 - SystemExit and friends included
            reply = {"type": "error", "tick": tick, "kind": "ERROR", "message": describe_exception(exc, limit=limit)}
        else:
            try:
                reply = {"type": "actions", "tick": tick, "actions": to_json_safe(actions)}
            except TypeError as exc:
                reply = {"type": "error", "tick": tick, "kind": "INVALID", "message": f"act() returned {exc}"[:limit]}
        reply["cpu_s"] = time.process_time() - cpu
        reply["wall_s"] = time.perf_counter() - wall
        send_message(ctrl_out, reply)


if __name__ == "__main__":
    sys.exit(serve(int(sys.argv[1]), int(sys.argv[2])))
