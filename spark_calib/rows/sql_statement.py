"""A chain of projections and groupings over one frame, written as nested sub-selects of
internal SQL text (``spark_calib.rows.internal_sql``) and run as one ``spark.sql`` statement.

Each DataFrame transformation costs JVM round trips (about 1 ms each with the function lookup,
five or more per column) and an analysis of the new plan; a chain of them, built on every
``evaluate``, cost more than the small statistics it computes (docs/development.md). As one
statement, the chain is a few round trips and one analysis, whatever its columns.

User strings (slice column names, class names) never enter the text: ``Params`` binds them as
named parameters (``:p0``, …), which Spark reads as literals.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from pyspark.sql import DataFrame

from spark_calib.rows.internal_sql import Sql, quoted, text_of

# The frame the statement reads, as ``spark.sql``'s formatter names it.
FRAME = "{frame}"

# A column kept under its name, or (an expression, its internal alias).
Item = str | tuple[object, str]


@dataclass(frozen=True)
class Relation:
    """One step of the statement: its SQL text (``FRAME`` or a SELECT) and its columns."""

    text: str
    columns: tuple[str, ...]


def source(frame: DataFrame) -> Relation:
    """The frame itself, the statement's one input."""
    return Relation(FRAME, tuple(frame.columns))


def select(
    relation: Relation,
    items: Sequence[Item],
    generator: Sql | None = None,
    generated: Sequence[str] = (),
) -> Relation:
    """SELECT ``items`` (and ``generator``, a generator such as ``inline``, whose output
    columns are ``generated``) FROM ``relation``."""
    parts = [_item(item) for item in items]
    texts = [text for text, _ in parts] + ([generator.text] if generator is not None else [])
    return Relation(
        f"SELECT {', '.join(texts)} FROM {_from(relation)}",
        (*[alias for _, alias in parts], *generated),
    )


def group_by(relation: Relation, keys: Sequence[str], items: Sequence[Item]) -> Relation:
    """SELECT ``keys``, ``items`` (aggregates or constants) FROM ``relation`` GROUP BY
    ``keys``."""
    parts = [_item(item) for item in items]
    key_text = ", ".join(quoted(key) for key in keys)
    return Relation(
        f"SELECT {key_text}, {', '.join(text for text, _ in parts)} "
        f"FROM {_from(relation)} GROUP BY {key_text}",
        (*keys, *[alias for _, alias in parts]),
    )


@dataclass
class Params:
    """The statement's bound parameters: each user string gets a marker, never a place in
    the text."""

    values: dict[str, str] = field(default_factory=dict)

    def bind(self, value: str) -> Sql:
        """A parameter marker whose value is ``value``."""
        name = f"p{len(self.values)}"
        self.values[name] = value
        return Sql(f":{name}")

    def bind_strings(self, values: Sequence[str]) -> Sql:
        """An ``array<string>`` of ``values``: one parameter (their JSON), parsed once."""
        return Sql(f"from_json({self.bind(json.dumps(list(values))).text}, 'array<string>')")


def run(frame: DataFrame, relation: Relation, params: Params | None = None) -> DataFrame:
    """``relation`` as one ``spark.sql`` statement over ``frame``, its ``params`` bound."""
    # The formatter reads braces: the only ones in the text are FRAME's (internal SQL text
    # and its literals have none).
    if relation.text.count("{") != relation.text.count(FRAME):
        raise ValueError("a statement's text holds no brace but the frame's")
    values = params.values if params is not None and params.values else None
    return frame.sparkSession.sql(relation.text, args=values, frame=frame)


def _item(item: Item) -> tuple[str, str]:
    if isinstance(item, str):
        return quoted(item), item
    expression, alias = item
    return f"{text_of(expression)} AS {quoted(alias)}", alias


def _from(relation: Relation) -> str:
    return relation.text if relation.text == FRAME else f"({relation.text})"
