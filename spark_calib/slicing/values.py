"""Slice names and the unambiguous slice_value encoding.

``slice_name`` is ``overall`` for the empty slice, else the slice's column names joined by ``,``
in config order. ``slice_value`` is ``""`` for the overall slice, else the values cast to string,
each with ``\\`` written as ``\\\\`` and ``,`` as ``\\,``, a null written as ``\\N``, joined
by ``,``.
Splitting on unescaped commas and unescaping gives back the values, so the encoding is
unambiguous even for values that contain the separator, the escape, or the text ``\\N``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pyspark.sql import Column
from pyspark.sql import functions as F

from spark_calib.constants import (
    OVERALL_SLICE_NAME,
    OVERALL_SLICE_VALUE,
    SLICE_ESCAPE,
    SLICE_NULL_TOKEN,
    SLICE_SEPARATOR,
)
from spark_calib.rows import internal_sql as S
from spark_calib.rows.internal_sql import functions_for

E = TypeVar("E", Column, S.Sql)


def escape_text(text: str) -> str:
    """Escape one name or value in Python (the same rule as ``slice_value_expression``)."""
    return text.replace(SLICE_ESCAPE, SLICE_ESCAPE * 2).replace(
        SLICE_SEPARATOR, SLICE_ESCAPE + SLICE_SEPARATOR
    )


def slice_name(columns: Sequence[str]) -> str:
    """``overall`` for ``[]``, else the escaped column names joined by ``,``."""
    if not columns:
        return OVERALL_SLICE_NAME
    return SLICE_SEPARATOR.join(escape_text(name) for name in columns)


def slice_value_expression(values: Sequence[E]) -> E:
    """The encoded slice_value of a row whose slice columns are ``values`` (any atomic type;
    Columns, or internal SQL text, and the result of the same kind)."""
    if not values:
        return F.lit(OVERALL_SLICE_VALUE)  # type: ignore[return-value]
    fn = functions_for(values[0])
    encoded = [
        fn.coalesce(_escape(value.cast("string")), _string(fn, SLICE_NULL_TOKEN))
        for value in values
    ]
    # F.concat_ws takes its separator as a Python string.
    separator = S.string(SLICE_SEPARATOR) if fn is S else SLICE_SEPARATOR
    return fn.concat_ws(separator, *encoded)


def decode_slice_value(encoded: str, n_columns: int) -> list[str | None]:
    """Inverse of the encoding for a slice of ``n_columns`` columns (for reports and tests)."""
    if n_columns == 0:
        return []
    values: list[str | None] = []
    current: list[str] = []
    is_null = False
    index = 0
    while index < len(encoded):
        char = encoded[index]
        if char == SLICE_ESCAPE:
            following = encoded[index + 1]
            if SLICE_ESCAPE + following == SLICE_NULL_TOKEN:
                is_null = True
            else:
                current.append(following)
            index += 2
        elif char == SLICE_SEPARATOR:
            values.append(None if is_null else "".join(current))
            current, is_null = [], False
            index += 1
        else:
            current.append(char)
            index += 1
    values.append(None if is_null else "".join(current))
    return values


def _escape(value: E) -> E:
    fn = functions_for(value)
    doubled = fn.replace(value, _string(fn, SLICE_ESCAPE), _string(fn, SLICE_ESCAPE * 2))
    return fn.replace(
        doubled, _string(fn, SLICE_SEPARATOR), _string(fn, SLICE_ESCAPE + SLICE_SEPARATOR)
    )


def _string(fn: Any, value: str) -> Any:
    """A constant string of the encoding: a Column literal, or internal SQL text (whose
    backslashes ``internal_sql.string`` writes as ``char(92)``)."""
    return S.string(value) if fn is S else F.lit(value)
