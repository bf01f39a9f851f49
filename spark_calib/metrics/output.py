"""Column names of the long ``metrics`` table every metric family writes, and the last step
every family's rows go through.

Columns: model_version, slice_name, slice_value, class, metric, value, n, weight_sum,
error_bound (the documented bound on |value − exact value| of a binned approximation; null for
exact values).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_calib.stats import schema as stats

METRIC = "metric"
VALUE = "value"
WEIGHT_SUM = "weight_sum"
ERROR_BOUND = "error_bound"
# What every family builds; ``defined_values`` adds ``error_bound`` where a family has none.
FAMILY_COLUMNS = (*stats.KEY_COLUMNS, METRIC, VALUE, stats.N, WEIGHT_SUM)
METRICS_COLUMNS = (*FAMILY_COLUMNS, ERROR_BOUND)
# The one metric whose value is not a ratio over the weights: n itself.
COUNT_METRIC = "count"


def defined_values(metrics: DataFrame) -> DataFrame:
    """``metrics`` with a value that double precision cannot represent set to null.

    Rows are validated finite, but a sum over them can still overflow (weights or targets near
    1e308): then W = Σw is infinite and every ratio over it meaningless (ECE = finite/∞ = 0),
    and ∞ − ∞ or ∞/∞ give NaN, which Spark sorts above every number and would put first in a
    "worst slices" query. Such values become null, as for a zero denominator; ``count`` keeps n.
    """
    value = F.col(VALUE)
    overflowed = F.isnan(value) | (
        (F.abs(F.col(WEIGHT_SUM)) == F.lit(float("inf"))) & (F.col(METRIC) != COUNT_METRIC)
    )
    bound = (
        F.col(ERROR_BOUND) if ERROR_BOUND in metrics.columns else F.lit(None).cast("double")
    )
    return metrics.withColumn(VALUE, F.when(~F.coalesce(overflowed, F.lit(False)), value)).select(
        *FAMILY_COLUMNS, bound.alias(ERROR_BOUND)
    )
