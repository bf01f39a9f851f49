"""The regression calibration and ROC figures: what each panel draws and the files written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from spark_calib_cli.report import write_regression_calibration_diagrams, write_roc_curves
from spark_calib_cli.report.regression_panel import draw_regression_calibration
from spark_calib_cli.report.roc import auc_label
from spark_calib_cli.report.roc_panel import draw_precision_recall, draw_roc

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
KEY = {"model_version": "v1", "slice_name": "overall", "slice_value": ""}
LEVELS = [0.25, 0.5, 0.75]


def levels_frame(version: str | None = "v1", observed: tuple = (0.2, None, 0.6)) -> pd.DataFrame:
    """Three levels; the middle one has no observed coverage (null)."""
    return pd.DataFrame(
        [
            {**KEY, "model_version": version, "level": level, "observed": seen}
            for level, seen in zip(LEVELS, observed, strict=True)
        ]
    )


def roc_frame(version: str | None = "v1") -> pd.DataFrame:
    """The origin (precision null), then two bucket edges, the last one taking every row."""
    rows = [
        (0, None, 0.0, 0.0, None),
        (1, 0.5, 0.25, 0.75, 0.6),
        (2, 0.0, 1.0, 1.0, 0.4),
    ]
    return pd.DataFrame(
        [
            {**KEY, "model_version": version, "point": p, "threshold": t, "fpr": f, "tpr": r}
            | {"precision": prec}
            for p, t, f, r, prec in rows
        ]
    )


def test_regression_panel_draws_observed_coverage_against_the_diagonal() -> None:
    axes = Figure().add_subplot()

    draw_regression_calibration(axes, levels_frame())

    diagonal, observed = axes.get_lines()
    assert list(diagonal.get_xdata()) == [0.0, 1.0]
    assert list(diagonal.get_ydata()) == [0.0, 1.0]
    # The level without an observed coverage is left out, not drawn at 0.
    assert list(observed.get_xdata()) == [0.25, 0.75]
    assert list(observed.get_ydata()) == [0.2, 0.6]
    (gap,) = axes.collections
    vertices = gap.get_paths()[0].vertices
    # The shaded gap spans the diagonal (y = level) to the observed coverage.
    assert {tuple(v) for v in vertices} >= {(0.25, 0.25), (0.25, 0.2), (0.75, 0.75), (0.75, 0.6)}


def test_roc_panel_draws_every_point_from_the_origin() -> None:
    axes = Figure().add_subplot()

    draw_roc(axes, roc_frame())

    chance, curve = axes.get_lines()
    assert list(chance.get_ydata()) == [0.0, 1.0]
    assert list(curve.get_xdata()) == [0.0, 0.25, 1.0]
    assert list(curve.get_ydata()) == [0.0, 0.75, 1.0]


def test_precision_recall_panel_skips_the_origin_and_marks_the_base_rate() -> None:
    axes = Figure().add_subplot()

    draw_precision_recall(axes, roc_frame())

    base_rate, curve = axes.get_lines()
    assert list(base_rate.get_ydata()) == [0.4, 0.4]
    assert list(curve.get_xdata()) == [0.75, 1.0]
    assert list(curve.get_ydata()) == [0.6, 0.4]


def test_one_regression_png_per_model_version(tmp_path: Path) -> None:
    levels = pd.concat([levels_frame("v1"), levels_frame("v/2"), levels_frame(None)])
    panel = {**KEY, "rank": 0, "n": 20, "miscalibration_area": 0.1, "rmse": 2.5}
    slices = pd.DataFrame(
        [
            panel | {"coverage_0_9": 0.8},
            panel | {"model_version": "v/2", "coverage_0_9": np.nan, "miscalibration_area": None},
            panel | {"model_version": None, "coverage_0_9": 0.8},
        ]
    )

    written = write_regression_calibration_diagrams(levels, slices, tmp_path, run_date="2024-06-30")

    assert [path.name for path in written] == [
        "regression_calibration_all.png",
        "regression_calibration_v_2.png",
        "regression_calibration_v1.png",
    ]
    for path in written:
        assert path.read_bytes().startswith(PNG_SIGNATURE)


def test_one_roc_png_per_model_version_with_points(tmp_path: Path) -> None:
    points = pd.concat([roc_frame("v1"), roc_frame("v2")])
    summary = {**KEY, "rank": 0, "n": 20, "roc_auc": None, "pr_auc": None}
    slices = pd.DataFrame(
        [
            summary | {"roc_auc_binned": 0.8, "pr_auc_binned": 0.6},
            summary | {"model_version": "v2", "roc_auc_binned": None, "pr_auc_binned": None},
            # Metrics but no ROC points: no file.
            summary | {"model_version": "v3", "roc_auc_binned": 0.5, "pr_auc_binned": 0.5},
        ]
    )

    written = write_roc_curves(points, slices, tmp_path, run_date="2024-06-30")

    assert [path.name for path in written] == ["roc_v1.png", "roc_v2.png"]
    for path in written:
        assert path.read_bytes().startswith(PNG_SIGNATURE)


@pytest.mark.parametrize(
    ("exact", "binned", "shown"),
    [(0.75, 0.7, "0.7500"), (None, 0.7, "0.7000 (binned)"), (np.nan, None, "n/a")],
)
def test_roc_title_prefers_the_exact_auc(
    exact: float | None, binned: float | None, shown: str
) -> None:
    assert auc_label({"roc_auc": exact, "roc_auc_binned": binned}, "roc_auc") == shown


def test_reliability_whiskers_accept_a_bound_a_hair_past_the_rate() -> None:
    from spark_calib_cli.report.reliability_panel import draw_reliability

    # A bin of all ones whose upper bound was rounded just below 1.0 (as a written table can
    # hold): the whisker has length 0 there instead of failing the figure.
    bins = pd.DataFrame(
        [
            {"bin": 0, "bin_lower": 0.0, "bin_upper": 0.5, "n": 10, "weight_sum": 10.0}
            | {"mean_confidence": 0.3, "accuracy": 0.2, "ci_lower": 0.05, "ci_upper": 0.5},
            {"bin": 1, "bin_lower": 0.5, "bin_upper": 1.0, "n": 10, "weight_sum": 10.0}
            | {"mean_confidence": 0.9, "accuracy": 1.0, "ci_lower": 0.7, "ci_upper": 1.0 - 1e-15},
        ]
    )
    axes = Figure().add_subplot()

    draw_reliability(axes, bins, legend=False)

    (whiskers,) = [c for c in axes.containers if type(c).__name__ == "ErrorbarContainer"]
    assert whiskers is not None
