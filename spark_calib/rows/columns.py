"""Safe references to user column names (spaces, dots and backticks included)."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F


def input_col(name: str) -> Column:
    """``F.col`` for a user column name taken literally: a dot is part of the name, not a path."""
    return F.col("`" + name.replace("`", "``") + "`")
