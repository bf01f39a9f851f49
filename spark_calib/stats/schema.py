"""Column names of the public statistics table.

One row per (model_version, slice_name, slice_value, class, true_class, predicted_class, bin,
cell, threshold_bin, bucket, recalibration_fit) for valid rows, and one row per
(model_version, slice_name, slice_value, reason) for invalid rows (the other keys and the sums
null). Which keys are set depends on the task and the requested metrics:

- ``class`` null: the top-label (or regression) statistics of each row; ``class`` = k: the
  one-vs-rest statistics of class k (``classwise_ece``), binned on p_k.
- ``bin``: the confidence bin (classification) or the coverage bucket (regression with σ).
- ``true_class``/``predicted_class``: the confusion cell (decision metrics, multiclass and
  top-label; a binary task has ``predicted_class`` alone and sums its label, below).
- ``cell``/``threshold_bin``: the fine cells of the binary score (``spark_calib.rows.cells``;
  grid version ``CELL_GRID_VERSION``) or the threshold counts. Recalibration keeps the cells
  apart by label too (``true_class``).
- Binary label sums (with decision, cell, threshold or exact ranking metrics): ``n_positive``
  Σy (a count), ``sum_weight_positive`` Σw·y and ``sum_weight_positive_nll`` Σw·y·nll; the
  negatives are the row's n, Σw and Σw·nll minus them. Summing the label instead of grouping
  by it halves the cell rows of a binary key.

Calibration sums (classification): with c the calibration probability of an item (binary:
the score s by default, ``binary_view: top_label`` max(s, 1 − s); multiclass and top-label:
the confidence; class items: p_k) and o its outcome (binary: y, or correct in the top-label
view; otherwise correct; class items: [y = k]): ``sum_weight_confidence`` Σw·c,
``sum_weight_outcome`` Σw·o, ``sum_weight_correct`` Σw·correct (accuracy), ``sum_weight_sq``
Σw², ``sum_weight_confidence_sq`` Σw·c², ``sum_weight_confidence_outcome`` Σw·c·o and
``sum_weight_sq_spiegelhalter`` Σw²(1 − 2c)²c(1 − c); on cell rows ``sum_weight_logit``
Σw·logit(s) (clipped to ±37). Second moments for the standard errors
(``spark_calib.metrics.uncertainty``): ``sum_weight_sq_<x>`` = Σw²·x for x in outcome,
confidence, confidence_sq (c²), confidence_outcome (c·o), correct, brier, brier_sq, nll and
nll_sq.

``bucket``: the row's jackknife bucket (``uncertainty.method: jackknife``; null otherwise), a
key like the others, so a window's bucket g is the sum of its days' bucket g.

Every measure is a sum, so statistics of disjoint inputs add up exactly to the statistics of
their union. Sums a task or config does not use are null.
"""

from __future__ import annotations

MODEL_VERSION = "model_version"
SLICE_NAME = "slice_name"
SLICE_VALUE = "slice_value"
CLASS = "class"
TRUE_CLASS = "true_class"
PREDICTED_CLASS = "predicted_class"
BIN = "bin"
CELL = "cell"
THRESHOLD_BIN = "threshold_bin"
RECALIBRATION_FIT = "recalibration_fit"
REASON = "reason"
N = "n"
N_POSITIVE = "n_positive"
SUM_WEIGHT = "sum_weight"
SUM_WEIGHT_CONFIDENCE = "sum_weight_confidence"
SUM_WEIGHT_CORRECT = "sum_weight_correct"
SUM_WEIGHT_OUTCOME = "sum_weight_outcome"
SUM_WEIGHT_SQ = "sum_weight_sq"
SUM_WEIGHT_CONFIDENCE_SQ = "sum_weight_confidence_sq"
SUM_WEIGHT_CONFIDENCE_OUTCOME = "sum_weight_confidence_outcome"
SUM_WEIGHT_SQ_SPIEGELHALTER = "sum_weight_sq_spiegelhalter"
SUM_WEIGHT_LOGIT = "sum_weight_logit"
SUM_WEIGHT_POSITIVE = "sum_weight_positive"
SUM_WEIGHT_POSITIVE_NLL = "sum_weight_positive_nll"
SUM_WEIGHT_BRIER = "sum_weight_brier"
SUM_WEIGHT_NLL = "sum_weight_nll"
SUM_WEIGHT_COST = "sum_weight_cost"
SUM_WEIGHT_TARGET = "sum_weight_target"
SUM_WEIGHT_TARGET_SQ = "sum_weight_target_sq"
SUM_WEIGHT_SQ_ERROR = "sum_weight_sq_error"
SUM_WEIGHT_ABS_ERROR = "sum_weight_abs_error"
SUM_WEIGHT_GAUSSIAN_NLL = "sum_weight_gaussian_nll"
SUM_WEIGHT_SQ_OUTCOME = "sum_weight_sq_outcome"
SUM_WEIGHT_SQ_CONFIDENCE = "sum_weight_sq_confidence"
SUM_WEIGHT_SQ_CONFIDENCE_SQ = "sum_weight_sq_confidence_sq"
SUM_WEIGHT_SQ_CONFIDENCE_OUTCOME = "sum_weight_sq_confidence_outcome"
SUM_WEIGHT_SQ_CORRECT = "sum_weight_sq_correct"
SUM_WEIGHT_SQ_BRIER = "sum_weight_sq_brier"
SUM_WEIGHT_SQ_BRIER_SQ = "sum_weight_sq_brier_sq"
SUM_WEIGHT_SQ_NLL = "sum_weight_sq_nll"
SUM_WEIGHT_SQ_NLL_SQ = "sum_weight_sq_nll_sq"
BUCKET = "bucket"

KEY_COLUMNS = (MODEL_VERSION, SLICE_NAME, SLICE_VALUE, CLASS)
SLICE_KEY_COLUMNS = (MODEL_VERSION, SLICE_NAME, SLICE_VALUE)
GROUP_COLUMNS = (
    *KEY_COLUMNS,
    TRUE_CLASS,
    PREDICTED_CLASS,
    BIN,
    CELL,
    THRESHOLD_BIN,
    BUCKET,
    RECALIBRATION_FIT,
    REASON,
)
SUM_COLUMNS = (
    SUM_WEIGHT,
    SUM_WEIGHT_CONFIDENCE,
    SUM_WEIGHT_CORRECT,
    SUM_WEIGHT_BRIER,
    SUM_WEIGHT_NLL,
    SUM_WEIGHT_COST,
    SUM_WEIGHT_TARGET,
    SUM_WEIGHT_TARGET_SQ,
    SUM_WEIGHT_SQ_ERROR,
    SUM_WEIGHT_ABS_ERROR,
    SUM_WEIGHT_GAUSSIAN_NLL,
    SUM_WEIGHT_OUTCOME,
    SUM_WEIGHT_SQ,
    SUM_WEIGHT_CONFIDENCE_SQ,
    SUM_WEIGHT_CONFIDENCE_OUTCOME,
    SUM_WEIGHT_SQ_SPIEGELHALTER,
    SUM_WEIGHT_LOGIT,
    SUM_WEIGHT_POSITIVE,
    SUM_WEIGHT_POSITIVE_NLL,
    SUM_WEIGHT_SQ_OUTCOME,
    SUM_WEIGHT_SQ_CONFIDENCE,
    SUM_WEIGHT_SQ_CONFIDENCE_SQ,
    SUM_WEIGHT_SQ_CONFIDENCE_OUTCOME,
    SUM_WEIGHT_SQ_CORRECT,
    SUM_WEIGHT_SQ_BRIER,
    SUM_WEIGHT_SQ_BRIER_SQ,
    SUM_WEIGHT_SQ_NLL,
    SUM_WEIGHT_SQ_NLL_SQ,
)
# The summed columns: the two counts and the weighted sums.
MEASURE_COLUMNS = (N, N_POSITIVE, *SUM_COLUMNS)
STATS_COLUMNS = (*GROUP_COLUMNS, *MEASURE_COLUMNS)
