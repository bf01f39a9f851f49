"""The explicit registry of metric names: what each computes, for which tasks, from which
statistics (its family), and which optional config it needs.

Calibration-family metrics are Column expressions over the per-key sums built in
``spark_calib.metrics.compute`` (``_n``, ``_w`` = W, ``_abs_gap`` = Σ_b |S_b|, ``_max_gap``,
``_sq_gap`` = Σ_b S_b²/W_b, ``_brier``, ``_nll``, ``_correct``, ``_cost``), where
S_b = Σ_{i∈b} w_i (correct_i − conf_i). The other families are computed by their own modules
(``decision``, ``ranking``, ``exact_ranking``, ``regression``) from the names alone; entries of
kind ``table`` produce an output table instead of metric rows. ``drift`` and ``row_terms`` tell
the monitoring and row layers what a name needs, so no code outside this table branches on a
metric's name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F

from spark_calib.errors import ConfigError

# Families: which statistics a metric reads.
CALIBRATION = "calibration"  # top-label bins (class null)
PER_CLASS = "per_class"  # one-vs-rest bins per class
CONFUSION = "confusion"  # true × predicted class cells
CELLS = "cells"  # fine cells of the binary score by label (binned AUC, ROC)
CELL_CALIBRATION = "cell_calibration"  # calibration metrics of the fine cells (KS, HL, Cox)
SMOOTH = "smooth"  # smooth ECE from the cells' node sums (a small collect to the driver)
THRESHOLDS = "thresholds"  # binary counts per configured threshold
EXACT_RANKING = "exact_ranking"  # an extra pass over the input, per distinct score
REGRESSION = "regression"  # regression sums and interval-coverage buckets

CLASSIFICATION_TASKS = frozenset({"binary", "multiclass", "top_label"})
PROBABILISTIC_TASKS = frozenset({"binary", "multiclass"})
BINARY = frozenset({"binary"})
REGRESSION_TASK = frozenset({"regression"})
ALL_TASKS = CLASSIFICATION_TASKS | REGRESSION_TASK


@dataclass(frozen=True)
class MetricSpec:
    """One metric name.

    ``value`` builds the Column of a calibration-family metric from the per-key sums (None for
    the other families, whose module computes every name of the family); ``table`` names the
    ``EvaluationResult`` field of the output table a name produces (None: a metrics row);
    ``requires`` names optional config it needs (``Config.features()``); ``drift`` says the
    drift table (and so a change alert rule) covers it; ``row_terms`` names the optional
    per-row terms (``RowNeeds`` fields) it adds beyond its family's; ``noise`` False marks a
    value that is not an estimate (``count``: no standard error under any method); ``se``
    builds its analytic standard error from the same per-key sums (None: no closed form,
    ``se`` is null under ``uncertainty.method: analytic``).
    """

    name: str
    family: str
    tasks: frozenset[str]
    value: Callable[[], Column] | None = None
    default: bool = False
    requires: frozenset[str] = frozenset()
    table: str | None = None
    drift: bool = False
    row_terms: frozenset[str] = frozenset()
    se: Callable[[], Column] | None = None
    noise: bool = True


def _ratio(numerator: str) -> Callable[[], Column]:
    return lambda: F.try_divide(F.col(numerator), F.col("_w"))


def _sqrt_variance(numerator: Column, denominator: Column) -> Column:
    """sqrt(max(numerator / denominator², 0)); null when the denominator is 0."""
    variance = F.try_divide(numerator, denominator * denominator)
    return F.sqrt(F.greatest(variance, F.lit(0.0)))


def _mean_se(total: str, sq_total: str, sq_square: str) -> Callable[[], Column]:
    """SE of m = Σw·x/W, linearised: Σw²(x − m)²/W² = (Σw²x² − 2mΣw²x + m²Σw²)/W², from the
    per-key totals Σw·x (``total``), Σw²·x (``sq_total``) and Σw²·x² (``sq_square``)."""

    def se() -> Column:
        mean = F.try_divide(F.col(total), F.col("_w"))
        numerator = F.col(sq_square) - 2.0 * mean * F.col(sq_total) + mean * mean * F.col("_w2")
        return _sqrt_variance(numerator, F.col("_w"))

    return se


def _calibration_in_the_large_se() -> Column:
    """The mean of x = c − o: Σw²x = Σw²c − Σw²o, Σw²x² = Σw²c² − 2Σw²co + Σw²o (o is 0/1)."""
    mean = F.try_divide(F.col("_conf") - F.col("_outcome"), F.col("_w"))
    sq_total = F.col("_w2_conf") - F.col("_w2_outcome")
    sq_square = F.col("_w2_conf_sq") - 2.0 * F.col("_w2_conf_outcome") + F.col("_w2_outcome")
    numerator = sq_square - 2.0 * mean * sq_total + mean * mean * F.col("_w2")
    return _sqrt_variance(numerator, F.col("_w"))


def _calibration_ratio_se() -> Column:
    """Delta method for R = Σw·c/Σw·o: Var = Σw²(c − R·o)²/(Σw·o)²
    = (Σw²c² − 2R·Σw²co + R²·Σw²o)/(Σw·o)² (o is 0/1)."""
    ratio = F.try_divide(F.col("_conf"), F.col("_outcome"))
    numerator = (
        F.col("_w2_conf_sq")
        - 2.0 * ratio * F.col("_w2_conf_outcome")
        + ratio * ratio * F.col("_w2_outcome")
    )
    return _sqrt_variance(numerator, F.col("_outcome"))


def _ece_se() -> Column:
    """Influence function of ECE = Σ_b|S_b|/W: Var = [Σ_b Q2_b − 2·ECE·Σ_b sign(S_b)·Q1_b
    + ECE²·Σw²]/W², Q1_b = Σ_{i∈b} w²(o − c), Q2_b = Σ_{i∈b} w²(o − c)² (o is 0/1)."""
    ece = _ece()
    q2 = F.col("_w2_outcome") - 2.0 * F.col("_w2_conf_outcome") + F.col("_w2_conf_sq")
    numerator = q2 - 2.0 * ece * F.col("_signed_q1") + ece * ece * F.col("_w2")
    return _sqrt_variance(numerator, F.col("_w"))


def _ece_debiased() -> Column:
    """2·ECE − Σ_b W_b·E|d_b + s_b·Z| / W (Kumar et al.'s debiased L1 estimator in closed
    form; the per-bin expectation is ``_debias_abs``, built in ``spark_calib.metrics.compute``)."""
    return 2.0 * _ece() - F.try_divide(F.col("_debias_abs"), F.col("_w"))


def _rmsce_debiased() -> Column:
    """sqrt(max(Σ_b W_b[d_b² − ȳ_b(1 − ȳ_b)/(n_eff,b − 1)] / W, 0)) over bins with
    n_eff,b > 1 (the others add 0 but keep their weight in W)."""
    return F.sqrt(F.greatest(F.try_divide(F.col("_sq_debiased"), F.col("_w")), F.lit(0.0)))


_ACCURACY_SE = _mean_se("_correct", "_w2_correct", "_w2_correct")


def _ece() -> Column:
    return F.try_divide(F.col("_abs_gap"), F.col("_w"))


def _mean_outcome() -> Column:
    return F.try_divide(F.col("_outcome"), F.col("_w"))


def _spiegelhalter_z() -> Column:
    """Σw(o − c)(1 − 2c) / sqrt(Σw²(1 − 2c)²c(1 − c)), the numerator expanded in the moment sums:
    Σw·o − Σw·c − 2Σw·c·o + 2Σw·c²."""
    numerator = (
        F.col("_outcome") - F.col("_conf") - 2.0 * F.col("_conf_outcome") + 2.0 * F.col("_conf_sq")
    )
    variance = F.col("_spiegelhalter_var")
    return F.when(variance > 0.0, numerator / F.sqrt(variance))


def _spiegelhalter_p() -> Column:
    """Two-sided p = P(|N(0,1)| ≥ |z|) = erfc(|z|/√2)."""
    return erfc(F.abs(_spiegelhalter_z()) / F.lit(math.sqrt(2.0)))


# Numerical Recipes' erfcc (Chebyshev fit): relative error below 1.2e-7 for every x ≥ 0.
ERFC_RELATIVE_ERROR = 1.2e-7
_ERFC_COEFFICIENTS = (
    -1.26551223,
    1.00002368,
    0.37409196,
    0.09678418,
    -0.18628806,
    0.27886807,
    -1.13520398,
    1.48851587,
    -0.82215223,
    0.17087277,
)


def erfc(x: Column) -> Column:
    """erfc(x) for x ≥ 0 as a Column (Spark SQL has no erf); relative error < 1.2e-7."""
    t = 1.0 / (1.0 + 0.5 * x)
    poly: Column = F.lit(_ERFC_COEFFICIENTS[-1])
    for coefficient in reversed(_ERFC_COEFFICIENTS[:-1]):
        poly = F.lit(coefficient) + t * poly
    return t * F.exp(-x * x + poly)


def _binary_entropy(p: Column) -> Column:
    """H(p) = −p log p − (1 − p) log(1 − p); null unless 0 < p < 1."""
    return F.when((p > 0.0) & (p < 1.0), -p * F.log(p) - (1.0 - p) * F.log(1.0 - p))


def _brier_reliability() -> Column:
    """(Σ_b O_b²/W_b + Σw·c² − 2Σw·c·o) / W: Murphy's reliability plus Stephenson's within-bin
    variance minus covariance terms."""
    return F.try_divide(
        F.col("_sq_outcome") + F.col("_conf_sq") - 2.0 * F.col("_conf_outcome"), F.col("_w")
    )


def _brier_resolution() -> Column:
    """(Σ_b O_b²/W_b − O²/W) / W, the weighted variance of the bins' observed rates."""
    overall = F.try_divide(F.col("_outcome") * F.col("_outcome"), F.col("_w"))
    return F.try_divide(F.col("_sq_outcome") - overall, F.col("_w"))


# Families whose metrics the drift table recomputes from statistics summed to their bins.
DRIFT_FAMILIES = frozenset({CALIBRATION, PER_CLASS, REGRESSION})


def _spec(name: str, family: str, tasks: frozenset[str], **kwargs: object) -> MetricSpec:
    kwargs.setdefault("drift", family in DRIFT_FAMILIES and kwargs.get("table") is None)
    return MetricSpec(name, family, tasks, **kwargs)  # type: ignore[arg-type]


STD = frozenset({"std"})
POSITIVE_CLASS = frozenset({"positive_class"})
# (confidence, outcome) pairs whose Brier term is (o − c)²: binary and top-label.
BRIER_PAIR_TASKS = frozenset({"binary", "top_label"})
EXACT_SCORE = frozenset({"exact_score"})
EXACT_PROBS = frozenset({"exact_probs"})
METRICS: dict[str, MetricSpec] = {
    spec.name: spec
    for spec in [
        _spec("ece", CALIBRATION, CLASSIFICATION_TASKS, value=_ece, default=True, se=_ece_se),
        _spec(
            "mce", CALIBRATION, CLASSIFICATION_TASKS, value=lambda: F.col("_max_gap"), default=True
        ),
        _spec(
            "rmsce",
            CALIBRATION,
            CLASSIFICATION_TASKS,
            value=lambda: F.sqrt(F.try_divide(F.col("_sq_gap"), F.col("_w"))),
            default=True,
        ),
        _spec(
            "brier",
            CALIBRATION,
            CLASSIFICATION_TASKS,
            value=_ratio("_brier"),
            default=True,
            se=_mean_se("_brier", "_w2_brier", "_w2_brier_sq"),
        ),
        _spec(
            "nll",
            CALIBRATION,
            PROBABILISTIC_TASKS,
            value=_ratio("_nll"),
            default=True,
            se=_mean_se("_nll", "_w2_nll", "_w2_nll_sq"),
        ),
        _spec(
            "accuracy",
            CALIBRATION,
            CLASSIFICATION_TASKS,
            value=_ratio("_correct"),
            default=True,
            se=_ACCURACY_SE,
        ),
        _spec(
            "count",
            CALIBRATION,
            ALL_TASKS,
            value=lambda: F.col("_n").cast("double"),
            default=True,
            # A row count is not a statistic with a noise model: it has no drift.
            drift=False,
            noise=False,
        ),
        _spec("classwise_ece", PER_CLASS, PROBABILISTIC_TASKS, value=_ece, se=_ece_se),
        _spec(
            "ece_debiased",
            CALIBRATION,
            CLASSIFICATION_TASKS,
            value=_ece_debiased,
        ),
        _spec("rmsce_debiased", CALIBRATION, CLASSIFICATION_TASKS, value=_rmsce_debiased),
        _spec(
            "ece_null",
            CALIBRATION,
            CLASSIFICATION_TASKS,
            value=lambda: F.try_divide(F.col("_null_abs"), F.col("_w")),
            # What a calibrated model would show at this n: a reference, not a drift signal.
            drift=False,
        ),
        _spec(
            "mean_prediction",
            CALIBRATION,
            CLASSIFICATION_TASKS,
            value=_ratio("_conf"),
            se=_mean_se("_conf", "_w2_conf", "_w2_conf_sq"),
        ),
        _spec(
            "mean_label",
            CALIBRATION,
            CLASSIFICATION_TASKS,
            value=_mean_outcome,
            se=_mean_se("_outcome", "_w2_outcome", "_w2_outcome"),
        ),
        _spec(
            "calibration_ratio",
            CALIBRATION,
            CLASSIFICATION_TASKS,
            value=lambda: F.try_divide(F.col("_conf"), F.col("_outcome")),
            se=_calibration_ratio_se,
        ),
        _spec(
            "calibration_in_the_large",
            CALIBRATION,
            CLASSIFICATION_TASKS,
            value=lambda: F.try_divide(F.col("_conf") - F.col("_outcome"), F.col("_w")),
            se=_calibration_in_the_large_se,
        ),
        _spec(
            "normalized_entropy",
            CALIBRATION,
            BINARY,
            value=lambda: F.try_divide(
                F.try_divide(F.col("_nll"), F.col("_w")), _binary_entropy(_mean_outcome())
            ),
            requires=POSITIVE_CLASS,
        ),
        _spec("spiegelhalter_z", CALIBRATION, CLASSIFICATION_TASKS, value=_spiegelhalter_z),
        _spec("spiegelhalter_p", CALIBRATION, CLASSIFICATION_TASKS, value=_spiegelhalter_p),
        _spec("brier_reliability", CALIBRATION, BRIER_PAIR_TASKS, value=_brier_reliability),
        _spec("brier_resolution", CALIBRATION, BRIER_PAIR_TASKS, value=_brier_resolution),
        _spec(
            "brier_uncertainty",
            CALIBRATION,
            BRIER_PAIR_TASKS,
            value=lambda: _mean_outcome() * (1.0 - _mean_outcome()),
        ),
        _spec(
            "error_rate",
            CALIBRATION,
            CLASSIFICATION_TASKS,
            value=lambda: 1.0 - F.try_divide(F.col("_correct"), F.col("_w")),
            se=_ACCURACY_SE,
        ),
        _spec(
            "ll",
            CALIBRATION,
            PROBABILISTIC_TASKS,
            value=lambda: -F.try_divide(F.col("_nll"), F.col("_w")),
            se=_mean_se("_nll", "_w2_nll", "_w2_nll_sq"),
        ),
        _spec(
            "expected_misclassification_cost",
            CALIBRATION,
            PROBABILISTIC_TASKS,
            value=_ratio("_cost"),
            requires=frozenset({"cost_matrix"}),
            row_terms=frozenset({"cost"}),
        ),
        _spec("balanced_accuracy", CONFUSION, PROBABILISTIC_TASKS),
        _spec("balanced_error_rate", CONFUSION, PROBABILISTIC_TASKS),
        _spec(
            "class_weighted_error",
            CONFUSION,
            PROBABILISTIC_TASKS,
            requires=frozenset({"class_weights"}),
        ),
        _spec(
            "class_weighted_nll",
            CONFUSION,
            PROBABILISTIC_TASKS,
            requires=frozenset({"class_weights"}),
        ),
        _spec(
            "misclassification_cost",
            CONFUSION,
            PROBABILISTIC_TASKS,
            requires=frozenset({"cost_matrix"}),
        ),
        _spec("precision", CONFUSION, PROBABILISTIC_TASKS),
        _spec("recall", CONFUSION, PROBABILISTIC_TASKS),
        _spec("f1", CONFUSION, PROBABILISTIC_TASKS),
        _spec("confusion_matrix", CONFUSION, PROBABILISTIC_TASKS, table="confusion"),
        _spec("roc_auc_binned", CELLS, BINARY),
        _spec("pr_auc_binned", CELLS, BINARY),
        _spec("roc_curve", CELLS, BINARY, table="roc"),
        _spec("ks_calibration", CELL_CALIBRATION, BINARY, requires=POSITIVE_CLASS),
        _spec("hosmer_lemeshow", CELL_CALIBRATION, BINARY, requires=POSITIVE_CLASS),
        _spec("hosmer_lemeshow_p", CELL_CALIBRATION, BINARY, requires=POSITIVE_CLASS),
        _spec("calibration_slope", CELL_CALIBRATION, BINARY, requires=POSITIVE_CLASS),
        _spec("calibration_intercept", CELL_CALIBRATION, BINARY, requires=POSITIVE_CLASS),
        _spec("smooth_ece", SMOOTH, BINARY, requires=POSITIVE_CLASS),
        _spec("threshold_metrics", THRESHOLDS, BINARY, table="thresholds"),
        _spec("roc_auc", EXACT_RANKING, BINARY, row_terms=EXACT_SCORE),
        _spec("pr_auc", EXACT_RANKING, BINARY, row_terms=EXACT_SCORE),
        _spec("roc_auc_ovr", EXACT_RANKING, frozenset({"multiclass"}), row_terms=EXACT_PROBS),
        _spec("mse", REGRESSION, REGRESSION_TASK, default=True),
        _spec("rmse", REGRESSION, REGRESSION_TASK, default=True),
        _spec("mae", REGRESSION, REGRESSION_TASK, default=True),
        _spec("r2", REGRESSION, REGRESSION_TASK, default=True),
        _spec("gaussian_nll", REGRESSION, REGRESSION_TASK, default=True, requires=STD),
        _spec("coverage", REGRESSION, REGRESSION_TASK, default=True, requires=STD),
        _spec("miscalibration_area", REGRESSION, REGRESSION_TASK, default=True, requires=STD),
    ]
}

_REQUIREMENT_HINTS = {
    "std": "columns.std or columns.variance",
    "class_weights": "class_weights",
    "cost_matrix": "cost_matrix",
    "positive_class": "task binary with binary_view: positive_class",
}


def available_metrics(task: str) -> list[str]:
    """Every metric name valid for ``task``, in registry order."""
    return [name for name, spec in METRICS.items() if task in spec.tasks]


def resolve_metrics(
    task: str, requested: Iterable[str] | None, features: frozenset[str] = frozenset()
) -> list[MetricSpec]:
    """The specs of ``requested`` (default: every default metric of the task whose
    requirements ``features`` meets).

    Raises ``ConfigError`` naming an unknown metric, one the task cannot compute (with the
    valid names), or one whose required config is missing.
    """
    valid = available_metrics(task)
    if requested is None:
        return [
            METRICS[name]
            for name in valid
            if METRICS[name].default and METRICS[name].requires <= features
        ]
    specs = []
    for name in requested:
        if name not in METRICS:
            raise ConfigError(f"unknown metric {name!r}; valid metrics for task {task}: {valid}")
        if name not in valid:
            raise ConfigError(
                f"metric {name!r} is not defined for task {task}; valid metrics: {valid}"
            )
        missing = METRICS[name].requires - features
        if missing:
            needed = _REQUIREMENT_HINTS[sorted(missing)[0]]
            raise ConfigError(f"metric {name!r} needs {needed} in the config")
        specs.append(METRICS[name])
    return list(dict.fromkeys(specs))


def families(specs: Iterable[MetricSpec]) -> frozenset[str]:
    """The statistics families the specs read."""
    return frozenset(spec.family for spec in specs)
