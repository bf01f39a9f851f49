"""Column names of the long ``metrics`` table every metric family writes, and the last step
every family's rows go through.

Columns: model_version, slice_name, slice_value, class, metric, value, n, weight_sum,
error_bound (the documented bound on |value − exact value| of a binned approximation; null for
exact values), se (the standard error), ci_lower, ci_upper (the interval at
``uncertainty.level``) and n_eff ((Σw)²/Σw² of the slice key), added by
``spark_calib.metrics.uncertainty``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_calib.stats import schema as stats

METRIC = "metric"
VALUE = "value"
WEIGHT_SUM = "weight_sum"
ERROR_BOUND = "error_bound"
SE = "se"
CI_LOWER = "ci_lower"
CI_UPPER = "ci_upper"
N_EFF = "n_eff"
# What every family builds; ``defined_values`` adds ``error_bound`` where a family has none.
FAMILY_COLUMNS = (*stats.KEY_COLUMNS, METRIC, VALUE, stats.N, WEIGHT_SUM)
METRICS_COLUMNS = (*FAMILY_COLUMNS, ERROR_BOUND)
# The metrics table: every family's columns, then the uncertainty columns.
TABLE_COLUMNS = (*METRICS_COLUMNS, SE, CI_LOWER, CI_UPPER, N_EFF)
# The one metric whose value is not a ratio over the weights: n itself.
COUNT_METRIC = "count"


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
