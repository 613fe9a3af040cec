"""What isolation costs: 16 sandboxed team processes against the same teams in-process.

    python -m bench.isolation_cost [--horizon 1024] [--repeats 2] [--seed 1]

1. **Full match**, PvE stage-1 built-ins (plus a Combat team), played twice in one run:
   every team in the match process (`in_process_host`), and every team in its own
   sandbox (`always_sandboxed_host`: 16 confined processes, observations through shared
   memory). Same seed and teams: the bench checks both play the identical game. Target:
   sandboxed at most 1.10x the in-process wall time.
2. **Per-tick transfer cost** of one team's 8 observations (real ones): the match's side
   (the env writes into the shared block; only scalars are copied) plus the team's side
   (one copy of each member's block), against pickling the dicts and unpickling them
   (what a plain pipe would do), per team and per tick of 16 teams.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time

from bench.match_speed import stage1_lineup
from matchmaking.engine import game
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.match import MatchSpec, run_match
from matchmaking.engine.observations import ObservationLayout
from matchmaking.sandbox.host import always_sandboxed_host, protect_process
from matchmaking.sandbox.protocol import ObservationReader, SharedBlock
from matchmaking.teams.factory import in_process_host


def transfer_cost(repeats: int = 300) -> dict[str, float]:
    """Microseconds to move one team's 8 observations: shared memory vs pickle.

    Shared memory is timed as the match uses it: the env writes the arrays straight into
    the block (`share_observation_arrays`), the match copies only what is not bound, and
    the team process copies each member's block once (`ObservationReader`).
    """
    config = MatchConfig()
    env = game.make_env(config, game.map_id_for_seed(1, config.map_pool))
    observations = game.reset_env(env, seed=1)
    agent_ids = game.team_agent_ids(config)[0]
    team = {m: observations[a] for m, a in enumerate(agent_ids)}
    layout = ObservationLayout.from_observation(team[0], config.team_size)
    block = SharedBlock.create(layout.total_bytes)
    try:
        views = layout.views(block.buf)
        for member, agent_id in enumerate(agent_ids):
            game.share_observation_arrays(env, agent_id, layout, views[member])
        env.step({})  # observations now live in the block
        team = {m: env.obs[a].to_gym() for m, a in enumerate(agent_ids)}
        reader = ObservationReader(layout, block.buf)
        started = time.perf_counter()
        for _ in range(repeats):
            for member, obs in team.items():
                layout.write(views[member], obs)
        write_us = (time.perf_counter() - started) / repeats * 1e6
        started = time.perf_counter()
        for _ in range(repeats):
            _ = {member: reader.read(member) for member in team}
        read_us = (time.perf_counter() - started) / repeats * 1e6
    finally:
        block.unlink()
    started = time.perf_counter()
    for _ in range(repeats):
        pickle.loads(pickle.dumps(team, protocol=pickle.HIGHEST_PROTOCOL))
    pickle_us = (time.perf_counter() - started) / repeats * 1e6
    shm_us = write_us + read_us
    return {
        "team_observation_kb": layout.total_bytes / 1024,
        "match_side_write_us_per_team": write_us,
        "team_side_read_us_per_team": read_us,
        "shared_memory_us_per_team": shm_us,
        "pickle_us_per_team": pickle_us,
        "shared_memory_ms_per_tick_16_teams": shm_us * 16 / 1000,
        "pickle_ms_per_tick_16_teams": pickle_us * 16 / 1000,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description="Cost of sandboxing every team.")
    parser.add_argument("--horizon", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    protect_process()

    spec = MatchSpec(seed=args.seed, policies=stage1_lineup(), config=MatchConfig(horizon=args.horizon))
    game.ensure_map(game.map_id_for_seed(spec.seed, spec.config.map_pool), spec.config)
    timings: dict[str, list[float]] = {"in_process": [], "sandboxed": []}
    results = {}
    for repeat in range(args.repeats):
        order = [("in_process", in_process_host), ("sandboxed", always_sandboxed_host)]
        for name, host in order if repeat % 2 == 0 else reversed(order):
            started = time.perf_counter()
            results[name] = run_match(spec, host_factory=host)
            timings[name].append(time.perf_counter() - started)
            print(f"  {name}: {timings[name][-1]:.1f} s", file=sys.stderr)
    same = results["in_process"].outcome()["teams"] == results["sandboxed"].outcome()["teams"]
    transfer = transfer_cost()
    figures = {
        "ticks": results["sandboxed"].ticks,
        "same_game": same,
        "in_process_s": round(min(timings["in_process"]), 2),
        "sandboxed_s": round(min(timings["sandboxed"]), 2),
        "sandboxed_over_in_process": round(min(timings["sandboxed"]) / min(timings["in_process"]), 3),
        **{k: round(v, 2) for k, v in transfer.items()},
        "shared_memory_over_pickle": round(transfer["shared_memory_us_per_team"] / transfer["pickle_us_per_team"], 3),
    }
    print(f"full match ({figures['ticks']} ticks, identical game: {same})")
    print(f"  all 16 teams in-process   {figures['in_process_s']:8.2f} s")
    print(f"  all 16 teams sandboxed    {figures['sandboxed_s']:8.2f} s   ratio {figures['sandboxed_over_in_process']:.3f}x (target <= 1.10)")
    print(f"transfer of one team's 8 observations ({figures['team_observation_kb']:.0f} KB)")
    print(f"  shared memory             {figures['shared_memory_us_per_team']:8.1f} us   ({figures['shared_memory_ms_per_tick_16_teams']:.2f} ms per tick of 16 teams;"
          f" {figures['match_side_write_us_per_team']:.0f} us in the match, {figures['team_side_read_us_per_team']:.0f} us in the team)")
    print(f"  pickle round trip         {figures['pickle_us_per_team']:8.1f} us   ({figures['pickle_ms_per_tick_16_teams']:.2f} ms per tick of 16 teams)")
    print(f"  shared memory / pickle    {figures['shared_memory_over_pickle']:8.3f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
