"""One PNG per metric: its value over the time windows of a monitoring run, one panel per
slice and one line per model version, with the alert thresholds and the alerts that fired."""

from __future__ import annotations

import math
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import matplotlib.dates as mdates
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator

from spark_calib.constants import OVERALL_SLICE_NAME
from spark_calib_cli.report.labels import slice_label
from spark_calib_cli.report.layout import (
    WHOLE,
    Share,
    panel_grid,
    rows_of,
    save_png,
    shared,
    version_title,
)
from spark_calib_cli.report.rendered import rendered

PANEL_SIZE_INCHES = (4.6, 3.8)
# Room for the figure title over a single panel.
MIN_FIGURE_WIDTH_INCHES = 6.0
FILE_STEM = "trend"
MAX_PANELS = 12
# The tab10 colours without red (alerts) and grey (rules of every model version).
VERSION_COLORS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#bcbd22",
    "#17becf",
)
ALL_VERSIONS_COLOR = "#7f7f7f"
ALERT_COLOR = "#d62728"
INTERVAL_LABEL = "confidence interval"
ALERT_LABEL = "alert fired"
DATE_FORMAT = "%Y-%m-%d"
MAX_DATE_TICKS = 8
LEGEND_COLUMNS = 4
VERSION_GID, THRESHOLD_GID, ALERT_GID = "version", "threshold", "alert"
LEGEND_ORDER = (VERSION_GID, THRESHOLD_GID, ALERT_GID)

PanelKey = tuple[str, str]
THRESHOLD_COLUMNS = ("metric", "slice_name", "model_version", "kind", "threshold", "rule")
FIRED_COLUMNS = ("metric", "slice_name", "slice_value", "model_version", "window_end", "rule")


def write_trend_figures(
    points: pd.DataFrame,
    thresholds: pd.DataFrame,
    fired: pd.DataFrame,
    out_dir: Path,
    *,
    granularity: str,
    run_date: str,
) -> list[Path]:
    """Write ``trend_<metric>.png`` into ``out_dir`` for each metric of ``points`` (sorted by
    name); return the paths written. Empty ``points`` write nothing and return ``[]``.

    ``points`` has one row per ``metric``, ``slice_name``, ``slice_value``, ``model_version``
    (null allowed) and ``window_end`` (a date), with the metric's ``value`` (null when not
    computed) and the row count ``n``. ``thresholds`` has the alert rules: ``metric``,
    ``slice_name`` and ``model_version`` (null: every slice, every version), ``kind``
    (``max`` or ``min``), ``threshold`` and ``rule`` (a short label). ``fired`` has the
    windows where a rule fired: ``metric``, ``slice_name``, ``slice_value``,
    ``model_version``, ``window_end`` and ``rule``. Either may be empty. See
    ``trend_figure`` for what a figure draws.
    """
    if points.empty:
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for metric, png in rendered(
        trend_figures, points, thresholds, fired, granularity=granularity, run_date=run_date
    ):
        # save_png names the file <stem>_<part>.png; here the part is the metric.
        save_png(png, out_dir, FILE_STEM, metric, written)
    return written


def trend_figures(
    points: pd.DataFrame,
    thresholds: pd.DataFrame,
    fired: pd.DataFrame,
    *,
    granularity: str,
    run_date: str,
    share: Share = WHOLE,
) -> list[tuple[str | None, Figure]]:
    """One (metric, ``trend_figure``) per metric of ``points``, sorted by name (``share``: the
    part a drawing process draws, ``rendered``)."""
    return [
        (
            metric,
            trend_figure(
                metric, points, thresholds, fired, granularity=granularity, run_date=run_date
            ),
        )
        for metric in shared(sorted(points["metric"].astype(str).unique()), share)
    ]


def trend_figure(
    metric: str,
    points: pd.DataFrame,
    thresholds: pd.DataFrame,
    fired: pd.DataFrame,
    *,
    granularity: str,
    run_date: str,
) -> Figure:
    """The trend figure of ``metric`` (the frames are those of ``write_trend_figures``; rows of
    other metrics are ignored).

    One panel per (``slice_name``, ``slice_value``) of the metric, overall first, then sorted
    by slice; each panel has one line per model version (same colour in every panel; a null
    value leaves a gap), a dashed horizontal line per applicable rule (the rule's slice_name
    null or the panel's, its model_version null, drawn grey, or a version with a line in the
    panel, drawn in that version's colour), labelled ``<kind> <threshold> (<rule>)``, and a
    red ``x`` on each point where an alert fired. One legend under the panels lists the
    versions, the rules and ``alert fired``; the panels share the time axis.

    With more than ``MAX_PANELS`` panels, the figure keeps overall and the other panels with
    the most fired alerts (rows of ``fired``), ties broken by the highest maximum value, then
    by slice order; panels without any value come last. Raises ``ValueError`` when ``points``
    has no row of ``metric``.
    """
    series = _normalised(_of_metric(points, metric, ()), "value")
    alerts = _normalised(_of_metric(fired, metric, FIRED_COLUMNS), None)
    rules = _of_metric(thresholds, metric, THRESHOLD_COLUMNS)
    rules = rules[rules["threshold"].notna()]
    if series.empty:
        raise ValueError(f"points has no rows of metric {metric!r}")
    colors = _version_colors(series)
    panels = _panel_keys(series, alerts)
    figure, rows, columns = panel_grid(len(panels), PANEL_SIZE_INCHES, MIN_FIGURE_WIDTH_INCHES)
    grid = figure.add_gridspec(rows, columns)
    first: Axes | None = None
    for index, (slice_name, slice_value) in enumerate(panels):
        # One time axis for every panel, so that the windows line up.
        axes = figure.add_subplot(grid[index // columns, index % columns], sharex=first)
        first = first or axes
        panel_rows = series[
            (series["slice_name"] == slice_name) & (series["slice_value"] == slice_value)
        ]
        _draw_panel(axes, panel_rows, rules, alerts, colors, metric)
        _date_axis(axes, series["window_end"])
        axes.set_title(slice_label(slice_name, slice_value), fontsize="medium")
    _figure_legend(figure)
    figure.suptitle(f"{metric} by {granularity} window, up to {run_date}", fontsize="large")
    return figure


def _of_metric(frame: pd.DataFrame, metric: str, columns: tuple[str, ...]) -> pd.DataFrame:
    """The rows of ``metric``; an empty frame may lack its ``columns``."""
    if frame.empty:
        return pd.DataFrame(columns=list(columns or frame.columns))
    return frame[frame["metric"] == metric]


def _normalised(frame: pd.DataFrame, value_column: str | None) -> pd.DataFrame:
    """A copy with ``window_end`` as timestamps, null model versions as None and, when given,
    ``value_column`` as floats (null as NaN)."""
    result = frame.copy()
    result["window_end"] = pd.to_datetime(result["window_end"])
    result["model_version"] = [_version_key(v) for v in result["model_version"]]
    if value_column is not None:
        result[value_column] = pd.to_numeric(result[value_column], errors="coerce")
    return result


def _version_key(version: Any) -> str | None:
    return None if version is None or pd.isna(version) else str(version)


def _versions(frame: pd.DataFrame) -> list[str | None]:
    """The model versions of ``frame``: None first, then by name."""
    versions = {_version_key(v) for v in frame["model_version"]}
    return sorted(versions, key=lambda v: (v is not None, v or ""))


def _version_colors(series: pd.DataFrame) -> dict[str | None, str]:
    return {
        version: VERSION_COLORS[index % len(VERSION_COLORS)]
        for index, version in enumerate(_versions(series))
    }


def _panel_order(key: PanelKey) -> tuple[bool, str, str]:
    return (key[0] != OVERALL_SLICE_NAME, str(key[0]), str(key[1]))


def _panel_keys(series: pd.DataFrame, alerts: pd.DataFrame) -> list[PanelKey]:
    """The (slice_name, slice_value) panels, overall first; at most ``MAX_PANELS``."""
    keys = sorted(
        set(zip(series["slice_name"], series["slice_value"], strict=True)), key=_panel_order
    )
    if len(keys) <= MAX_PANELS:
        return keys
    overall = [key for key in keys if key[0] == OVERALL_SLICE_NAME]
    others = [key for key in keys if key[0] != OVERALL_SLICE_NAME]
    alert_counts = _counts(zip(alerts["slice_name"], alerts["slice_value"], strict=True))
    peaks = _peaks(series)

    def priority(key: PanelKey) -> tuple[int, bool, float]:
        peak = peaks.get(key, math.nan)
        return (-alert_counts.get(key, 0), math.isnan(peak), -peak if not math.isnan(peak) else 0)

    # sorted is stable: equal priorities keep the slice order.
    kept = set(overall[:MAX_PANELS]) | set(
        sorted(others, key=priority)[: max(MAX_PANELS - len(overall), 0)]
    )
    return [key for key in keys if key in kept]


def _counts(keys: Any) -> dict[Hashable, int]:
    counts: dict[Hashable, int] = {}
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
    return counts


def _peaks(series: pd.DataFrame) -> dict[PanelKey, float]:
    """The highest non-null value of each panel (panels without one are left out)."""
    peaks: dict[PanelKey, float] = {}
    valued = series[series["value"].notna()]
    for name, value, peak in zip(
        valued["slice_name"], valued["slice_value"], valued["value"], strict=True
    ):
        peaks[(name, value)] = max(peaks.get((name, value), -math.inf), float(peak))
    return peaks


def _draw_panel(
    axes: Axes,
    panel_rows: pd.DataFrame,
    rules: pd.DataFrame,
    alerts: pd.DataFrame,
    colors: dict[str | None, str],
    metric: str,
) -> None:
    versions = _versions(panel_rows)
    fired_x: list[Any] = []
    fired_y: list[float] = []
    for version in versions:
        line = panel_rows[
            panel_rows["model_version"].isna()
            if version is None
            else panel_rows["model_version"] == version
        ].sort_values("window_end")
        _draw_band(axes, line, colors[version])
        axes.plot(
            line["window_end"].to_numpy(),
            line["value"].to_numpy(dtype=float),
            marker="o",
            markersize=4,
            linewidth=1.6,
            color=colors[version],
            label=version_title(version),
            gid=VERSION_GID,
        )
        hits = _fired_points(line, alerts)
        fired_x.extend(hits["window_end"])
        fired_y.extend(hits["value"].astype(float))
    _draw_thresholds(axes, rules, panel_rows, versions, colors)
    if fired_x:
        axes.plot(
            pd.to_datetime(pd.Series(fired_x)).to_numpy(),
            fired_y,
            linestyle="none",
            marker="x",
            markersize=9,
            markeredgewidth=2.0,
            color=ALERT_COLOR,
            label=ALERT_LABEL,
            gid=ALERT_GID,
            zorder=3,
        )
    axes.set_ylabel(metric)
    axes.grid(alpha=0.25)


def _draw_band(axes: Axes, line: pd.DataFrame, color: str) -> None:
    """The metric's interval (ci_lower..ci_upper) as a light band behind its line; nothing for
    points without one."""
    if "ci_lower" not in line.columns:
        return
    banded = line.dropna(subset=["ci_lower", "ci_upper"])
    if banded.empty:
        return
    axes.fill_between(
        banded["window_end"].to_numpy(),
        banded["ci_lower"].to_numpy(dtype=float),
        banded["ci_upper"].to_numpy(dtype=float),
        color=color,
        alpha=0.15,
        linewidth=0,
        label=INTERVAL_LABEL,
    )


def _fired_points(line: pd.DataFrame, alerts: pd.DataFrame) -> pd.DataFrame:
    """The points of one series (one slice, one model version) where an alert fired; points
    without a value have no place on the axes and are left out."""
    if line.empty or alerts.empty:
        return line.iloc[0:0]
    first = line.iloc[0]
    series_alerts = rows_of(
        alerts,
        {
            "model_version": first["model_version"],
            "slice_name": first["slice_name"],
            "slice_value": first["slice_value"],
        },
    )
    return line[line["window_end"].isin(set(series_alerts["window_end"])) & line["value"].notna()]


def _draw_thresholds(
    axes: Axes,
    rules: pd.DataFrame,
    panel_rows: pd.DataFrame,
    versions: list[str | None],
    colors: dict[str | None, str],
) -> None:
    slice_name = panel_rows["slice_name"].iloc[0]
    for rule in rules.to_dict("records"):
        rule_slice = rule["slice_name"]
        if rule_slice is not None and not pd.isna(rule_slice) and rule_slice != slice_name:
            continue
        version = _version_key(rule["model_version"])
        if version is None:
            color = ALL_VERSIONS_COLOR
        elif version in versions:
            color = colors[version]
        else:
            continue
        axes.axhline(
            float(rule["threshold"]),
            linestyle="--",
            linewidth=1.2,
            color=color,
            label=threshold_label(rule),
            gid=THRESHOLD_GID,
        )


def threshold_label(rule: dict[str, Any]) -> str:
    """The legend label of a threshold row, e.g. ``max 0.05 (ece ceiling)``."""
    return f"{rule['kind']} {float(rule['threshold']):g} ({rule['rule']})"


def _date_axis(axes: Axes, window_ends: pd.Series) -> None:
    """Ticks at the window ends (or at most ``MAX_DATE_TICKS`` dates when there are more), as
    ``YYYY-MM-DD``, slanted so that they do not overlap."""
    ends = sorted(set(window_ends))
    if len(ends) <= MAX_DATE_TICKS:
        axes.xaxis.set_major_locator(FixedLocator(mdates.date2num(ends)))
    else:
        axes.xaxis.set_major_locator(mdates.AutoDateLocator(maxticks=MAX_DATE_TICKS))
    axes.xaxis.set_major_formatter(mdates.DateFormatter(DATE_FORMAT))
    axes.tick_params(axis="x", labelrotation=30, labelsize="small")
    for label in axes.get_xticklabels():
        label.set_horizontalalignment("right")
    axes.set_xlabel("window end")


def _figure_legend(figure: Figure) -> None:
    """One legend under the panels: the model versions, then the rules, then the alerts, each
    entry once (a rule label drawn in two colours, for two versions, is listed twice)."""
    entries: dict[tuple[str, tuple[float, ...]], Line2D] = {}
    for axes in figure.axes:
        for line in axes.get_lines():
            entries.setdefault((str(line.get_label()), to_rgba(line.get_color())), line)
    lines = sorted(entries.values(), key=lambda line: LEGEND_ORDER.index(line.get_gid()))
    if lines:
        figure.legend(
            lines,
            [str(line.get_label()) for line in lines],
            loc="outside lower center",
            ncols=min(len(lines), LEGEND_COLUMNS),
            frameon=False,
            fontsize="small",
        )
