"""One PNG per model version of a binary run: the ROC and precision-recall curves of the
overall slice."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from spark_calib_cli.report.layout import (
    WHOLE,
    Share,
    group_by_model_version,
    rows_of,
    save_png,
    shared,
    show_metric,
    version_title,
)
from spark_calib_cli.report.rendered import rendered
from spark_calib_cli.report.roc_panel import draw_precision_recall, draw_roc

FIGURE_SIZE_INCHES = (9.6, 5.4)
FILE_STEM = "roc"


def write_roc_curves(
    points: pd.DataFrame, slices: pd.DataFrame, out_dir: Path, *, run_date: str
) -> list[Path]:
    """Write ``roc_<model_version>.png`` into ``out_dir``; return the paths written.

    ``slices`` has one row per model version (its overall slice): ``model_version``,
    ``slice_name``, ``slice_value``, ``rank`` (0), ``n`` and the AUCs ``roc_auc``,
    ``roc_auc_binned``, ``pr_auc``, ``pr_auc_binned`` (null when not computed). ``points``
    holds the rows of the ``calibration_roc`` table of those slices; a model version without
    points gets no file.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for version, png in rendered(roc_figures, points, slices, run_date=run_date):
        save_png(png, out_dir, FILE_STEM, version, written)
    return written


def roc_figures(
    points: pd.DataFrame, slices: pd.DataFrame, *, run_date: str, share: Share = WHOLE
) -> list[tuple[str | None, Figure]]:
    """One (model_version, figure) per model version of ``slices`` that has points, None
    first, then by name (``share``: the part a drawing process draws, ``rendered``); the
    frames are those of ``write_roc_curves``."""
    curves = [
        (version, panels[0], rows_of(points, panels[0]))
        for version, panels in group_by_model_version(slices)
    ]
    return [
        (version, _figure(curve, panel, version, run_date))
        for version, panel, curve in shared([c for c in curves if not c[2].empty], share)
    ]


def _figure(
    points: pd.DataFrame, panel: Mapping[str, Any], version: str | None, run_date: str
) -> Figure:
    figure = Figure(figsize=FIGURE_SIZE_INCHES, layout="constrained")
    roc_axes, pr_axes = figure.subplots(1, 2)
    draw_roc(roc_axes, points)
    draw_precision_recall(pr_axes, points)
    roc_axes.set_title(
        f"ROC  (AUC {auc_label(panel, 'roc_auc')}; dashed: chance)", fontsize="medium"
    )
    pr_axes.set_title(
        f"Precision-recall  (AP {auc_label(panel, 'pr_auc')}; dashed: base rate)", fontsize="medium"
    )
    figure.suptitle(
        f"Model {version_title(version)}, run_date {run_date}: overall, n={int(panel['n']):,}",
        fontsize="large",
    )
    return figure


def auc_label(panel: Mapping[str, Any], name: str) -> str:
    """The exact value when computed, else the binned one (marked), else n/a."""
    exact, binned = panel.get(name), panel.get(f"{name}_binned")
    if exact is not None and not pd.isna(exact):
        return show_metric(exact)
    if binned is not None and not pd.isna(binned):
        return f"{show_metric(binned)} (binned)"
    return "n/a"
