"""Smoke test of the benchmark harness (bench/): every case runs end to end on tiny logs.

Only the shape of the results is checked (files written, keys and cases present, timings
positive, the aggregation floors and the phases of each spark_calib variant on the page), never
a timing threshold: the timings of a 20k-row log say nothing about 20M rows.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from bench.run import run_benchmark
from bench.targets import PHASE_TARGETS, RATIO_TARGETS

ROWS = 20_000
SCALING = (10_000, ROWS)
MULTICLASS_ROWS = 2_000
SPARK_CASES = {"typical", "wide", "metrics_3", "metrics_all", "slices_1", "slices_6", "ctr"}
CLASSWISE_CASES = {"classwise_multiclass10", "classwise_multiclass100"}
TOP_LEVEL_KEYS = {
    "date",
    "command",
    "machine",
    "settings",
    "cases",
    "scaling",
    "memory",
    "targets",
    "notes",
}
MACHINE_KEYS = {"nproc", "total_ram_bytes", "cpu_model", "python", "pyspark", "java"}
# Case → its aggregation floor variants → the bench.aggregation_floor query each one times.
FLOORS = {
    "typical": {
        "aggregation_floor": "slices_bins_12",
        "aggregation_floor_jackknife": "slices_bins_buckets_12",
    },
    "metrics_all": {"aggregation_floor": "slices_cells_16"},
    "slices_1": {"aggregation_floor": "version_bins_12"},
    "ctr": {"aggregation_floor": "slices_cells_16"},
}
PHASE_KEYS = {"aggregation_s", "finishing_s", "writing_s", "evaluate_s", "write_s", "path"}


@pytest.mark.slow
def test_run_benchmark_writes_every_case(spark: SparkSession, tmp_path: Path) -> None:
    docs = tmp_path / "benchmarks.md"
    results = run_benchmark(
        spark,
        rows=ROWS,
        task="binary",
        repeats=1,
        cache=tmp_path / "data",
        out=tmp_path / "results",
        docs=docs,
        scaling=SCALING,
        multiclass_min_rows=MULTICLASS_ROWS,
        warmup=False,
    )

    saved = json.loads((tmp_path / "results" / f"{results['date']}.json").read_text())
    assert set(saved) >= TOP_LEVEL_KEYS
    assert set(saved["machine"]) >= MACHINE_KEYS
    assert set(saved["cases"]) == SPARK_CASES | CLASSWISE_CASES

    typical = saved["cases"]["typical"]
    assert set(typical["variants"]) == {
        "scan_floor",
        "aggregation_floor",
        "aggregation_floor_jackknife",
        "spark_calib",
        "spark_calib_equal_mass",
        "spark_calib_jackknife",
        "mllib",
        "pandas",
    }
    assert typical["variants"]["mllib"]["extrapolated"] is True
    assert "pandas_vs_spark_calib_overall_ece_max_abs_diff" in typical["checks"]
    assert set(saved["cases"]["wide"]["variants"]) == {
        "scan_floor",
        "spark_calib",
        "spark_calib_finest_grain",
        "spark_calib_grouping_sets",
    }
    for name in CLASSWISE_CASES:
        case = saved["cases"][name]
        assert case["rows"] == MULTICLASS_ROWS
        assert case["ratios"]["spark_calib_classwise/spark_calib"] > 0
    for name, case in saved["cases"].items():
        if "same_as" in case:
            continue
        for variant, timing in case["variants"].items():
            assert timing["median_s"] > 0, (name, variant)
            assert len(timing["timings_s"]) == 1 and all(t > 0 for t in timing["timings_s"])
        assert all(value > 0 for value in case["ratios"].values()), name
    for key in ("spark_calib/scan_floor", "mllib/spark_calib", "pandas/spark_calib"):
        assert typical["ratios"][key] > 0
    for name, floors in FLOORS.items():
        case = saved["cases"][name]
        assert {f: entry["query"] for f, entry in case["aggregation_floors"].items()} == floors
        for floor, entry in case["aggregation_floors"].items():
            assert case["variants"][floor]["median_s"] > 0
            assert case["ratios"][f"{floor}/scan_floor"] > 0
            for variant in entry["variants"]:
                assert case["ratios"][f"{variant}/{floor}"] > 0, (name, variant)
    assert "aggregation_floors" not in saved["cases"]["wide"]
    assert typical["ratios"]["spark_calib_jackknife/aggregation_floor_jackknife"] > 0
    # Every spark_calib variant has its phases; the driver path at this size.
    for name, case in saved["cases"].items():
        for variant, entry in case.get("variants", {}).items():
            if variant.startswith("spark_calib"):
                phases = entry["phases"]
                assert set(phases) >= PHASE_KEYS, (name, variant)
                assert phases["finishing_s"] > 0 and phases["write_s"] > 0
                assert phases["path"] == "driver"

    points = saved["scaling"]["points"]
    assert [point["rows"] for point in points] == list(SCALING)
    assert all(point["spark_calib_s"] > 0 and point["scan_floor_s"] > 0 for point in points)
    assert saved["memory"]["python_peak_rss_bytes"] > 0
    assert saved["memory"]["driver_jvm_peak_rss_bytes"] > 0
    assert {target["status"] for target in saved["targets"]} <= {"met", "not met", "n/a"}
    # The ratio and phase targets (bench/targets.py), the statistics rows per key and the
    # scaling fit.
    assert len(saved["targets"]) == len(RATIO_TARGETS) + len(PHASE_TARGETS) + 2
    by_name = {target["name"]: target for target in saved["targets"]}
    for name in ("metrics_all_aggregation", "jackknife_aggregation", "metrics_all_finishing"):
        assert by_name[name]["status"] in {"met", "not met"}, name

    page = docs.read_text()
    for heading in ("## Command", "## Machine", "## Targets", "## Scaling", "## Memory"):
        assert heading in page
    assert "### typical" in page
    assert "| variant | median s | runs s | × scan floor | × aggregation floor | notes |" in page
    assert "| `aggregation_floor` |" in page and "`slices_cells_16`: model version" in page
    assert "| variant | aggregation s | finishing s | writing s |" in page
    assert "aggregation_floor: the bare groupBy" in page
