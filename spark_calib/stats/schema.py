"""Column names of the public statistics table.

One row per (model_version, slice_name, slice_value, class, bin) for valid rows, and one row per
(model_version, slice_name, slice_value, reason) for invalid rows (bin, class and sums null).
Every measure is a sum, so statistics of disjoint inputs add up exactly to the statistics of
their union.
"""

from __future__ import annotations

MODEL_VERSION = "model_version"
SLICE_NAME = "slice_name"
SLICE_VALUE = "slice_value"
CLASS = "class"
BIN = "bin"
REASON = "reason"
N = "n"
SUM_WEIGHT = "sum_weight"
SUM_WEIGHT_CONFIDENCE = "sum_weight_confidence"
SUM_WEIGHT_CORRECT = "sum_weight_correct"
SUM_WEIGHT_BRIER = "sum_weight_brier"
SUM_WEIGHT_NLL = "sum_weight_nll"

KEY_COLUMNS = (MODEL_VERSION, SLICE_NAME, SLICE_VALUE, CLASS)
GROUP_COLUMNS = (*KEY_COLUMNS, BIN, REASON)
SUM_COLUMNS = (
    SUM_WEIGHT,
    SUM_WEIGHT_CONFIDENCE,
    SUM_WEIGHT_CORRECT,
    SUM_WEIGHT_BRIER,
    SUM_WEIGHT_NLL,
)
STATS_COLUMNS = (*GROUP_COLUMNS, N, *SUM_COLUMNS)
