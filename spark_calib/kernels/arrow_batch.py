"""The boundary between the two layers: statistics rows as Arrow ↔ NumPy arrays.

A key's statistics reach a kernel as ``KeyRows``: each column converted from Arrow once, when a
kernel first reads it (for a group of ``applyInArrow``, or for the whole of a ``toArrow()`` on
the driver, each key a slice of it), since the kernels of a key read the same columns many
times and most of the 40-odd columns not at all. ``floats``/``ints``/
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


class Columns:
    """The columns of a statistics table as NumPy, each converted when first read: a numeric
    column as float64 with null → NaN (the statistics' integers are counts and small indices,
    exact in a double), any other as an object array of Python values; with each column's
    validity and, for a string column, its ranks. ``order`` (row positions) reorders every
    column as it is converted. The kernels read a few of the 40-odd columns, and the key
    columns' strings cost the most to convert, so none is converted before it is read."""

    __slots__ = ("_order", "_ranks", "_table", "_valid", "_values", "names")

    def __init__(
        self,
        table: pa.Table | None = None,
        order: np.ndarray | None = None,
        values: dict[str, np.ndarray] | None = None,
    ) -> None:
        self._table = table
        self._order = order
        self._values: dict[str, np.ndarray] = dict(values or {})
        self._valid: dict[str, np.ndarray] = {}
        # Per string column: its distinct values sorted, and each row's index among them
        # (−1: null), so that a key's codes are an integer unique, not a sort of strings.
        self._ranks: dict[str, tuple[list[Any], np.ndarray]] = {}
        names = table.column_names if table is not None else list(self._values)
        self.names: dict[str, None] = dict.fromkeys(names)
        if table is None:
            for name, array in self._values.items():
                self._valid[name] = _read_only(np.ones(len(array), dtype=bool))
                _read_only(array)

    def values(self, name: str) -> np.ndarray:
        """Column ``name``'s values (read-only)."""
        if name not in self._values:
            self._convert(name)
        return self._values[name]

    def valid(self, name: str) -> np.ndarray:
        """Whether each row's ``name`` is non-null (read-only)."""
        if name not in self._valid:
            self._convert(name)
        return self._valid[name]

    def ranks(self, name: str) -> tuple[list[Any], np.ndarray] | None:
        """A string column's distinct values (sorted) and each row's index among them; None
        for any other column."""
        if self._table is None or name not in self.names:
            return None
        if name not in self._ranks:
            column = self._table.column(name)
            if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
                return None
            distinct, ranks = _ranks(column)
            self._ranks[name] = (distinct, _read_only(self._ordered(ranks)))
        return self._ranks[name]

    def _convert(self, name: str) -> None:
        assert self._table is not None
        column = self._table.column(name)
        kind = column.type
        complete = column.null_count == 0
        if complete and (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            # Without nulls a number column needs no cast to fill them, and no validity mask.
            values = np.asarray(column.to_numpy(), dtype=float)
        elif pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind):
            numbers = pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False)
            values = np.asarray(numbers, dtype=float)
        else:
            values = np.asarray(column.to_numpy(zero_copy_only=False), dtype=object)
        if complete:
            valid = np.ones(len(column), dtype=bool)
        else:
            valid = np.asarray(column.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        # Every kernel of the key reads these arrays: none may write to them.
        self._values[name] = _read_only(self._ordered(values))
        self._valid[name] = _read_only(self._ordered(valid))

    def _ordered(self, array: np.ndarray) -> np.ndarray:
        return array if self._order is None else array[self._order]


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


class KeyRows:
    """Statistics rows as NumPy columns (``Columns``: each converted once, when first read). A
    slice or a filter keeps the converted columns of the whole table and its rows' positions
    in them: a column is cut to those rows when a kernel first reads it."""

    __slots__ = ("_cut", "_rows", "_source", "memo", "num_rows")

    def __init__(
        self, columns: Columns, num_rows: int, rows: slice | np.ndarray | None = None
    ) -> None:
        self._source = columns
        # Positions of these rows in the source arrays (None: all of them).
        self._rows = rows
        self._cut: dict[tuple[str, object], np.ndarray] = {}
        self.num_rows = num_rows
        # Values that several kernels derive from these rows (``memoized``).
        self.memo: dict[Hashable, Any] = {}

    @classmethod
    def of(cls, table: pa.Table, order: np.ndarray | None = None) -> KeyRows:
        """Every column of ``table`` (its rows at positions ``order`` when given), each
        converted once, when first read."""
        rows = table.num_rows if order is None else len(order)
        return cls(Columns(table, order), rows)

    @classmethod
    def arrays(cls, columns: dict[str, np.ndarray]) -> KeyRows:
        """Rows of numeric ``columns`` (float64; NaN reads as NaN, every value valid)."""
        converted = {name: np.array(values, dtype=float) for name, values in columns.items()}
        size = len(next(iter(converted.values()))) if converted else 0
        return cls(Columns(values=converted), size)

    def has(self, name: str) -> bool:
        """Whether these rows have a column ``name``."""
        return name in self._source.names

    @property
    def column_names(self) -> list[str]:
        """The column names, in order."""
        return list(self._source.names)

    def values(self, name: str) -> np.ndarray:
        """Column ``name`` of these rows (read-only)."""
        return self._cut_of((name, False), self._source.values(name))

    def validity(self, name: str) -> np.ndarray:
        """Whether each of these rows' ``name`` is non-null (read-only)."""
        return self._cut_of((name, True), self._source.valid(name))

    def label_ranks(self, name: str) -> tuple[list[Any], np.ndarray] | None:
        """String column ``name``'s distinct values over the whole table (sorted) and each of
        these rows' index among them (−1: null); None for a column without them."""
        found = self._source.ranks(name)
        if found is None:
            return None
        values, ranks = found
        return values, self._cut_of((name, "ranks"), ranks)

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
        return KeyRows(self._source, stop - start, rows)

    def filter(self, mask: np.ndarray) -> KeyRows:
        """The rows where ``mask`` is true."""
        rows = self._positions()[np.asarray(mask, dtype=bool)]
        return KeyRows(self._source, int(rows.size), rows)

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
    if not rows.has(name):
        return np.ones(rows.num_rows, dtype=bool)
    return ~rows.validity(name)


def floats(table: Rows, name: str) -> np.ndarray:
    """Column ``name`` as float64, null → NaN, a read-only view; all NaN when the table has no
    such column."""
    rows = key_rows(table)
    if not rows.has(name):
        return np.full(rows.num_rows, np.nan)
    return rows.values(name)


def ints(table: Rows, name: str, null: int) -> np.ndarray:
    """Column ``name`` as int64 with null → ``null`` (also when the column is absent), a
    read-only array computed once per ``KeyRows`` (the kernels read a key's keys a dozen
    times)."""
    rows = key_rows(table)

    def compute() -> np.ndarray:
        if not rows.has(name):
            found = np.full(rows.num_rows, null, dtype=np.int64)
        else:
            found = np.where(rows.validity(name), rows.values(name), null).astype(np.int64)
        found.flags.writeable = False
        return found

    return memoized(rows, ("ints", name, null), compute)


def labels(table: Rows, name: str) -> np.ndarray:
    """Column ``name`` as an object array of Python values (strings or None), read-only."""
    rows = key_rows(table)
    if not rows.has(name):
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


def split_keys(
    table: pa.Table, keys: Sequence[str], rows: np.ndarray | None = None
) -> Iterator[tuple[tuple[Any, ...], KeyRows]]:
    """One (key values, rows) pair per distinct combination of the ``keys`` columns, over the
    rows at positions ``rows`` (None: every row)."""
    codes = key_codes(table, keys)
    if rows is not None:
        codes = codes[rows]
    if len(codes) == 0:
        return
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    if rows is not None:
        # Positions in the table, not among the kept rows: a filter of the table would copy
        # every column, the reordering copies only those the kernels read.
        order, first = rows[order], rows[first]
    bounds = np.cumsum(np.bincount(inverse))
    # One reordering and one conversion of each column read, then views per key: a take or a
    # conversion per key costs a copy of every column per key.
    ordered = KeyRows.of(table, order)
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
