"""Column names of the long ``metrics`` table every metric family writes.

Columns: model_version, slice_name, slice_value, class, metric, value, n, weight_sum.
"""

from __future__ import annotations

from spark_calib.stats import schema as stats

METRIC = "metric"
VALUE = "value"
WEIGHT_SUM = "weight_sum"
METRICS_COLUMNS = (*stats.KEY_COLUMNS, METRIC, VALUE, stats.N, WEIGHT_SUM)
