"""One regression calibration panel: the observed coverage of the central predictive intervals
against their nominal level.

For a level l, the interval μ ± z_l σ (z_l = Φ⁻¹((1 + l) / 2)) should hold the target in a
share l of the rows. Points below the diagonal mean the intervals are too narrow (σ too small,
over-confident); above it, too wide (under-confident). The shaded area between the curve and
the diagonal is what ``miscalibration_area`` averages.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.axes import Axes

OBSERVED_COLOR = "#3b6fb6"
GAP_COLOR = "#d62728"
# Said once per figure, under the panels.
READING_GUIDE = (
    "Below the diagonal: the intervals μ ± z·σ are too narrow (σ too small, over-confident).\n"
    "Above it: they are too wide (σ too large, under-confident)."
)


def draw_regression_calibration(axes: Axes, levels: pd.DataFrame) -> None:
    """Observed coverage per level (line and markers), the diagonal, and the gap shaded.

    ``levels`` has one row per level with ``level`` and ``observed`` (null when the slice has
    no weight; such levels are not drawn).
    """
    drawn = levels[levels["observed"].notna()].sort_values("level")
    level = drawn["level"].to_numpy(dtype=float)
    observed = drawn["observed"].to_numpy(dtype=float)
    axes.plot([0.0, 1.0], [0.0, 1.0], linestyle="--", color="black", linewidth=1.0, label="ideal")
    axes.fill_between(
        level,
        level,
        observed,
        color=GAP_COLOR,
        alpha=0.25,
        linewidth=0,
        label="gap (observed − expected)",
    )
    axes.plot(
        level,
        observed,
        color=OBSERVED_COLOR,
        marker="o",
        markersize=3.5,
        linewidth=1.6,
        label="observed coverage",
    )
    axes.set_xlim(0.0, 1.0)
    axes.set_ylim(0.0, 1.0)
    # Square, so that the diagonal is at 45 degrees whatever the figure's shape.
    axes.set_box_aspect(1.0)
    axes.set_xlabel("expected coverage (interval level)")
    axes.set_ylabel("observed coverage")
    axes.grid(alpha=0.25)
