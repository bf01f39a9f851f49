"""Bin edges: confidences exactly on k/M, 0 and 1, under both edge conventions."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from spark_calib import evaluate


@pytest.mark.parametrize("n_bins", [10, 15, 49])
@pytest.mark.parametrize("edges", ["left_closed", "right_closed"])
def test_confidence_on_every_edge(spark: SparkSession, n_bins: int, edges: str) -> None:
    """c = k/M goes to bin k (left-closed, 1.0 to the last bin) or k−1 (right-closed, 0.0 to
    the first). M=49 includes fl(1/49)·49 < 1, where floor(c·M) alone would be one bin off."""
    confidences = [k / n_bins for k in range(n_bins + 1)]
    df = spark.createDataFrame([(c, True) for c in confidences], "c double, ok boolean")
    config = {
        "task": "top_label",
        "columns": {"confidence": "c", "correct": "ok"},
        "binning": {"n_bins": n_bins, "edges": edges},
    }
    counts = {r.bin: r.n for r in evaluate(df, config).reliability.collect()}
    expected = [0] * n_bins
    for k in range(n_bins + 1):
        bin_ = min(k, n_bins - 1) if edges == "left_closed" else max(k - 1, 0)
        expected[bin_] += 1
    assert [counts[b] for b in range(n_bins)] == expected


def test_floor_alone_would_misbin() -> None:
    """The premise of the M=49 case: the product rounds below the integer."""
    assert (1 / 49) * 49 < 1.0
