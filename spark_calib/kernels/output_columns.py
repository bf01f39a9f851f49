"""Column names and Arrow types of the long ``metrics`` table, which the kernels produce.

Columns: model_version, slice_name, slice_value, class, metric, value, n, weight_sum,
error_bound (the documented bound on |value − exact value| of a binned approximation; null for
exact values), se (the standard error), ci_lower, ci_upper (the interval at
``uncertainty.level``) and n_eff ((Σw)²/Σw² of the slice key).
"""

from __future__ import annotations

import pyarrow as pa

from spark_calib.stats.schema import CLASS, KEY_COLUMNS, MODEL_VERSION, SLICE_NAME, SLICE_VALUE, N

METRIC = "metric"
VALUE = "value"
WEIGHT_SUM = "weight_sum"
ERROR_BOUND = "error_bound"
SE = "se"
CI_LOWER = "ci_lower"
CI_UPPER = "ci_upper"
N_EFF = "n_eff"
# What every family builds; ``defined_values`` adds ``error_bound`` where a family has none.
FAMILY_COLUMNS = (*KEY_COLUMNS, METRIC, VALUE, N, WEIGHT_SUM)
METRICS_COLUMNS = (*FAMILY_COLUMNS, ERROR_BOUND)
# The metrics table: every family's columns, then the uncertainty columns.
TABLE_COLUMNS = (*METRICS_COLUMNS, SE, CI_LOWER, CI_UPPER, N_EFF)
# The one metric whose value is not a ratio over the weights: n itself.
COUNT_METRIC = "count"

_STRING = (MODEL_VERSION, SLICE_NAME, SLICE_VALUE, CLASS, METRIC)
METRICS_ARROW_SCHEMA = pa.schema(
    [
        pa.field(
            name, pa.string() if name in _STRING else pa.int64() if name == N else pa.float64()
        )
        for name in TABLE_COLUMNS
    ]
)

# The reliability table (``spark_calib.kernels.reliability``).
RELIABILITY_COLUMNS = (
    *KEY_COLUMNS,
    "bin",
    "bin_lower",
    "bin_upper",
    "n",
    "weight_sum",
    "mean_confidence",
    "accuracy",
    "gap",
    "n_eff",
    "ci_lower",
    "ci_upper",
)
_INTEGER = {"bin": pa.int32(), N: pa.int64()}
RELIABILITY_ARROW_SCHEMA = pa.schema(
    [
        pa.field(
            name,
            pa.string() if name in _STRING else _INTEGER.get(name, pa.float64()),
        )
        for name in RELIABILITY_COLUMNS
    ]
)

_SPARK_TYPES = {
    pa.string(): "string",
    pa.int64(): "bigint",
    pa.int32(): "int",
    pa.float64(): "double",
    pa.bool_(): "boolean",
}


def spark_ddl(schema: pa.Schema) -> str:
    """``schema`` as a Spark DDL string (for ``applyInArrow`` and local frames)."""
    return ", ".join(f"`{field.name}` {_SPARK_TYPES[field.type]}" for field in schema)
