"""Reliability diagrams: what each panel draws, the files written, and the report job."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd
import pytest
from matplotlib.figure import Figure
from pyspark.sql import SparkSession

from spark_calib_cli.commands.evaluate import run_evaluate
from spark_calib_cli.commands.report import run_report
from spark_calib_cli.errors import MissingInputError
from spark_calib_cli.report import write_reliability_diagrams
from spark_calib_cli.report.reliability_panel import draw_histogram, draw_reliability
from tests.support.jobs import RUN_DATE, job_config, log_rows, write_log

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
KEY = {"model_version": "v1", "slice_name": "overall", "slice_value": ""}


def bins_frame(version: str | None = "v1", slice_value: str = "") -> pd.DataFrame:
    """Four bins of width 1/4; bin 1 is empty (n = 0, null means)."""
    rows = [
        # bin, n, weight_sum, mean_confidence, accuracy
        (0, 4, 4.0, 0.125, 0.25),
        (1, 0, 0.0, None, None),
        (2, 6, 6.0, 0.625, 0.5),
        (3, 10, 10.0, 0.875, 1.0),
    ]
    return pd.DataFrame(
        [
            {
                "model_version": version,
                "slice_name": "overall" if slice_value == "" else "country",
                "slice_value": slice_value,
                "bin": b,
                "bin_lower": b / 4,
                "bin_upper": (b + 1) / 4,
                "n": n,
                "weight_sum": w,
                "mean_confidence": conf,
                "accuracy": acc,
                "gap": None if acc is None else acc - conf,
            }
            for b, n, w, conf, acc in rows
        ]
    )


def test_empty_bins_get_no_bar_and_gaps_span_accuracy_to_confidence() -> None:
    axes = Figure().add_subplot()

    draw_reliability(axes, bins_frame(), legend=True)

    accuracy_bars, gap_bars = axes.containers
    assert [bar.get_x() for bar in accuracy_bars] == [0.0, 0.5, 0.75]
    assert [bar.get_height() for bar in accuracy_bars] == [0.25, 0.5, 1.0]
    assert [bar.get_y() for bar in gap_bars] == [0.25, 0.5, 1.0]
    assert [bar.get_height() for bar in gap_bars] == pytest.approx(
        [0.125 - 0.25, 0.625 - 0.5, 0.875 - 1.0]
    )
    labels = axes.get_legend_handles_labels()[1]
    assert "empty bin (no rows)" in labels


def test_histogram_shows_each_bins_share_of_weight() -> None:
    axes = Figure().add_subplot()

    draw_histogram(axes, bins_frame())

    (bars,) = axes.containers
    assert [bar.get_height() for bar in bars] == pytest.approx([4 / 20, 0.0, 6 / 20, 10 / 20])


def test_one_png_per_model_version(tmp_path: Path) -> None:
    reliability = pd.concat(
        [bins_frame("v1"), bins_frame("v1", "BR"), bins_frame("v/2"), bins_frame(None)]
    )
    slices = pd.DataFrame(
        [
            {**KEY, "rank": 0, "n": 20, "ece": 0.1, "mce": 0.2},
            {
                **KEY,
                "slice_name": "country",
                "slice_value": "BR",
                "rank": 1,
                "n": 20,
                "ece": 0.3,
                "mce": None,
            },
            {**KEY, "model_version": "v/2", "rank": 0, "n": 20, "ece": 0.1, "mce": 0.2},
            {**KEY, "model_version": None, "rank": 0, "n": 20, "ece": 0.1, "mce": 0.2},
        ]
    )

    written = write_reliability_diagrams(reliability, slices, tmp_path, run_date="2024-06-30")

    assert [path.name for path in written] == [
        "reliability_all.png",
        "reliability_v_2.png",
        "reliability_v1.png",
    ]
    for path in written:
        assert path.read_bytes().startswith(PNG_SIGNATURE)


def test_report_job_reads_the_tables_of_a_run_date(spark: SparkSession, tmp_path: Path) -> None:
    log, out = tmp_path / "log", tmp_path / "out"
    write_log(spark, log, log_rows(30))
    config = job_config({"path": str(log)}, {"path": str(out)})
    run_evaluate(spark, config, RUN_DATE)

    written = run_report(spark, config, RUN_DATE, tmp_path / "report", min_slice_rows=1)

    assert [path.name for path in written] == [
        "reliability_a.png",
        "reliability_b.png",
        "trend_accuracy.png",
        "trend_ece.png",
    ]
    no_trend = run_report(spark, config, RUN_DATE, tmp_path / "plain", trend_windows=0)
    assert [path.name for path in no_trend] == ["reliability_a.png", "reliability_b.png"]
    with pytest.raises(MissingInputError, match=r"has no rows for run_date 2024-07-01"):
        run_report(spark, config, dt.date(2024, 7, 1), tmp_path / "report")
