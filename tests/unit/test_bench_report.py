"""The benchmark page's aggregation floors and phases (``bench.report``, ``bench.targets``,
``bench.phases``) on a hand-made results dict: no Spark, no timing."""

from __future__ import annotations

from typing import Any

import pytest

from bench.phases import phases, timed_runs
from bench.report import render_markdown
from bench.spark_variants import RunPhases
from bench.targets import evaluate_targets

ROWS = 20_000_000


def _variant(median: float, phases_: dict[str, Any] | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"median_s": median, "timings_s": [median], "repeats": 1}
    if phases_ is not None:
        entry["strategy"] = "finest_grain"
        entry["phases"] = phases_
    return entry


def _phases(aggregation: float, finishing: float, writing: float, path: str) -> dict[str, Any]:
    return {
        "aggregation_s": aggregation,
        "finishing_s": finishing,
        "writing_s": writing,
        "evaluate_s": aggregation + finishing if path == "driver" else aggregation,
        "write_s": writing if path == "driver" else writing + finishing,
        "path": path,
        "statistics_rows": 9_180 if path == "driver" else 740_000,
        "statistics_to_arrow_s": 0.05 if path == "driver" else None,
    }


def _case(
    variants: dict[str, dict[str, Any]],
    ratios: dict[str, float],
    floors: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    return {
        "task": "binary",
        "rows": ROWS,
        "log": "binary_20000000_5",
        "log_kind": "binary",
        "configs": {
            name: {"slices": [[], ["country"]]} for name in variants if name.startswith("spark")
        },
        "scan_columns": ["score", "label", "model_version", "country"],
        "variants": variants,
        "ratios": ratios,
        "lower_bound_ratios": [],
        "checks": {},
        "notes": [],
        "aggregation_floors": floors,
    }


def _floor(query: str, grain: str, *variants: str) -> dict[str, Any]:
    return {"query": query, "grain": grain, "variants": list(variants)}


def _results() -> dict[str, Any]:
    typical = _case(
        {
            "scan_floor": _variant(1.0),
            "aggregation_floor": _variant(3.0),
            "aggregation_floor_jackknife": _variant(9.0),
            "spark_calib": _variant(3.3, _phases(2.5, 0.3, 0.5, "driver")),
            "spark_calib_jackknife": _variant(12.0, _phases(8.0, 2.0, 2.0, "driver")),
        },
        {
            "aggregation_floor/scan_floor": 3.0,
            "aggregation_floor_jackknife/scan_floor": 9.0,
            "spark_calib/scan_floor": 3.3,
            "spark_calib_jackknife/scan_floor": 12.0,
            "spark_calib/aggregation_floor": 1.1,
            "spark_calib_jackknife/aggregation_floor_jackknife": 1.3333,
            "spark_calib_jackknife/spark_calib": 3.6364,
        },
        {
            "aggregation_floor": _floor(
                "slices_bins_12",
                "model version × country × device × calibration bin; 12 sums",
                "spark_calib",
            ),
            "aggregation_floor_jackknife": _floor(
                "slices_bins_buckets_12",
                "model version × country × device × calibration bin × jackknife bucket; 12 sums",
                "spark_calib_jackknife",
            ),
        },
    )
    metrics_all = _case(
        {
            "scan_floor": _variant(1.0),
            "aggregation_floor": _variant(10.0),
            "spark_calib": _variant(16.0, _phases(10.5, 4.0, 1.5, "grouped")),
        },
        {
            "aggregation_floor/scan_floor": 10.0,
            "spark_calib/scan_floor": 16.0,
            "spark_calib/aggregation_floor": 1.6,
        },
        {"aggregation_floor": _floor("slices_cells_16", "the cells; 16 sums", "spark_calib")},
    )
    return {
        "date": "2026-11-26",
        "command": "python -m bench.run",
        "machine": {"nproc": 2},
        "settings": {"repeats": 1, "warmup": True, "spark": {}, "driver_memory": "4g"},
        "cases": {"typical": typical, "metrics_all": metrics_all},
        "scaling": None,
        "memory": {},
        "low_memory": None,
        "notes": [],
    }


def _page() -> str:
    results = _results()
    return render_markdown({**results, "targets": evaluate_targets(results)})


def test_the_case_table_divides_each_variant_by_the_floor_of_its_grain() -> None:
    page = _page()

    assert "| variant | median s | runs s | × scan floor | × aggregation floor | notes |" in page
    assert (
        "| `aggregation_floor` | 3.000 | 3.00 | 3.000 | 1.000 | `slices_bins_12`: model version "
        "× country × device × calibration bin; 12 sums; the floor of `spark_calib` |"
    ) in page
    assert "| `scan_floor` | 1.000 | 1.00 | 1.000 | — |  |" in page
    assert "| `spark_calib` | 3.300 | 3.30 | 3.300 | 1.100 | strategy finest_grain |" in page
    # The jackknife is divided by its own floor, named in the notes.
    assert (
        "| `spark_calib_jackknife` | 12.000 | 12.00 | 12.000 | 1.333 | strategy finest_grain; "
        "÷ `aggregation_floor_jackknife` |"
    ) in page
    # The floor ratios are in their column, not repeated in the "Ratios:" line.
    ratios_lines = [line for line in page.splitlines() if line.startswith("Ratios: ")]
    assert ratios_lines == ["Ratios: spark_calib_jackknife/spark_calib = 3.636"]


def test_the_phases_table_has_aggregation_finishing_and_writing() -> None:
    page = _page()

    assert (
        "| variant | aggregation s | finishing s | writing s | evaluate s | writes s | finishing |"
    ) in page
    assert (
        "| `spark_calib` | 2.500 | 0.300 | 0.500 | 2.800 | 0.500 | driver, 9,180 statistics rows "
        "(toArrow 0.05 s) |"
    ) in page
    assert (
        "| `spark_calib` | 10.500 | 4.000 | 1.500 | 10.500 | 5.500 | grouped, 740,000 statistics "
        "rows |"
    ) in page


def test_the_targets_compare_with_the_aggregation_floor_and_the_finishing() -> None:
    targets = {target["name"]: target for target in evaluate_targets(_results())}

    assert targets["typical_aggregation"]["status"] == "met"  # 1.1 ≤ 1.2
    assert targets["jackknife_aggregation"]["status"] == "not met"  # 1.33 > 1.2
    assert targets["metrics_all_aggregation"]["status"] == "not met"  # 1.6 > 1.3
    assert targets["metrics_all_finishing"]["status"] == "not met"  # 4 s > 3 s
    assert targets["metrics_all_finishing"]["measured"] == "finishing_s = 4.00 s (grouped path)"
    assert targets["slices_1_aggregation"]["status"] == "n/a"
    assert "case slices_1 not run" in targets["slices_1_aggregation"]["note"]


def test_phases_split_evaluate_or_the_writes_by_the_finishing_path() -> None:
    runs = [RunPhases(9.0, 2.0), RunPhases(10.0, 3.0), RunPhases(12.0, 2.5)]
    driver = phases(runs, {"path": "driver", "statistics_rows": 10, "finishing_s": 1.5})
    # On the driver the kernels are inside evaluate.
    assert driver["evaluate_s"] == 10.0 and driver["write_s"] == 2.5
    assert (driver["aggregation_s"], driver["finishing_s"], driver["writing_s"]) == (8.5, 1.5, 2.5)
    assert driver["statistics_rows"] == 10
    # In the grouped pass they run inside the first writes.
    grouped = phases(runs, {"path": "grouped", "finishing_s": 1.5})
    assert (grouped["aggregation_s"], grouped["writing_s"]) == (10.0, pytest.approx(1.0))


def test_timed_runs_drop_the_warm_up_run() -> None:
    runs = [RunPhases(5.0, 1.0), RunPhases(3.0, 1.0)]
    assert timed_runs(runs, warmup_ran=True) == [RunPhases(3.0, 1.0)]
    assert timed_runs(runs, warmup_ran=False) == runs
