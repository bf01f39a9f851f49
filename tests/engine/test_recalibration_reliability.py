"""The recalibration table's reliability bins before and after each map, on a log small
enough that every bin is arithmetic.

Five bins of width 0.2. Model version v1 fits on four rows that the scores separate (s = 0.3
with y = 0, s = 0.7 with y = 1, weight 1), so isotonic maps 0.3 → 0 and 0.7 → 1, and the NLL
of σ(z/T) falls as T → 0: T sits at its lower bound 0.05. Its evaluated rows (weights 1 and 3
at s = 0.3, 2 and 2 at s = 0.7) give:

- before: bin 1 ([0.2, 0.4)) weight 4, confidence 0.3, outcome 1/4; bin 3 weight 4,
  confidence 0.7, outcome 2/4; ECE = (4·0.05 + 4·0.2)/8 = 0.125;
- after isotonic: bin 0 weight 4, confidence 0, outcome 1/4; bin 4 weight 4, confidence 1,
  outcome 2/4; ECE = (4·0.25 + 4·0.5)/8 = 0.375;
- after temperature: p = σ(logit(0.3)/0.05) = 1/(1 + (7/3)²⁰) in bin 0 and 1 − p in bin 4.

Model version v2 has evaluated rows only: no map, so ``reliability_after`` is null.
"""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession

from spark_calib import evaluate

CONFIG: dict[str, Any] = {
    "task": "binary",
    "columns": {"score": "s", "label": "y", "weight": "w", "model_version": "mv"},
    "slices": [[]],
    "metrics": ["ece"],
    "binning": {"n_bins": 5},
    "recalibration": {
        "methods": ["temperature", "isotonic"],
        "fit": {"column": "split", "value": "val"},
        "min_fit_rows": 1,
    },
}
ROWS = [
    # mv, s, y, w, split
    ("v1", 0.3, 0, 1.0, "val"),
    ("v1", 0.3, 0, 1.0, "val"),
    ("v1", 0.7, 1, 1.0, "val"),
    ("v1", 0.7, 1, 1.0, "val"),
    ("v1", 0.3, 1, 1.0, "test"),
    ("v1", 0.3, 0, 3.0, "test"),
    ("v1", 0.7, 1, 2.0, "test"),
    ("v1", 0.7, 0, 2.0, "test"),
    ("v2", 0.5, 1, 1.0, "test"),
    ("v2", 0.9, 0, 1.0, "test"),
]
# σ(20·logit(0.3)) = 1 / (1 + (7/3)^20): T = 0.05 divides the logit by 1/20.
TEMPERATURE_LOW = 1.0 / (1.0 + (7.0 / 3.0) ** 20)


def bins(value: Any) -> list[tuple[int, float, float, float]] | None:
    if value is None:
        return None
    return [(b.bin, b.weight, b.confidence, b.outcome) for b in value]


def approx_bins(expected: list[tuple[int, float, float, float]]) -> list[Any]:
    return [(b, pytest.approx(w), pytest.approx(c), pytest.approx(o)) for b, w, c, o in expected]


@pytest.fixture(scope="module")
def table(spark: SparkSession) -> dict[tuple[str, str], Any]:
    df = spark.createDataFrame(ROWS, "mv string, s double, y int, w double, split string")
    result = evaluate(df, CONFIG)
    assert result.recalibration is not None
    rows = {(r.model_version, r.method): r for r in result.recalibration.collect()}
    result.unpersist()
    return rows


def test_before_bins_are_the_evaluated_rows_bins(table: dict[tuple[str, str], Any]) -> None:
    expected = [(1, 4.0, 0.3, 1.0 / 4.0), (3, 4.0, 0.7, 2.0 / 4.0)]
    for method in ("temperature", "isotonic"):
        row = table[("v1", method)]
        assert bins(row.reliability_before) == approx_bins(expected)
        assert row.ece_before == pytest.approx((4 * 0.05 + 4 * 0.2) / 8)


def test_isotonic_after_bins_hold_each_row_set_at_its_step(
    table: dict[tuple[str, str], Any],
) -> None:
    row = table[("v1", "isotonic")]
    assert bins(row.reliability_after) == approx_bins([(0, 4.0, 0.0, 0.25), (4, 4.0, 1.0, 0.5)])
    assert row.ece_after == pytest.approx((4 * 0.25 + 4 * 0.5) / 8)


def test_temperature_after_bins_hold_each_row_set_at_its_scaled_logit(
    table: dict[tuple[str, str], Any],
) -> None:
    row = table[("v1", "temperature")]
    assert row.parameters["temperature"] == pytest.approx(0.05)
    after = bins(row.reliability_after)
    assert after is not None
    assert [(b, w, o) for b, w, _, o in after] == [(0, 4.0, 0.25), (4, 4.0, 0.5)]
    assert after[0][2] == pytest.approx(TEMPERATURE_LOW, rel=1e-9)
    assert after[1][2] == pytest.approx(1.0 - TEMPERATURE_LOW, rel=1e-12)


def test_without_a_map_the_after_bins_are_null(table: dict[tuple[str, str], Any]) -> None:
    for method in ("temperature", "isotonic"):
        row = table[("v2", method)]
        assert row.parameters is None
        assert row.reliability_after is None
        assert bins(row.reliability_before) == approx_bins([(2, 1.0, 0.5, 1.0), (4, 1.0, 0.9, 0.0)])


def test_the_bins_give_back_the_tables_ece(table: dict[tuple[str, str], Any]) -> None:
    """An extra check of consistency: Σ weight·|outcome − confidence| / Σ weight is the ECE."""
    for row in table.values():
        for column, ece in (
            (row.reliability_before, row.ece_before),
            (row.reliability_after, row.ece_after),
        ):
            if column is None:
                assert ece is None
                continue
            total = sum(b.weight for b in column)
            gap = sum(b.weight * abs(b.outcome - b.confidence) for b in column)
            assert gap / total == pytest.approx(ece, abs=1e-15)
