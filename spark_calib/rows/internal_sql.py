"""Spark SQL text over the engine's own column names, for expressions built on every run.

Building a Column costs one JVM round trip per operation (about 1 ms each, warm, with the
function lookup); the same expression as SQL text is one round trip for the whole column. The
library otherwise composes Column expressions only, so that no user column name or value is
ever parsed as SQL (``tests/jobs/test_input_zoo.py`` holds it to that): this module and
``sql_statement`` (which runs this text as one statement) are the exceptions, and their text
reads internal identifiers only.

- ``Sql`` is a Column look-alike (the operators, ``cast``, ``try_cast``, ``isNull``, ``isin``,
  ``when``/``otherwise``) whose functions below carry the names and meaning of
  ``pyspark.sql.functions``'. A row helper written against ``functions_for(x)`` builds either:
  a Column for a Column, SQL text for an ``Sql``. ``column(x, alias)`` turns the text into one
  Column at the end.

``col`` and every quoted name are checked against ``IDENTIFIER``; a string literal may hold
only ``LITERAL`` characters (``string`` writes an engine constant's backslashes as
``char(92)``); a float is written as an exact double literal. Anything else is
refused with ``ValueError``: user names and values reach SQL text only as Columns computed
first (``spark_calib.rows.canonical`` renames the input columns it reads).
"""

from __future__ import annotations

import inspect
import itertools
import math
import re
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

# The engine's internal column names (``_weight``, ``sum_weight``, ``_slice_0``, ...).
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The engine's own string constants (invalid reasons, salts, separators).
LITERAL = re.compile(r"[A-Za-z0-9_ .,:\-]*")
# Spark SQL's names of the types the engine casts to.
TYPES = {"int", "bigint", "double", "string", "boolean", "date"}


def quoted(name: str) -> str:
    """``name`` as a quoted SQL identifier; ``ValueError`` unless it is an internal name."""
    if not IDENTIFIER.fullmatch(name):
        raise ValueError(f"not an internal column name: {name!r}")
    return f"`{name}`"


class Sql:
    """An expression as Spark SQL text. Every operation returns a new ``Sql``, parenthesised,
    so text composes without precedence questions."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"Sql({self.text!r})"

    def __bool__(self) -> bool:
        raise ValueError("an Sql expression has no truth value: use &, | and ~")

    def _binary(self, operator: str, other: object) -> Sql:
        return Sql(f"({self.text} {operator} {text_of(other)})")

    def _reflected(self, operator: str, other: object) -> Sql:
        return Sql(f"({text_of(other)} {operator} {self.text})")

    def __add__(self, other: object) -> Sql:
        return self._binary("+", other)

    def __radd__(self, other: object) -> Sql:
        return self._reflected("+", other)

    def __sub__(self, other: object) -> Sql:
        return self._binary("-", other)

    def __rsub__(self, other: object) -> Sql:
        return self._reflected("-", other)

    def __mul__(self, other: object) -> Sql:
        return self._binary("*", other)

    def __rmul__(self, other: object) -> Sql:
        return self._reflected("*", other)

    def __truediv__(self, other: object) -> Sql:
        return self._binary("/", other)

    def __rtruediv__(self, other: object) -> Sql:
        return self._reflected("/", other)

    def __mod__(self, other: object) -> Sql:
        return self._binary("%", other)

    def __eq__(self, other: object) -> Sql:  # type: ignore[override]
        return self._binary("=", other)

    def __ne__(self, other: object) -> Sql:  # type: ignore[override]
        return self._binary("!=", other)

    def __lt__(self, other: object) -> Sql:
        return self._binary("<", other)

    def __le__(self, other: object) -> Sql:
        return self._binary("<=", other)

    def __gt__(self, other: object) -> Sql:
        return self._binary(">", other)

    def __ge__(self, other: object) -> Sql:
        return self._binary(">=", other)

    def __and__(self, other: object) -> Sql:
        return self._binary("AND", other)

    def __or__(self, other: object) -> Sql:
        return self._binary("OR", other)

    def __invert__(self) -> Sql:
        return Sql(f"(NOT {self.text})")

    def __neg__(self) -> Sql:
        return Sql(f"(- {self.text})")

    __hash__ = None  # type: ignore[assignment]

    def cast(self, kind: str) -> Sql:
        return Sql(f"CAST({self.text} AS {_type(kind)})")

    def try_cast(self, kind: str) -> Sql:
        return Sql(f"TRY_CAST({self.text} AS {_type(kind)})")

    def isNull(self) -> Sql:
        return Sql(f"({self.text} IS NULL)")

    def isNotNull(self) -> Sql:
        return Sql(f"({self.text} IS NOT NULL)")

    def isin(self, *values: object) -> Sql:
        return Sql(f"({self.text} IN ({', '.join(text_of(value) for value in values)}))")


class Case(Sql):
    """``when(c, v).when(…).otherwise(d)``: CASE WHEN … END (null when no branch holds and
    there is no ``otherwise``, as with Columns)."""

    __slots__ = ("branches",)

    def __init__(self, branches: tuple[tuple[str, str], ...], default: str | None = None) -> None:
        self.branches = branches
        cases = " ".join(f"WHEN {c} THEN {v}" for c, v in branches)
        tail = f" ELSE {default}" if default is not None else ""
        super().__init__(f"CASE {cases}{tail} END")

    def when(self, condition: object, value: object) -> Case:
        return Case((*self.branches, (text_of(condition), text_of(value))))

    def otherwise(self, value: object) -> Sql:
        return Case(self.branches, text_of(value))


def text_of(value: object) -> str:
    """The SQL text of an ``Sql`` or of a Python literal."""
    if isinstance(value, Sql):
        return value.text
    return lit(value).text


def _type(kind: str) -> str:
    if kind.lower() not in TYPES:
        raise ValueError(f"not a type the engine casts to: {kind!r}")
    return kind.upper()


def _double(value: float) -> str:
    """An exact double literal: ``repr`` is the shortest text that reads back as ``value``."""
    if math.isnan(value):
        return "CAST('NaN' AS DOUBLE)"
    if math.isinf(value):
        return f"CAST('{'-' if value < 0 else ''}Infinity' AS DOUBLE)"
    body = repr(math.fabs(value)) + "D"
    return f"(- {body})" if math.copysign(1.0, value) < 0 else body


# The functions, named as in ``pyspark.sql.functions``.


def col(name: str) -> Sql:
    return Sql(quoted(name))


def lit(value: object) -> Sql:
    if isinstance(value, Sql):
        return value
    if value is None:
        return Sql("NULL")
    if isinstance(value, bool):
        return Sql("TRUE" if value else "FALSE")
    if isinstance(value, int):
        return Sql(str(value) if -(2**31) <= value < 2**31 else f"{value}L")
    if isinstance(value, float):
        return Sql(_double(value))
    if isinstance(value, str) and LITERAL.fullmatch(value):
        return Sql(f"'{value}'")
    raise ValueError(f"not an internal literal: {value!r}")


def string(value: str) -> Sql:
    """An engine constant string that may hold backslashes, which ``lit`` refuses (their
    meaning in a SQL literal depends on the parser's settings): each backslash is written as
    ``char(92)``, the rest as ``lit`` pieces."""
    parts: list[str] = []
    for index, piece in enumerate(value.split("\\")):
        if index:
            parts.append("char(92)")
        if piece:
            parts.append(lit(piece).text)
    if not parts:
        return lit("")
    return Sql(parts[0]) if len(parts) == 1 else Sql(f"concat({', '.join(parts)})")


def when(condition: object, value: object) -> Case:
    return Case(((text_of(condition), text_of(value)),))


def named_struct(**fields: object) -> Sql:
    """``struct(value.alias(name), …)``: the field names are internal names."""
    pairs = ", ".join(f"'{quoted(name)[1:-1]}', {text_of(value)}" for name, value in fields.items())
    return Sql(f"named_struct({pairs})")


def typed_null(x: object) -> Sql:
    """A null of ``x``'s type, whatever the type (no type name is written)."""
    return Sql(f"CASE WHEN FALSE THEN {text_of(x)} END")


def concat(*xs: object) -> Sql:
    return _call("concat", *xs)


def concat_ws(separator: object, *xs: object) -> Sql:
    return _call("concat_ws", separator, *xs)


def coalesce(*xs: object) -> Sql:
    return _call("coalesce", *xs)


def replace(x: object, search: object, replacement: object) -> Sql:
    return _call("replace", x, search, replacement)


def element_at(x: object, index: object) -> Sql:
    return _call("element_at", x, index)


def _call(name: str, *arguments: object) -> Sql:
    return Sql(f"{name}({', '.join(text_of(argument) for argument in arguments)})")


def floor(x: object) -> Sql:
    return _call("floor", x)


def ceil(x: object) -> Sql:
    return _call("ceil", x)


def least(*xs: object) -> Sql:
    return _call("least", *xs)


def greatest(*xs: object) -> Sql:
    return _call("greatest", *xs)


def log(x: object) -> Sql:
    """The natural logarithm (``F.log`` with one argument)."""
    return _call("ln", x)


def log1p(x: object) -> Sql:
    return _call("log1p", x)


def exp(x: object) -> Sql:
    return _call("exp", x)


def sqrt(x: object) -> Sql:
    return _call("sqrt", x)


def pow(x: object, y: object) -> Sql:
    return _call("power", x, y)


def abs(x: object) -> Sql:
    return _call("abs", x)


def isnan(x: object) -> Sql:
    return _call("isnan", x)


def array(*xs: object) -> Sql:
    return _call("array", *xs)


def array_max(x: object) -> Sql:
    return _call("array_max", x)


def array_min(x: object) -> Sql:
    return _call("array_min", x)


def array_position(x: object, value: object) -> Sql:
    return _call("array_position", x, value)


def array_repeat(x: object, count: object) -> Sql:
    return _call("array_repeat", x, count)


def size(x: object) -> Sql:
    return _call("size", x)


def get(x: object, index: object) -> Sql:
    return _call("get", x, index)


_variables = itertools.count()


def _lambda(function: Callable[..., object], arity: int | None = None) -> str:
    """``x_1 -> body`` or ``(x_1, x_2) -> body``: fresh variable names, so nested lambdas never
    shadow."""
    count = arity if arity is not None else len(inspect.signature(function).parameters)
    names = [f"x_{next(_variables)}" for _ in range(count)]
    body = function(*[Sql(name) for name in names])
    # Spark's grammar: one variable bare, several in parentheses.
    head = names[0] if count == 1 else f"({', '.join(names)})"
    return f"{head} -> {text_of(body)}"


def transform(x: object, function: Callable[..., object]) -> Sql:
    return Sql(f"transform({text_of(x)}, {_lambda(function)})")


def exists(x: object, function: Callable[[Sql], object]) -> Sql:
    return Sql(f"exists({text_of(x)}, {_lambda(function, 1)})")


def zip_with(x: object, y: object, function: Callable[[Sql, Sql], object]) -> Sql:
    return Sql(f"zip_with({text_of(x)}, {text_of(y)}, {_lambda(function, 2)})")


def aggregate(x: object, initial: object, merge: Callable[[Sql, Sql], object]) -> Sql:
    return Sql(f"aggregate({text_of(x)}, {text_of(initial)}, {_lambda(merge, 2)})")


def functions_for(x: object) -> Any:
    """This module for an ``Sql``, ``pyspark.sql.functions`` for anything else: a helper
    that takes either builds the same formula in the same kind."""
    return _THIS if isinstance(x, Sql) else F


_THIS: ModuleType = sys.modules[__name__]


def column(x: Sql, alias: str) -> Column:
    """The text as one Column named ``alias`` (an internal name)."""
    return F.expr(f"{x.text} AS {quoted(alias)}")


def inline(x: Sql) -> Column:
    """``F.inline(x)``: one row per struct of the array ``x``, its fields as columns."""
    return F.expr(f"inline({x.text})")
