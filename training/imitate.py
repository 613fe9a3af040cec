"""Train the apprentice: behaviour cloning of the Arena's strongest scripted team, `elite`.

The whole algorithm is in this file, top to bottom (as CleanRL writes its scripts):

1. **Collect.** Play full matches in which several `elite` teams meet the PvE stage-1 and
   stage-2 built-ins. Every tick, each elite member's raw observation arrays (exactly what
   the policy will stack, `apprentice.gather`) are kept with the action elite chose.
2. **Learn.** Fit `ApprenticeNet` to those actions: one cross-entropy per action head
   (direction; attack target or none; attack style where it attacked; item to use or
   none), Adam, a fixed seed, a fixed number of epochs. Matches are split, not ticks, so
   the held-out accuracy is on games the network never saw.
3. **DAgger.** A cloned policy drifts into situations the expert never showed it, and its
   errors compound. So, for a few rounds, the network itself plays the elite seats while
   elite, shown the same observations, says what it would have done; those ticks join the
   data and the network is fitted again (Ross et al., 2011).
4. **Export.** Write the state dict into `matchmaking/teams/apprentice/weights.pt` (the built-in; `examples/policies/apprentice-torch` links to it)
   and the ONNX graph (batch axis over the alive members) into
   `examples/policies/apprentice-onnx/model.onnx`, check that both choose the same actions
   on held-out observations, and save the loss curve as `training/apprentice-loss.png`.

Why imitation and not PPO: on this 2-core machine a PPO run of 45 minutes sees roughly
the ticks of 60 matches, far too few for 16-team Neural MMO from scratch (the NeurIPS
baselines train for days on GPUs); imitation of a scripted team that already scores
35 learns its behaviour from a few matches. Run (about 25 minutes here):

    .venv/bin/python -m training.imitate
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent
TORCH_EXAMPLE = ROOT / "matchmaking" / "teams" / "apprentice"  # the built-in (examples/policies/apprentice-torch links to it)
ONNX_EXAMPLE = ROOT / "examples" / "policies" / "apprentice-onnx"
sys.path.insert(0, str(TORCH_EXAMPLE))
from apprentice import ENTITIES, INPUTS, OUTPUTS, SLOTS, STAY, ApprenticeNet, gather, play  # noqa: E402


@dataclass
class Args:
    seed: int = 1
    """seeds the matches played for data, the split and the network's initialisation"""
    matches: int = 12
    """full matches to collect (the last `held_out` of them are held out)"""
    held_out: int = 2
    elite_teams: int = 6
    """elite teams per collection match (each contributes 8 members' ticks)"""
    horizon: int = 1024
    workers: int = 2
    epochs: int = 3
    """passes over the data in each fit (the first, and one after each DAgger round)"""
    dagger_rounds: int = 3
    dagger_matches: int = 6
    """matches the network plays (elite labelling its observations) in each DAgger round"""
    batch_size: int = 512
    learning_rate: float = 1e-3
    out: Path = TORCH_EXAMPLE / "weights.pt"
    onnx_out: Path = ONNX_EXAMPLE / "model.onnx"
    plot: Path = ROOT / "training" / "apprentice-loss.png"
    summary: Path = ROOT / "training" / "apprentice.json"
    cache: Path = ROOT / ".cache" / "training"


# -- 1. collect -------------------------------------------------------------------------
# Compact storage per tick of one member: the arrays are nmmo's own small integers.
STORE = {"tile": np.uint8, "entity": np.int16, "inventory": np.int16, "agent": np.int16, "member": np.int8,
         "spawn": np.int16, "move_mask": np.uint8, "attack_mask": np.uint8, "use_mask": np.uint8}
LABELS = ("move_label", "attack_label", "style_label", "use_label")


class Recorder:
    """Plays as the wrapped team and keeps (inputs, chosen action) of every member, every tick."""

    def __init__(self, team, sink: dict[str, list]):
        self.team, self.sink, self.spawn = team, sink, {}

    def act(self, observations):
        actions = self.team.act(observations)
        members = sorted(observations)
        if not members:
            return actions
        for name, array in gather(observations, members, self.spawn).items():
            self.sink[name].append(array.astype(STORE[name]))
        for key, head, arg, none in (("move_label", "Move", "Direction", STAY), ("attack_label", "Attack", "Target", ENTITIES),
                                     ("style_label", "Attack", "Style", -1), ("use_label", "Use", "InventoryItem", SLOTS)):
            values = [int(actions.get(m, {}).get(head, {}).get(arg, none)) for m in members]
            if key == "attack_label":  # a target past the rows the network reads counts as no attack
                values = [v if v < ENTITIES else ENTITIES for v in values]
            self.sink[key].append(np.array(values, dtype=np.int8))
        return actions


class Student:
    """Plays with the network; elite sees the same observations and its choices are kept (DAgger)."""

    def __init__(self, net: ApprenticeNet, expert, sink: dict[str, list]):
        self.net, self.recorder, self.spawn = net, Recorder(expert, sink), {}

    def act(self, observations):
        self.recorder.act(observations)  # the expert's labels; its own state follows the game
        return play(self.net, observations, self.spawn)


def lineup(seed: int, elite_teams: int) -> tuple[str, ...]:
    """Elite teams among stage-1 and stage-2 built-ins, seated differently each match."""
    others = ["combat", "forage", "random", "coordinated"] * 4
    names = ["elite"] * elite_teams + others[: 16 - elite_teams]
    return tuple(np.random.default_rng(seed).permutation(names))


def collect_match(job: tuple[int, int, int, str | None]) -> dict[str, np.ndarray]:
    """Play one full match; the ticks of its elite seats' members, as arrays. With a
    `learner` (weights file), the network plays those seats and elite only labels."""
    seed, elite_teams, horizon, learner = job
    from arena.policies import builtin
    from matchmaking.engine.config import MatchConfig
    from matchmaking.engine.hosting import InProcessTeam
    from matchmaking.engine.match import MatchSpec, run_match
    from matchmaking.teams.builtin import builtin_factory
    from matchmaking.teams.factory import in_process_host

    sink: dict[str, list] = {name: [] for name in (*STORE, *LABELS)}
    net = None
    if learner is not None:
        torch.set_num_threads(1)
        net = ApprenticeNet()
        net.load_state_dict(torch.load(learner, weights_only=True))
        net.eval()

    def host(ref, slot):
        if ref.policy_id != "builtin:elite":
            return in_process_host(ref, slot)
        make = builtin_factory("elite")
        if net is None:
            return InProcessTeam(lambda team_id, cfg: Recorder(make(team_id, cfg), sink), slot)
        return InProcessTeam(lambda team_id, cfg: Student(net, make(team_id, cfg), sink), slot)

    names = lineup(seed, elite_teams)
    run_match(MatchSpec(seed=seed, policies=tuple(builtin(n) for n in names), config=MatchConfig(horizon=horizon)),
              host_factory=host)
    return {name: np.concatenate(parts) for name, parts in sink.items()}


def collect(args: Args, *, learner: Path | None = None, first: int = 0, count: int | None = None) -> list[dict[str, np.ndarray]]:
    """Every match's data, from the cache where the same matches were played before (a
    learner's matches are keyed by its weights too)."""
    args.cache.mkdir(parents=True, exist_ok=True)
    count = args.matches if count is None else count
    tag = "" if learner is None else "-" + hashlib.sha1(learner.read_bytes()).hexdigest()[:10]
    jobs = [(args.seed * 1000 + first + i, args.elite_teams, args.horizon, None if learner is None else str(learner))
            for i in range(count)]
    paths = [args.cache / f"match-{s}-{e}-{h}{tag}.npz" for s, e, h, _ in jobs]
    todo = [(job, path) for job, path in zip(jobs, paths) if not path.exists()]
    if todo:
        label = "collect (matches)" if learner is None else "DAgger: the network plays (matches)"
        with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
            for (_job, path), data in tqdm(zip(todo, pool.imap(collect_match, [j for j, _ in todo])), total=len(todo), desc=label):
                np.savez(path, **data)
    return [dict(np.load(path)) for path in paths]


# -- 2. learn ---------------------------------------------------------------------------
def merge(parts: list[dict[str, np.ndarray]]) -> dict[str, torch.Tensor]:
    return {name: torch.from_numpy(np.concatenate([p[name] for p in parts]).astype(np.int64 if name in ("tile", "member") or
                                                                                      name in LABELS else np.float32))
            for name in (*STORE, *LABELS)}


def losses(net: ApprenticeNet, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, float]]:
    """The summed cross-entropy of the four heads, and each head's accuracy."""
    move, attack, style, use = net(*(batch[name] for name in INPUTS))
    attacked = batch["attack_label"] < ENTITIES
    ce = nn.functional.cross_entropy
    loss = ce(move, batch["move_label"]) + ce(attack, batch["attack_label"]) + ce(use, batch["use_label"])
    if attacked.any():
        loss = loss + ce(style[attacked], batch["style_label"][attacked])
    accuracy = {
        "move": (move.argmax(1) == batch["move_label"]).float().mean().item(),
        "attack": (attack.argmax(1) == batch["attack_label"]).float().mean().item(),
        "use": (use.argmax(1) == batch["use_label"]).float().mean().item(),
    }
    return loss, accuracy


def evaluate(net: ApprenticeNet, data: dict[str, torch.Tensor], batch_size: int = 4096) -> dict[str, float]:
    net.eval()
    totals: dict[str, float] = {}
    n = len(data["move_label"])
    with torch.no_grad():
        for start in range(0, n, batch_size):
            batch = {k: v[start:start + batch_size] for k, v in data.items()}
            loss, accuracy = losses(net, batch)
            weight = len(batch["move_label"]) / n
            for key, value in {"loss": loss.item(), **accuracy}.items():
                totals[key] = totals.get(key, 0.0) + value * weight
    net.train()
    return totals


def train(args: Args, train_data: dict[str, torch.Tensor], test_data: dict[str, torch.Tensor],
          net: ApprenticeNet | None = None, *, first_step: int = 0, label: str = "learn"):
    """Fit `net` (a new one if None) to the data for `args.epochs` epochs; the training
    curve [(step, loss)] and the held-out figures after each epoch."""
    torch.manual_seed(args.seed + first_step)
    net = net or ApprenticeNet()
    net.train()
    optimizer = torch.optim.Adam(net.parameters(), lr=args.learning_rate)
    n = len(train_data["move_label"])
    steps = args.epochs * (n // args.batch_size)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.learning_rate, total_steps=steps)
    generator = torch.Generator().manual_seed(args.seed)
    curve: list[tuple[int, float]] = []
    held: list[tuple[int, dict[str, float]]] = []
    step = first_step
    with tqdm(total=steps, desc=f"{label} (batches)") as bar:
        for epoch in range(args.epochs):
            order = torch.randperm(n, generator=generator)
            for start in range(0, n - args.batch_size + 1, args.batch_size):
                index = order[start:start + args.batch_size]
                loss, accuracy = losses(net, {k: v[index] for k, v in train_data.items()})
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                schedule.step()
                step += 1
                curve.append((step, loss.item()))
                bar.update()
                if step % 50 == 0:
                    bar.set_postfix(loss=f"{loss.item():.3f}", move=f"{accuracy['move']:.2f}")
            held.append((step, evaluate(net, test_data)))
            tqdm.write(f"{label}, epoch {epoch + 1}: held-out {json.dumps({k: round(v, 3) for k, v in held[-1][1].items()})}")
    return net.eval(), curve, held


def plot(path: Path, curve, held, rounds) -> None:
    """The loss curve; dotted lines where a DAgger round's data joined."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps, values = np.array(curve).T
    window = max(1, len(values) // 100)
    smooth = np.convolve(values, np.ones(window) / window, mode="valid")
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, values, color="#cbd5e1", linewidth=0.6, label="training batch")
    ax.plot(steps[window - 1:], smooth, color="#2563eb", label=f"training (mean of {window})")
    ax.plot([s for s, _ in held], [h["loss"] for _, h in held], "o-", color="#dc2626", label="held-out expert matches")
    for x in rounds:
        ax.axvline(x, color="#94a3b8", linestyle=":", linewidth=1)
    ax.set(xlabel="batch", ylabel="summed cross-entropy", title="Apprentice: imitating elite (dotted: DAgger rounds)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


# -- 3. export --------------------------------------------------------------------------
def export(args: Args, net: ApprenticeNet, sample: dict[str, torch.Tensor]) -> float:
    """Write both exports; the share of held-out members on which they choose alike."""
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(net.state_dict(), args.out)
    args.onnx_out.parent.mkdir(parents=True, exist_ok=True)
    inputs = tuple(sample[name][:2] for name in INPUTS)
    torch.onnx.export(net, inputs, str(args.onnx_out), dynamo=False, input_names=list(INPUTS), output_names=list(OUTPUTS),
                      dynamic_axes={name: {0: "members"} for name in (*INPUTS, *OUTPUTS)}, opset_version=17)
    import onnxruntime as ort

    session = ort.InferenceSession(str(args.onnx_out), providers=["CPUExecutionProvider"])
    feeds = {name: sample[name].numpy() for name in INPUTS}
    by_onnx = session.run(None, feeds)
    with torch.no_grad():
        by_torch = net(*(sample[name] for name in INPUTS))
    same = np.ones(len(sample["move_label"]), dtype=bool)
    for a, b in zip(by_torch, by_onnx):
        same &= a.numpy().argmax(1) == b.argmax(1)
    return float(same.mean())


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, value in asdict(Args()).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    args = Args(**vars(parser.parse_args(argv)))
    torch.set_num_threads(args.workers)
    started = time.monotonic()

    parts = collect(args)
    collected = time.monotonic() - started
    learn, test_data = parts[: -args.held_out], merge(parts[-args.held_out:])
    print(f"{sum(len(p['move_label']) for p in learn):,} member-ticks to learn from, {len(test_data['move_label']):,} held out")
    net, curve, held = train(args, merge(learn), test_data)
    rounds = []
    for r in range(args.dagger_rounds):
        weights = args.cache / f"dagger-round-{r + 1}.pt"
        torch.save(net.state_dict(), weights)
        learn += collect(args, learner=weights, first=args.matches + r * args.dagger_matches, count=args.dagger_matches)
        rounds.append(curve[-1][0])
        net, more, more_held = train(args, merge(learn), test_data, net, first_step=curve[-1][0], label=f"DAgger round {r + 1}")
        curve, held = curve + more, held + more_held
    plot(args.plot, curve, held, rounds)
    sample = {k: v[:4096] for k, v in test_data.items()}
    agree = export(args, net, sample)
    summary = {
        "seed": args.seed, "matches": args.matches, "dagger_rounds": args.dagger_rounds,
        "dagger_matches": args.dagger_matches, "member_ticks": sum(len(p["move_label"]) for p in learn),
        "collect_s": round(collected), "total_s": round(time.monotonic() - started),
        "held_out": {k: round(v, 4) for k, v in held[-1][1].items()}, "exports_agree": agree,
        "weights_kb": round(args.out.stat().st_size / 1024), "onnx_kb": round(args.onnx_out.stat().st_size / 1024),
    }
    args.summary.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
