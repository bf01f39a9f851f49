"""One PNG per model version: the reliability of the slice search's top slices against the
version's overall one.

Drawn from ``SliceSearchResult.slices`` and ``.reliability`` (M uniform bins per slice): the
overall curve in grey, each of the top ``TOP_SLICES`` slices in its own colour, points sized by
the bin's share of the slice's weight, over the diagonal of perfect calibration. A slice above
the grey curve has more positives than predicted there; below, fewer (over-prediction).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pandas as pd
from matplotlib.figure import Figure
from pyspark.sql import DataFrame

from spark_calib_cli.report.labels import slice_label
from spark_calib_cli.report.layout import save_png, version_title
from spark_calib_cli.report.rendered import rendered

FILE_STEM = "slice_search"
TOP_SLICES = 5


def draw_slice_search(slices: DataFrame, reliability: DataFrame, out_dir: Path) -> list[Path]:
    """Write ``slice_search_<model_version>.png`` into ``out_dir``; return the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    ranked = cast(pd.DataFrame, slices.toPandas())
    bins = cast(pd.DataFrame, reliability.toPandas())
    written: list[Path] = []
    for key, png in rendered(slice_search_figures, ranked, bins):
        save_png(png, out_dir, FILE_STEM, key, written)
    return written


def slice_search_figures(
    ranked: pd.DataFrame, bins: pd.DataFrame
) -> list[tuple[str | None, Figure]]:
    """Per model version of ``bins`` (the search's reliability rows): its figure, from the
    top ``TOP_SLICES`` rows of ``ranked`` (the search's slices)."""
    figures: list[tuple[str | None, Figure]] = []
    for version, version_bins in bins.groupby("model_version", dropna=False, sort=True):
        key = None if pd.isna(version) else str(version)
        same = ranked["model_version"].isna() if key is None else ranked["model_version"] == key
        top = ranked[same].sort_values("rank").head(TOP_SLICES)
        figures.append((key, _figure(key, version_bins, top)))
    return figures


def _figure(version: str | None, bins: pd.DataFrame, top: pd.DataFrame) -> Figure:
    figure = Figure(figsize=(6.4, 6.0), layout="constrained")
    axis = figure.add_subplot()
    axis.plot([0, 1], [0, 1], color="black", linewidth=0.8, linestyle=":", label="calibrated")
    curves = [(0, "overall", "grey")] + [
        (int(row.rank), _label(row), f"C{index}") for index, row in enumerate(top.itertuples())
    ]
    for rank, label, colour in curves:
        rows = bins[bins["rank"] == rank].sort_values("bin")
        if rows.empty:
            continue
        share = rows["weight"] / rows["weight"].sum()
        axis.plot(rows["mean_prediction"], rows["mean_label"], color=colour, linewidth=1.2)
        axis.scatter(
            rows["mean_prediction"],
            rows["mean_label"],
            s=10 + 200 * share,
            color=colour,
            label=label,
            alpha=0.8,
        )
    limit = float(min(1.0, max(bins["mean_prediction"].max(), bins["mean_label"].max()) * 1.1))
    axis.set_xlim(0, limit)
    axis.set_ylim(0, limit)
    axis.set_xlabel("mean prediction in the bin")
    axis.set_ylabel("observed rate in the bin")
    axis.set_title(f"{version_title(version)}: where calibration breaks (slice search)")
    axis.legend(fontsize=7, loc="upper left")
    return figure


def _label(row: Any) -> str:
    significant = "" if getattr(row, "significant", False) else " (not significant)"
    label = slice_label(row.slice_name, row.slice_value)
    return f"#{row.rank} {label} ({row.ecce_sigma:.1f}σ){significant}"
