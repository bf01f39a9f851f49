"""The fixed layout of the many-panel figures: the grid's margins and gaps in inches, the bars
over their histogram, and no text cut by the figure's edge or crossing a neighbour's panel."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from spark_calib_cli.report.layout import bars_over_histogram, fixed_grid
from spark_calib_cli.report.recalibration import recalibration_figures
from spark_calib_cli.report.reliability import reliability_figures


def inches(figure: Figure, axes_index: int) -> tuple[float, float, float, float]:
    """(left, right, bottom, top) of an axes in inches from the figure's lower left corner."""
    box = figure.axes[axes_index].get_position()
    width, height = figure.get_size_inches()
    return box.x0 * width, box.x1 * width, box.y0 * height, box.y1 * height


def test_the_grid_has_its_margins_and_gaps_in_inches() -> None:
    figure = Figure(figsize=(10.0, 8.0))
    grid = fixed_grid(figure, 2, 3, margins=(1.0, 0.5, 1.5, 0.5), gaps=(0.8, 1.0))
    for row in range(2):
        for column in range(3):
            figure.add_subplot(grid[row, column])
    cells = [inches(figure, i) for i in range(6)]
    # Cell width (10 − 1 − 0.5 − 2 × 0.8) / 3 = 2.3; cell height (8 − 1.5 − 0.5 − 1) / 2 = 2.5,
    # the first row from 8 − 1.5 = 6.5 down to 4.0, the second from 3.0 to 0.5.
    expected = [
        (1.0 + c * (2.3 + 0.8), 1.0 + c * (2.3 + 0.8) + 2.3, 4.0 - r * 3.5, 6.5 - r * 3.5)
        for r in range(2)
        for c in range(3)
    ]
    for found, wanted in zip(cells, expected, strict=True):
        assert found == pytest.approx(wanted, abs=1e-9)


def test_the_bars_sit_over_their_histogram_three_to_one_with_the_gap_in_inches() -> None:
    figure = Figure(figsize=(4.0, 6.0))
    grid = fixed_grid(figure, 1, 1, margins=(0.5, 0.5, 1.0, 1.0), gaps=(0.0, 0.0))
    cell = bars_over_histogram(figure, grid[0, 0], 0.4)
    figure.add_subplot(cell[0])
    figure.add_subplot(cell[1])
    _, _, bars_bottom, bars_top = inches(figure, 0)
    _, _, histogram_bottom, histogram_top = inches(figure, 1)
    # The cell is 4 in high: 0.4 of gap, then 3.6 split 2.7 : 0.9.
    assert (bars_bottom, bars_top) == pytest.approx((2.3, 5.0))
    assert (histogram_bottom, histogram_top) == pytest.approx((1.0, 1.9))


def texts_inside_and_apart(figure: Figure) -> None:
    """Every drawn text lies inside the figure, and the titles and axis labels of one panel
    overlap no other panel."""
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    width, height = canvas.get_width_height()
    texts = [t for t in figure.findobj(Text) if t.get_visible() and t.get_text().strip()]
    assert texts
    for text in texts:
        box = text.get_window_extent(renderer)
        assert box.x0 >= -0.5 and box.y0 >= -0.5, text.get_text()
        assert box.x1 <= width + 0.5 and box.y1 <= height + 0.5, text.get_text()
    panels = [axes.get_window_extent(renderer) for axes in figure.axes]
    for index, axes in enumerate(figure.axes):
        labels = [axes.title, axes.xaxis.label, axes.yaxis.label]
        labels += [t for t in axes.get_yticklabels() + axes.get_xticklabels() if t.get_text()]
        for label in labels:
            if not label.get_text():
                continue
            box = label.get_window_extent(renderer)
            for other, panel in enumerate(panels):
                if other != index:
                    assert not box.overlaps(panel), (label.get_text(), index, other)


def bins(rate: float) -> list[dict[str, float]]:
    return [
        {"bin": b, "weight": 10.0, "confidence": (b + 0.5) / 10, "outcome": rate * (b + 0.5) / 10}
        for b in range(10)
    ]


def test_the_recalibration_figure_keeps_its_text_inside_and_apart() -> None:
    methods = {"temperature": {"temperature": 1.953}, "platt": {"a": -1.246, "b": 0.967}}
    rows = [
        {
            "model_version": "v1",
            "slice_name": name,
            "slice_value": value,
            "method": method,
            "parameters": parameters,
            "knots": None,
            "n_eval": 11_867,
            "fallback": False,
            "ece_before": ece,
            "ece_after": 0.0183,
            "reliability_before": bins(0.8),
            "reliability_after": bins(0.97),
        }
        for name, value, ece in [
            ("overall", "", 0.0218),
            ("country, device", "US, mobile", 0.0397),
            ("country, device, tier", "MX, tablet, premium", 0.2063),
        ]
        for method, parameters in methods.items()
    ]
    ((_, figure),) = recalibration_figures(pd.DataFrame(rows), run_date="2024-06-30", n_bins=10)
    texts_inside_and_apart(figure)


def test_the_reliability_figure_keeps_its_text_inside_and_apart() -> None:
    keys = [("overall", "")] + [("country, device", f"C{i}, tablet") for i in range(5)]
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        [
            {
                "model_version": "v1",
                "slice_name": name,
                "slice_value": value,
                "bin": b,
                "bin_lower": b / 15,
                "bin_upper": (b + 1) / 15,
                "n": 100,
                "weight_sum": 100.0,
                "mean_confidence": (b + 0.5) / 15,
                "accuracy": float(np.clip((b + 0.5) / 15 + rng.normal(0, 0.05), 0, 1)),
                "ci_lower": 0.0,
                "ci_upper": 1.0,
                "gap": 0.0,
            }
            for name, value in keys
            for b in range(15)
        ]
    )
    panels = pd.DataFrame(
        [
            {"model_version": "v1", "slice_name": k[0], "slice_value": k[1], "rank": rank}
            | {"n": 123_456, "ece": 0.1234, "mce": 0.4567}
            for rank, k in enumerate(keys)
        ]
    )
    ((_, figure),) = reliability_figures(frame, panels, run_date="2024-06-30", positive_class=True)
    texts_inside_and_apart(figure)
