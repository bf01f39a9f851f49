"""Trend figures of a monitoring run: the panels, lines, thresholds and alerts each figure
draws, the panel cap, and the files written (pure pandas, no Spark)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import matplotlib.dates as mdates
import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from spark_calib_cli.report.trend import trend_figure, write_trend_figures

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
W1, W2, W3 = dt.date(2024, 6, 16), dt.date(2024, 6, 23), dt.date(2024, 6, 30)
WINDOWS = (W1, W2, W3)
POINT_COLUMNS = [
    "metric",
    "slice_name",
    "slice_value",
    "model_version",
    "window_end",
    "value",
    "n",
]
THRESHOLD_COLUMNS = ["metric", "slice_name", "model_version", "kind", "threshold", "rule"]
FIRED_COLUMNS = ["metric", "slice_name", "slice_value", "model_version", "window_end", "rule"]
NO_VERSION_LABEL = "(no model_version column)"

# (metric, slice_name, slice_value, model_version): values at W1, W2, W3 (None: not computed).
SERIES: dict[tuple[str, str, str, str], tuple[float | None, ...]] = {
    ("ece", "overall", "", "v1"): (0.02, None, 0.04),
    ("ece", "overall", "", "v2"): (0.03, 0.05, 0.07),
    ("ece", "country", "BR", "v1"): (0.06, 0.08, 0.01),
    ("ece", "country", "BR", "v2"): (0.02, 0.09, 0.03),
    ("ece", "country", "AR", "v1"): (0.01, 0.02, 0.03),
    ("accuracy", "overall", "", "v1"): (0.90, 0.91, 0.92),
    ("accuracy", "device", "tablet", "v1"): (0.80, 0.81, 0.82),
}
THRESHOLDS = [
    # Every ece panel, every version.
    ("ece", None, None, "max", 0.05, "ece ceiling"),
    # The country panels only.
    ("ece", "country", None, "min", 0.015, "country floor"),
    # The panels with a v2 line only (overall and BR).
    ("ece", None, "v2", "max", 0.08, "v2 ceiling"),
    ("accuracy", None, None, "min", 0.85, "accuracy floor"),
]
FIRED = [
    ("ece", "country", "BR", "v2", W2, "ece ceiling"),
    ("ece", "country", "BR", "v1", W2, "ece ceiling"),
    ("ece", "overall", "", "v2", W3, "ece ceiling"),
    # The point has no value: no marker.
    ("ece", "overall", "", "v1", W2, "ece ceiling"),
    ("accuracy", "overall", "", "v1", W1, "accuracy floor"),
]


def points_frame(series: dict[tuple[str, str, str, Any], tuple[float | None, ...]]) -> pd.DataFrame:
    rows = [
        (*key[:3], key[3], window, value, 100)
        for key, values in series.items()
        for window, value in zip(WINDOWS, values, strict=True)
    ]
    return pd.DataFrame(rows, columns=POINT_COLUMNS)


def thresholds_frame(rows: list[tuple[Any, ...]] = THRESHOLDS) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=THRESHOLD_COLUMNS)


def fired_frame(rows: list[tuple[Any, ...]] = FIRED) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=FIRED_COLUMNS)


def ece_figure() -> Figure:
    return trend_figure(
        "ece",
        points_frame(SERIES),
        thresholds_frame(),
        fired_frame(),
        granularity="week",
        run_date="2024-06-30",
    )


def panel(figure: Figure, title: str) -> Axes:
    (axes,) = [axes for axes in figure.axes if axes.get_title() == title]
    return axes


def lines_labelled(axes: Axes, label: str) -> list[Line2D]:
    return [line for line in axes.get_lines() if line.get_label() == label]


def legend_labels(figure: Figure) -> list[str]:
    (legend,) = figure.legends
    return [text.get_text() for text in legend.get_texts()]


def x_days(line: Line2D) -> list[float]:
    return list(mdates.date2num(line.get_xdata()))


def days(*dates: dt.date) -> list[float]:
    return list(mdates.date2num(list(dates)))


def is_grey(color: Any) -> bool:
    red, green, blue, _ = to_rgba(color)
    return red == green == blue and 0.2 < red < 0.8


def test_one_panel_per_slice_of_the_metric_overall_first() -> None:
    figure = ece_figure()

    assert [axes.get_title() for axes in figure.axes] == [
        "overall",
        "country=AR",
        "country=BR",
    ]
    assert figure.get_suptitle() == "ece by week window, up to 2024-06-30"


def test_one_line_per_version_with_the_input_values_and_gaps() -> None:
    figure = ece_figure()
    overall, brazil = panel(figure, "overall"), panel(figure, "country=BR")

    (v1,) = lines_labelled(overall, "v1")
    (v2,) = lines_labelled(overall, "v2")
    np.testing.assert_array_equal(v1.get_ydata(), [0.02, np.nan, 0.04])
    np.testing.assert_array_equal(v2.get_ydata(), [0.03, 0.05, 0.07])
    assert x_days(v1) == days(W1, W2, W3)
    assert v1.get_marker() not in (None, "", "None", "none")
    (brazil_v2,) = lines_labelled(brazil, "v2")
    np.testing.assert_array_equal(brazil_v2.get_ydata(), [0.02, 0.09, 0.03])
    # A version keeps its colour from panel to panel; versions differ.
    assert to_rgba(brazil_v2.get_color()) == to_rgba(v2.get_color())
    assert to_rgba(v1.get_color()) != to_rgba(v2.get_color())
    assert lines_labelled(panel(figure, "country=AR"), "v2") == []


def test_one_legend_lists_versions_then_rules_then_alerts_once() -> None:
    labels = legend_labels(ece_figure())

    assert labels[:2] == ["v1", "v2"]
    assert sorted(labels[2:-1]) == [
        "max 0.05 (ece ceiling)",
        "max 0.08 (v2 ceiling)",
        "min 0.015 (country floor)",
    ]
    assert labels[-1] == "alert fired"


def test_a_null_model_version_gets_its_own_line_and_alerts() -> None:
    series = {("ece", "overall", "", None): (0.01, 0.06, 0.02)}
    fired = [("ece", "overall", "", None, W2, "ece ceiling")]

    figure = trend_figure(
        "ece",
        points_frame(series),
        thresholds_frame([]),
        fired_frame(fired),
        granularity="day",
        run_date="2024-06-30",
    )

    (line,) = lines_labelled(figure.axes[0], NO_VERSION_LABEL)
    np.testing.assert_array_equal(line.get_ydata(), [0.01, 0.06, 0.02])
    (marker,) = lines_labelled(figure.axes[0], "alert fired")
    assert x_days(marker) == days(W2)
    assert list(marker.get_ydata()) == [0.06]


def test_a_rule_for_every_slice_and_version_is_a_grey_dashed_line_in_every_panel() -> None:
    figure = ece_figure()

    for axes in figure.axes:
        (line,) = lines_labelled(axes, "max 0.05 (ece ceiling)")
        assert list(line.get_ydata()) == [0.05, 0.05]
        assert line.get_linestyle() == "--"
        assert is_grey(line.get_color())
        # Another metric's rule is not drawn.
        assert lines_labelled(axes, "min 0.85 (accuracy floor)") == []


def test_a_slice_rule_is_drawn_in_the_panels_of_that_slice_only() -> None:
    figure = ece_figure()

    for title in ("country=AR", "country=BR"):
        axes = panel(figure, title)
        (line,) = lines_labelled(axes, "min 0.015 (country floor)")
        assert list(line.get_ydata()) == [0.015, 0.015]
    overall = panel(figure, "overall")
    assert lines_labelled(overall, "min 0.015 (country floor)") == []


def test_a_version_rule_takes_the_colour_of_that_versions_line() -> None:
    figure = ece_figure()

    for title in ("overall", "country=BR"):
        axes = panel(figure, title)
        (rule,) = lines_labelled(axes, "max 0.08 (v2 ceiling)")
        (v2,) = lines_labelled(axes, "v2")
        assert list(rule.get_ydata()) == [0.08, 0.08]
        assert rule.get_linestyle() == "--"
        assert to_rgba(rule.get_color()) == to_rgba(v2.get_color())
    # country=AR has no v2 line.
    assert lines_labelled(panel(figure, "country=AR"), "max 0.08 (v2 ceiling)") == []


def test_fired_alerts_are_red_crosses_on_the_fired_points() -> None:
    figure = ece_figure()
    brazil, overall = panel(figure, "country=BR"), panel(figure, "overall")

    (markers,) = lines_labelled(brazil, "alert fired")
    # BR v2 and v1 fired at W2, where they are 0.09 and 0.08.
    assert sorted(zip(x_days(markers), markers.get_ydata(), strict=True)) == sorted(
        [(days(W2)[0], 0.09), (days(W2)[0], 0.08)]
    )
    assert markers.get_marker() == "x"
    assert markers.get_linestyle() in ("None", "none", "")
    red, green, blue, _ = to_rgba(markers.get_color())
    assert red > 0.7 and green < 0.3 and blue < 0.3
    # Overall: v2 fired at W3 (0.07); v1 fired at W2, which has no value, so no marker.
    (markers,) = lines_labelled(overall, "alert fired")
    assert list(zip(x_days(markers), markers.get_ydata(), strict=True)) == [(days(W3)[0], 0.07)]
    axes = panel(figure, "country=AR")
    assert lines_labelled(axes, "alert fired") == []


def test_more_than_twelve_panels_keep_overall_then_fired_then_highest() -> None:
    # Fifteen country slices c00..c14 with a peak of i / 100 (c14 highest), plus overall.
    series: dict[tuple[str, str, str, Any], tuple[float | None, ...]] = {
        ("ece", "overall", "", "v1"): (0.001, 0.001, 0.001)
    }
    for i in range(15):
        series[("ece", "country", f"c{i:02d}", "v1")] = (0.0, i / 100, None)
    # The two lowest slices fired: they outrank any value.
    fired = [
        ("ece", "country", "c00", "v1", W1, "ece ceiling"),
        ("ece", "country", "c01", "v1", W2, "ece ceiling"),
    ]

    figure = trend_figure(
        "ece",
        points_frame(series),
        thresholds_frame([]),
        fired_frame(fired),
        granularity="week",
        run_date="2024-06-30",
    )

    # overall + 2 fired + the 9 highest peaks (c06..c14) = 12 panels.
    assert [axes.get_title() for axes in figure.axes] == [
        "overall",
        "country=c00",
        "country=c01",
        *[f"country=c{i:02d}" for i in range(6, 15)],
    ]


def test_twelve_panels_are_all_kept() -> None:
    series: dict[tuple[str, str, str, Any], tuple[float | None, ...]] = {
        ("ece", "overall", "", "v1"): (0.1, 0.1, 0.1)
    }
    for i in range(11):
        series[("ece", "country", f"c{i:02d}", "v1")] = (i / 100, i / 100, i / 100)

    figure = trend_figure(
        "ece",
        points_frame(series),
        thresholds_frame([]),
        fired_frame([]),
        granularity="week",
        run_date="2024-06-30",
    )

    assert [axes.get_title() for axes in figure.axes] == [
        "overall",
        *[f"country=c{i:02d}" for i in range(11)],
    ]


def test_a_metric_without_points_is_an_error() -> None:
    with pytest.raises(ValueError, match="mce"):
        trend_figure(
            "mce",
            points_frame(SERIES),
            thresholds_frame(),
            fired_frame(),
            granularity="week",
            run_date="2024-06-30",
        )


def test_one_png_per_metric(tmp_path: Path) -> None:
    out_dir = tmp_path / "trends"

    written = write_trend_figures(
        points_frame(SERIES),
        thresholds_frame(),
        fired_frame(),
        out_dir,
        granularity="week",
        run_date="2024-06-30",
    )

    assert written == [out_dir / "trend_accuracy.png", out_dir / "trend_ece.png"]
    assert sorted(path.name for path in out_dir.iterdir()) == [
        "trend_accuracy.png",
        "trend_ece.png",
    ]
    for path in written:
        assert path.read_bytes().startswith(PNG_SIGNATURE)


def test_empty_inputs_besides_points_still_draw(tmp_path: Path) -> None:
    written = write_trend_figures(
        points_frame(SERIES),
        thresholds_frame([]),
        pd.DataFrame(),
        tmp_path,
        granularity="day",
        run_date="2024-06-30",
    )

    assert [path.name for path in written] == ["trend_accuracy.png", "trend_ece.png"]


def test_empty_points_write_nothing(tmp_path: Path) -> None:
    out_dir = tmp_path / "trends"

    written = write_trend_figures(
        pd.DataFrame(columns=POINT_COLUMNS),
        thresholds_frame(),
        fired_frame(),
        out_dir,
        granularity="week",
        run_date="2024-06-30",
    )

    assert written == []
    assert not out_dir.exists()
