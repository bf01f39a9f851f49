"""The click-through demo log: a low base rate where the equal-width ECE stays small while
calibration_ratio shows v2's 40 % over-prediction and v3's 25 % under-prediction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pyspark.sql import SparkSession

from spark_calib import evaluate
from spark_calib_cli.console.summary import collect_summary, format_summary
from spark_calib_cli.demo import logs as demo

CONFIG = Path(__file__).resolve().parents[2] / "conf" / "demo_ctr.yaml"


def _overall(spark: SparkSession, strategy: str) -> tuple[dict[tuple[str, str], float], Any]:
    config = yaml.safe_load(CONFIG.read_text())
    del config["input"], config["output"]
    config["binning"]["strategy"] = strategy
    config["metrics"] = ["ece", "mce", "calibration_ratio", "mean_label"]
    result = evaluate(demo.ctr_log(spark, rows=150_000), config)
    values = {
        (row.model_version, row.metric): row.value
        for row in result.metrics.where("slice_name = 'overall'").collect()
    }
    return values, result


@pytest.fixture(scope="module")
def uniform(spark: SparkSession) -> dict[tuple[str, str], float]:
    values, result = _overall(spark, "uniform")
    result.unpersist()
    return values


def test_the_log_has_a_low_base_rate_and_the_versions_scale_it(uniform: Any) -> None:
    for version in ("v1", "v2", "v3"):
        assert 0.015 < uniform[(version, "mean_label")] < 0.025
    # Each version logs its factor × the true probability (clipped at 1, which never binds here).
    for version, factor in demo.CTR_PREDICTION_FACTOR.items():
        assert uniform[(version, "calibration_ratio")] == pytest.approx(factor, rel=0.08)


def test_equal_width_ece_hides_what_the_calibration_ratio_shows(uniform: Any) -> None:
    # 40 % over-prediction, yet an ECE under 0.01, which reads as well calibrated.
    assert uniform[("v2", "ece")] < 0.01
    assert uniform[("v2", "calibration_ratio")] > 1.3
    # The equal-width MCE comes from a nearly empty bin far from the mass.
    assert uniform[("v1", "mce")] > 0.2


def test_equal_mass_bins_give_a_meaningful_mce_and_the_summary_names_the_direction(
    spark: SparkSession,
) -> None:
    values, result = _overall(spark, "equal_mass")
    rows = collect_summary(
        result.metrics, result.reliability, top=1, min_rows=100, positive_class=True
    )
    text = format_summary(rows)
    result.unpersist()
    assert values[("v1", "mce")] < 0.02
    lines = {line.split()[0]: line for line in text.splitlines() if "overall" in line}
    assert lines["v2"].rstrip().endswith("over-predicts")
    assert lines["v3"].rstrip().endswith("under-predicts")
    assert not lines["v1"].rstrip().endswith("predicts")
