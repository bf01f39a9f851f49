"""One PNG per model version: the overall slice first, then its worst slices by ECE."""

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
    bars_over_histogram,
    fit_titles,
    fixed_grid,
    grid_shape,
    group_by_model_version,
    rows_of,
    save_png,
    shared,
    show_metric,
    title_at_top,
    version_title,
)
from spark_calib_cli.report.reliability_panel import draw_histogram, draw_reliability, zoom_limit
from spark_calib_cli.report.rendered import rendered

PANEL_SIZE_INCHES = (4.6, 4.8)
# The fixed layout (inches), as the recalibration figure's: margins left, right, top (the
# figure title and a panel's two-line title), bottom; gaps across and down; inside a panel,
# between the bars and the histogram.
MARGINS_INCHES = (0.75, 0.25, 0.95, 0.5)
GAPS_INCHES = (0.8, 0.95)
PANEL_GAP_INCHES = 0.3
FILE_STEM = "reliability"


def write_reliability_diagrams(
    reliability: pd.DataFrame,
    slices: pd.DataFrame,
    out_dir: Path,
    *,
    run_date: str,
    positive_class: bool = False,
) -> list[Path]:
    """Write ``reliability_<model_version>.png`` into ``out_dir``; return the paths written.

    ``slices`` has one row per panel: ``model_version``, ``slice_name``, ``slice_value``,
    ``rank`` (0 for overall, then 1, 2, … worst first), ``n``, ``ece`` and ``mce``.
    ``reliability`` holds the top-label bins of those slices (the reliability table's
    columns: ``bin``, ``bin_lower``, ``bin_upper``, ``n``, ``weight_sum``,
    ``mean_confidence``, ``accuracy``, ``gap``). ``positive_class``: a binary run's bins
    compare P(y = 1) with the rate of y = 1 (the axis labels say so).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for version, png in rendered(
        reliability_figures, reliability, slices, run_date=run_date, positive_class=positive_class
    ):
        save_png(png, out_dir, FILE_STEM, version, written)
    return written


def reliability_figures(
    reliability: pd.DataFrame,
    slices: pd.DataFrame,
    *,
    run_date: str,
    positive_class: bool = False,
    share: Share = WHOLE,
) -> list[tuple[str | None, Figure]]:
    """One (model_version, figure) per model version of ``slices``, None first, then by name
    (``share``: the part a drawing process draws, ``rendered``); the frames are those of
    ``write_reliability_diagrams``."""
    return [
        (version, _figure(reliability, panels, version, run_date, positive_class))
        for version, panels in shared(group_by_model_version(slices), share)
    ]


def _figure(
    reliability: pd.DataFrame,
    panels: list[dict[str, Any]],
    version: str | None,
    run_date: str,
    positive_class: bool,
) -> Figure:
    rows, columns = grid_shape(len(panels))
    width, height = PANEL_SIZE_INCHES
    figure = Figure(figsize=(width * columns, height * rows))
    grid = fixed_grid(figure, rows, columns, margins=MARGINS_INCHES, gaps=GAPS_INCHES)
    for index, panel in enumerate(panels):
        cell = bars_over_histogram(
            figure, grid[index // columns, index % columns], PANEL_GAP_INCHES
        )
        top = figure.add_subplot(cell[0])
        bottom = figure.add_subplot(cell[1], sharex=top)
        bins = rows_of(reliability, panel).sort_values("bin")
        limit = zoom_limit(bins)
        draw_reliability(top, bins, legend=index == 0, limit=limit, positive_class=positive_class)
        draw_histogram(bottom, bins, limit=limit, positive_class=positive_class)
        top.tick_params(labelbottom=False)
        top.set_title(_panel_title(panel, limit), fontsize="medium")
    # A title may reach into the gap beside its panel, or the narrower right margin.
    fit_titles(figure, min(GAPS_INCHES[0] / 2, MARGINS_INCHES[0], MARGINS_INCHES[1]))
    title_at_top(
        figure,
        f"Model {version_title(version)}, run_date {run_date}: overall and the worst slices by ECE",
    )
    return figure


def _panel_title(panel: Mapping[str, Any], limit: float) -> str:
    label = slice_label(panel["slice_name"], panel["slice_value"])
    rank = int(panel["rank"])
    heading = label if rank == 0 else f"#{rank} by ECE: {label}"
    return (
        f"{heading}\nECE {show_metric(panel['ece'])}   MCE {show_metric(panel['mce'])}"
        f"   n={int(panel['n']):,}" + (f"   (axes 0–{limit:g})" if limit < 1.0 else "")
    )
