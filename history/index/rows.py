"""The history's team rows as the index reads them: narrowed, with their players.

The index folds millions of rows, so it reads them in their narrow form (strings
dictionary-encoded, `narrow` and `frames`) and through integer codes (`codes`,
`first_rows`) rather than arrays of strings. `with_players` adds the rated entity of each
row, the key of every rating and per-player table.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pandas as pd

from arena.revision import BUILTIN_PREFIX
from arena.schema import TASK_NAMES

POINT_COLUMNS = [f"{task}_points" for task in TASK_NAMES]


def narrow(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows with every string column dictionary-encoded (pandas categoricals: a small
    integer code a row, each distinct string once), the same values: 16 million rows of
    ten string columns take 1.3 GB less. `compute` and `update` take either form."""
    rows = rows.copy(deep=False)
    for column in rows.columns:
        if rows[column].dtype == object:
            rows[column] = rows[column].astype("category")
    return rows


def frames(tables: Iterable) -> Iterator[pd.DataFrame]:
    """Arrow tables of history rows (shards, the WAL's matches) as the frames `fold`
    folds, their strings dictionary-encoded (`narrow`): encoded in Arrow, so that no Python
    string is made per row, only one per distinct value."""
    for table in tables:
        for i, column in enumerate(table.schema):
            if column.type == "string":
                table = table.set_column(i, column.name, table.column(i).dictionary_encode())
        yield narrow(table.to_pandas())


def with_players(rows: pd.DataFrame) -> pd.DataFrame:
    """Add the rated entity of each row: a built-in by name, a submission by repo@revision."""
    rows = rows.copy(deep=False)  # a new column, the caller's frame untouched, no data copied
    if rows.empty:
        rows["player"] = pd.Series(dtype=object)
        return rows
    # per distinct (policy, revision): one string each, shared by its rows (1.6 million rows,
    # a few thousand strings)
    # a categorical column factorises from its codes (no array of strings made)
    policy_code, policies = pd.factorize(_values(rows["policy_id"]), use_na_sentinel=False)
    revision_code, revisions = pd.factorize(_values(rows["revision"]), use_na_sentinel=False)
    policies, revisions = np.asarray(policies, dtype=object), np.asarray(revisions, dtype=object)
    width = max(len(revisions), 1)
    pair_code, pairs = pd.factorize(policy_code.astype(np.int64) * width + revision_code)

    def name(policy, revision):
        if isinstance(policy, str) and policy.startswith(BUILTIN_PREFIX):
            return policy
        if not (isinstance(policy, str) and isinstance(revision, str)):
            return np.nan  # as the string sum of a missing value was
        return f"{policy}@{revision}"

    names = np.array([name(policies[k // width], revisions[k % width]) for k in pairs] + [None], dtype=object)[:-1]
    if isinstance(rows["policy_id"].dtype, pd.CategoricalDtype):  # narrow rows: a narrow player column too
        missing = pd.isna(names)
        distinct, code = np.unique(names[~missing].astype(object), return_inverse=True) if (~missing).any() else ([], [])
        player_codes = np.full(len(names), -1, dtype=np.int64)
        player_codes[~missing] = code
        rows["player"] = pd.Categorical.from_codes(player_codes[pair_code], categories=pd.Index(distinct, dtype=object))
    else:
        rows["player"] = names[pair_code]
    return rows


def _values(column: pd.Series):
    """A column's values for `pd.factorize`: the categorical itself, else a numpy array."""
    return column.array if isinstance(column.dtype, pd.CategoricalDtype) else column.to_numpy(dtype=object)


def codes(column: pd.Series, *, sort: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """A column's integer codes (-1 where missing) and its distinct values, in sorted order
    if `sort` (as `pd.factorize` gives them). A categorical answers from its own codes,
    renumbered if its categories are not sorted: no array of its strings is made, which at
    16 million rows is 128 MB a column and its hash table."""
    if not isinstance(column.dtype, pd.CategoricalDtype):
        return pd.factorize(column.to_numpy(), sort=sort)
    code = column.cat.codes.to_numpy()
    values = np.asarray(column.cat.categories, dtype=object)
    if sort and len(values) and not column.cat.categories.is_monotonic_increasing:
        order = np.argsort(values, kind="stable")
        rank = np.empty(len(values) + 1, dtype=np.int64)
        rank[order], rank[-1] = np.arange(len(values)), -1  # code -1 (missing) stays -1
        code, values = rank[code], values[order]
    return code, values


def first_rows(code: np.ndarray) -> np.ndarray:
    """Per code 0..K-1 (codes numbered in order of first appearance, as `pd.factorize`
    numbers them), the position of its first row."""
    return np.flatnonzero(~pd.Series(code).duplicated().to_numpy())


def is_builtin_row(rows: pd.DataFrame) -> np.ndarray:
    """Per row, whether its policy is a built-in (computed once per distinct policy)."""
    code, policies = pd.factorize(_values(rows["policy_id"]))
    return np.array([str(p).startswith(BUILTIN_PREFIX) for p in policies], dtype=bool)[code] if len(rows) else np.zeros(0, bool)


def same_matches(rows: pd.DataFrame, chosen: np.ndarray) -> np.ndarray:
    """Which of `rows` are in a match of the rows where `chosen` is true: one lookup a row in
    the match ids' codes (`codes`), where `isin` hashes every value (on a categorical column
    of 3.2 million rows: 3 ms against 70, most of a policy's page at 200,000 matches)."""
    code, values = codes(rows["match_id"])
    wanted = np.zeros(len(values) + 1, dtype=bool)  # the last slot: code -1, no match id
    wanted[code[chosen]] = True
    wanted[-1] = False
    return wanted[code]
