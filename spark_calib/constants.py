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
# Binary decision and ranking metrics: the threshold_metrics thresholds and the ROC table's
# point budget per slice.
DEFAULT_THRESHOLDS = (0.5,)
DEFAULT_ROC_POINTS = 200
# Regression: central normal interval levels of the coverage metric, and the 19 levels
# 0.05..0.95 of the regression calibration table (and miscalibration_area).
DEFAULT_COVERAGE_LEVELS = (0.5, 0.8, 0.9, 0.95)
REGRESSION_CALIBRATION_LEVELS = tuple(round(0.05 * k, 2) for k in range(1, 20))

# The fine-cell grid of the statistics (``spark_calib.rows.cells``): part of ``config_hash``,
# so statistics kept on another grid never sum with these.
CELL_GRID_VERSION = 2
# How the statistics keep a binary label, also part of ``config_hash``: 1 grouped by it
# (``true_class``); 2 sums it (``n_positive``, ``sum_weight_positive``, …), so the two never sum.
STATS_LABEL_VERSION = 2
# logit(s) is clipped here (s = 0 and s = 1 stay finite: |logit| of the doubles next to 0 and 1
# is below 37), and the log-odds cells span [−LOGIT_CLIP, LOGIT_CLIP].
LOGIT_CLIP = 37.0

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

# Monitoring (drift and alerts): a change is significant when |Δ| ≥ DEFAULT_MIN_DELTA and
# |Δ| / SE(Δ) ≥ DEFAULT_Z, and only for slices with at least DEFAULT_MIN_N rows in both windows;
# alert rules ignore slices with fewer than DEFAULT_MIN_N rows unless they set min_n.
DEFAULT_MIN_DELTA = 0.01
DEFAULT_Z = 3.0
DEFAULT_MIN_N = 1000
# Slices with fewer rows stay in the tables but out of the worst-slice rankings.
DEFAULT_MIN_SLICE_ROWS = 100

# Recalibration: a slice with fewer fit rows than this takes its model version's overall map.
DEFAULT_MIN_FIT_ROWS = 1000
# The temperature is searched in [T_MIN, T_MAX] (as Guo et al.'s and scikit-learn's searches,
# bounded so an all-one-label slice cannot send it to 0 or ∞).
TEMPERATURE_MIN = 0.05
TEMPERATURE_MAX = 20.0
# Multiclass temperature: at most about this many fit rows per model version, chosen by a hash
# (``spark_calib.recalibration.temperature_fit``); T is one parameter, and its standard error
# from a million rows is far below any difference that matters.
DEFAULT_MAX_FIT_ROWS = 1_000_000

# The session setting that replaces spark_calib.metrics.finish.DRIVER_MAX_ROWS (statistics rows
# finished on the driver): where the executors share the driver's machine (the job layer's
# embedded local session sets it), finishing there is faster at any size its heap holds.
DRIVER_MAX_ROWS_CONF = "spark.calib.driverMaxRows"
