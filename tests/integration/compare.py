"""Compare output tables written by two runs: the same rows, values within a tolerance."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType

# Columns that name the run, not its result.
RUN_COLUMNS = ("run_id", "config_hash")
TOLERANCE = 1e-12


def read_table(spark: SparkSession, path: Path) -> pd.DataFrame:
    """A path-mode output table as a reader sees it (Spark's Parquet reader, run_date included),
    with every column but the doubles as strings: exact keys, whatever pandas makes of nulls."""
    frame = spark.read.parquet(str(path))
    return frame.select(
        *[
            F.col(f.name) if isinstance(f.dataType, DoubleType) else F.col(f.name).cast("string")
            for f in frame.schema.fields
        ]
    ).toPandas()


def assert_same_rows(
    actual: pd.DataFrame,
    expected: pd.DataFrame,
    *,
    what: str,
    ignore: Iterable[str] = RUN_COLUMNS,
    tolerance: float = TOLERANCE,
) -> None:
    """The same columns and rows; floating-point values equal within ``tolerance``, relative to
    the larger of 1 and the expected value (a NaN or null only matches a NaN or null)."""
    ignored = set(ignore)
    columns = [c for c in expected.columns if c not in ignored]
    assert sorted(c for c in actual.columns if c not in ignored) == sorted(columns), what
    floats = [c for c in columns if pd.api.types.is_float_dtype(expected[c])]
    keys = [c for c in columns if c not in floats]
    left = _sorted(actual[columns], keys)
    right = _sorted(expected[columns], keys)
    assert len(left) == len(right), f"{what}: {len(left)} rows, expected {len(right)}"
    assert left[keys].astype(str).equals(right[keys].astype(str)), f"{what}: keys differ"
    for column in floats:
        for index, (a, b) in enumerate(zip(left[column], right[column], strict=True)):
            if _missing(a) or _missing(b):
                assert _missing(a) and _missing(b), f"{what}.{column} row {index}: {a} vs {b}"
            else:
                bound = tolerance * max(1.0, abs(b))
                assert abs(a - b) <= bound, f"{what}.{column} row {index}: {a!r} vs {b!r}"


def _sorted(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    text = frame[keys].astype(str)
    order = text.sort_values(keys, kind="stable").index if keys else frame.index
    return frame.loc[order].reset_index(drop=True)


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA
