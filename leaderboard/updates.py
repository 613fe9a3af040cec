"""What an open page is sent by its timers: only what changed since its last tick.

An open tab's timers call their views every few seconds; most ticks nothing changed, and a
whole table sent again is most of what a tab downloads (issue 39 measured about 4 MB a
minute). `only_changed` replaces each output equal to the one this page was last sent by
`gr.skip()`, keeping the fingerprints of what it sent in the page's own `gr.State`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import gradio as gr
import pandas as pd


def only_changed(outputs: Sequence[Any], last: Sequence[Any] | None) -> tuple[Any, ...]:
    """`outputs`, each one equal to what this page was last sent (`last`: their fingerprints)
    replaced by `gr.skip()`, then the new fingerprints: an open tab receives only what changed."""
    prints = [fingerprint(value) for value in outputs]
    kept = tuple(gr.skip() if last is not None and i < len(last) and last[i] == p else value
                 for i, (value, p) in enumerate(zip(outputs, prints)))
    return (*kept, prints)


def fingerprint(value: Any) -> Any:
    """What identifies a view's output for `only_changed`: a frame by its columns and a hash of
    its cells in their order (a table sorted anew is a change), a component update by the
    arguments it was made with, anything else as itself."""
    if isinstance(value, pd.DataFrame):
        rows = pd.util.hash_pandas_object(value.astype(str), index=False).to_numpy()
        cells = hashlib.blake2b(rows.tobytes(), digest_size=8).hexdigest() if len(value) else ""
        return ("frame", tuple(map(str, value.columns)), len(value), cells)
    made = getattr(value, "_constructor_args", None)
    if isinstance(made, list) and made:
        return ("update", type(value).__name__, tuple(sorted((k, fingerprint(v)) for k, v in made[0].items())))
    if isinstance(value, (list, tuple)):
        return tuple(fingerprint(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), fingerprint(v)) for k, v in value.items()))
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)
