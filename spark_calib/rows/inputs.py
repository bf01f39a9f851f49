"""The input columns that the row terms read, renamed to internal names in a first projection.

The row terms are internal SQL text (``spark_calib.rows.internal_sql``), one JVM round trip per
column; SQL text never names a user column. So each input column a term reads, and each value
that needs a user value (a class name, the fit column's value), is first selected as a Column
under an internal name, and the terms read those names.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column

from spark_calib.rows import internal_sql as S
from spark_calib.rows.columns import input_col


class Inputs:
    """The first projection's columns: ``ref`` a user column, ``computed`` any Column of the
    input; each returns the internal name's ``Sql``. The names are ``<prefix>0``, ``<prefix>1``,
    … with a prefix (``_in_``, lengthened with ``_``) that no column of ``taken`` starts with,
    so the input's own columns can stay beside them."""

    def __init__(self, taken: Sequence[str] = ()) -> None:
        prefix = "_in_"
        while any(name.startswith(prefix) for name in taken):
            prefix += "_"
        self._prefix = prefix
        self._columns: dict[str, Column] = {}
        self._names: dict[str, str] = {}

    def _add(self, column: Column) -> str:
        name = f"{self._prefix}{len(self._columns)}"
        self._columns[name] = column
        return name

    def ref(self, name: str) -> S.Sql:
        """The user column ``name`` (taken literally: a dot is part of the name)."""
        if name not in self._names:
            self._names[name] = self._add(input_col(name))
        return S.col(self._names[name])

    def computed(self, column: Column) -> S.Sql:
        """A Column of the input, for what SQL text may not spell (user values)."""
        return S.col(self._add(column))

    def projection(self) -> list[Column]:
        """The columns to select before the terms, each under its internal name."""
        return [column.alias(name) for name, column in self._columns.items()]
