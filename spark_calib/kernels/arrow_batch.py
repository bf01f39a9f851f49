"""The boundary between the two layers: statistics rows as Arrow ↔ NumPy arrays.

A key's statistics reach a kernel as an Arrow table (a group of ``applyInArrow``, or a slice
of one ``toArrow()`` on the driver); ``floats``/``ints``/``labels`` read its columns as arrays
(a null sum is NaN, as a sum the config does not use), ``split_keys`` cuts a table of many keys
into one table per key, and ``to_table`` turns the kernels' output rows back into Arrow.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def floats(table: pa.Table, name: str) -> np.ndarray:
    """Column ``name`` as float64, null → NaN; all NaN when the table has no such column."""
    if name not in table.column_names:
        return np.full(table.num_rows, np.nan)
    column = pc.cast(table.column(name), pa.float64())
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=float)


def ints(table: pa.Table, name: str, null: int) -> np.ndarray:
    """Column ``name`` as int64 with null → ``null`` (also when the column is absent)."""
    if name not in table.column_names:
        return np.full(table.num_rows, null, dtype=np.int64)
    column = pc.fill_null(pc.cast(table.column(name), pa.int64()), null)
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int64)


def labels(table: pa.Table, name: str) -> list[Any]:
    """Column ``name`` as Python values (strings or None)."""
    if name not in table.column_names:
        return [None] * table.num_rows
    return table.column(name).to_pylist()


def codes(values: Sequence[Any]) -> tuple[list[Any], np.ndarray]:
    """The distinct values (None first, the rest sorted) and each value's index among them."""
    distinct = sorted(set(values), key=lambda v: (v is not None, v))
    index = {value: position for position, value in enumerate(distinct)}
    return distinct, np.fromiter((index[v] for v in values), dtype=np.int64, count=len(values))


def split_keys(table: pa.Table, keys: Sequence[str]) -> Iterator[tuple[tuple[Any, ...], pa.Table]]:
    """One (key values, rows) pair per distinct combination of the ``keys`` columns."""
    if table.num_rows == 0:
        return
    columns = [pc.dictionary_encode(table.column(name)).combine_chunks() for name in keys]
    index = np.stack(
        [
            np.asarray(pc.fill_null(column.indices, -1).to_numpy(zero_copy_only=False))
            for column in columns
        ],
        axis=1,
    )
    _, first, inverse = np.unique(index, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(inverse.ravel(), kind="stable")
    bounds = np.cumsum(np.bincount(inverse.ravel()))
    # One reordering of the whole table, then zero-copy slices: a take per key costs a copy of
    # every column per key.
    ordered = table.take(pa.array(order)).combine_chunks()
    start = 0
    for group, stop in enumerate(bounds):
        row = int(first[group])
        key = tuple(table.column(name)[row].as_py() for name in keys)
        yield key, ordered.slice(start, int(stop) - start)
        start = int(stop)


def to_table(rows: Sequence[Sequence[Any]], schema: pa.Schema) -> pa.Table:
    """Output rows (tuples in ``schema``'s column order; NaN floats become null) as Arrow."""
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
    arrays = []
    for values, field in zip(columns, schema, strict=True):
        if pa.types.is_floating(field.type):
            cleaned = [None if v is None or v != v else float(v) for v in values]
            arrays.append(pa.array(cleaned, type=field.type))
        else:
            arrays.append(pa.array(list(values), type=field.type))
    return pa.Table.from_arrays(arrays, schema=schema)
