"""Per-task row terms: confidence, correctness, Brier and NLL terms, and the validity checks.

Binary (score s = P(y=1)): prediction = [s ≥ threshold]; correct = [prediction = y]; the
calibration pair (confidence c, outcome o) is (s, y) (``binary_view: positive_class``, the
default) or (max(s, 1 − s), correct) (``binary_view: top_label``); Brier term (s − y)²; NLL term
−log(max(p_y, ε)) with p_y = s if y = 1 else 1 − s.
Multiclass (probs p, or softmax of logits): confidence = max_k p_k; outcome = correct;
prediction = first argmax; Brier term Σ_k (1[y=k] − p_k)²; NLL term −log(max(p_y, ε)) from
probabilities, and the exact logsumexp(z) − z_y from logits (no ε).
Top-label: the given confidence; correct from a boolean, from prediction == label, or from
quality > τ; Brier term (correct − confidence)²; no NLL (p_y of a wrong answer is not logged),
but with ``recalibration`` the confidence is scored as a binary predictor of correct: NLL term
−log(max(p, ε)) with p = c if correct else 1 − c, and (label, score) = (correct, c) for the
fine cells its maps are fitted on.
Regression (prediction μ, target y, optional σ from std or sqrt(variance)): e = y − μ; squared
and absolute error; Gaussian NLL term ½ log(2π σ²) + e² / (2σ²).
"""

from __future__ import annotations

from dataclasses import dataclass

# Col: pyspark's functions, for what reads user values; F: the same names writing internal
# SQL text over the renamed input columns.
from pyspark.sql import functions as Col
from pyspark.sql.types import ArrayType, DataType, DoubleType, StringType

from spark_calib.config import Config
from spark_calib.rows import internal_sql as F
from spark_calib.rows.arrays import (
    first_argmax,
    log_probabilities,
    log_softmax_at,
    one_hot_squared_error,
    softmax,
)
from spark_calib.rows.columns import input_col
from spark_calib.rows.inputs import Inputs
from spark_calib.rows.internal_sql import Sql
from spark_calib.rows.validation import (
    Check,
    Guard,
    class_index_checks,
    finite_checks,
    logit_vector_checks,
    non_finite_checks,
    probability_checks,
    probability_vector_checks,
    probability_vector_guard,
)


@dataclass(frozen=True)
class TaskTerms:
    """Row expressions of one task. ``probs``/``label``/``predicted`` (class indices) are set
    for binary and multiclass, ``score`` for binary, ``target``/``error``/``sigma`` for
    regression (``sigma`` only with std or variance); ``logits`` for multiclass: the logits, or
    log(max(p_k, ε)) from probabilities (what temperature scaling divides)."""

    checks: list[Check]
    guard: Guard | None = None
    confidence: Sql | None = None
    correct: Sql | None = None
    outcome: Sql | None = None
    brier: Sql | None = None
    nll: Sql | None = None
    probs: Sql | None = None
    label: Sql | None = None
    predicted: Sql | None = None
    score: Sql | None = None
    logits: Sql | None = None
    target: Sql | None = None
    error: Sql | None = None
    sigma: Sql | None = None


def task_terms(
    config: Config, types: dict[str, DataType], num_classes: int | None, inputs: Inputs
) -> TaskTerms:
    """The row terms for ``config.task``, as internal SQL over ``inputs``; ``types`` maps roles
    to input types."""
    if config.task == "binary":
        return _binary_terms(config, inputs)
    if config.task == "multiclass":
        assert num_classes is not None
        return _multiclass_terms(config, types, num_classes, inputs)
    if config.task == "regression":
        return _regression_terms(config, inputs)
    return _top_label_terms(config, inputs)


def _binary_terms(config: Config, inputs: Inputs) -> TaskTerms:
    columns = config.columns
    assert columns.score is not None and columns.label is not None
    score = inputs.ref(columns.score).cast("double")
    label = inputs.ref(columns.label).cast("double")
    checks = [
        *probability_checks(score, "score"),
        (label.isNull(), "null_label"),
        (~label.isin(0.0, 1.0), "invalid_label"),
    ]
    predicted_one = score >= F.lit(config.threshold)
    p_true = F.when(label == 1.0, score).otherwise(1.0 - score)
    correct = (predicted_one.cast("double") == label).cast("double")
    top_label = config.binary_view == "top_label"
    return TaskTerms(
        checks=checks,
        confidence=F.when(predicted_one, score).otherwise(1.0 - score) if top_label else score,
        correct=correct,
        outcome=correct if top_label else label,
        brier=F.pow(score - label, 2),
        nll=-F.log(F.greatest(p_true, F.lit(config.nll_eps))),
        probs=F.array(1.0 - score, score),
        label=label.try_cast("int"),
        predicted=predicted_one.cast("int"),
        score=score,
    )


def _multiclass_terms(
    config: Config, types: dict[str, DataType], num_classes: int, inputs: Inputs
) -> TaskTerms:
    columns = config.columns
    assert columns.label is not None
    if columns.probs is not None:
        probs = as_doubles(inputs.ref(columns.probs), types["probs"])
        vector_checks = probability_vector_checks(probs, num_classes, config.sum_tolerance)
        guard = Guard(
            probability_vector_guard(probs, num_classes, config.sum_tolerance),
            covers=len(vector_checks),
        )
    else:
        assert columns.logits is not None
        logits = as_doubles(inputs.ref(columns.logits), types["logits"])
        vector_checks = logit_vector_checks(logits, num_classes)
        guard = None
        probs = softmax(logits)
    raw_label = inputs.ref(columns.label)
    if isinstance(types["label"], StringType):
        assert config.class_names is not None
        # Class names are user values: their lookup is a Column of the first projection.
        names = Col.array(*[Col.lit(name) for name in config.class_names])
        label = inputs.computed(
            (Col.array_position(names, input_col(columns.label)) - 1).cast("int")
        )
        label_checks: list[Check] = [
            (raw_label.isNull(), "null_label"),
            (label < 0, "invalid_label"),
        ]
    else:
        numeric_label = raw_label.cast("double")
        label_checks = class_index_checks(numeric_label, num_classes)
        label = numeric_label.try_cast("int")
    if columns.probs is not None:
        log_p_true = F.log(F.greatest(F.get(probs, label), F.lit(config.nll_eps)))
        logits = log_probabilities(probs, config.nll_eps)
    else:
        log_p_true = log_softmax_at(logits, label)
    predicted = first_argmax(probs)
    correct = (predicted == label).cast("double")
    return TaskTerms(
        # The guard covers the vector checks, which come first.
        checks=[*vector_checks, *label_checks],
        guard=guard,
        confidence=F.array_max(probs),
        correct=correct,
        outcome=correct,
        brier=one_hot_squared_error(probs, label),
        nll=-log_p_true,
        probs=probs,
        label=label,
        predicted=predicted,
        logits=logits,
    )


def as_doubles(vector: Sql, data_type: DataType) -> Sql:
    """``vector`` as array<double>: unchanged when it is one already. Spark keeps an identity
    ``transform`` (a higher-order function, evaluated row by row outside the generated code)
    in every expression that reads the vector, so casting an array<double> element-wise
    costs a copy of the array per use."""
    if isinstance(data_type, ArrayType) and isinstance(data_type.elementType, DoubleType):
        return vector
    return F.transform(vector, lambda element: element.cast("double"))


def _top_label_terms(config: Config, inputs: Inputs) -> TaskTerms:
    columns = config.columns
    assert columns.confidence is not None
    confidence = inputs.ref(columns.confidence).cast("double")
    checks = probability_checks(confidence, "confidence")
    if columns.correct is not None:
        raw = inputs.ref(columns.correct).cast("double")
        checks += [(raw.isNull(), "null_correct"), (~raw.isin(0.0, 1.0), "invalid_correct")]
        correct = raw
    elif columns.quality is not None:
        quality = inputs.ref(columns.quality).cast("double")
        checks += finite_checks(quality, "quality")
        correct = (quality > F.lit(config.quality_threshold)).cast("double")
    else:
        assert columns.prediction is not None and columns.label is not None
        prediction, label = inputs.ref(columns.prediction), inputs.ref(columns.label)
        checks += [(prediction.isNull(), "null_prediction"), (label.isNull(), "null_label")]
        correct = (prediction == label).cast("double")
    # With recalibration the confidence is a binary predictor of ``correct``: its maps are fitted
    # on the confidence's fine cells and scored with its log-loss.
    recalibrated = config.recalibration is not None
    p_correct = F.when(correct == 1.0, confidence).otherwise(1.0 - confidence)
    return TaskTerms(
        checks=checks,
        confidence=confidence,
        correct=correct,
        outcome=correct,
        brier=F.pow(correct - confidence, 2),
        nll=-F.log(F.greatest(p_correct, F.lit(config.nll_eps))) if recalibrated else None,
        label=correct.try_cast("int") if recalibrated else None,
        score=confidence if recalibrated else None,
    )


def _regression_terms(config: Config, inputs: Inputs) -> TaskTerms:
    columns = config.columns
    assert columns.prediction is not None and columns.target is not None
    prediction = inputs.ref(columns.prediction).cast("double")
    target = inputs.ref(columns.target).cast("double")
    checks = [*non_finite_checks(prediction, "prediction"), *non_finite_checks(target, "target")]
    sigma = None
    for role, name in (("std", columns.std), ("variance", columns.variance)):
        if name is not None:
            spread = inputs.ref(name).cast("double")
            checks += [
                *non_finite_checks(spread, role),
                (spread <= 0.0, f"non_positive_{role}"),
            ]
            sigma = spread if role == "std" else F.sqrt(spread)
    return TaskTerms(checks=checks, target=target, error=target - prediction, sigma=sigma)
