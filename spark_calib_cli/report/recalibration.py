"""One PNG per model version: reliability diagrams before and after each recalibration map,
side by side, for the overall slice and the worst slices by ECE before.

Drawn from the ``calibration_recalibration`` table's ``reliability_before`` and
``reliability_after`` columns (the evaluated rows' bins), with the reliability report's panel
(``reliability_panel``). One row of panels per slice: "before", then "after <method>" for each
fitted method, each over a histogram of the predictions, so the bars show where the map moves
the evaluated rows and what rate they then observe.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from spark_calib.constants import OVERALL_SLICE_NAME
from spark_calib_cli.report.labels import slice_label
from spark_calib_cli.report.layout import (
    WHOLE,
    Share,
    bars_over_histogram,
    fit_titles,
    fixed_grid,
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

PANEL_SIZE_INCHES = (3.9, 4.3)
# The fixed layout (inches): margins left, right, top (the three-line figure title and a
# panel's two-line title), bottom; gaps across (a y label and its ticks) and down (x ticks and
# label, then the next two-line title); inside a panel, between the bars and the histogram.
MARGINS_INCHES = (0.75, 0.25, 1.25, 0.5)
GAPS_INCHES = (0.8, 0.95)
PANEL_GAP_INCHES = 0.3
FILE_STEM = "recalibration"
DEFAULT_WORST_SLICES = 3
# The column order of the figure; a table lists only the methods its config asked for.
METHOD_ORDER = ("temperature", "platt", "isotonic")
KEY = ("model_version", "slice_name", "slice_value")


def write_recalibration_diagrams(
    table: pd.DataFrame,
    out_dir: Path,
    *,
    run_date: str,
    n_bins: int,
    worst: int = DEFAULT_WORST_SLICES,
    positive_class: bool = True,
) -> list[Path]:
    """Write ``recalibration_<model_version>.png`` into ``out_dir``; return the paths written.

    ``table`` holds rows of the recalibration table (``model_version``, ``slice_name``,
    ``slice_value``, ``method``, ``parameters``, ``knots``, ``fallback``, ``ece_before``,
    ``ece_after``, ``n_eval``, ``reliability_before``, ``reliability_after``); ``n_bins`` is
    the config's ``binning.n_bins`` (bin b spans [b/M, (b + 1)/M]); ``positive_class``: the
    bins compare P(y = 1) with the rate of y = 1 (binary), else the top-label confidence with
    the accuracy (multiclass, top-label). The panels are those of ``recalibration_panels``.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for version, png in rendered(
        recalibration_figures,
        table,
        run_date=run_date,
        n_bins=n_bins,
        worst=worst,
        positive_class=positive_class,
    ):
        save_png(png, out_dir, FILE_STEM, version, written)
    return written


def recalibration_figures(
    table: pd.DataFrame,
    *,
    run_date: str,
    n_bins: int,
    worst: int = DEFAULT_WORST_SLICES,
    positive_class: bool = True,
    share: Share = WHOLE,
) -> list[tuple[str | None, Figure]]:
    """One (model_version, figure) per model version of ``table``, None first, then by name
    (``share``: the part a drawing process draws, ``rendered``); the arguments are those of
    ``write_recalibration_diagrams``."""
    panels = group_by_model_version(recalibration_panels(table, worst))
    return [
        (version, _figure(table, keys, version, run_date, n_bins, positive_class))
        for version, keys in shared(panels, share)
    ]


def recalibration_panels(table: pd.DataFrame, worst: int = DEFAULT_WORST_SLICES) -> pd.DataFrame:
    """The slices drawn, one row each: ``model_version``, ``slice_name``, ``slice_value``,
    ``rank`` and ``ece_before``. Rank 0 is each version's overall slice; ranks 1…``worst`` are
    its other slices with the largest ``ece_before`` among those with evaluated rows and their
    own map for at least one method (``fallback`` false), ties by slice name and value."""
    if table.empty:
        return pd.DataFrame(columns=[*KEY, "rank", "ece_before"])
    frame = table.assign(
        model_version=table["model_version"].astype(object).where(table["model_version"].notna()),
        own_map=~table["fallback"].astype(bool),
    )
    keys = frame.groupby(list(KEY), dropna=False, sort=False).agg(
        ece_before=("ece_before", "max"), own_map=("own_map", "any")
    )
    keys = keys.reset_index()
    is_overall = keys["slice_name"] == OVERALL_SLICE_NAME
    overall = keys[is_overall].assign(rank=0)
    ranked = keys[~is_overall & keys["own_map"] & keys["ece_before"].notna()].sort_values(
        ["ece_before", "slice_name", "slice_value"], ascending=[False, True, True]
    )
    ranked = ranked.assign(rank=ranked.groupby("model_version", dropna=False).cumcount() + 1)
    chosen = pd.concat([overall, ranked[ranked["rank"] <= worst]], ignore_index=True)
    return chosen[[*KEY, "rank", "ece_before"]]


def bins_frame(bins: Any, n_bins: int) -> pd.DataFrame:
    """One recalibration bin array (a list of ``bin``, ``weight``, ``confidence``,
    ``outcome``; None for no map) as the reliability panel's frame: every bin b of the M
    equal-width bins with ``bin_lower`` = b/M and ``bin_upper`` = (b + 1)/M, ``n`` and
    ``weight_sum`` its weight (0 when empty), ``mean_confidence`` and ``accuracy`` its
    confidence and outcome (NaN when empty)."""
    frame = pd.DataFrame(
        {
            "bin": np.arange(n_bins),
            "bin_lower": np.arange(n_bins) / n_bins,
            "bin_upper": np.arange(1, n_bins + 1) / n_bins,
            "n": np.zeros(n_bins),
            "weight_sum": np.zeros(n_bins),
            "mean_confidence": np.full(n_bins, np.nan),
            "accuracy": np.full(n_bins, np.nan),
        }
    )
    for item in _items(bins):
        index = int(item["bin"])
        # The bins carry weights, not row counts: the panel only asks whether a bin is empty.
        frame.loc[index, ["n", "weight_sum"]] = float(item["weight"])
        frame.loc[index, "mean_confidence"] = float(item["confidence"])
        frame.loc[index, "accuracy"] = float(item["outcome"])
    return frame


def map_label(row: Mapping[str, Any]) -> str:
    """``T = 1.234``, ``a = …, b = …``, ``k steps`` or ``no map``."""
    parameters = row.get("parameters")
    if parameters is None or _is_null(parameters):
        return "no map"
    values = dict(parameters)
    if "temperature" in values:
        return f"T = {values['temperature']:.3f}"
    if "a" in values:
        return f"a = {values['a']:.3f}, b = {values['b']:.3f}"
    return f"{len(list(_items(row.get('knots'))))} steps"


def _figure(
    table: pd.DataFrame,
    keys: Sequence[dict[str, Any]],
    version: str | None,
    run_date: str,
    n_bins: int,
    positive_class: bool,
) -> Figure:
    methods = [method for method in METHOD_ORDER if method in set(table["method"])]
    columns = 1 + len(methods)
    width, height = PANEL_SIZE_INCHES
    figure = Figure(figsize=(width * columns, height * len(keys)))
    grid = fixed_grid(figure, len(keys), columns, margins=MARGINS_INCHES, gaps=GAPS_INCHES)
    for row_index, key in enumerate(keys):
        of_key = rows_of(table, key)
        by_method = {str(r["method"]): r for r in of_key.to_dict("records")}
        # Every method scores the same evaluated rows: their "before" bins are one.
        first = next(iter(by_method.values()), None)
        columns_bins = [first["reliability_before"] if first else None] + [
            by_method[m]["reliability_after"] if m in by_method else None for m in methods
        ]
        frames = [bins_frame(bins, n_bins) for bins in columns_bins]
        # A null "after" is a slice without a map; an empty array, one without evaluated rows.
        notes = ["no evaluated rows"] + [
            "no map" if _is_null(bins) else "no evaluated rows" for bins in columns_bins[1:]
        ]
        # One zoom per slice, so before and after share their axes.
        limit = max(zoom_limit(frame) for frame in frames)
        titles = [_before_title(key, first)] + [_after_title(m, by_method.get(m)) for m in methods]
        for column, (frame, title, note) in enumerate(zip(frames, titles, notes, strict=True)):
            cell = bars_over_histogram(figure, grid[row_index, column], PANEL_GAP_INCHES)
            top = figure.add_subplot(cell[0])
            bottom = figure.add_subplot(cell[1], sharex=top)
            _draw(
                top,
                bottom,
                frame,
                limit,
                note=note,
                legend=row_index == 0 and column == 0,
                positive_class=positive_class,
            )
            top.set_title(title, fontsize="medium")
    # A title may reach into the gap beside its panel, or the narrower right margin.
    fit_titles(figure, min(GAPS_INCHES[0] / 2, MARGINS_INCHES[0], MARGINS_INCHES[1]))
    title_at_top(
        figure,
        f"Model {version_title(version)}, run_date {run_date}:\nthe evaluated rows before and "
        "after each recalibration map\n(overall and the worst slices by ECE before)",
    )
    return figure


def _draw(
    top: Axes,
    bottom: Axes,
    frame: pd.DataFrame,
    limit: float,
    *,
    note: str,
    legend: bool,
    positive_class: bool,
) -> None:
    if frame["weight_sum"].sum() <= 0.0:
        top.text(0.5, 0.5, note, ha="center", va="center", transform=top.transAxes)
        top.set_xlim(0.0, limit)
        top.set_ylim(0.0, limit)
        bottom.set_xlim(0.0, limit)
        top.tick_params(labelbottom=False)
        return
    draw_reliability(top, frame, legend=legend, limit=limit, positive_class=positive_class)
    draw_histogram(bottom, frame, limit=limit, positive_class=positive_class)
    top.tick_params(labelbottom=False)


def _before_title(key: Mapping[str, Any], row: Mapping[str, Any] | None) -> str:
    label = slice_label(key["slice_name"], key["slice_value"])
    rank = int(key["rank"])
    heading = label if rank == 0 else f"#{rank} by ECE before: {label}"
    n_eval = f"   n_eval={int(row['n_eval']):,}" if row is not None else ""
    ece = row["ece_before"] if row is not None else None
    return f"{heading}\nbefore: ECE {show_metric(ece)}{n_eval}"


def _after_title(method: str, row: Mapping[str, Any] | None) -> str:
    if row is None:
        return f"after {method}\nnot fitted"
    borrowed = " (overall's map)" if bool(row["fallback"]) else ""
    return f"after {method}: {map_label(row)}{borrowed}\nECE {show_metric(row['ece_after'])}"


def _items(bins: Any) -> list[Any]:
    """The elements of an array column as pandas holds it (None, NaN, a list or an ndarray of
    Rows or dicts)."""
    if _is_null(bins):
        return []
    return list(bins)


def _is_null(value: Any) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))
