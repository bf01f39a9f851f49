"""Sums of one key's statistics rows as Spark's ``groupBy().agg(F.sum)`` takes them, for the
table kernels (``confusion``, ``roc``, ``thresholds``, ``regression_calibration``).

Spark's sum skips nulls and is null when every value of a group is null. A null sum reaches a
kernel as NaN (``spark_calib.kernels.arrow_batch.floats``), and ``spark_sums`` skips NaN in
the same way; so a sum that overflowed to NaN (∞ − ∞) counts as null too, which is what the
outputs show of it (``to_table`` writes NaN as null). ``try_divide`` is Spark's: null over 0.

``label_weights``: the binary label sums of the top-label rows with a key (``cell`` or
``threshold_bin``) set, per row: the positive weight W⁺ = Σw·y (``sum_weight_positive``) and
the negative weight W⁻ = Σw − W⁺, each exactly 0 when the row's counts say it has no such
label (n_positive = 0, or n_positive = n), so a row of one label has no rounding residue on the
other side (as the ranking kernel does).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from spark_calib.kernels.arrow_batch import Rows, floats, ints, is_null, select
from spark_calib.stats import schema as stats


def top_label_rows(table: Rows, keys: Sequence[str] = ()) -> Rows:
    """The rows with ``class`` null and every one of ``keys`` set."""
    kept = is_null(table, stats.CLASS)
    for name in keys:
        kept &= ~is_null(table, name)
    return select(table, kept)


def spark_sums(values: np.ndarray, group: np.ndarray, size: int) -> np.ndarray:
    """Σ of ``values`` per group 0..size−1 (``group`` each row's), skipping NaN (null); NaN for
    a group without a non-null value."""
    values = np.asarray(values, dtype=float)
    known = ~np.isnan(values)
    total = np.bincount(group, weights=np.where(known, values, 0.0), minlength=size)
    counted = np.bincount(group, weights=known.astype(float), minlength=size)
    return np.where(counted > 0, total, np.nan)


def count_sums(counts: np.ndarray, group: np.ndarray, size: int) -> np.ndarray:
    """Σ of the integer ``counts`` per group 0..size−1 (int64, exact)."""
    total = np.zeros(size, dtype=np.int64)
    np.add.at(total, group, np.asarray(counts, dtype=np.int64))
    return total


def try_divide(numerator: np.ndarray | float, denominator: np.ndarray | float) -> np.ndarray:
    """numerator/denominator, NaN (null) where the denominator is 0 (Spark's try_divide)."""
    numerator = np.asarray(numerator, dtype=float)
    denominator = np.asarray(denominator, dtype=float)
    zero = denominator == 0.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(zero, np.nan, numerator / np.where(zero, 1.0, denominator))


@dataclass(frozen=True)
class LabelWeights:
    """Per kept row: its ``key`` value, n, W⁺ and W⁻ (NaN: null)."""

    key: np.ndarray
    n: np.ndarray
    positive: np.ndarray
    negative: np.ndarray


def label_weights(table: Rows, key: str) -> LabelWeights:
    """The top-label rows with ``key`` set, with their W⁺ and W⁻ (see the module docstring)."""
    kept = top_label_rows(table, (key,))
    n = ints(kept, stats.N, 0)
    # A null n_positive (-1) is neither 0 nor n: the sums are then used as they are.
    positives = ints(kept, stats.N_POSITIVE, -1)
    weight = floats(kept, stats.SUM_WEIGHT)
    positive_weight = floats(kept, stats.SUM_WEIGHT_POSITIVE)
    with np.errstate(invalid="ignore", over="ignore"):
        negative = np.where(positives == n, 0.0, weight - positive_weight)
    return LabelWeights(
        key=ints(kept, key, -1),
        n=n,
        positive=np.where(positives == 0, 0.0, positive_weight),
        negative=negative,
    )


def number(value: float) -> float | None:
    """``value`` as an output cell: None for NaN (null)."""
    return None if np.isnan(value) else float(value)


def numbers(values: np.ndarray) -> list[float | None]:
    """``number`` of each entry of ``values`` (one ``tolist``, not a NumPy call per entry)."""
    return [None if value != value else value for value in np.asarray(values, float).tolist()]
