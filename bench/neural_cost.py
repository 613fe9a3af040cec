"""What a neural team costs in the sandbox: time per tick, start-up, memory.

    python -m bench.neural_cost [--policy examples/policies/apprentice-torch] [--ticks 200] [--pairs 3]

1. **Time per tick.** The same one-team game (the policy's 8 members, seed 1) is played
   with the team in the match's own process and in its sandbox, in alternating pairs; the
   time a tick costs the match is what the runner waits between asking the team and
   having its answer (for the sandbox: shared-memory observations, the pipe, the process
   switch). Both run PyTorch on one thread, as the Arena holds every team to one core.
   Target: sandboxed / in-process at most 1.10x (median over the pairs). The time `act()`
   itself took inside the sandbox is printed beside it, to tell compute from transport.
2. **Start-up.** A team's start in the sandbox (fork from the warm zygote, confinement,
   loading `policy.py` and its weights, until it says ready), against the same start
   plus importing NumPy, PyTorch and ONNX Runtime in a fresh process, which is what every
   team would pay if the zygote did not preload them. Target: at least 5x faster.
3. **Memory.** Each sandboxed team's resident memory, all of it and the part that is its
   own (anonymous memory beyond what it shared with the zygote when forked).

The last line is JSON: `tick_ms_in_process`, `tick_ms_sandboxed`, `tick_ratio`, `act_ms_in_sandbox`,
`start_s_preloaded`, `start_s_importing`, `start_speedup`, `rss_mb_per_team`,
`own_mb_per_team`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from arena import PROJECT_ROOT
from arena.policies import local
from matchmaking.engine.config import MatchConfig
from matchmaking.engine.hosting import TeamSlot
from matchmaking.engine.match import MatchSpec, run_match
from matchmaking.sandbox.host import SandboxedTeam, anonymous_rss_mb
from matchmaking.teams.factory import in_process_host

DEFAULT_POLICY = PROJECT_ROOT / "examples" / "policies" / "apprentice-torch"


class _Timed:
    """A host that records how long each tick's request-to-answer took."""

    def __init__(self, inner, ticks: list[float]):
        self.inner, self.ticks, self._asked = inner, ticks, 0.0

    def start(self):
        return self.inner.start()

    def request(self, tick, observations):
        self._asked = time.perf_counter()
        self.inner.request(tick, observations)

    def answer(self):
        answer = self.inner.answer()
        self.ticks.append(time.perf_counter() - self._asked)
        return answer

    def close(self):
        self.inner.close()

    def __getattr__(self, name):
        return getattr(self.inner, name)


def tick_ms(policy: Path, ticks: int, sandboxed: bool) -> tuple[float, float]:
    """Median ms per tick of the team, hosted in-process or in its sandbox, and (sandboxed)
    the median ms its act() took inside the sandbox."""
    times: list[float] = []
    hosts: list = []

    def host(ref, slot: TeamSlot):
        inner = SandboxedTeam(ref, slot) if sandboxed else in_process_host(ref, slot)
        hosts.append(inner)
        return _Timed(inner, times)

    spec = MatchSpec(seed=1, policies=(local(policy),), config=MatchConfig(num_teams=1, horizon=ticks))
    result = run_match(spec, host_factory=host)
    assert not result.teams[0].faults, result.teams[0].faults
    inside = getattr(hosts[0], "step_wall_s", [])
    act = statistics.median(inside[5:]) * 1000 if len(inside) > 5 else float("nan")
    return statistics.median(times[5:]) * 1000, act  # the first ticks warm caches up


def start_and_memory(policy: Path, ticks: int = 8) -> tuple[float, float, float]:
    """A sandboxed team's start in s (launch to ready, alone), and its resident and own
    memory in MB after `ticks` ticks of play."""
    found: dict[str, float] = {}

    class Measured(_Timed):
        def launch(self):
            self.began = time.perf_counter()
            self.inner.launch()

        def start(self):
            fault = self.inner.start()
            found["start"] = time.perf_counter() - self.began
            return fault

        def answer(self):
            answer = super().answer()
            with open(f"/proc/{self.inner.pid}/status") as f:
                status = dict(line.split(":", 1) for line in f)
            found["rss"] = int(status["VmRSS"].split()[0]) / 1024
            found["own"] = anonymous_rss_mb(self.inner.pid) - self.inner._baseline_mb
            return answer

    spec = MatchSpec(seed=2, policies=(local(policy),), config=MatchConfig(num_teams=1, horizon=ticks))
    result = run_match(spec, host_factory=lambda ref, slot: Measured(SandboxedTeam(ref, slot), []))
    assert not result.teams[0].faults, result.teams[0].faults
    return found["start"], found["rss"], found["own"]


def import_cost() -> float:
    """Seconds a fresh interpreter spends importing the frameworks a team would otherwise import."""
    code = "import time; t = time.perf_counter(); import numpy, torch, onnxruntime; print(time.perf_counter() - t)"
    runs = [float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout) for _ in range(3)]
    return statistics.median(runs)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", type=Path, default=DEFAULT_POLICY)
    parser.add_argument("--ticks", type=int, default=200)
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args(argv)

    import torch  # noqa: F401  (the in-process team gets the one thread a sandboxed team has)

    from matchmaking.teams.frameworks import pin_threads

    pin_threads()
    inside, sandboxed, acts = [], [], []
    for pair in range(args.pairs):
        order = (False, True) if pair % 2 == 0 else (True, False)
        for flag in order:
            tick, act = tick_ms(args.policy, args.ticks, flag)
            (sandboxed if flag else inside).append(tick)
            if flag:
                acts.append(act)
        print(f"pair {pair + 1}: in-process {inside[-1]:.2f} ms, sandboxed {sandboxed[-1]:.2f} ms per tick "
              f"(act() inside the sandbox {acts[-1]:.2f} ms)", flush=True)
    ratios = [s / i for s, i in zip(sandboxed, inside)]
    starts = [start_and_memory(args.policy) for _ in range(3)]
    start = statistics.median(s for s, _, _ in starts)
    rss, own = starts[-1][1], starts[-1][2]
    imports = import_cost()
    result = {
        "policy": str(args.policy.relative_to(PROJECT_ROOT) if args.policy.is_relative_to(PROJECT_ROOT) else args.policy),
        "tick_ms_in_process": round(statistics.median(inside), 2),
        "tick_ms_sandboxed": round(statistics.median(sandboxed), 2),
        "tick_ratio": round(statistics.median(ratios), 3),
        "act_ms_in_sandbox": round(statistics.median(acts), 2),
        "start_s_preloaded": round(start, 3),
        "start_s_importing": round(start + imports, 3),
        "start_speedup": round((start + imports) / start, 1),
        "rss_mb_per_team": round(rss, 1),
        "own_mb_per_team": round(own, 1),
    }
    print(f"time per tick: sandboxed / in-process = {result['tick_ratio']:.3f}x (target at most 1.10x)")
    print(f"start-up: {start:.3f} s preloaded, {start + imports:.3f} s if the team imported the frameworks "
          f"({imports:.2f} s): {result['start_speedup']}x faster (target at least 5x)")
    print(f"memory per sandboxed team: {rss:.0f} MB resident, {own:.0f} MB of it its own")
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
