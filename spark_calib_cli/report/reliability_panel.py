"""One reliability panel: accuracy per bin against the diagonal, the gap, and a histogram.

Empty bins have no accuracy (null, not 0), so they get no bar: an absent bar says "no data",
while a bar of height 0 would claim that everything in the bin was wrong.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

ACCURACY_COLOR = "#3b6fb6"
GAP_COLOR = "#d62728"
HISTOGRAM_COLOR = "#7f7f7f"
EMPTY_BIN_COLOR = "#bdbdbd"


def draw_reliability(axes: Axes, bins: pd.DataFrame, *, legend: bool) -> None:
    """Bars of observed accuracy per bin, the gap to the mean confidence, and the diagonal.

    ``bins`` has one row per bin with ``bin_lower``, ``bin_upper``, ``n``, ``accuracy`` and
    ``mean_confidence`` (null for empty bins).
    """
    is_filled = (bins["n"] > 0) & bins["accuracy"].notna()
    filled = bins[is_filled]
    for index, (lower_edge, upper_edge) in enumerate(
        bins.loc[~is_filled, ["bin_lower", "bin_upper"]].itertuples(index=False)
    ):
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
    axes.bar(
        lower,
        accuracy,
        width=width,
        align="edge",
        color=ACCURACY_COLOR,
        edgecolor="white",
        linewidth=0.6,
        label="accuracy",
    )
    # The gap bar spans accuracy → mean confidence: above the blue bar when over-confident,
    # over it (downwards) when under-confident.
    axes.bar(
        lower,
        confidence - accuracy,
        bottom=accuracy,
        width=width,
        align="edge",
        color=GAP_COLOR,
        alpha=0.35,
        edgecolor=GAP_COLOR,
        linewidth=0.6,
        hatch="//",
        label="gap to mean confidence",
    )
    axes.plot([0.0, 1.0], [0.0, 1.0], linestyle="--", color="black", linewidth=1.0, label="ideal")
    axes.set_xlim(0.0, 1.0)
    axes.set_ylim(0.0, 1.0)
    axes.set_ylabel("accuracy")
    axes.grid(alpha=0.25)
    if legend:
        axes.legend(loc="upper left", fontsize="small", frameon=False)


def draw_histogram(axes: Axes, bins: pd.DataFrame) -> None:
    """Share of the slice's weight in each bin (the confidence histogram)."""
    lower = bins["bin_lower"].to_numpy(dtype=float)
    width = bins["bin_upper"].to_numpy(dtype=float) - lower
    weight = bins["weight_sum"].fillna(0.0).to_numpy(dtype=float)
    total = weight.sum()
    share = weight / total if total > 0 else np.zeros_like(weight)
    axes.bar(lower, share, width=width, align="edge", color=HISTOGRAM_COLOR, edgecolor="white")
    axes.set_xlim(0.0, 1.0)
    axes.set_xlabel("confidence")
    axes.set_ylabel("share")
    axes.grid(alpha=0.25)
