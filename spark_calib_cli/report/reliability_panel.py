"""One reliability panel: the observed rate per bin against the diagonal, the gap, and a
histogram.

Empty bins have no observed rate (null, not 0), so they get no bar: an absent bar says "no
data", while a bar of height 0 would claim that everything in the bin was wrong. Bars span
their bin's edges, so equal-mass bins have variable widths. When every bin's mean prediction
and observed rate lie below ``ZOOM_BELOW`` (a low-base-rate score), the axes zoom to
[0, ``zoom_limit``] so the bars are readable; the title says so.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.container import BarContainer
from matplotlib.patches import Rectangle

ACCURACY_COLOR = "#3b6fb6"
GAP_COLOR = "#d62728"
HISTOGRAM_COLOR = "#7f7f7f"
EMPTY_BIN_COLOR = "#bdbdbd"
WHISKER_COLOR = "#1a1a1a"
ZOOM_BELOW = 0.5


def zoom_limit(bins: pd.DataFrame) -> float:
    """The upper limit of both axes: 1, or, when the filled bins' means (prediction and
    observed rate) are all below ``ZOOM_BELOW``, their maximum × 1.3 rounded up to a multiple
    of 0.01. The last bin's bar may run past the limit: with equal-mass bins on a low base rate
    it spans the few highest scores, and fitting it would squeeze every other bar."""
    filled = bins[(bins["n"] > 0) & bins["accuracy"].notna()]
    if filled.empty:
        return 1.0
    top = float(np.nanmax(filled[["accuracy", "mean_confidence"]].to_numpy(dtype=float)))
    if top >= ZOOM_BELOW:
        return 1.0
    return float(min(1.0, np.ceil(top * 130.0) / 100.0))


def draw_reliability(
    axes: Axes,
    bins: pd.DataFrame,
    *,
    legend: bool,
    limit: float = 1.0,
    positive_class: bool = False,
) -> None:
    """Bars of the observed rate per bin, the gap to the mean prediction, and the diagonal, on
    [0, ``limit``]².

    ``bins`` has one row per bin with ``bin_lower``, ``bin_upper``, ``n``, ``accuracy`` and
    ``mean_confidence`` (null for empty bins; empty equal-mass bins have no edges either).
    ``positive_class``: the bins compare P(y = 1) with the rate of y = 1 (binary), not the
    confidence with the accuracy.
    """
    is_filled = (bins["n"] > 0) & bins["accuracy"].notna()
    filled = bins[is_filled]
    empty = bins.loc[~is_filled & bins["bin_lower"].notna(), ["bin_lower", "bin_upper"]]
    for index, (lower_edge, upper_edge) in enumerate(empty.itertuples(index=False)):
        axes.axvspan(
            lower_edge,
            upper_edge,
            color=EMPTY_BIN_COLOR,
            alpha=0.18,
            linewidth=0,
            label="empty bin (no rows)" if index == 0 else None,
        )
    lower = filled["bin_lower"].to_numpy(dtype=float)
    width = filled["bin_upper"].to_numpy(dtype=float) - lower
    accuracy = filled["accuracy"].to_numpy(dtype=float)
    confidence = filled["mean_confidence"].to_numpy(dtype=float)
    edge_bars(
        axes,
        lower,
        accuracy,
        width,
        facecolor=ACCURACY_COLOR,
        edgecolor="white",
        linewidth=0.6,
        label="observed rate of y = 1" if positive_class else "accuracy",
    )
    # The gap bar spans accuracy → mean confidence: above the blue bar when over-confident,
    # over it (downwards) when under-confident.
    edge_bars(
        axes,
        lower,
        confidence - accuracy,
        width,
        bottom=accuracy,
        facecolor=GAP_COLOR,
        alpha=0.35,
        edgecolor=GAP_COLOR,
        linewidth=0.6,
        hatch="//",
        label="gap to mean prediction" if positive_class else "gap to mean confidence",
    )
    if "ci_lower" in filled.columns and filled["ci_lower"].notna().any():
        # Whiskers: the Wilson interval of each bin's observed rate (reliability table).
        centre = lower + width / 2.0
        axes.errorbar(
            centre,
            accuracy,
            # Rounding can put a bound a hair past the rate (a bin of all ones or all zeros,
            # or weighted means): matplotlib refuses negative lengths, so they are clipped to 0.
            yerr=np.clip(
                [
                    accuracy - filled["ci_lower"].to_numpy(dtype=float),
                    filled["ci_upper"].to_numpy(dtype=float) - accuracy,
                ],
                0.0,
                None,
            ),
            fmt="none",
            ecolor=WHISKER_COLOR,
            elinewidth=1.0,
            capsize=2.5,
            label="interval of the observed rate (Wilson)",
        )
    axes.plot(
        [0.0, limit], [0.0, limit], linestyle="--", color="black", linewidth=1.0, label="ideal"
    )
    axes.set_xlim(0.0, limit)
    axes.set_ylim(0.0, limit)
    axes.set_ylabel("observed rate of y = 1" if positive_class else "accuracy")
    axes.grid(alpha=0.25)
    if legend:
        axes.legend(loc="upper left", fontsize="small", frameon=False)


def draw_histogram(
    axes: Axes, bins: pd.DataFrame, *, limit: float = 1.0, positive_class: bool = False
) -> None:
    """Share of the slice's weight in each bin (the histogram of the prediction)."""
    placed = bins[bins["bin_lower"].notna()]
    lower = placed["bin_lower"].to_numpy(dtype=float)
    width = placed["bin_upper"].to_numpy(dtype=float) - lower
    weight = placed["weight_sum"].fillna(0.0).to_numpy(dtype=float)
    total = weight.sum()
    share = weight / total if total > 0 else np.zeros_like(weight)
    edge_bars(axes, lower, share, width, facecolor=HISTOGRAM_COLOR, edgecolor="white")
    axes.set_xlim(0.0, limit)
    axes.set_xlabel("predicted P(y = 1)" if positive_class else "confidence")
    axes.set_ylabel("share")
    axes.grid(alpha=0.25)


def edge_bars(
    axes: Axes,
    left: np.ndarray,
    height: np.ndarray,
    width: np.ndarray,
    *,
    bottom: np.ndarray | None = None,
    label: str | None = None,
    **style: Any,
) -> BarContainer:
    """``axes.bar(left, height, width, bottom, align="edge", label=label, **style)`` with
    ``style`` as ``Rectangle`` properties (``facecolor``, not ``color``), drawn the same, but
    with the data limits updated once for all bars. ``Axes.bar`` updates them bar by bar,
    walking each rectangle's path, which was a fifth of a report's drawing time."""
    lows = np.zeros(len(left)) if bottom is None else np.asarray(bottom, dtype=float)
    patches = []
    for x, y, w, h in zip(left, lows, width, height, strict=True):
        patch = Rectangle((x, y), w, h, label="_nolegend_", **style)
        # As Axes.bar: autoscaling adds no margin below a bar's base.
        patch.sticky_edges.y.append(y)
        axes.add_artist(patch)
        patches.append(patch)
    if patches:
        # The corners, as Axes.bar's update per bar (which skips bars of no width and height).
        drawn = (np.asarray(width) != 0) | (np.asarray(height) != 0)
        xs = np.concatenate([left, np.asarray(left) + np.asarray(width)])
        ys = np.concatenate([lows, lows + np.asarray(height)])
        corners = np.column_stack([xs, ys])[np.concatenate([drawn, drawn])]
        if len(corners):
            axes.update_datalim(corners)
        axes.autoscale_view()
    container = BarContainer(
        patches, datavalues=np.asarray(height), orientation="vertical", label=label or ""
    )
    axes.add_container(container)
    return container
