"""Spark SQL text over the engine's own column names, for expressions built on every run.

Building a Column costs one JVM round trip per operation; the same expression as SQL text is
one. The library otherwise composes Column expressions only, so that no user column name or
value is ever parsed as SQL (``tests/jobs/test_input_zoo.py`` holds it to that): this module is
the one exception, and it takes SQL templates whose names are internal identifiers only.
``internal_expr`` checks every name it quotes against ``IDENTIFIER`` and refuses any other.
"""

from __future__ import annotations

import re

from pyspark.sql import Column
from pyspark.sql import functions as F

# The engine's internal column names (``_weight``, ``sum_weight``, ``_slice_0``, ...).
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def quoted(name: str) -> str:
    """``name`` as a quoted SQL identifier; ``ValueError`` unless it is an internal name."""
    if not IDENTIFIER.fullmatch(name):
        raise ValueError(f"not an internal column name: {name!r}")
    return f"`{name}`"


def internal_expr(template: str, alias: str, **names: str) -> Column:
    """``template`` with each ``{key}`` replaced by the quoted internal name ``names[key]``,
    as a Column named ``alias`` (also internal)."""
    text = template.format(**{key: quoted(name) for key, name in names.items()})
    return F.expr(f"{text} AS {quoted(alias)}")
