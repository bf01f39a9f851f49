"""Row-level validity checks as internal SQL (``spark_calib.rows.internal_sql``) over the
renamed input columns (``spark_calib.rows.inputs``): the first failing check names the reason.

Checks run in a fixed order (prediction columns, then label-like columns, then the weight), and
a row gets the reason of the first one it fails, so that valid + Σ_reason invalid = input rows.

A ``Guard`` may stand before the leading checks: a condition that, when true, implies that all
of them pass. The per-element checks of a probability vector are higher-order functions, which
Spark evaluates row by row outside its generated code; the guard tests the same properties with
compiled array functions (``array_min``, ``array_max``), so a valid row (nearly every row) skips
them, and a row the guard does not clear runs every check in order, as without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from spark_calib.rows import internal_sql as F
from spark_calib.rows.arrays import array_sum
from spark_calib.rows.internal_sql import Sql

Check = tuple[Sql, str]


@dataclass(frozen=True)
class Guard:
    """``clean`` true implies that the first ``covers`` checks of the list all pass (false or
    null says nothing)."""

    clean: Sql
    covers: int


def first_failure(checks: Sequence[Check], guard: Guard | None = None) -> Sql:
    """The reason (string) of the first check whose condition is true, else null (valid).

    With ``guard``: CASE WHEN clean THEN (the first failure of the checks after those it
    covers) ELSE (the first failure of all) END, the same reason for every row."""
    if guard is not None:
        rest = _first_failure(checks[guard.covers :])
        return F.when(guard.clean, rest).otherwise(_first_failure(checks))
    return _first_failure(checks)


def _first_failure(checks: Sequence[Check]) -> Sql:
    if not checks:
        return F.lit(None).cast("string")
    condition, reason = checks[0]
    expression = F.when(condition, F.lit(reason))
    for condition, reason in checks[1:]:
        expression = expression.when(condition, F.lit(reason))
    return expression


def probability_checks(value: Sql, role: str) -> list[Check]:
    """null_<role>, nan_<role>, <role>_out_of_range (outside [0, 1]; −0.0 is in range)."""
    return [
        (value.isNull(), f"null_{role}"),
        (F.isnan(value), f"nan_{role}"),
        ((value < 0.0) | (value > 1.0), f"{role}_out_of_range"),
    ]


def finite_checks(value: Sql, role: str) -> list[Check]:
    """null_<role>, nan_<role> for a real-valued column without range."""
    return [(value.isNull(), f"null_{role}"), (F.isnan(value), f"nan_{role}")]


def non_finite_checks(value: Sql, role: str) -> list[Check]:
    """null_<role>, non_finite_<role> (NaN or ±inf) for a real value that must be finite."""
    return [
        (value.isNull(), f"null_{role}"),
        (F.isnan(value) | (F.abs(value) == float("inf")), f"non_finite_{role}"),
    ]


def weight_checks(weight: Sql) -> list[Check]:
    """null_weight, non_finite_weight (NaN or ±inf), negative_weight. A weight of 0 is valid."""
    return [
        (weight.isNull(), "null_weight"),
        (F.isnan(weight) | (F.abs(weight) == float("inf")), "non_finite_weight"),
        (weight < 0.0, "negative_weight"),
    ]


def probability_vector_checks(probs: Sql, num_classes: int, tolerance: float) -> list[Check]:
    """null_probs, wrong_length_probs, null/nan_probability, probability_out_of_range,
    probs_not_normalized (|Σ_k p_k − 1| > tolerance)."""
    return [
        (probs.isNull(), "null_probs"),
        (F.size(probs) != num_classes, "wrong_length_probs"),
        (F.exists(probs, lambda p: p.isNull()), "null_probability"),
        (F.exists(probs, lambda p: F.isnan(p)), "nan_probability"),
        (F.exists(probs, lambda p: (p < 0.0) | (p > 1.0)), "probability_out_of_range"),
        (F.abs(array_sum(probs) - 1.0) > tolerance, "probs_not_normalized"),
    ]


def probability_vector_guard(probs: Sql, num_classes: int, tolerance: float) -> Sql:
    """True only when every check of ``probability_vector_checks`` passes: the vector is not
    null, has K elements, min ≥ 0 and max ≤ 1 (Spark orders NaN above every number, so a NaN
    makes max ≤ 1 false; the minimum and maximum skip null elements, but a null element makes
    the sum null) and |Σ_k p_k − 1| ≤ tolerance."""
    return (
        probs.isNotNull()
        & (F.size(probs) == num_classes)
        & (F.array_min(probs) >= 0.0)
        & (F.array_max(probs) <= 1.0)
        & (F.abs(array_sum(probs) - 1.0) <= tolerance)
    )


def logit_vector_checks(logits: Sql, num_classes: int) -> list[Check]:
    """null_logits, wrong_length_logits, non_finite_logits (an element null, NaN or ±inf)."""
    return [
        (logits.isNull(), "null_logits"),
        (F.size(logits) != num_classes, "wrong_length_logits"),
        (
            F.exists(logits, lambda z: z.isNull() | F.isnan(z) | (F.abs(z) == float("inf"))),
            "non_finite_logits",
        ),
    ]


def class_index_checks(label: Sql, num_classes: int) -> list[Check]:
    """null_label, invalid_label (not an integer in [0, K)) for a numeric label."""
    return [
        (label.isNull(), "null_label"),
        (
            F.isnan(label)
            | (label < 0.0)
            | (label >= float(num_classes))
            | (label.try_cast("int").cast("double") != label),
            "invalid_label",
        ),
    ]
