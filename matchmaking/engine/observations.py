"""One team's observations laid out in a block of memory, once per match.

The match runner lays out the arrays of one agent's observation (`ObservationLayout`) and
writes each tick's observations into that layout; a team hosted in another process reads
the same layout from shared memory (`matchmaking.sandbox.protocol`). The layout is the
engine's: it depends only on nmmo's observation, not on who hosts the team.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from arena.records import Format, Record


@dataclass(frozen=True)
class ArrayField:
    """One array of an agent's observation, at a fixed place of the shared block."""

    path: tuple[str, ...]
    shape: tuple[int, ...]
    dtype: str
    offset: int

    FORMAT = Format(row=True)  # [path, shape, dtype, offset]

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class ObservationLayout(Record):
    """Where each array of each member's observation lives in a team's shared block."""

    fields: tuple[ArrayField, ...]
    agent_bytes: int
    team_size: int

    @property
    def total_bytes(self) -> int:
        return self.agent_bytes * self.team_size

    @classmethod
    def from_observation(cls, sample: Mapping[str, Any], team_size: int) -> ObservationLayout:
        """Lay out arrays as they appear in one agent's observation (scalars become int64)."""
        fields = []
        offset = 0
        for path, value in _leaves(sample):
            array = np.asarray(value)
            dtype = array.dtype if array.ndim else np.dtype(np.int64)
            field = ArrayField(path=path, shape=tuple(array.shape), dtype=dtype.str, offset=offset)
            fields.append(field)
            offset += -(-field.nbytes // 8) * 8  # keep every array 8-byte aligned
        return cls(fields=tuple(fields), agent_bytes=offset, team_size=team_size)

    def views(self, buffer: memoryview) -> list[list[np.ndarray]]:
        """Per member, one NumPy view per field into the shared block."""
        return [
            [
                np.ndarray(f.shape, dtype=np.dtype(f.dtype), buffer=buffer, offset=member * self.agent_bytes + f.offset)
                for f in self.fields
            ]
            for member in range(self.team_size)
        ]

    def write(self, views: list[np.ndarray], observation: Mapping[str, Any]) -> None:
        """Copy one agent's observation into its views (arrays the env already writes into
        the block, see `matchmaking.engine.game.share_observation_arrays`, are skipped)."""
        for field, view in zip(self.fields, views):
            value = observation
            for key in field.path:
                value = value[key]
            if value is not view:
                view[...] = value


def _leaves(tree: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    for key, value in tree.items():
        if isinstance(value, Mapping):
            yield from _leaves(value, prefix + (key,))
        else:
            yield prefix + (key,), value
