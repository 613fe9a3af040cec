"""The history read once (`history.index`) against the reads it replaced, on N matches.

    python -m bench.read_side --matches 1000000 --baseline af2295a --json

Until the one read side, a Space read its history twice, each shard by each reader: the
leaderboard folded it into its standings (`leaderboard.standings.compute` over
`HistoryReader.shard_batches`) and the matchmaker into its own index (PvE plans, PvP
counts, the audit order, TrueSkill for the pools), and `evaluate --against top:K` read it a
third time. This bench writes one synthetic history (`arena.simulation`, 1,000 policies, N
PvP matches in day shards of `--shard-matches`, as compaction leaves them) and measures, each
in a fresh process (its wall time, CPU time and peak resident memory, `VmHWM`):

- `space`: what a Space does with the history at its start: the current code folds it once
  (`HistoryIndex.refresh`) and rates that (`compute`, TrueSkill for the pools); the
  baseline (the checkout of `--baseline`, a git revision, in a temporary worktree) folded it
  into the standings, then into the matchmaker's index, and rated both;
- `practice`: `evaluate --against top:K`'s ranking of the same history (`field_ranking`,
  the dataset read from the Hub client's cache, offline).

Both sides fit Plackett-Luce without a bootstrap (`--bootstrap`, 0): the fit is the same
code in both and would only add the same seconds to each. Printed, the JSON last:
`space_s`, `space_cpu_s`, `space_peak_mb`, `practice_s`, `practice_cpu_s`,
`practice_peak_mb` (each `{"current": ..., "baseline": ...}`), `fold_s` (the current fold
alone), the ratios current over baseline (`space_time_ratio`, `space_cpu_ratio`,
`space_memory_ratio`, `practice_time_ratio`), and that both sides read the same matches and
ranked as many submissions. CPU time is the steadier figure on a shared machine.
With `--rounds R` each side is measured R times, which goes first alternating, and each
figure is the median. Target (issue "One read side"): the first fold no slower and no
larger than the reads it replaced: `space_cpu_ratio` (wall time rises and falls with the
machine's other work; `space_time_ratio` is printed too) and `space_memory_ratio` at most 1.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from arena import PROJECT_ROOT

#: The dataset's repo id in the offline Hub cache the practice run reads.
REPO = "arena/history"

#: Run in a fresh process in a checkout (the current one, or the baseline's): the child's
#: figures as JSON on its last line, timed from after its imports (a Space has made them
#: before it reads its history). `{folder}`, `{bootstrap}` and `{cache}` are filled in.
MEASURE = """
import json, resource, time
from pathlib import Path
def peak_mb():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
{imports}
started, cpu = time.perf_counter(), time.process_time()
figures = {{}}
{body}
figures.update(s=time.perf_counter() - started, cpu_s=time.process_time() - cpu, peak_mb=peak_mb())
print(json.dumps(figures))
"""

SPACE = {
    "current": ("""
from arena.ratings import TrueSkillState, extend_trueskill
from history.index import HistoryIndex
from history.store import HistoryReader
from leaderboard.standings import compute
""", """
snapshot = HistoryIndex(HistoryReader(Path({folder!r}))).refresh()
figures["fold_s"] = time.perf_counter() - started
standings = compute(snapshot.folded, bootstrap={bootstrap})
pools = extend_trueskill(TrueSkillState(), snapshot.folded.rated)
figures["matches"] = standings.matches
"""),
    "baseline": ("""
from history.store import HistoryReader
from leaderboard.standings import compute, frames
from matchmaking.service.history_index import HistoryIndex
""", """
reader = HistoryReader(Path({folder!r}))
standings = compute(frames(reader.shard_batches()), bootstrap={bootstrap})
index = HistoryIndex(reader, nmmo_version="sim", arena_version="sim", rated=True)
index.refresh()
pools = index.trueskill()
figures["matches"] = standings.matches
"""),
}

PRACTICE = ("""
import os
os.environ["HF_HUB_OFFLINE"] = "1"
from huggingface_hub import HfApi
from matchmaking.practice import field_ranking
""", """
ranking = field_ranking(HfApi(endpoint="http://offline.invalid"), {repo!r}, Path({cache!r}), bootstrap={bootstrap})
figures["ranked"] = len(ranking)
""")


def say(text: str) -> None:
    print(text, flush=True)


def measure(tree: Path, code: tuple[str, str], fill: dict[str, object]) -> dict[str, float]:
    """`code` (its imports, then the work timed) run in a fresh Python process in the
    checkout `tree`, with `fill`'s values; its figures."""
    imports, body = code
    done = subprocess.run([sys.executable, "-c", MEASURE.format(imports=imports, body=body.format(**fill))], cwd=tree, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(tree)}, check=False)
    if done.returncode:
        raise RuntimeError(f"the measurement in {tree} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _median(runs: list[dict[str, float]]) -> dict[str, float]:
    """Each figure's median over the runs."""
    return {key: float(np.median([r[key] for r in runs])) for key in runs[0]}


def offline_cache(folder: Path, cache: Path) -> None:
    """The Hub client's cache holding `folder` as the latest snapshot of dataset `REPO`, as
    `snapshot_download` leaves it: the practice run reads it offline."""
    repo = cache / f"datasets--{REPO.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40)
    (repo / "snapshots" / ("0" * 40)).mkdir(parents=True)
    (repo / "snapshots" / ("0" * 40) / "data").symlink_to(folder / "data")


def baseline_tree(revision: str, where: Path) -> Path:
    """A checkout of `revision` (a temporary git worktree of this repository)."""
    tree = where / "baseline"
    subprocess.run(["git", "worktree", "add", "--detach", "--quiet", str(tree), revision], cwd=PROJECT_ROOT, check=True)
    return tree


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=100_000)
    parser.add_argument("--shard-matches", type=int, default=6000, help="matches per day shard (as compaction leaves them)")
    parser.add_argument("--baseline", default="af2295a", help="the git revision of the three reads (before the index)")
    parser.add_argument("--bootstrap", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=1, help="measurements of each side, alternating which goes first")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    import pandas as pd

    from arena.simulation import Population, random_history_columns
    from bench.ratings_recompute import write_history
    from history.index import narrow

    with tempfile.TemporaryDirectory(prefix="bench-read-side-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        frame = narrow(pd.DataFrame(random_history_columns(Population.random(1000, seed=0), args.matches, seed=1), copy=False))
        shards = write_history(frame, root / "history", shard_matches=args.shard_matches)
        del frame
        offline_cache(root / "history", root / "cache")
        say(f"{args.matches:,} synthetic matches in {shards} day shards ({time.perf_counter() - started:.0f} s)")
        trees = {"current": PROJECT_ROOT, "baseline": baseline_tree(args.baseline, root)}
        runs: dict[str, dict[str, list[dict[str, float]]]] = {"space": {s: [] for s in trees}, "practice": {s: [] for s in trees}}
        fill = {"folder": str(root / "history"), "bootstrap": args.bootstrap, "cache": str(root / "cache"), "repo": REPO}
        try:
            for round_ in range(args.rounds):  # the sides alternate first: a load that comes and goes falls on both
                for side in (list(trees) if round_ % 2 == 0 else list(trees)[::-1]):
                    space_run, practice_run = measure(trees[side], SPACE[side], fill), measure(trees[side], PRACTICE, fill)
                    runs["space"][side].append(space_run)
                    runs["practice"][side].append(practice_run)
                    say(f"round {round_ + 1}, {side}: space {space_run['s']:.1f} s ({space_run['cpu_s']:.1f} CPU-s), "
                        f"{space_run['peak_mb']:.0f} MB; practice {practice_run['s']:.1f} s, {practice_run['peak_mb']:.0f} MB")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(trees["baseline"])], cwd=PROJECT_ROOT, check=False)
    space, practice = ({side: _median(r) for side, r in runs[part].items()} for part in ("space", "practice"))
    report = {
        "matches": args.matches, "shards": shards, "baseline": args.baseline,
        **{f"space_{k}": {side: round(v[k], 1) for side, v in space.items()} for k in ("s", "cpu_s", "peak_mb")},
        **{f"practice_{k}": {side: round(v[k], 1) for side, v in practice.items()} for k in ("s", "cpu_s", "peak_mb")},
        "fold_s": round(space["current"]["fold_s"], 1),
        "space_time_ratio": round(space["current"]["s"] / space["baseline"]["s"], 3),
        "space_memory_ratio": round(space["current"]["peak_mb"] / space["baseline"]["peak_mb"], 3),
        "space_cpu_ratio": round(space["current"]["cpu_s"] / space["baseline"]["cpu_s"], 3),
        "practice_time_ratio": round(practice["current"]["s"] / practice["baseline"]["s"], 3),
        "same_ranking_size": practice["current"]["ranked"] == practice["baseline"]["ranked"],
        "same_matches": space["current"]["matches"] == space["baseline"]["matches"] == args.matches,
    }
    report["met"] = report["space_cpu_ratio"] <= 1.0 and report["space_memory_ratio"] <= 1.0 and report["same_matches"]
    for key, value in report.items():
        say(f"{key}: {value}")
    if args.json:
        print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
