"""Higher-order array expressions for probability vectors (no explode, no UDF), as Columns or
internal SQL (``spark_calib.rows.internal_sql``): each helper builds its input's kind."""

from __future__ import annotations

from typing import TypeVar

from pyspark.sql import Column

from spark_calib.rows.internal_sql import Sql, functions_for

E = TypeVar("E", Column, Sql)


def array_sum(values: E) -> E:
    """Σ_k x_k of an array<double>."""
    F = functions_for(values)
    return F.aggregate(values, F.lit(0.0), lambda total, x: total + x)


def softmax(logits: E) -> E:
    """p_k = exp(z_k − max z) / Σ_j exp(z_j − max z); subtracting the max keeps exp finite.

    The row max and the row sum are passed into the lambdas as repeated arrays: referenced
    inside a lambda they would be recomputed for every element (K² work per row).
    """
    F = functions_for(logits)
    size = F.size(logits)
    shifted = F.zip_with(
        logits, F.array_repeat(F.array_max(logits), size), lambda z, top: F.exp(z - top)
    )
    return F.zip_with(shifted, F.array_repeat(array_sum(shifted), size), lambda e, t: e / t)


def log_softmax_at(logits: E, index: E) -> E:
    """log p_index = z_index − logsumexp(z), with logsumexp(z) = max z + log Σ_j exp(z_j − max z):
    exact for any finite logits (no ε, no underflow of p to 0)."""
    F = functions_for(logits)
    top = F.array_max(logits)
    shifted = F.transform(logits, lambda z: F.exp(z - top))
    return F.get(logits, index) - top - F.log(array_sum(shifted))


def log_probabilities(probs: E, eps: float) -> E:
    """log(max(p_k, ε)) of each element: the logits temperature scaling divides when only
    probabilities are logged."""
    F = functions_for(probs)
    return F.transform(probs, lambda p: F.log(F.greatest(p.cast("double"), F.lit(eps))))


def first_argmax(probs: E) -> E:
    """Index (0-based) of the first maximum: ties go to the lowest index, as numpy.argmax."""
    F = functions_for(probs)
    return (F.array_position(probs, F.array_max(probs)) - 1).cast("int")


def one_hot_squared_error(probs: E, label: E) -> E:
    """Σ_k (1[y = k] − p_k)², the multiclass Brier term of one row."""
    F = functions_for(probs)
    return array_sum(
        F.transform(
            probs,
            lambda p, k: F.pow(F.when(k == label, F.lit(1.0)).otherwise(F.lit(0.0)) - p, 2),
        )
    )
