"""The numerical frameworks a policy may use, loaded once and held to the team's one CPU.

A trained policy needs NumPy and PyTorch or ONNX Runtime. Importing torch takes more than a
second and hundreds of megabytes; the zygote (`matchmaking.sandbox.zygote`) imports them
once, before it forks any team, so a team's start costs a fork and the pages are shared
copy-on-write. The memory limit then applies to what the policy adds on top of them
(`matchmaking.sandbox.host` measures it).

Each framework is told to use one thread by the Arena, not by the policy: a team runs on
one core, and a thread pool sized for the machine only makes its threads fight over it.
A policy that asks for more threads later is refused quietly (`torch.set_num_threads`
keeps one; ONNX Runtime sessions get one intra- and one inter-op thread whatever the
options say); the CPU affinity and seccomp (`confine`) keep it on one core regardless.

Only trained policies need them (`needed_by`): a zygote loads them at the first team whose
files name a framework or carry weights, so a Space whose submissions are all scripted
never pays their 2 s of CPU and 200 MB per process. A policy that imports one without
naming it anywhere still works: it pays the import inside its own limits.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from pathlib import Path
from typing import Any

#: Importable names a policy may rely on beyond the standard library, in load order.
FRAMEWORKS: tuple[str, ...] = ("numpy", "torch", "onnxruntime")

#: A framework named in a policy's code (an import, `importlib.import_module("torch")`, ...).
_NAMED = re.compile(rb"\b(?:torch|onnxruntime)\b")

#: Files that only a framework reads: a policy carrying one is a trained one.
WEIGHT_SUFFIXES = (".pt", ".pth", ".ckpt", ".onnx", ".safetensors")

#: Larger Python files are not read (a policy's code is rarely a megabyte): they count as naming one.
_SCANNED_BYTES = 2**20


def needed_by(folder: Path | None) -> bool:
    """Whether the policy in `folder` may use the frameworks: its files carry weights, or
    its Python files name torch or ONNX Runtime. Yes wherever that cannot be told cheaply:
    files not on this machine (`None`), unreadable, not regular (a link to a device) or
    over a megabyte. Preloading is only ever a cost, never a fault."""
    if folder is None:
        return True
    try:
        for parent, _, files in os.walk(folder):  # not into linked folders: a link cannot loop
            for name in files:
                if name.endswith(WEIGHT_SUFFIXES):
                    return True
                path = Path(parent, name)
                if name.endswith(".py") and (not path.is_file() or path.stat().st_size > _SCANNED_BYTES
                                             or _NAMED.search(path.read_bytes())):
                    return True
    except OSError:
        return True
    return not folder.is_dir()


def preload() -> dict[str, str]:
    """Import the frameworks that are installed; {name: version}."""
    loaded = {}
    for name in FRAMEWORKS:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        loaded[name] = str(getattr(module, "__version__", "?"))
    pin_threads()
    return loaded


def pin_threads() -> None:
    """One thread per framework, and no way for a policy to ask for more."""
    torch = sys.modules.get("torch")
    if torch is not None and not getattr(torch, "_arena_pinned", False):
        torch.set_num_threads(1)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:  # already set in this process (it can be set once)
            pass
        original = torch.set_num_threads

        def set_num_threads(count: int) -> None:  # the Arena decides: one core, one thread
            original(1)

        setattr(torch, "set_num_threads", set_num_threads)  # noqa: B010 - a module's attribute, replaced
        setattr(torch, "_arena_pinned", True)  # noqa: B010
    ort = sys.modules.get("onnxruntime")
    if ort is not None and not getattr(ort, "_arena_pinned", False):
        session_class = ort.InferenceSession
        base_init = session_class.__init__

        def init(self: Any, path_or_bytes: Any, sess_options: Any = None, *args: Any, **kwargs: Any) -> None:
            options = sess_options if sess_options is not None else ort.SessionOptions()
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            kwargs.setdefault("providers", ["CPUExecutionProvider"])
            base_init(self, path_or_bytes, options, *args, **kwargs)

        session_class.__init__ = init
        setattr(ort, "_arena_pinned", True)  # noqa: B010
