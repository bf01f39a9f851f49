"""``edge_bars`` draws what ``Axes.bar(..., align="edge")`` draws: the same rectangles, the
same limits, the same legend and the same PNG bytes (the heights to rounding), with its data
limits updated once."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.container import BarContainer
from matplotlib.figure import Figure

from spark_calib_cli.report.reliability_panel import edge_bars

STYLE: dict[str, Any] = {"alpha": 0.35, "edgecolor": "#d62728", "linewidth": 0.6, "hatch": "//"}


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=50)
    return buffer.getvalue()


def _drawn(bars: Callable[[Axes], Any]) -> tuple[Figure, Axes]:
    figure = Figure(figsize=(3, 3))
    axes = figure.add_subplot()
    bars(axes)
    axes.legend(loc="upper left")
    return figure, axes


@pytest.mark.parametrize(
    ("height", "bottom"),
    [
        (np.array([0.2, 0.5, 0.0, 0.9]), None),
        (np.array([0.1, -0.3, 0.2, 0.0]), np.array([0.4, 0.6, 0.0, 0.3])),
        (np.zeros(4), None),
    ],
)
def test_edge_bars_match_axes_bar(height: np.ndarray, bottom: np.ndarray | None) -> None:
    left = np.array([0.0, 0.25, 0.5, 0.75])
    width = np.full(4, 0.25)
    reference, expected = _drawn(
        lambda axes: axes.bar(
            left,
            height,
            width=width,
            bottom=bottom,
            align="edge",
            color="#3b6fb6",
            label="gap",
            **STYLE,
        )
    )
    figure, axes = _drawn(
        lambda axes: edge_bars(
            axes, left, height, width, bottom=bottom, facecolor="#3b6fb6", label="gap", **STYLE
        )
    )
    assert axes.get_xlim() == expected.get_xlim()
    assert axes.get_ylim() == expected.get_ylim()
    (bars,) = axes.containers
    (expected_bars,) = expected.containers
    assert isinstance(bars, BarContainer) and isinstance(expected_bars, BarContainer)
    assert bars.get_label() == expected_bars.get_label() == "gap"
    # Axes.bar converts the height to units as (bottom + height) − bottom: equal to rounding.
    values, expected_values = (np.asarray(b.datavalues, dtype=float) for b in (bars, expected_bars))
    assert values == pytest.approx(expected_values, abs=1e-15)
    for patch, expected_patch in zip(bars, expected_bars, strict=True):
        assert patch.get_xy() == expected_patch.get_xy()
        assert patch.get_width() == expected_patch.get_width()
        assert patch.get_height() == pytest.approx(expected_patch.get_height(), abs=1e-15)
        assert patch.get_facecolor() == expected_patch.get_facecolor()
        assert patch.get_edgecolor() == expected_patch.get_edgecolor()
        assert patch.get_hatch() == expected_patch.get_hatch()
        assert patch.get_label() == "_nolegend_"
    assert axes.get_legend_handles_labels()[1] == ["gap"]
    assert _png(figure) == _png(reference)
