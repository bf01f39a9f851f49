"""One PNG per model version: the overall slice first, then its worst slices by ECE."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from spark_calib_cli.report.labels import slice_label
from spark_calib_cli.report.panel import draw_histogram, draw_reliability

PANELS_PER_ROW = 3
PANEL_SIZE_INCHES = (4.6, 4.8)
DPI = 110
NO_MODEL_VERSION = "all"
UNSAFE_FILE_CHARACTERS = re.compile(r"[^A-Za-z0-9_.-]+")


def write_reliability_diagrams(
    reliability: pd.DataFrame, slices: pd.DataFrame, out_dir: Path, *, run_date: str
) -> list[Path]:
    """Write ``reliability_<model_version>.png`` into ``out_dir``; return the paths written.

    ``slices`` has one row per panel: ``model_version``, ``slice_name``, ``slice_value``,
    ``rank`` (0 for overall, then 1, 2, … worst first), ``n``, ``ece`` and ``mce``.
    ``reliability`` holds the top-label bins of those slices (the reliability table's
    columns: ``bin``, ``bin_lower``, ``bin_upper``, ``n``, ``weight_sum``,
    ``mean_confidence``, ``accuracy``, ``gap``).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for version, panels in _by_model_version(slices):
        figure = _figure(reliability, panels, version, run_date)
        path = _unused(out_dir / f"reliability_{_file_part(version)}.png", written)
        figure.savefig(path, dpi=DPI)
        written.append(path)
    return written


def _by_model_version(slices: pd.DataFrame) -> list[tuple[str | None, list[dict[str, Any]]]]:
    groups: dict[str | None, list[dict[str, Any]]] = {}
    for record in slices.to_dict("records"):
        version = record["model_version"]
        key = None if version is None or pd.isna(version) else str(version)
        groups.setdefault(key, []).append(record)
    ordered = sorted(groups.items(), key=lambda item: (item[0] is not None, item[0] or ""))
    return [(version, sorted(panels, key=lambda p: int(p["rank"]))) for version, panels in ordered]


def _figure(
    reliability: pd.DataFrame,
    panels: list[dict[str, Any]],
    version: str | None,
    run_date: str,
) -> Figure:
    columns = min(PANELS_PER_ROW, len(panels))
    rows = math.ceil(len(panels) / columns)
    figure = Figure(
        figsize=(PANEL_SIZE_INCHES[0] * columns, PANEL_SIZE_INCHES[1] * rows),
        layout="constrained",
    )
    grid = figure.add_gridspec(rows, columns)
    for index, panel in enumerate(panels):
        cell = grid[index // columns, index % columns].subgridspec(2, 1, height_ratios=[3, 1])
        top = figure.add_subplot(cell[0])
        bottom = figure.add_subplot(cell[1], sharex=top)
        bins = _bins_of(reliability, panel)
        draw_reliability(top, bins, legend=index == 0)
        draw_histogram(bottom, bins)
        top.tick_params(labelbottom=False)
        top.set_title(_panel_title(panel), fontsize="medium")
    shown = version if version is not None else "(no model_version column)"
    figure.suptitle(
        f"Model {shown}, run_date {run_date}: overall and the worst slices by ECE",
        fontsize="large",
    )
    return figure


def _bins_of(reliability: pd.DataFrame, panel: Mapping[str, Any]) -> pd.DataFrame:
    version = panel["model_version"]
    same_version = (
        reliability["model_version"].isna()
        if version is None or pd.isna(version)
        else reliability["model_version"] == version
    )
    mask = (
        same_version
        & (reliability["slice_name"] == panel["slice_name"])
        & (reliability["slice_value"] == panel["slice_value"])
    )
    return reliability[mask].sort_values("bin")


def _panel_title(panel: Mapping[str, Any]) -> str:
    label = slice_label(panel["slice_name"], panel["slice_value"])
    rank = int(panel["rank"])
    heading = label if rank == 0 else f"#{rank} by ECE: {label}"
    return (
        f"{heading}\nECE {_metric(panel['ece'])}   MCE {_metric(panel['mce'])}"
        f"   n={int(panel['n']):,}"
    )


def _metric(value: Any) -> str:
    return "n/a" if value is None or pd.isna(value) else f"{float(value):.4f}"


def _file_part(version: str | None) -> str:
    if version is None:
        return NO_MODEL_VERSION
    return UNSAFE_FILE_CHARACTERS.sub("_", version) or NO_MODEL_VERSION


def _unused(path: Path, taken: list[Path]) -> Path:
    # Two versions can sanitise to one file name ("v/1" and "v_1"); keep both figures.
    candidate, counter = path, 2
    while candidate in taken:
        candidate = path.with_name(f"{path.stem}_{counter}{path.suffix}")
        counter += 1
    return candidate
