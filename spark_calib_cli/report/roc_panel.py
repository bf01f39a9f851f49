"""ROC and precision-recall panels from the points of the ``calibration_roc`` table.

The points sit at the lower edges of the score buckets, from the highest score down, plus the
origin (0, 0) as point 0; straight lines between them are what ``roc_auc_binned`` integrates.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.axes import Axes

CURVE_COLOR = "#3b6fb6"
CHANCE_COLOR = "#7f7f7f"


def draw_roc(axes: Axes, points: pd.DataFrame) -> None:
    """True-positive rate against false-positive rate, and the chance diagonal.

    ``points`` has ``point``, ``fpr`` and ``tpr`` (the roc table's columns)."""
    drawn = points[points["fpr"].notna() & points["tpr"].notna()].sort_values("point")
    axes.plot([0.0, 1.0], [0.0, 1.0], linestyle="--", color=CHANCE_COLOR, linewidth=1.0)
    axes.plot(
        drawn["fpr"].to_numpy(dtype=float),
        drawn["tpr"].to_numpy(dtype=float),
        color=CURVE_COLOR,
        linewidth=1.8,
    )
    _unit_square(axes, "false positive rate", "true positive rate (recall)")


def draw_precision_recall(axes: Axes, points: pd.DataFrame) -> None:
    """Precision against recall (= tpr), without the origin, whose precision is undefined,
    and the precision of predicting every row positive (the base rate) as a dashed line."""
    drawn = points[
        (points["point"] > 0) & points["tpr"].notna() & points["precision"].notna()
    ].sort_values("point")
    if not drawn.empty:
        # The last point puts every bucket above the threshold: its precision is P / W.
        base_rate = float(drawn["precision"].iloc[-1])
        axes.axhline(base_rate, linestyle="--", color=CHANCE_COLOR, linewidth=1.0)
    axes.plot(
        drawn["tpr"].to_numpy(dtype=float),
        drawn["precision"].to_numpy(dtype=float),
        color=CURVE_COLOR,
        linewidth=1.8,
    )
    _unit_square(axes, "recall", "precision")


def _unit_square(axes: Axes, xlabel: str, ylabel: str) -> None:
    axes.set_xlim(0.0, 1.0)
    axes.set_ylim(0.0, 1.02)
    axes.set_box_aspect(1.0)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.grid(alpha=0.25)
