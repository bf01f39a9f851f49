"""The boundary between the two layers: statistics rows as Arrow ↔ NumPy arrays.

A key's statistics reach a kernel as ``KeyRows``: its columns converted from Arrow once (a
group of ``applyInArrow``, or a zero-copy slice of one conversion of a ``toArrow()`` on the
driver), since the kernels of a key read the same columns many times. ``floats``/``ints``/
``labels``/``is_null`` read a column as arrays (a null sum is NaN, as a sum the config does not
use), ``select`` keeps the rows of a mask. Each also takes an Arrow table (the kernel tests
build them), converted on the spot, so tests and runs read through the same code.
``split_keys`` cuts a table of many keys into one ``KeyRows`` per key, and ``to_table`` turns
the kernels' output rows back into Arrow.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any, TypeAlias, TypeVar, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


class KeyRows:
    """Statistics rows as NumPy columns: a numeric column as float64 with null → NaN (the
    statistics' integers are counts and small indices, exact in a double), any other as an
    object array of Python values; with each column's validity. A slice or a filter keeps
    the converted columns of the whole table and its rows' positions in them: a column is cut
    to those rows when a kernel first reads it (kernels read a few of the 40-odd columns)."""

    __slots__ = ("_cut", "_ranks", "_rows", "_source", "_valid", "memo", "num_rows")

    def __init__(
        self,
        columns: dict[str, np.ndarray],
        valid: dict[str, np.ndarray],
        num_rows: int,
        rows: slice | np.ndarray | None = None,
        ranks: dict[str, tuple[list[Any], np.ndarray]] | None = None,
    ) -> None:
        self._source = columns
        self._valid = valid
        # Per string column: its distinct values sorted, and each row's index among them
        # (−1: null), so that a key's codes are an integer unique, not a sort of strings.
        self._ranks = ranks or {}
        # Positions of these rows in the source arrays (None: all of them).
        self._rows = rows
        self._cut: dict[tuple[str, object], np.ndarray] = {}
        self.num_rows = num_rows
        # Values that several kernels derive from these rows (``memoized``).
        self.memo: dict[Hashable, Any] = {}

    @classmethod
    def of(cls, table: pa.Table) -> KeyRows:
        """Every column of ``table``, converted once."""
        columns: dict[str, np.ndarray] = {}
        valid: dict[str, np.ndarray] = {}
        ranks: dict[str, tuple[list[Any], np.ndarray]] = {}
        for name in table.column_names:
            column = table.column(name)
            kind = column.type
            if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind):
                numbers = pc.cast(column, pa.float64())
                columns[name] = np.asarray(numbers.to_numpy(zero_copy_only=False), dtype=float)
            else:
                columns[name] = np.asarray(column.to_numpy(zero_copy_only=False), dtype=object)
                if pa.types.is_string(kind) or pa.types.is_large_string(kind):
                    ranks[name] = _ranks(column)
            valid[name] = np.asarray(column.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            # Every kernel of the key reads these arrays: none may write to them.
            columns[name].flags.writeable = False
            valid[name].flags.writeable = False
        return cls(columns, valid, table.num_rows, ranks=ranks)

    @classmethod
    def arrays(cls, columns: dict[str, np.ndarray]) -> KeyRows:
        """Rows of numeric ``columns`` (float64; NaN reads as NaN, every value valid)."""
        converted = {name: np.array(values, dtype=float) for name, values in columns.items()}
        size = len(next(iter(converted.values()))) if converted else 0
        valid = {name: np.ones(size, dtype=bool) for name in converted}
        for array in (*converted.values(), *valid.values()):
            array.flags.writeable = False
        return cls(converted, valid, size)

    @property
    def column_names(self) -> list[str]:
        """The column names, in order."""
        return list(self._source)

    def values(self, name: str) -> np.ndarray:
        """Column ``name`` of these rows (read-only)."""
        return self._column(name, False)

    def validity(self, name: str) -> np.ndarray:
        """Whether each of these rows' ``name`` is non-null (read-only)."""
        return self._column(name, True)

    def label_ranks(self, name: str) -> tuple[list[Any], np.ndarray] | None:
        """String column ``name``'s distinct values over the whole table (sorted) and each of
        these rows' index among them (−1: null); None for a column without them."""
        if name not in self._ranks:
            return None
        values, ranks = self._ranks[name]
        return values, self._cut_of((name, "ranks"), ranks)

    def _column(self, name: str, validity: bool) -> np.ndarray:
        source = (self._valid if validity else self._source)[name]
        return self._cut_of((name, validity), source)

    def _cut_of(self, key: tuple[str, object], source: np.ndarray) -> np.ndarray:
        if self._rows is None:
            return source
        if key not in self._cut:
            cut = source[self._rows]
            cut.flags.writeable = False
            self._cut[key] = cut
        return self._cut[key]

    def slice(self, start: int, stop: int) -> KeyRows:
        """Rows start..stop−1 (of the whole table: views of its arrays)."""
        rows = slice(start, stop) if self._rows is None else self._positions()[start:stop]
        return KeyRows(self._source, self._valid, stop - start, rows, self._ranks)

    def filter(self, mask: np.ndarray) -> KeyRows:
        """The rows where ``mask`` is true."""
        rows = self._positions()[np.asarray(mask, dtype=bool)]
        return KeyRows(self._source, self._valid, int(rows.size), rows, self._ranks)

    def _positions(self) -> np.ndarray:
        """These rows' positions in the source arrays."""
        if self._rows is None:
            return np.arange(self.num_rows)
        if isinstance(self._rows, slice):
            return np.arange(self._rows.start, self._rows.stop)
        return self._rows


T = TypeVar("T")

# What a kernel reads: converted rows, or an Arrow table (converted per read).
Rows: TypeAlias = "KeyRows | pa.Table"


def key_rows(table: Rows) -> KeyRows:
    """``table`` as ``KeyRows``: an Arrow table (as the kernel tests build them) is converted
    here, on every read of it; the finishing converts a key's rows once."""
    return table if isinstance(table, KeyRows) else KeyRows.of(table)


def memoized(table: Rows, key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()``, computed once per ``KeyRows`` and ``key`` (every time for Arrow)."""
    if not isinstance(table, KeyRows):
        return compute()
    if key not in table.memo:
        table.memo[key] = compute()
    return cast(T, table.memo[key])


def select(table: Rows, mask: np.ndarray) -> KeyRows:
    """The rows of ``table`` where the boolean ``mask`` is true."""
    return key_rows(table).filter(np.asarray(mask, dtype=bool))


def is_null(table: Rows, name: str) -> np.ndarray:
    """Whether each row's ``name`` is null (every row when the column is absent)."""
    rows = key_rows(table)
    if name not in rows.column_names:
        return np.ones(rows.num_rows, dtype=bool)
    return ~rows.validity(name)


def floats(table: Rows, name: str) -> np.ndarray:
    """Column ``name`` as float64, null → NaN, a read-only view; all NaN when the table has no
    such column."""
    rows = key_rows(table)
    if name not in rows.column_names:
        return np.full(rows.num_rows, np.nan)
    return rows.values(name)


def ints(table: Rows, name: str, null: int) -> np.ndarray:
    """Column ``name`` as int64 with null → ``null`` (also when the column is absent)."""
    rows = key_rows(table)
    if name not in rows.column_names:
        return np.full(rows.num_rows, null, dtype=np.int64)
    return np.where(rows.validity(name), rows.values(name), null).astype(np.int64)


def labels(table: Rows, name: str) -> np.ndarray:
    """Column ``name`` as an object array of Python values (strings or None), read-only."""
    rows = key_rows(table)
    if name not in rows.column_names:
        return np.full(rows.num_rows, None, dtype=object)
    return rows.values(name)


def label_codes(table: Rows, name: str) -> tuple[list[Any], np.ndarray]:
    """``codes(labels(table, name))``: from the column's ranks when the rows have them."""
    rows = key_rows(table)
    found = rows.label_ranks(name)
    if found is None:
        return codes(labels(rows, name))
    values, ranks = found
    unique, inverse = np.unique(ranks, return_inverse=True)
    return [None if rank < 0 else values[rank] for rank in unique.tolist()], inverse.ravel()


def codes(values: Sequence[Any] | np.ndarray) -> tuple[list[Any], np.ndarray]:
    """The distinct values (None first, the rest sorted) and each value's index among them."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu":
        unique, inverse = np.unique(values, return_inverse=True)
        return unique.tolist(), inverse.ravel().astype(np.int64)
    distinct = sorted(set(values), key=lambda v: (v is not None, v))
    index = {value: position for position, value in enumerate(distinct)}
    return distinct, np.fromiter((index[v] for v in values), dtype=np.int64, count=len(values))


def _ranks(column: pa.ChunkedArray) -> tuple[list[Any], np.ndarray]:
    """A string column's distinct values, sorted, and each row's index among them (−1: null)."""
    encoded = pc.dictionary_encode(column).combine_chunks()
    dictionary = encoded.dictionary.to_pylist()
    order = sorted(range(len(dictionary)), key=dictionary.__getitem__)
    rank_of = np.empty(len(dictionary) + 1, dtype=np.int64)
    rank_of[np.asarray(order, dtype=np.int64)] = np.arange(len(dictionary))
    rank_of[-1] = -1
    indices = pc.fill_null(pc.cast(encoded.indices, pa.int64()), -1)
    ranks = rank_of[np.asarray(indices.to_numpy(zero_copy_only=False), dtype=np.int64)]
    ranks.flags.writeable = False
    return [dictionary[i] for i in order], ranks


def key_codes(table: pa.Table, keys: Sequence[str]) -> np.ndarray:
    """One int64 per row, equal for two rows exactly when their ``keys`` values are: the keys'
    dictionary indices (null: 0, the rest shifted by one) in mixed radix. A 1-D unique or sort
    of these is far cheaper than a row-wise one."""
    combined = np.zeros(table.num_rows, dtype=np.int64)
    for name in keys:
        column = pc.dictionary_encode(table.column(name)).combine_chunks()
        index = pc.fill_null(pc.add(pc.cast(column.indices, pa.int64()), 1), 0)
        combined = combined * (len(column.dictionary) + 1) + np.asarray(
            index.to_numpy(zero_copy_only=False), dtype=np.int64
        )
    return combined


def split_keys(table: pa.Table, keys: Sequence[str]) -> Iterator[tuple[tuple[Any, ...], KeyRows]]:
    """One (key values, rows) pair per distinct combination of the ``keys`` columns."""
    if table.num_rows == 0:
        return
    _, first, inverse = np.unique(key_codes(table, keys), return_index=True, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.cumsum(np.bincount(inverse))
    # One reordering and one conversion of the whole table, then views per key: a take or a
    # conversion per key costs a copy of every column per key.
    ordered = KeyRows.of(table.take(pa.array(order)).combine_chunks())
    start = 0
    for group, stop in enumerate(bounds):
        row = int(first[group])
        key = tuple(table.column(name)[row].as_py() for name in keys)
        yield key, ordered.slice(start, int(stop))
        start = int(stop)


def to_table(rows: Sequence[Sequence[Any]], schema: pa.Schema) -> pa.Table:
    """Output rows (tuples in ``schema``'s column order; NaN floats become null) as Arrow."""
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
    arrays = []
    for values, field in zip(columns, schema, strict=True):
        if pa.types.is_floating(field.type):
            arrays.append(_float_array(values, field.type))
        else:
            arrays.append(pa.array(list(values), type=field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _float_array(values: Sequence[Any], kind: pa.DataType) -> pa.Array:
    """Floating-point output cells as Arrow, NaN and None as null: converted by Arrow
    (``from_pandas`` reads NaN as null), or value by value when Arrow refuses one (a NumPy
    bool, say)."""
    try:
        return pa.array(values, type=kind, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        cleaned = [None if v is None or v != v else float(v) for v in values]
        return pa.array(cleaned, type=kind)
