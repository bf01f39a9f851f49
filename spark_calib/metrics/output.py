"""The long ``metrics`` table's columns (``spark_calib.kernels.output_columns``), and the last
step every family's Spark-expression rows go through.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_calib.kernels.output_columns import (
    CI_LOWER,
    CI_UPPER,
    COUNT_METRIC,
    ERROR_BOUND,
    FAMILY_COLUMNS,
    METRIC,
    METRICS_COLUMNS,
    N_EFF,
    SE,
    TABLE_COLUMNS,
    VALUE,
    WEIGHT_SUM,
)

__all__ = [
    "CI_LOWER",
    "CI_UPPER",
    "COUNT_METRIC",
    "ERROR_BOUND",
    "FAMILY_COLUMNS",
    "METRIC",
    "METRICS_COLUMNS",
    "N_EFF",
    "SE",
    "TABLE_COLUMNS",
    "VALUE",
    "WEIGHT_SUM",
    "defined_values",
]


def defined_values(metrics: DataFrame) -> DataFrame:
    """``metrics`` (``METRICS_COLUMNS`` and ``se``, null where a family has none) with a value
    that double precision cannot represent set to null.

    Rows are validated finite, but a sum over them can still overflow (weights or targets near
    1e308): then W = Σw is infinite and every ratio over it meaningless (ECE = finite/∞ = 0),
    and ∞ − ∞ or ∞/∞ give NaN, which Spark sorts above every number and would put first in a
    "worst slices" query. Such values become null, as for a zero denominator; ``count`` keeps n.
    """
    value = F.col(VALUE)
    overflowed = F.isnan(value) | (
        (F.abs(F.col(WEIGHT_SUM)) == F.lit(float("inf"))) & (F.col(METRIC) != COUNT_METRIC)
    )
    bound = F.col(ERROR_BOUND) if ERROR_BOUND in metrics.columns else F.lit(None).cast("double")
    se = F.col(SE) if SE in metrics.columns else F.lit(None).cast("double")
    kept = ~F.coalesce(overflowed, F.lit(False))
    return metrics.withColumn(VALUE, F.when(kept, value)).select(
        *FAMILY_COLUMNS, bound.alias(ERROR_BOUND), F.when(kept, se).alias(SE)
    )
