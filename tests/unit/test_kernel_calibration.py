"""The calibration kernel in plain NumPy (no Spark): hand cases, the NumPy reference, the
Brier decomposition and the jackknife, on statistics built from rows by the test itself."""

from __future__ import annotations

import math
import re

import numpy as np
import pyarrow as pa
import pytest

from spark_calib.kernels.calibration import SES, VALUES, calibration_estimates
from spark_calib.kernels.estimates import jackknife_se, table_rows
from spark_calib.kernels.finish import finish_table
from spark_calib.kernels.plan import FinishPlan
from spark_calib.kernels.registry import KERNELS, kernel
from spark_calib.registry import CALIBRATION, METRICS, PER_CLASS
from tests.support import reference as ref
from tests.support.key_stats import binary_key_table

ALL = (
    "ece",
    "mce",
    "rmsce",
    "brier",
    "nll",
    "accuracy",
    "count",
    "brier_reliability",
    "brier_resolution",
    "brier_uncertainty",
    "brier_within_bin",
    "mean_prediction",
    "mean_label",
    "calibration_ratio",
    "spiegelhalter_z",
    "spiegelhalter_p",
)


def _plan(names: tuple[str, ...] = ALL, method: str = "analytic", buckets: int = 0) -> FinishPlan:
    return FinishPlan(
        metrics=(("calibration", names),),
        n_bins=15,
        equal_mass=False,
        method=method,
        critical_value=1.959963984540054,
        buckets=buckets,
    )


def _values(table: pa.Table, plan: FinishPlan) -> dict[str, float]:
    estimates = calibration_estimates(table, plan)
    assert estimates is not None
    return dict(zip(estimates.metrics, estimates.values[0], strict=True))


def _rows(seed: int, n: int = 4000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s = rng.beta(2.0, 3.0, n)
    # Scores exactly on bin edges, at 0 and at 1.
    s[:30] = np.arange(30) % 16 / 15.0
    y = (rng.uniform(size=n) < np.clip(s * 1.2, 0, 1)).astype(float)
    w = rng.gamma(2.0, 0.5, n)
    return s, y, w


def test_hand_case_two_bins() -> None:
    # Bin 0 (s = 0.0): rows (0, y=1, w=2); bin 7 (s = 0.5): (0.5, y=0, w=1), (0.5, y=1, w=1).
    table = binary_key_table(
        np.array([0.0, 0.5, 0.5]), np.array([1.0, 0.0, 1.0]), np.array([2.0, 1.0, 1.0])
    )
    values = _values(table, _plan())
    # S_0 = 2·1 − 0 = 2, S_7 = 1 − 1 = 0; W = 4.
    assert values["ece"] == pytest.approx(2.0 / 4.0, abs=1e-15)
    assert values["mce"] == pytest.approx(1.0, abs=1e-15)
    assert values["rmsce"] == pytest.approx(math.sqrt((2.0**2 / 2.0) / 4.0), abs=1e-15)
    assert values["count"] == 3.0
    # Brier: (0 − 1)²·2 + 0.25 + 0.25 over 4.
    assert values["brier"] == pytest.approx(2.5 / 4.0, abs=1e-15)
    # Murphy's reliability: Σ W_b(p̄_b − ȳ_b)²/W = (2·1 + 2·0)/4.
    assert values["brier_reliability"] == pytest.approx(0.5, abs=1e-15)
    # Within-bin: bin 7 holds one probability, so no within-bin variance or covariance.
    assert values["brier_within_bin"] == pytest.approx(0.0, abs=1e-15)


def test_against_the_numpy_reference_with_weights() -> None:
    s, y, w = _rows(7)
    values = _values(binary_key_table(s, y, w), _plan())
    assert values["ece"] == pytest.approx(ref.ece(s, y, w), rel=1e-12)
    assert values["mce"] == pytest.approx(ref.mce(s, y, w), rel=1e-12)
    assert values["rmsce"] == pytest.approx(ref.rmsce(s, y, w), rel=1e-12)
    assert values["brier"] == pytest.approx(ref.brier_binary(s, y, w), rel=1e-12)
    assert values["nll"] == pytest.approx(ref.nll_binary(s, y, w), rel=1e-12)
    assert values["mean_prediction"] == pytest.approx(np.average(s, weights=w), rel=1e-12)
    assert values["calibration_ratio"] == pytest.approx(np.sum(w * s) / np.sum(w * y), rel=1e-12)
    z = np.sum(w * (y - s) * (1 - 2 * s)) / np.sqrt(np.sum(w**2 * (1 - 2 * s) ** 2 * s * (1 - s)))
    assert values["spiegelhalter_z"] == pytest.approx(z, rel=1e-10)
    assert values["spiegelhalter_p"] == pytest.approx(math.erfc(abs(z) / math.sqrt(2)), rel=1e-9)


def test_brier_decomposition_sums_exactly_and_reliability_is_murphys() -> None:
    s, y, w = _rows(11)
    values = _values(binary_key_table(s, y, w), _plan())
    bins = ref.reliability_bins(s, y, w)
    full = bins.nonempty
    murphy = np.sum(bins.weight_sum[full] * bins.gap[full] ** 2) / bins.total_weight
    assert values["brier_reliability"] == pytest.approx(murphy, rel=1e-12)
    assert values["brier_reliability"] >= 0.0
    total = (
        values["brier_reliability"]
        - values["brier_resolution"]
        + values["brier_uncertainty"]
        + values["brier_within_bin"]
    )
    assert total == pytest.approx(ref.brier_binary(s, y, w), abs=1e-14)
    # The within-bin terms from the rows: WBV − WBC per bin.
    b = ref.assign_bins(s)
    wbv = wbc = 0.0
    for index in np.flatnonzero(full):
        rows = b == index
        mean_s = np.average(s[rows], weights=w[rows])
        mean_y = np.average(y[rows], weights=w[rows])
        wbv += np.sum(w[rows] * (s[rows] - mean_s) ** 2)
        wbc += 2 * np.sum(w[rows] * (s[rows] - mean_s) * (y[rows] - mean_y))
    within = (wbv - wbc) / w.sum()
    assert values["brier_within_bin"] == pytest.approx(within, rel=1e-9, abs=1e-15)


def test_jackknife_se_is_the_leave_one_bucket_out_spread_of_the_reference() -> None:
    s, y, w = _rows(3, n=3000)
    buckets = np.arange(s.size) % 5
    table = binary_key_table(s, y, w, buckets=buckets)
    estimates = calibration_estimates(table, _plan(("ece", "brier"), "jackknife", 5))
    assert estimates is not None
    replicates = np.array(
        [ref.ece(s[buckets != g], y[buckets != g], w[buckets != g]) for g in range(5)]
    )
    expected = math.sqrt(4 / 5 * np.sum((replicates - replicates.mean()) ** 2))
    rows = table_rows(("v", "overall", ""), estimates, _plan(("ece", "brier"), "jackknife", 5), 1.0)
    by_metric = {row[4]: row for row in rows}
    assert by_metric["ece"][5] == pytest.approx(ref.ece(s, y, w), rel=1e-12)
    assert by_metric["ece"][9] == pytest.approx(expected, rel=1e-9)


def test_jackknife_se_is_null_unless_every_replicate_has_a_value() -> None:
    assert math.isnan(jackknife_se(np.array([[1.0], [np.nan], [2.0]]))[0])
    assert jackknife_se(np.array([[1.0], [3.0]]))[0] == pytest.approx(math.sqrt(1 * 1.0))


def test_empty_weight_gives_null_values() -> None:
    table = binary_key_table(np.array([0.2, 0.7]), np.array([0.0, 1.0]), np.array([0.0, 0.0]))
    values = _values(table, _plan())
    assert math.isnan(values["ece"]) and math.isnan(values["mce"]) and values["count"] == 2.0


def test_finish_table_gives_each_key_its_rows_and_n_eff() -> None:
    first = binary_key_table(np.array([0.1, 0.9]), np.array([0.0, 1.0]), np.array([1.0, 3.0]))
    second = first.set_column(2, "slice_value", pa.array(["x"] * first.num_rows))
    out = finish_table(
        pa.concat_tables([first, second]), _plan(("ece", "count")), ("calibration",)
    )["metrics"]
    assert sorted(out.column("slice_value").to_pylist()) == ["", "", "x", "x"]
    # n_eff = (Σw)²/Σw² = 16/10.
    assert out.column("n_eff").to_pylist() == pytest.approx([1.6] * 4)


def test_every_calibration_metric_has_a_kernel_value_and_its_se_flag_matches() -> None:
    names = [name for name, spec in METRICS.items() if spec.family in (CALIBRATION, PER_CLASS)]
    assert sorted(names) == sorted(VALUES)
    assert {name for name in names if METRICS[name].analytic_se} == set(SES)


def test_an_unknown_kernel_names_the_valid_ones() -> None:
    listed = re.escape(str(sorted(KERNELS)))
    with pytest.raises(KeyError, match=rf"unknown kernel 'nope'; valid kernels: {listed}"):
        kernel("nope")
    assert "calibration" in KERNELS
    assert kernel("calibration") is KERNELS["calibration"]


def test_erf_and_erfc_match_scipy() -> None:
    from scipy.special import erf as scipy_erf
    from scipy.special import erfc as scipy_erfc

    from spark_calib.kernels.special import erf, erfc

    xs = np.concatenate([np.linspace(-7, 7, 2801), [0.0, 1e-300, 1e-12, 6.0, 30.0]])
    np.testing.assert_allclose(erf(xs), scipy_erf(xs), rtol=0, atol=1e-15)
    np.testing.assert_allclose(erfc(np.abs(xs)), scipy_erfc(np.abs(xs)), rtol=1e-13)
    assert np.isnan(erf(np.array([np.nan])))[0]
