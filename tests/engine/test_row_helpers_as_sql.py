"""Every row helper that builds either kind (``spark_calib.rows.internal_sql.functions_for``)
gives the same value, bit for bit, as a Column and as internal SQL text: on bin and cell
edges, 0 and 1, subnormal and near-1 scores, ties, nulls and extreme logits."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from spark_calib.rows import arrays, binning, canonical, cells, coverage
from spark_calib.rows import internal_sql as S

SCORES = [
    0.0,
    1.0,
    0.5,
    *[k / 49 for k in range(50)],
    *[k / 1000 for k in (1, 999)],
    5e-324,
    1e-300,
    1e-16,
    1.0 - 1e-16,
    1.0 - 2**-53,
    0.1 + 0.2,
    None,
]
VECTORS = [
    [0.2, 0.3, 0.5],
    [0.5, 0.5, 0.0],
    [1.0, 0.0, 0.0],
    [1e-300, 0.5, 0.5],
    [1 / 3, 1 / 3, 1 / 3],
    [-700.0, 0.0, 700.0],
    None,
]
LEVELS = [0.5, 0.9, 0.95]

# name → a helper applied to (score s, vector v, label y, weight w) of either kind.
SCALAR: dict[str, Callable[..., Any]] = {
    "bin_10_left": lambda s, v, y, w: binning.bin_index(s, 10),
    "bin_49_left": lambda s, v, y, w: binning.bin_index(s, 49),
    "bin_15_right": lambda s, v, y, w: binning.bin_index(s, 15, "right_closed"),
    "bin_49_right": lambda s, v, y, w: binning.bin_index(s, 49, "right_closed"),
    "logit": lambda s, v, y, w: cells.logit(s),
    "log_odds_cell": lambda s, v, y, w: cells.log_odds_cell(s),
    "cell_index": lambda s, v, y, w: cells.cell_index(s),
    "coverage": lambda s, v, y, w: coverage.coverage_bucket(s - 0.5, w, LEVELS),
    "array_sum": lambda s, v, y, w: arrays.array_sum(v),
    "softmax": lambda s, v, y, w: arrays.softmax(v),
    "log_softmax_at": lambda s, v, y, w: arrays.log_softmax_at(v, y),
    "log_probabilities": lambda s, v, y, w: arrays.log_probabilities(v, 1e-15),
    "first_argmax": lambda s, v, y, w: arrays.first_argmax(v),
    "one_hot": lambda s, v, y, w: arrays.one_hot_squared_error(v, y),
    "moment_terms": lambda s, v, y, w: S.functions_for(s).array(
        *canonical.moment_terms(s, y, w).values()
    ),
}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
        )
    return a == b


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_a_helper_gives_the_same_value_as_a_column_and_as_sql(
    spark: SparkSession, name: str
) -> None:
    rows = [
        (score, VECTORS[i % len(VECTORS)], i % 3, 0.25 + i % 4) for i, score in enumerate(SCORES)
    ]
    df = spark.createDataFrame(rows, "s double, v array<double>, y int, w double")
    helper = SCALAR[name]
    as_column: Column = helper(F.col("s"), F.col("v"), F.col("y"), F.col("w"))
    as_sql = helper(S.col("s"), S.col("v"), S.col("y"), S.col("w"))
    assert isinstance(as_sql, S.Sql)
    got = df.select(as_column.alias("column"), S.column(as_sql, "sql")).collect()
    assert len(got) == len(rows)
    different = [(row, a, b) for row, (a, b) in zip(rows, got, strict=True) if not _same(a, b)]
    assert not different, different[:3]
    assert any(a is not None for a, _ in got)
