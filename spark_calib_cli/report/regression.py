"""One PNG per model version of a regression run: interval calibration of the overall slice
and of its worst slices by miscalibration area."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from spark_calib_cli.report.labels import slice_label
from spark_calib_cli.report.layout import (
    WHOLE,
    Share,
    group_by_model_version,
    panel_grid,
    rows_of,
    save_png,
    shared,
    show_metric,
    version_title,
)
from spark_calib_cli.report.regression_panel import READING_GUIDE, draw_regression_calibration
from spark_calib_cli.report.rendered import rendered

PANEL_SIZE_INCHES = (4.6, 6.2)
# Room for the figure title and the legend under a single panel.
MIN_FIGURE_WIDTH_INCHES = 7.5
FILE_STEM = "regression_calibration"


def write_regression_calibration_diagrams(
    levels: pd.DataFrame, slices: pd.DataFrame, out_dir: Path, *, run_date: str
) -> list[Path]:
    """Write ``regression_calibration_<model_version>.png`` into ``out_dir``; return the paths.

    ``slices`` has one row per panel: ``model_version``, ``slice_name``, ``slice_value``,
    ``rank`` (0 for overall, then worst first), ``n``, ``miscalibration_area``, ``rmse`` and
    ``coverage_0_9`` (either may be null). ``levels`` holds the rows of the
    ``calibration_regression`` table of those slices (``level``, ``observed``, …).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for version, png in rendered(regression_calibration_figures, levels, slices, run_date=run_date):
        save_png(png, out_dir, FILE_STEM, version, written)
    return written


def regression_calibration_figures(
    levels: pd.DataFrame, slices: pd.DataFrame, *, run_date: str, share: Share = WHOLE
) -> list[tuple[str | None, Figure]]:
    """One (model_version, figure) per model version of ``slices``, None first, then by
    name (``share``: the part a drawing process draws, ``rendered``); the frames are those of
    ``write_regression_calibration_diagrams``."""
    return [
        (version, _figure(levels, panels, version, run_date))
        for version, panels in shared(group_by_model_version(slices), share)
    ]


def _figure(
    levels: pd.DataFrame, panels: list[dict[str, Any]], version: str | None, run_date: str
) -> Figure:
    figure, rows, columns = panel_grid(len(panels), PANEL_SIZE_INCHES, MIN_FIGURE_WIDTH_INCHES)
    grid = figure.add_gridspec(rows, columns)
    for index, panel in enumerate(panels):
        axes = figure.add_subplot(grid[index // columns, index % columns])
        draw_regression_calibration(axes, rows_of(levels, panel))
        axes.set_title(_panel_title(panel), fontsize="medium")
    # One legend under the panels: inside an axes it would hide a curve, whichever the corner.
    handles, labels = figure.axes[0].get_legend_handles_labels()
    figure.legend(
        handles,
        labels,
        loc="outside lower center",
        ncols=len(labels),
        frameon=False,
        title=READING_GUIDE,
        title_fontsize="small",
    )
    figure.suptitle(
        f"Model {version_title(version)}, run_date {run_date}\n"
        "predictive interval coverage: overall and the worst slices by miscalibration area",
        fontsize="large",
    )
    return figure


def _panel_title(panel: Mapping[str, Any]) -> str:
    label = slice_label(panel["slice_name"], panel["slice_value"])
    rank = int(panel["rank"])
    heading = label if rank == 0 else f"#{rank}: {label}"
    rmse = panel["rmse"]
    shown_rmse = "n/a" if rmse is None or pd.isna(rmse) else f"{float(rmse):.4g}"
    return (
        f"{heading}\nmiscal. area {show_metric(panel['miscalibration_area'], 3)}"
        f"   coverage@0.9 {show_metric(panel['coverage_0_9'], 3)}"
        f"\nRMSE {shown_rmse}   n={int(panel['n']):,}"
    )
