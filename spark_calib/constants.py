"""Named defaults of the metric contract (README, "Metric definitions")."""

from __future__ import annotations

DEFAULT_N_BINS = 15
DEFAULT_THRESHOLD = 0.5
# Probabilities are clipped at LOG_EPS before the log so that a confident wrong answer costs
# -log(1e-15) ≈ 34.5 instead of infinity (the scikit-learn log_loss convention for float64).
LOG_EPS = 1e-15
# Tolerance on |Σ_k p_k − 1| for a probability vector to count as normalised.
DEFAULT_SUM_TOLERANCE = 1e-6
DEFAULT_MAX_INVALID_FRACTION = 0.0

OVERALL_SLICE_NAME = "overall"
# slice_value of the overall slice: it has no columns, so its value list is empty.
OVERALL_SLICE_VALUE = ""
SLICE_SEPARATOR = ","
SLICE_ESCAPE = "\\"
# How a null slice value is written in slice_value (Hive's text-format null marker).
SLICE_NULL_TOKEN = "\\N"

# With auto strategy, aggregate once at the full cross of slice columns when there are at most
# this many distinct slice columns; above it, GROUPING SETS avoids a huge finest-grain table.
FINEST_GRAIN_MAX_COLUMNS = 3
