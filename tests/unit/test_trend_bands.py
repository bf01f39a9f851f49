"""The interval band of the trend figures: one filled band per version line, between the
points' ci_lower and ci_upper, in the line's colour, behind the line; none without bounds
(pure pandas, no Spark)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import matplotlib.dates as mdates
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from spark_calib_cli.report.trend import trend_figure

W1, W2, W3 = dt.date(2024, 6, 16), dt.date(2024, 6, 23), dt.date(2024, 6, 30)
WINDOWS = (W1, W2, W3)
POINT_COLUMNS = ["metric", "slice_name", "slice_value", "model_version", "window_end", "value", "n"]
BOUND_COLUMNS = ["ci_lower", "ci_upper"]
THRESHOLD_COLUMNS = ["metric", "slice_name", "model_version", "kind", "threshold", "rule"]
FIRED_COLUMNS = ["metric", "slice_name", "slice_value", "model_version", "window_end", "rule"]

Bound = tuple[float | None, float | None]
# (slice_name, slice_value, model_version): (value, (ci_lower, ci_upper)) at W1, W2, W3.
SERIES: dict[tuple[str, str, str], tuple[tuple[float, Bound], ...]] = {
    ("overall", "", "v1"): ((0.02, (0.01, 0.03)), (0.03, (None, None)), (0.04, (0.02, 0.06))),
    ("overall", "", "v2"): ((0.05, (0.045, 0.055)), (0.06, (0.05, 0.07)), (0.07, (0.06, 0.08))),
    # Bounds on the middle point only.
    ("country", "BR", "v1"): ((0.06, (None, None)), (0.08, (0.07, 0.09)), (0.01, (None, None))),
    # No bounds at all (e.g. a metric without a standard error).
    ("country", "BR", "v2"): ((0.02, (None, None)), (0.09, (None, None)), (0.03, (None, None))),
}


def points_frame(with_bounds: bool) -> pd.DataFrame:
    rows = [
        ("ece", *key, window, value, 100, *bounds)
        for key, points in SERIES.items()
        for window, (value, bounds) in zip(WINDOWS, points, strict=True)
    ]
    frame = pd.DataFrame(rows, columns=[*POINT_COLUMNS, *BOUND_COLUMNS])
    return frame if with_bounds else frame[POINT_COLUMNS]


def ece_figure(points: pd.DataFrame) -> Figure:
    return trend_figure(
        "ece",
        points,
        pd.DataFrame(columns=THRESHOLD_COLUMNS),
        pd.DataFrame(columns=FIRED_COLUMNS),
        granularity="week",
        run_date="2024-06-30",
    )


def panel(figure: Figure, title: str) -> Axes:
    (axes,) = [axes for axes in figure.axes if axes.get_title() == title]
    return axes


def version_line(axes: Axes, version: str) -> Line2D:
    (line,) = [line for line in axes.get_lines() if line.get_label() == version]
    return line


def bands(axes: Axes) -> list[PolyCollection]:
    return [artist for artist in axes.collections if isinstance(artist, PolyCollection)]


def band_of_colour(axes: Axes, color: Any) -> PolyCollection:
    rgb = to_rgba(color)[:3]
    (band,) = [band for band in bands(axes) if face_rgba(band)[:3] == rgb]
    return band


def face_rgba(band: PolyCollection) -> tuple[float, ...]:
    return tuple(float(c) for c in np.asarray(band.get_facecolor(), dtype=float)[0])


def vertical_extent(band: PolyCollection) -> dict[float, tuple[float, float]]:
    """Per x of the band's outline (days), the lowest and highest y there."""
    vertices = np.concatenate([path.vertices for path in band.get_paths()])
    extent = {}
    for x in np.unique(vertices[:, 0]):
        ys = vertices[vertices[:, 0] == x, 1]
        extent[float(x)] = (float(ys.min()), float(ys.max()))
    return extent


def day(date: dt.date) -> float:
    return float(mdates.date2num(date))


def test_each_version_line_gets_a_band_between_its_bounds_in_its_colour() -> None:
    overall = panel(ece_figure(points_frame(with_bounds=True)), "overall")

    assert len(bands(overall)) == 2
    for version in ("v1", "v2"):
        line = version_line(overall, version)
        band = band_of_colour(overall, line.get_color())
        expected = {
            day(window): bounds
            for window, (_, bounds) in zip(WINDOWS, SERIES[("overall", "", version)], strict=True)
            if bounds[0] is not None
        }
        extent = vertical_extent(band)
        assert extent.keys() == expected.keys(), version
        for x, (lower, upper) in expected.items():
            assert extent[x] == (lower, upper), (version, x)
        # Light, and behind the line it belongs to.
        assert face_rgba(band)[3] < 0.5
        assert band.get_zorder() < line.get_zorder()


def test_points_with_null_bounds_are_left_out_of_the_band() -> None:
    figure = ece_figure(points_frame(with_bounds=True))
    overall, brazil = panel(figure, "overall"), panel(figure, "country=BR")

    # overall v1 has no bounds at W2: its band has vertices at W1 and W3 only.
    v1 = band_of_colour(overall, version_line(overall, "v1").get_color())
    assert sorted(vertical_extent(v1)) == [day(W1), day(W3)]
    # BR v1 has bounds at W2 only; BR v2 has none, so it gets no band.
    (band,) = bands(brazil)
    assert face_rgba(band)[:3] == to_rgba(version_line(brazil, "v1").get_color())[:3]
    assert vertical_extent(band) == {day(W2): (0.07, 0.09)}


def test_without_interval_columns_no_band_is_drawn() -> None:
    figure = ece_figure(points_frame(with_bounds=False))

    for axes in figure.axes:
        assert bands(axes) == []
        # The lines are still drawn.
        assert {str(line.get_label()) for line in axes.get_lines()} == {"v1", "v2"}
