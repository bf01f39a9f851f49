"""Drift and alerts, pinned by hand-computed cases (spark_calib.monitoring).

Windows A and B: four binary rows each, 10 bins (left-closed) of the positive-class score s
against y (the default binary_view), prediction = [s ≥ 0.5] for accuracy.
  A: s = 0.9 (y 1), 0.9 (y 0), 0.2 (y 0), 0.2 (y 0).
     Bin 9: Σy = 1 + 0, Σs = 1.8 → |1 − 1.8| = 0.8. Bin 2: Σy = 0, Σs = 0.4 → 0.4.
     ECE = (0.8 + 0.4)/4 = 0.3, accuracy = 3/4.
     SE(accuracy)² = 0.75·0.25/4 = 0.046875.
  B: s = 0.9 (y 1) twice, 0.2 (y 0) twice → bin 9: |2 − 1.8| = 0.2, bin 2: |0 − 0.4| = 0.4.
     ECE = 0.6/4 = 0.15, accuracy = 1.
  (The top-label view, confidences 0.9, 0.9, 0.8, 0.8 against correct, happens to give the
  same numbers on these windows: bin 8 takes the role of bin 2.)
Drift reads the metrics' analytic standard errors (docs/uncertainty.md), unweighted here:
  accuracy: p(1 − p)/n as above (A), 0 (B).
  ECE: [Σ(o − c)² − 2·ECE·Σ_b sign(S_b)·Σ_{i∈b}(o − c) + ECE²·n]/n²:
     A: S_9 = −0.8, S_2 = −0.4; Σ(o − c)² = 0.01 + 0.81 + 0.04 + 0.04 = 0.9,
        Σ sign·Σ(o − c) = 0.8 + 0.4 = 1.2 → [0.9 − 0.72 + 0.36]/16 = 0.03375.
     B: S_9 = +0.2, S_2 = −0.4; Σ(o − c)² = 0.1, Σ sign·Σ(o − c) = 0.2 + 0.4 = 0.6
        → [0.1 − 0.18 + 0.09]/16 = 0.000625.
  Brier: terms A 0.01, 0.81, 0.04, 0.04 (mean 0.225), B 0.01, 0.01, 0.04, 0.04 (mean 0.025);
     SE² = Σ(x − m)²/n²: A 0.4569/16 = 0.02855625, B 0.0009/16 = 0.00005625.
The row-count model of ``standard_errors`` (what drift read before the uncertainty columns,
and still reads under ``uncertainty.method: none``) gives SE(ECE)² = Σ_b (W_b/W)² a_b(1 − a_b)/n_b
with a_b = Σy/W_b: (2/4)²·(0.5·0.5/2) + (2/4)²·(0·1/2) = 0.03125 (A), 0 (B).
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_calib import evaluate
from spark_calib.config import load_config
from spark_calib.monitoring import (
    drift_table,
    fired_alerts,
    metric_values,
    needs_noise_model,
    standard_errors,
    window_values,
)
from spark_calib.monitoring.drift import VALUE_COLUMNS

WINDOW_A = [(0.9, 1), (0.9, 0), (0.2, 0), (0.2, 0)]
WINDOW_B = [(0.9, 1), (0.9, 1), (0.2, 0), (0.2, 0)]
ACC_A, ACC_B = 0.75, 1.0
ECE_A, ECE_B = 0.3, 0.15
SE_ACC_A = math.sqrt(0.046875)
SE_ECE_ROWS_A = math.sqrt(0.03125)
SE_ECE_A, SE_ECE_B = math.sqrt(0.03375), math.sqrt(0.000625)
BRIER_A, BRIER_B = 0.225, 0.025
SE_BRIER_A, SE_BRIER_B = math.sqrt(0.02855625), math.sqrt(0.00005625)
TOL = 1e-12


def config(**extra: Any) -> dict[str, Any]:
    mapping: dict[str, Any] = {
        "task": "binary",
        "columns": {"score": "s", "label": "y", "model_version": "v"},
        "binning": {"n_bins": 10},
        "metrics": ["ece", "accuracy", "brier", "count"],
    }
    mapping.update(extra)
    return mapping


def stats_of(
    spark: SparkSession, rows: list[tuple[str, float, int]], cfg: dict[str, Any]
) -> DataFrame:
    frame = spark.createDataFrame(rows, "v string, s double, y int")
    return evaluate(frame, cfg).stats


def tagged(version: str, rows: list[tuple[float, int]]) -> list[tuple[str, float, int]]:
    return [(version, s, y) for s, y in rows]


def by_metric(frame: DataFrame, version: str = "a") -> dict[str, Any]:
    return {
        row["metric"]: row
        for row in frame.collect()
        if row["model_version"] == version and row["slice_name"] == "overall"
    }


def test_standard_errors_by_hand(spark: SparkSession) -> None:
    errors = by_metric(standard_errors(stats_of(spark, tagged("a", WINDOW_A), config())))
    assert errors["accuracy"]["std_error"] == pytest.approx(SE_ACC_A, abs=TOL)
    assert errors["error_rate"]["std_error"] == pytest.approx(SE_ACC_A, abs=TOL)
    assert errors["ece"]["std_error"] == pytest.approx(SE_ECE_ROWS_A, abs=TOL)


def test_drift_against_the_previous_window_by_hand(spark: SparkSession) -> None:
    cfg = load_config(config(drift={"min_delta": 0.01, "z": 0.5, "min_n": 4}))
    current = window_values(stats_of(spark, tagged("a", WINDOW_A), config()), cfg)
    previous = window_values(stats_of(spark, tagged("a", WINDOW_B), config()), cfg)
    rows = by_metric(drift_table(current, previous, None, cfg))

    accuracy, ece = rows["accuracy"], rows["ece"]
    assert accuracy["value"] == pytest.approx(ACC_A, abs=TOL)
    assert accuracy["previous_value"] == pytest.approx(ACC_B, abs=TOL)
    assert accuracy["previous_delta"] == pytest.approx(ACC_A - ACC_B, abs=TOL)  # a drop: < 0
    assert accuracy["previous_z"] == pytest.approx((ACC_A - ACC_B) / SE_ACC_A, abs=1e-9)
    assert ece["previous_delta"] == pytest.approx(ECE_A - ECE_B, abs=TOL)  # worse: > 0
    ece_noise = math.sqrt(SE_ECE_A**2 + SE_ECE_B**2)
    assert ece["previous_z"] == pytest.approx((ECE_A - ECE_B) / ece_noise, abs=1e-9)
    # |z| = 1.15 and 0.81 ≥ 0.5, |Δ| ≥ 0.01, n = 4 ≥ min_n in both windows.
    assert accuracy["previous_significant"] is True
    assert ece["previous_significant"] is True
    brier_noise = math.sqrt(SE_BRIER_A**2 + SE_BRIER_B**2)
    assert rows["brier"]["previous_z"] == pytest.approx((BRIER_A - BRIER_B) / brier_noise)
    assert rows["brier"]["previous_significant"] is True
    assert "count" not in rows
    assert rows["ece"]["baseline"] is None and rows["ece"]["baseline_value"] is None


@pytest.mark.parametrize(
    ("drift", "significant"),
    [
        ({"z": 0.9, "min_n": 4}, {"accuracy": True, "ece": False}),  # |z| 1.15 vs 0.81
        ({"z": 2.0, "min_n": 4}, {"accuracy": False, "ece": False}),
        ({"z": 0.5, "min_n": 5}, {"accuracy": False, "ece": False}),  # n = 4 < 5
        ({"z": 0.5, "min_n": 4, "min_delta": 0.2}, {"accuracy": True, "ece": False}),  # 0.25, 0.15
    ],
)
def test_significance_needs_threshold_noise_and_rows(
    spark: SparkSession, drift: dict[str, Any], significant: dict[str, bool]
) -> None:
    cfg = load_config(config(drift=drift))
    current = window_values(stats_of(spark, tagged("a", WINDOW_A), config()), cfg)
    previous = window_values(stats_of(spark, tagged("a", WINDOW_B), config()), cfg)
    rows = by_metric(drift_table(current, previous, None, cfg))
    assert {name: rows[name]["previous_significant"] for name in significant} == significant


def test_baseline_model_version_compares_within_the_window(spark: SparkSession) -> None:
    cfg = load_config(config(drift={"baseline_model_version": "champion"}))
    both = tagged("a", WINDOW_A) + tagged("champion", WINDOW_B)
    current = window_values(stats_of(spark, both, config()), cfg)
    drift = drift_table(current, None, None, cfg)
    rows = by_metric(drift)
    assert rows["ece"]["baseline"] == "model_version=champion"
    assert rows["ece"]["baseline_value"] == pytest.approx(ECE_B, abs=TOL)
    assert rows["ece"]["baseline_delta"] == pytest.approx(ECE_A - ECE_B, abs=TOL)
    assert rows["accuracy"]["baseline_delta"] == pytest.approx(ACC_A - ACC_B, abs=TOL)
    assert rows["ece"]["previous_value"] is None and rows["ece"]["previous_significant"] is None
    # The champion against itself: no change.
    assert by_metric(drift, "champion")["ece"]["baseline_delta"] == 0.0


METRIC_COLUMNS = (
    "model_version string, slice_name string, slice_value string, class string, "
    "metric string, value double, n bigint, weight_sum double"
)


def alert_config(*rules: dict[str, Any]) -> Any:
    return load_config(
        config(
            slices=[[], ["country"]],
            alerts=list(rules),
            drift={"baseline_dates": {"start": "2024-06-01", "end": "2024-06-07"}},
        )
    )


def no_drift(spark: SparkSession, cfg: Any) -> DataFrame:
    empty = spark.createDataFrame([], _values_ddl())
    return drift_table(empty, None, None, cfg)


def _values_ddl() -> str:
    types = {"value": "double", "n": "bigint", "std_error": "double"}
    return ", ".join(f"`{name}` {types.get(name, 'string')}" for name in VALUE_COLUMNS)


def fired(frame: DataFrame) -> set[tuple[str, str]]:
    return {(row["model_version"], row["slice_value"]) for row in frame.collect()}


def test_max_rule_is_strict_respects_min_n_slice_and_version(spark: SparkSession) -> None:
    metrics = spark.createDataFrame(
        [
            ("v1", "country", "BR", None, "ece", 0.0501, 1000, 1000.0),  # fires
            ("v1", "country", "US", None, "ece", 0.05, 5000, 5000.0),  # at the threshold
            ("v1", "country", "MX", None, "ece", 0.2, 999, 999.0),  # below min_n
            ("v1", "overall", "", None, "ece", 0.3, 10_000, 1e4),  # another slice set
            ("v2", "country", "BR", None, "ece", 0.3, 5000, 5000.0),  # another version
            ("v1", "country", "DE", None, "accuracy", 0.3, 5000, 5000.0),  # another metric
            ("v1", "country", "JP", None, "ece", None, 5000, 5000.0),  # undefined value
        ],
        METRIC_COLUMNS,
    )
    cfg = alert_config(
        {"metric": "ece", "slice": ["country"], "model_version": "v1", "max": 0.05, "fail": True}
    )
    alerts = fired_alerts(metrics, no_drift(spark, cfg), cfg)
    assert fired(alerts) == {("v1", "BR")}
    row = alerts.collect()[0]
    assert row["fail"] is True and row["condition"] == "max" and row["threshold"] == 0.05
    assert row["rule"] == "ece max 0.05 on [country] for v1"
    assert row["message"].startswith("ece = 0.0501 > max 0.05 (v1, country=BR, n=1000)")


def test_min_rule_on_every_slice_set(spark: SparkSession) -> None:
    metrics = spark.createDataFrame(
        [
            ("v1", "overall", "", None, "accuracy", 0.79, 2000, 2000.0),  # fires
            ("v1", "country", "BR", None, "accuracy", 0.8, 2000, 2000.0),  # at the threshold
            ("v1", "country", "US", None, "accuracy", 0.5, 10, 10.0),  # min_n 1000 by default
        ],
        METRIC_COLUMNS,
    )
    cfg = alert_config({"metric": "accuracy", "min": 0.8})
    alerts = fired_alerts(metrics, no_drift(spark, cfg), cfg)
    assert fired(alerts) == {("v1", "")}
    assert alerts.collect()[0]["fail"] is False


def values(spark: SparkSession, rows: list[tuple[str, str, float, int, float]]) -> DataFrame:
    """(model_version, slice_value, value, n, std_error) of ece rows in the country slice."""
    full = [(v, "country", s, None, "ece", x, n, se) for v, s, x, n, se in rows]
    return spark.createDataFrame(full, _values_ddl())


def test_increase_rule_needs_threshold_noise_and_rows(spark: SparkSession) -> None:
    current = values(
        spark,
        [
            ("v1", "BR", 0.10, 5000, 0.002),  # Δ 0.03, z = 0.03/√(8e-6) = 10.6: fires
            ("v1", "US", 0.10, 5000, 0.01),  # Δ 0.03, z = 0.03/√2e-4 = 2.1 < 3
            ("v1", "MX", 0.089, 5000, 0.0001),  # Δ 0.019 ≤ 0.02
            ("v1", "DE", 0.20, 999, 0.0001),  # n < min_n
            ("v1", "JP", 0.20, 5000, 0.0001),  # the previous window has n < min_n
            ("v1", "IN", 0.04, 5000, 0.0001),  # a decrease
        ],
    )
    previous = values(
        spark,
        [
            ("v1", "BR", 0.07, 5000, 0.002),
            ("v1", "US", 0.07, 5000, 0.01),
            ("v1", "MX", 0.07, 5000, 0.0001),
            ("v1", "DE", 0.07, 5000, 0.0001),
            ("v1", "JP", 0.07, 999, 0.0001),
            ("v1", "IN", 0.09, 5000, 0.0001),
        ],
    )
    cfg = alert_config(
        {"metric": "ece", "slice": ["country"], "max_increase": 0.02, "min_n": 1000},
        {"metric": "ece", "slice": ["country"], "max_decrease": 0.04, "fail": True},
    )
    drift = drift_table(current, previous, None, cfg)
    metrics = spark.createDataFrame([], METRIC_COLUMNS)
    alerts = {row["rule_index"]: row for row in fired_alerts(metrics, drift, cfg).collect()}
    increase = [
        row for row in fired_alerts(metrics, drift, cfg).collect() if row["rule_index"] == 0
    ]
    assert [(row["slice_value"]) for row in increase] == ["BR"]
    row = increase[0]
    assert row["reference_value"] == pytest.approx(0.07, abs=TOL)
    assert row["delta"] == pytest.approx(0.03, abs=TOL)
    assert row["z"] == pytest.approx(0.03 / math.sqrt(8e-6), rel=1e-9)
    # The decrease of 0.05 > 0.04 fires the failing rule.
    assert alerts[1]["slice_value"] == "IN" and alerts[1]["fail"] is True
    assert alerts[1]["delta"] == pytest.approx(-0.05, abs=TOL)


def test_increase_against_the_baseline(spark: SparkSession) -> None:
    current = values(spark, [("v1", "BR", 0.10, 5000, 0.002)])
    baseline = values(spark, [("v1", "BR", 0.05, 5000, 0.002)])
    previous = values(spark, [("v1", "BR", 0.099, 5000, 0.002)])
    cfg = alert_config(
        {"metric": "ece", "max_increase": 0.02, "compare_to": "baseline"},
        {"metric": "ece", "max_increase": 0.02},
    )
    drift = drift_table(current, previous, baseline, cfg)
    rows = fired_alerts(spark.createDataFrame([], METRIC_COLUMNS), drift, cfg).collect()
    assert [(row["rule_index"], row["reference_value"]) for row in rows] == [(0, 0.05)]
    assert drift.collect()[0]["baseline"] == "2024-06-01..2024-06-07"


def test_no_rules_give_an_empty_typed_table(spark: SparkSession) -> None:
    cfg = alert_config()
    metrics = spark.createDataFrame(
        [("v1", "overall", "", None, "ece", 0.9, 10**6, 1e6)], METRIC_COLUMNS
    )
    alerts = fired_alerts(metrics, no_drift(spark, cfg), cfg)
    assert alerts.count() == 0
    assert alerts.schema["fail"].dataType.simpleString() == "boolean"


def test_sum_to_bins_keeps_the_calibration_metrics(spark: SparkSession) -> None:
    """Summing the decision and threshold keys away (true_class, predicted_class,
    threshold_bin) leaves every bin's and every fine cell's sums, so the calibration metrics of
    the narrowed table equal those of the full one, with uniform and with equal-mass bins
    (which are merged from the cells)."""
    from spark_calib import metrics_from_stats
    from spark_calib.stats.combine import sum_to_bins

    rows = tagged("a", WINDOW_A) + tagged("b", WINDOW_B)
    cfg = config(
        metrics=[
            "ece",
            "mce",
            "rmsce",
            "brier",
            "nll",
            "accuracy",
            "f1",
            "roc_auc_binned",
            "threshold_metrics",
        ]
    )
    full = evaluate(spark.createDataFrame(rows, "v string, s double, y int"), cfg).stats
    narrow = sum_to_bins(full)
    dropped = "true_class is not null or predicted_class is not null or threshold_bin is not null"
    assert full.where(dropped).count() > 0
    assert narrow.where(dropped).count() == 0
    # The cells stay: 0.9 and 0.2 of each version, with both labels (a binary label is summed,
    # not a key). The predicted class and threshold bin follow the cell here, so narrowing
    # merges no two rows.
    cells = narrow.where("cell is not null").select("model_version", "cell", "n").collect()
    assert sorted((r.model_version, r.n) for r in cells) == [("a", 2), ("a", 2), ("b", 2), ("b", 2)]
    assert narrow.count() == full.count() == 4
    names = ["ece", "mce", "rmsce", "brier", "nll", "accuracy"]
    calibration = {**cfg, "metrics": names}
    equal_mass = {**calibration, "binning": {"n_bins": 10, "strategy": "equal_mass"}}

    def values(frame: DataFrame, config: dict[str, Any]) -> dict[tuple[str, str], float]:
        return {
            (r.model_version, r.metric): r.value
            for r in metrics_from_stats(frame, config).collect()
        }

    expected = values(full, calibration)
    assert values(narrow, calibration) == pytest.approx(expected, abs=TOL)
    assert expected[("a", "ece")] == pytest.approx(ECE_A, abs=TOL)
    expected_mass = values(full, equal_mass)
    assert values(narrow, equal_mass) == pytest.approx(expected_mass, abs=TOL)
    # Equal-mass, M = 10, on the two cells of A (weight 2 each): midpoints 1/4 and 3/4 put
    # the 0.2 cell in bin 2 and the 0.9 cell in bin 7: the same two groups as the uniform bins.
    assert expected_mass[("a", "ece")] == pytest.approx(ECE_A, abs=TOL)


def test_min_z_asks_a_value_rule_for_standard_errors_beyond_the_threshold(
    spark: SparkSession,
) -> None:
    """ece max 0.05 with min_z 2: BR is 0.03 above with se 0.01 (3 se: fires), US is 0.03 above
    with se 0.02 (1.5 se: does not), MX has no se (never fires)."""
    metrics = spark.createDataFrame(
        [
            ("v1", "country", "BR", None, "ece", 0.08, 5000, 5000.0, 0.01),
            ("v1", "country", "US", None, "ece", 0.08, 5000, 5000.0, 0.02),
            ("v1", "country", "MX", None, "ece", 0.08, 5000, 5000.0, None),
        ],
        METRIC_COLUMNS + ", se double",
    )
    cfg = alert_config({"metric": "ece", "max": 0.05, "min_z": 2})
    assert fired(fired_alerts(metrics, no_drift(spark, cfg), cfg)) == {("v1", "BR")}


def test_min_z_replaces_drift_z_for_a_change_rule(spark: SparkSession) -> None:
    """Deltas of 0.03 with SE √(2)·0.002 (z ≈ 10.6) and √(2)·0.01 (z ≈ 2.1)."""
    current = values(spark, [("v1", "BR", 0.10, 5000, 0.002), ("v1", "US", 0.10, 5000, 0.01)])
    previous = values(spark, [("v1", "BR", 0.07, 5000, 0.002), ("v1", "US", 0.07, 5000, 0.01)])
    metrics = spark.createDataFrame([], METRIC_COLUMNS)
    for min_z, expected in ((5.0, {("v1", "BR")}), (1.5, {("v1", "BR"), ("v1", "US")})):
        cfg = alert_config({"metric": "ece", "max_increase": 0.02, "min_z": min_z})
        drift = drift_table(current, previous, None, cfg)
        assert fired(fired_alerts(metrics, drift, cfg)) == expected, min_z


@pytest.mark.parametrize(
    ("uncertainty", "noise", "se_ece", "se_accuracy", "se_brier"),
    [
        ({"method": "analytic"}, False, SE_ECE_A, SE_ACC_A, SE_BRIER_A),
        # No se: accuracy and ECE take the row-count model, Brier has none.
        ({"method": "none"}, True, SE_ECE_ROWS_A, SE_ACC_A, None),
    ],
)
def test_metric_values_read_the_window_values_from_the_metrics_table(
    spark: SparkSession,
    uncertainty: dict[str, str],
    noise: bool,
    se_ece: float,
    se_accuracy: float,
    se_brier: float | None,
) -> None:
    """A run's drift values come from its metrics table instead of a second computation from
    its statistics: the same rows, values and standard errors as ``window_values``, by hand on
    window A, and the noise model joined only when a row of its metrics has no se."""
    cfg = load_config(config(uncertainty=uncertainty))
    frame = spark.createDataFrame(tagged("a", WINDOW_A), "v string, s double, y int")
    result = evaluate(frame, cfg)
    assert needs_noise_model(result.metrics, cfg) is noise
    read = metric_values(result.metrics, cfg, result.stats if noise else None)
    rows = by_metric(read)
    assert rows["ece"]["value"] == pytest.approx(ECE_A, abs=TOL)
    assert rows["ece"]["std_error"] == pytest.approx(se_ece, abs=TOL)
    assert rows["accuracy"]["std_error"] == pytest.approx(se_accuracy, abs=TOL)
    assert rows["brier"]["std_error"] == pytest.approx(se_brier, abs=TOL)
    assert "count" not in rows
    assert read.columns == list(VALUE_COLUMNS)
    _assert_same_rows(_value_rows(read), _value_rows(window_values(result.stats, cfg)))


@pytest.mark.parametrize("method", ["analytic", "jackknife", "none"])
def test_metric_values_equal_window_values_on_weighted_slices(
    spark: SparkSession, method: str
) -> None:
    """On 300 weighted rows in two versions and a slice, with equal-mass bins, every drift row
    read from the metrics table equals the one ``window_values`` computes from the statistics
    (value, n and std_error), whichever uncertainty method."""
    import numpy as np

    rng = np.random.default_rng(7)
    score = rng.uniform(0.0, 1.0, 300)
    rows = [
        (f"v{i % 2}", ["BR", "MX", "US"][i % 3], float(s), int(rng.uniform() < s**1.5), float(w))
        for i, (s, w) in enumerate(zip(score, rng.uniform(0.5, 2.0, 300), strict=True))
    ]
    frame = spark.createDataFrame(rows, "v string, c string, s double, y int, w double")
    cfg = load_config(
        config(
            columns={"score": "s", "label": "y", "model_version": "v", "weight": "w"},
            slices=[[], ["c"]],
            binning={"n_bins": 10, "strategy": "equal_mass"},
            metrics=["ece", "mce", "rmsce", "brier", "nll", "accuracy", "error_rate", "count"],
            uncertainty={"method": method, "buckets": 5},
        )
    )
    result = evaluate(frame, cfg)
    read = metric_values(result.metrics, cfg, result.stats)
    expected = _value_rows(window_values(result.stats, cfg))
    assert len(expected) == 2 * 4 * 7
    _assert_same_rows(_value_rows(read), expected)


def _value_rows(frame: DataFrame) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """(version, slice name, slice value, class, metric) → (value, n, std_error)."""
    return {
        (r.model_version, r.slice_name, r.slice_value, r["class"], r.metric): (
            r.value,
            r.n,
            r.std_error,
        )
        for r in frame.collect()
    }


def _assert_same_rows(
    got: dict[tuple[Any, ...], tuple[Any, ...]], expected: dict[tuple[Any, ...], tuple[Any, ...]]
) -> None:
    """The same keys; each number equal to 1e-12 (relative) and each null null."""
    assert got.keys() == expected.keys()
    for key, row in expected.items():
        for value, want in zip(got[key], row, strict=True):
            assert (value is None) == (want is None), (key, got[key], row)
            if want is not None:
                assert value == pytest.approx(want, rel=1e-12, abs=1e-15), (key, got[key], row)
