"""The history's team rows as the index holds them: in chunks, appended without copying.

A million matches are sixteen million rows (1.7 GB even with the strings dictionary-encoded).
Copying them into one frame at every refresh, so that a few hundred new rows sit at the
end, cost seconds and briefly twice the memory. The index instead keeps the rows as a
short tuple of frames: a new batch is appended as its own chunk, and trailing chunks are
merged only while the last is at least half the size of the one before it and the two
together stay within `MAX_CHUNK_ROWS`. So there are about log2 of the newest rows' count
chunks plus one per `MAX_CHUNK_ROWS` rows (a dozen at a million matches), no merge ever
copies more than `MAX_CHUNK_ROWS` rows at once (merging two halves of a whole history would
briefly hold it twice), and each row is copied about log2(MAX_CHUNK_ROWS) times in all.

The pages ask for what they show (one player's rows, one match's start, every player),
which is read chunk by chunk; `frame()` is the whole table, a copy, for the few readers
that need every row at once (the luck report).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pandas as pd

from history.index.rows import same_matches

#: A trailing chunk is merged into the one before it when it is at least this share of it ...
MERGE_SHARE = 0.5
#: ... and the merged chunk holds at most this many rows (about 230 MB of narrow rows).
MAX_CHUNK_ROWS = 1 << 21


def concat(*frames: pd.DataFrame) -> pd.DataFrame:
    """The frames one after the other, one frame (one copy of their rows, however many they
    are); a column categorical in every frame stays categorical (its categories the union),
    where `pd.concat` would widen it to Python objects."""
    from pandas.api.types import union_categoricals

    frames = tuple(f for f in frames if len(f.columns))
    if len(frames) <= 1:
        return frames[0] if frames else pd.DataFrame()
    categorical = [c for c in frames[0].columns
                   if all(c in f and isinstance(f[c].dtype, pd.CategoricalDtype) for f in frames)]
    # the categoricals unioned on their own: through `pd.concat` they would first be made
    # arrays of Python strings, a row each
    whole = pd.concat([f.drop(columns=categorical) for f in frames], ignore_index=True, copy=False)
    for column in categorical:
        whole[column] = pd.Categorical(union_categoricals([f[column] for f in frames], ignore_order=True))
    return whole[list(frames[0].columns) + [c for c in whole.columns if c not in frames[0].columns]]


class TeamRows:
    """Team rows (one per team per match, with a `player` column) in order, as chunks."""

    __slots__ = ("chunks",)

    def __init__(self, chunks: tuple[pd.DataFrame, ...] = ()) -> None:
        self.chunks = tuple(c for c in chunks if len(c)) or tuple(chunks[:1])

    @classmethod
    def of(cls, rows: pd.DataFrame | TeamRows) -> TeamRows:
        """`rows` as chunks (itself if it is already)."""
        return rows if isinstance(rows, TeamRows) else cls((rows,))

    def __len__(self) -> int:
        return sum(len(c) for c in self.chunks)

    @property
    def empty(self) -> bool:
        return len(self) == 0

    def __iter__(self) -> Iterator[pd.DataFrame]:
        return iter(self.chunks)

    def append(self, rows: pd.DataFrame) -> TeamRows:
        """These rows, then `rows` (a new object; this one is unchanged)."""
        if not len(rows):
            return self
        chunks = [c for c in self.chunks if len(c)] + [rows]
        while (len(chunks) > 1 and len(chunks[-1]) >= MERGE_SHARE * len(chunks[-2])
               and len(chunks[-1]) + len(chunks[-2]) <= MAX_CHUNK_ROWS):
            last = chunks.pop()
            chunks[-1] = concat(chunks[-1], last)
        return TeamRows(tuple(chunks))

    def extend(self, frames: Sequence[pd.DataFrame]) -> TeamRows:
        """These rows, then each of `frames` in order (a new object; this one is unchanged):
        as `append` each in turn, but packed first into runs of at most `MAX_CHUNK_ROWS`
        rows, each copied once (a restart folds a whole history's shards at once: appended
        one by one, each row was copied about log2 of their number times, most of a fold)."""
        runs: list[list[pd.DataFrame]] = [[]]
        rows = 0
        for frame in (f for f in frames if len(f)):
            if runs[-1] and rows + len(frame) > MAX_CHUNK_ROWS:
                runs.append([])
                rows = 0
            runs[-1].append(frame)
            rows += len(frame)
        extended = self
        for run in runs:
            if run:
                extended = extended.append(concat(*run))
        return extended

    def frame(self) -> pd.DataFrame:
        """Every row in one frame: a copy when there is more than one chunk."""
        return concat(*self.chunks) if self.chunks else pd.DataFrame()

    def where(self, keep: Callable[[pd.DataFrame], np.ndarray], columns: Sequence[str] | None = None) -> pd.DataFrame:
        """The rows where `keep(chunk)` is true, in one frame, strings as plain objects (a
        selection is small, and sorts and groups by value, not by a category's code); only
        `columns` if given (each column taken is a pass over the rows kept: a policy's
        opponents at 200,000 matches are 96,000 rows)."""
        if not self.chunks:
            return pd.DataFrame()
        wanted = list(columns) if columns is not None else slice(None)
        parts = [p for p in (c.loc[keep(c), wanted] for c in self.chunks) if len(p)] or [self.chunks[0].loc[:, wanted].iloc[0:0]]
        whole = pd.concat([plain_values(p) for p in parts], ignore_index=True)
        return whole

    def of_player(self, player: str) -> pd.DataFrame:
        """The rows of one player (revision-level id)."""
        return self.where(lambda c: (c["player"] == player).to_numpy())

    def opponents(self, player: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """The other teams' rows in the matches `player` played (a match's rows are in one
        chunk), only `columns` if given."""
        def theirs(chunk: pd.DataFrame) -> np.ndarray:
            own = (chunk["player"] == player).to_numpy()
            return same_matches(chunk, own) & ~own

        return self.where(theirs, columns)

    def around(self, player: str) -> TeamRows:
        """The rows of the matches `player` played, its own and the other teams', as chunks
        (strings as the chunks hold them): what a page about one player reads, taken in one
        pass over every row rather than one per part of the page (at 200,000 matches, 3.2
        million rows scanned for a policy's 100,000)."""
        kept = []
        for chunk in self.chunks:
            own = (chunk["player"] == player).to_numpy() if "player" in chunk else np.zeros(len(chunk), bool)
            if own.any():
                kept.append(chunk[same_matches(chunk, own)])
        return TeamRows(tuple(kept) or tuple(c.iloc[0:0] for c in self.chunks[:1]))

    def of_match(self, match_id: str) -> pd.DataFrame:
        """The rows of one match."""
        return self.where(lambda c: (c["match_id"] == match_id).to_numpy())

    def players(self) -> set[str]:
        """Every player in the rows."""
        return {p for c in self.chunks for p in pd.unique(c["player"]) if isinstance(p, str)}

    def match_ids(self) -> Iterator[np.ndarray]:
        """Per chunk, its distinct match ids (in order of first appearance)."""
        for chunk in self.chunks:
            yield np.asarray(pd.unique(chunk["match_id"]), dtype=object)


def plain_values(rows: pd.DataFrame) -> pd.DataFrame:
    """`rows` with categorical columns as their values (a copy of those columns only)."""
    categorical = [c for c in rows.columns if isinstance(rows[c].dtype, pd.CategoricalDtype)]
    if not categorical:
        return rows
    rows = rows.copy(deep=False)
    for column in categorical:
        rows[column] = rows[column].astype(object)
    return rows
