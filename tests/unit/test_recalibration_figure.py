"""The before/after recalibration figure from hand-made rows of the recalibration table: the
bins as the reliability panel's frame, which slices are drawn, what each panel shows, and the
files written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from spark_calib_cli.report import write_recalibration_diagrams
from spark_calib_cli.report.recalibration import (
    bins_frame,
    map_label,
    recalibration_figures,
    recalibration_panels,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
N_BINS = 5
# The evaluated rows of tests/engine/test_recalibration_reliability.py: before, bins 1 and 3;
# isotonic moves them to 0 and 4.
BEFORE = [
    {"bin": 1, "weight": 4.0, "confidence": 0.3, "outcome": 0.25},
    {"bin": 3, "weight": 4.0, "confidence": 0.7, "outcome": 0.5},
]
ISOTONIC = [
    {"bin": 0, "weight": 4.0, "confidence": 0.0, "outcome": 0.25},
    {"bin": 4, "weight": 4.0, "confidence": 1.0, "outcome": 0.5},
]


def row(
    slice_name: str,
    slice_value: str,
    method: str,
    ece_before: float | None,
    *,
    version: str | None = "v1",
    fallback: bool = False,
    after: list[dict[str, Any]] | None = None,
    parameters: dict[str, float] | None = None,
) -> dict[str, Any]:
    return {
        "model_version": version,
        "slice_name": slice_name,
        "slice_value": slice_value,
        "method": method,
        "parameters": parameters,
        "knots": None,
        "n_eval": 8,
        "fallback": fallback,
        "ece_before": ece_before,
        "ece_after": None if after is None else 0.375,
        "reliability_before": BEFORE,
        "reliability_after": after,
    }


def test_bins_frame_spans_every_bin_and_leaves_the_empty_ones_without_a_rate() -> None:
    frame = bins_frame(BEFORE, N_BINS)

    assert list(frame["bin"]) == [0, 1, 2, 3, 4]
    assert list(frame["bin_lower"]) == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8])
    assert list(frame["bin_upper"]) == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0])
    assert list(frame["weight_sum"]) == [0.0, 4.0, 0.0, 4.0, 0.0]
    assert list(frame["n"]) == [0.0, 4.0, 0.0, 4.0, 0.0]
    assert frame.loc[[1, 3], "mean_confidence"].tolist() == [0.3, 0.7]
    assert frame.loc[[1, 3], "accuracy"].tolist() == [0.25, 0.5]
    assert frame.loc[[0, 2, 4], ["mean_confidence", "accuracy"]].isna().all().all()
    assert bins_frame(None, N_BINS)["weight_sum"].sum() == 0.0


def test_panels_are_overall_then_the_worst_slices_with_a_map_of_their_own() -> None:
    rows = [
        row("overall", "", "temperature", 0.05),
        row("overall", "", "isotonic", 0.05),
        # Worst by ECE, but every method fell back to the overall map: not drawn.
        row("country", "XX", "temperature", 0.40, fallback=True),
        row("country", "XX", "isotonic", 0.40, fallback=True),
        # Its own map for one method is enough.
        row("country", "BR", "temperature", 0.20, fallback=True),
        row("country", "BR", "isotonic", 0.20),
        row("country", "US", "temperature", 0.10),
        row("country", "MX", "temperature", 0.15),
        # No evaluated rows: no ECE to rank by.
        row("country", "JP", "temperature", None),
        row("overall", "", "temperature", 0.30, version="v2"),
        row("device", "tablet", "temperature", 0.01, version="v2"),
    ]

    panels = recalibration_panels(pd.DataFrame(rows), worst=2)

    chosen = [(p["model_version"], p["slice_value"], p["rank"]) for p in panels.to_dict("records")]
    assert sorted(chosen) == [
        ("v1", "", 0),
        ("v1", "BR", 1),
        ("v1", "MX", 2),
        ("v2", "", 0),
        ("v2", "tablet", 1),
    ]


def test_map_label_names_each_kind_of_map() -> None:
    assert map_label({"parameters": {"temperature": 2.2124}}) == "T = 2.212"
    assert map_label({"parameters": {"a": -0.0141, "b": 0.4529}}) == "a = -0.014, b = 0.453"
    knots = [{"cell": 1, "lower": 0.0, "value": 0.1}, {"cell": 9, "lower": 0.5, "value": 0.7}]
    assert map_label({"parameters": {}, "knots": knots}) == "2 steps"
    assert map_label({"parameters": None}) == "no map"


def test_each_slice_gets_before_and_one_after_panel_per_method() -> None:
    rows = [
        row("overall", "", "temperature", 0.125, after=ISOTONIC, parameters={"temperature": 0.05}),
        row("overall", "", "isotonic", 0.125, after=ISOTONIC, parameters={}),
        row("country", "BR", "temperature", 0.125),
        row("country", "BR", "isotonic", 0.125, after=ISOTONIC, parameters={}),
    ]

    ((version, figure),) = recalibration_figures(
        pd.DataFrame(rows), run_date="2024-06-30", n_bins=N_BINS
    )

    assert version == "v1"
    # Two slices × (before, after temperature, after isotonic) × (diagram, histogram).
    assert len(figure.axes) == 2 * 3 * 2
    diagrams = figure.axes[::2]
    titles = [axes.get_title() for axes in diagrams]
    assert titles[0] == "overall\nbefore: ECE 0.1250   n_eval=8"
    assert titles[1] == "after temperature: T = 0.050\nECE 0.3750"
    assert titles[3] == "#1 by ECE before: country=BR\nbefore: ECE 0.1250   n_eval=8"
    # The observed rate of each filled bin, drawn at its lower edge: before in bins 1 and 3,
    # after isotonic in bins 0 and 4.
    before_bars = diagrams[0].containers[0]
    assert [bar.get_x() for bar in before_bars] == pytest.approx([0.2, 0.6])
    assert [bar.get_height() for bar in before_bars] == pytest.approx([0.25, 0.5])
    after_bars = diagrams[2].containers[0]
    assert [bar.get_x() for bar in after_bars] == pytest.approx([0.0, 0.8])
    assert [bar.get_height() for bar in after_bars] == pytest.approx([0.25, 0.5])
    # The gap bars run from the observed rate to the mean prediction.
    gaps = diagrams[2].containers[1]
    assert [bar.get_y() + bar.get_height() for bar in gaps] == pytest.approx([0.0, 1.0])
    # BR's temperature row has no map: its panel says so and draws no bar.
    no_map = diagrams[4]
    assert not no_map.containers
    assert [text.get_text() for text in no_map.texts] == ["no map"]
    # The histogram of the after panel: half of the weight in bin 0, half in bin 4.
    histogram = figure.axes[5].containers[0]
    assert [bar.get_height() for bar in histogram] == pytest.approx([0.5, 0.0, 0.0, 0.0, 0.5])


def test_writes_one_png_per_model_version(tmp_path: Path) -> None:
    rows = [
        row("overall", "", "isotonic", 0.125, after=ISOTONIC, parameters={}),
        row("overall", "", "isotonic", 0.125, after=ISOTONIC, parameters={}, version=None),
    ]

    paths = write_recalibration_diagrams(
        pd.DataFrame(rows), tmp_path, run_date="2024-06-30", n_bins=N_BINS
    )

    assert [path.name for path in paths] == ["recalibration_all.png", "recalibration_v1.png"]
    for path in paths:
        assert path.read_bytes()[:8] == PNG_SIGNATURE


def test_bins_as_spark_rows_or_arrays_read_the_same() -> None:
    """toPandas gives an array column as a list of Rows, or with Arrow as an ndarray of dicts."""
    from pyspark.sql import Row

    as_rows = [Row(**item) for item in BEFORE]
    as_array = np.array(BEFORE, dtype=object)
    expected = bins_frame(BEFORE, N_BINS)
    pd.testing.assert_frame_equal(bins_frame(as_rows, N_BINS), expected)
    pd.testing.assert_frame_equal(bins_frame(as_array, N_BINS), expected)


def test_multiclass_panels_compare_confidence_with_accuracy() -> None:
    rows = [
        row("overall", "", "temperature", 0.125, after=ISOTONIC, parameters={"temperature": 2.0})
    ]
    ((_, binary),) = recalibration_figures(pd.DataFrame(rows), run_date="2024-06-30", n_bins=N_BINS)
    ((_, multiclass),) = recalibration_figures(
        pd.DataFrame(rows), run_date="2024-06-30", n_bins=N_BINS, positive_class=False
    )
    assert binary.axes[0].get_ylabel() == "observed rate of y = 1"
    assert binary.axes[1].get_xlabel() == "predicted P(y = 1)"
    assert multiclass.axes[0].get_ylabel() == "accuracy"
    assert multiclass.axes[1].get_xlabel() == "confidence"
