"""The explicit registry of metric names: what each computes, for which tasks, from which
statistics (its family), and which optional config it needs.

The calibration and per-class families are computed by NumPy kernels of one key's statistics
(``spark_calib.kernels.calibration``, where their formulas are); the other families by their
own modules (``decision``, ``ranking``, ``exact_ranking``, ``regression``) from the names
alone; entries of kind ``table`` produce an output table instead of metric rows. ``drift``
and ``row_terms`` tell the monitoring and row layers what a name needs, so no code outside
this table branches on a metric's name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

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

    ``table`` names the ``EvaluationResult`` field of the output table a name produces (None: a
    metrics row); ``requires`` names optional config it needs (``Config.features()``);
    ``drift`` says the drift table (and so a change alert rule) covers it; ``row_terms`` names
    the optional per-row terms (``RowNeeds`` fields) it adds beyond its family's; ``noise``
    False marks a value that is not an estimate (``count``: no standard error under any
    method); ``analytic_se`` says the family's kernel gives it a closed-form standard error
    (False: ``se`` is null under ``uncertainty.method: analytic``). The values themselves are
    the kernels' (``spark_calib.kernels``).
    """

    name: str
    family: str
    tasks: frozenset[str]
    default: bool = False
    requires: frozenset[str] = frozenset()
    table: str | None = None
    drift: bool = False
    row_terms: frozenset[str] = frozenset()
    analytic_se: bool = False
    noise: bool = True


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
        _spec("ece", CALIBRATION, CLASSIFICATION_TASKS, default=True, analytic_se=True),
        _spec("mce", CALIBRATION, CLASSIFICATION_TASKS, default=True),
        _spec(
            "rmsce",
            CALIBRATION,
            CLASSIFICATION_TASKS,
            default=True,
        ),
        _spec(
            "brier",
            CALIBRATION,
            CLASSIFICATION_TASKS,
            default=True,
            analytic_se=True,
        ),
        _spec(
            "nll",
            CALIBRATION,
            PROBABILISTIC_TASKS,
            default=True,
            analytic_se=True,
        ),
        _spec(
            "accuracy",
            CALIBRATION,
            CLASSIFICATION_TASKS,
            default=True,
            analytic_se=True,
        ),
        _spec(
            "count",
            CALIBRATION,
            ALL_TASKS,
            default=True,
            # A row count is not a statistic with a noise model: it has no drift.
            drift=False,
            noise=False,
        ),
        _spec("classwise_ece", PER_CLASS, PROBABILISTIC_TASKS, analytic_se=True),
        _spec(
            "ece_debiased",
            CALIBRATION,
            CLASSIFICATION_TASKS,
        ),
        _spec(
            "rmsce_debiased",
            CALIBRATION,
            CLASSIFICATION_TASKS,
        ),
        _spec(
            "ece_null",
            CALIBRATION,
            CLASSIFICATION_TASKS,
            # What a calibrated model would show at this n: a reference, not a drift signal.
            drift=False,
        ),
        _spec(
            "mean_prediction",
            CALIBRATION,
            CLASSIFICATION_TASKS,
            analytic_se=True,
        ),
        _spec(
            "mean_label",
            CALIBRATION,
            CLASSIFICATION_TASKS,
            analytic_se=True,
        ),
        _spec(
            "calibration_ratio",
            CALIBRATION,
            CLASSIFICATION_TASKS,
            analytic_se=True,
        ),
        _spec(
            "calibration_in_the_large",
            CALIBRATION,
            CLASSIFICATION_TASKS,
            analytic_se=True,
        ),
        _spec(
            "normalized_entropy",
            CALIBRATION,
            BINARY,
            requires=POSITIVE_CLASS,
        ),
        _spec("spiegelhalter_z", CALIBRATION, CLASSIFICATION_TASKS),
        _spec("spiegelhalter_p", CALIBRATION, CLASSIFICATION_TASKS),
        _spec("brier_reliability", CALIBRATION, BRIER_PAIR_TASKS),
        _spec("brier_resolution", CALIBRATION, BRIER_PAIR_TASKS),
        # Stephenson et al.'s within-bin terms (WBV − WBC): brier = reliability − resolution
        # + uncertainty + within_bin, exactly.
        _spec("brier_within_bin", CALIBRATION, BRIER_PAIR_TASKS),
        _spec(
            "brier_uncertainty",
            CALIBRATION,
            BRIER_PAIR_TASKS,
        ),
        _spec(
            "error_rate",
            CALIBRATION,
            CLASSIFICATION_TASKS,
            analytic_se=True,
        ),
        _spec(
            "ll",
            CALIBRATION,
            PROBABILISTIC_TASKS,
            analytic_se=True,
        ),
        _spec(
            "expected_misclassification_cost",
            CALIBRATION,
            PROBABILISTIC_TASKS,
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
