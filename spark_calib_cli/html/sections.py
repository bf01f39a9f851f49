"""The sections of the page, each a function of the page data that returns HTML."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from spark_calib_cli.console.summary import (
    NO_MODEL_VERSION,
    POSITIVE_CLASS_COLUMNS,
    SUMMARY_COLUMNS,
    direction,
    positive_class_direction,
)
from spark_calib_cli.console.worst_slices import REGRESSION_OVERVIEW_METRICS
from spark_calib_cli.html.anchors import slice_anchor, version_anchor
from spark_calib_cli.html.figures import figure_html
from spark_calib_cli.html.markup import element, is_missing, show_number, text
from spark_calib_cli.html.model import Alert, PageData, RunInfo, VersionReport
from spark_calib_cli.html.tables import Column, sortable_table
from spark_calib_cli.report.labels import slice_label

REGRESSION_TASK = "regression"
RUN_ID, ALERTS_ID, TRENDS_ID = "run", "alerts", "trends"
# The overall metrics' columns after metric and value, in this order when the table has them.
OVERALL_EXTRA_COLUMNS = (
    ("n", "n"),
    ("se", "se"),
    ("ci_lower", "CI lower"),
    ("ci_upper", "CI upper"),
    ("error_bound", "error bound"),
    ("n_eff", "n eff"),
)
DRIFT_COLUMNS = (
    ("value", "value"),
    ("n", "n"),
    ("previous_value", "previous"),
    ("previous_delta", "Δ previous"),
    ("previous_z", "z previous"),
    ("baseline_value", "baseline"),
    ("baseline_delta", "Δ baseline"),
    ("baseline_z", "z baseline"),
)
SEARCH_COLUMNS = (
    ("n", "n"),
    ("mean_prediction", "predicted"),
    ("mean_label", "observed"),
    ("ecce_sigma", "ECCE (σ)"),
    ("p_adjusted", "adjusted p"),
)
REGRESSION_SLICE_TITLES = {
    "rmse": "RMSE",
    "mae": "MAE",
    "r2": "R²",
    "gaussian_nll": "Gaussian NLL",
    "coverage_0_9": "coverage@0.9",
    "miscalibration_area": "miscal. area",
}
# The noise-aware ranking's columns, when the overview has them (ECE_NULL, ECE_EXCESS).
NOISE_COLUMNS = (("ece_null", "ECE of noise"), ("ece_excess", "ECE − noise"))
AlertKey = tuple[str | None, str, str]


def version_title(model_version: str | None) -> str:
    """The model version as a heading names it."""
    return model_version if model_version is not None else NO_MODEL_VERSION


def run_section(run: RunInfo) -> str:
    """The run's window, identity and rows, as a definition list."""
    invalid = sum(run.invalid_by_reason.values())
    reasons = ", ".join(f"{reason} {n:,}" for reason, n in sorted(run.invalid_by_reason.items()))
    window = (
        f"{run.window_start} … {run.window_end}"
        if run.window_start is not None
        else "(no calibration_windows row)"
    )
    items = [
        ("run date", str(run.run_date)),
        ("granularity", run.granularity),
        ("window", window),
        ("task", run.task),
        ("config hash", run.config_hash or "–"),
        ("run id", run.run_id or "–"),
        ("input rows", show_number(run.input_rows)),
        ("invalid rows", f"{invalid:,}" + (f" ({reasons})" if reasons else "")),
    ]
    if run.days_missing:
        items.append(("days missing", ", ".join(str(day) for day in run.days_missing)))
    body = "".join(element("dt", text(name)) + element("dd", text(value)) for name, value in items)
    return element(
        "section",
        element("h2", "Run") + element("dl", body, {"class": "run"}),
        {"id": RUN_ID},
    )


def alerts_section(page: PageData, linked: set[AlertKey]) -> str:
    """The fired alerts, failing first, each linking to its slice's row (``linked``: the
    slices that have one) or else to its model version's section."""
    failing = sum(alert.fail for alert in page.alerts)
    if page.n_alerts == 0:
        heading = "Alerts: none fired"
        body = element("p", "No alert rule fired for this window.")
    else:
        heading = f"Alerts: {page.n_alerts:,} fired" + (f", {failing:,} failing" if failing else "")
        body = element(
            "ol", "".join(_alert_item(alert, linked) for alert in page.alerts), {"class": "alerts"}
        )
        hidden = page.n_alerts - len(page.alerts)
        if hidden > 0:
            body += element(
                "p",
                text(f"{hidden:,} more not shown: see the calibration_alerts table."),
                {"class": "note"},
            )
    return element("section", element("h2", text(heading)) + body, {"id": ALERTS_ID})


def _alert_item(alert: Alert, linked: set[AlertKey]) -> str:
    key = (alert.model_version, alert.slice_name, alert.slice_value)
    label = (
        f"{version_title(alert.model_version)} / {slice_label(alert.slice_name, alert.slice_value)}"
    )
    if alert.class_name is not None:
        label += f" / class {alert.class_name}"
    target = (
        slice_anchor(*key)
        if key in linked and alert.class_name is None
        else version_anchor(alert.model_version)
    )
    level = "FAIL" if alert.fail else "warn"
    return element(
        "li",
        element("span", level, {"class": f"badge {level.lower()}"})
        + element("a", text(label), {"href": f"#{target}", "class": "alert-link"})
        + text(f" [{alert.rule}] {alert.message}"),
        {"class": "alert fail" if alert.fail else "alert warn"},
    )


def toc(page: PageData) -> str:
    """The table of contents: the run, the alerts, each model version, the trends."""
    entries = [(RUN_ID, "Run"), (ALERTS_ID, "Alerts")]
    entries += [
        (version_anchor(version.model_version), f"Model {version_title(version.model_version)}")
        for version in page.versions
    ]
    if page.trends:
        entries.append((TRENDS_ID, "Trends of the alerted metrics"))
    links = "".join(
        element("li", element("a", text(title), {"href": f"#{anchor}"}))
        for anchor, title in entries
    )
    return element(
        "nav",
        element("h2", "Contents") + element("ol", links),
        {"class": "toc", "aria-label": "Contents"},
    )


def version_section(page: PageData, version: VersionReport) -> str:
    """One model version: overall metrics, slices, figures, drift, recalibration."""
    title = version_title(version.model_version)
    parts = [
        element("h2", text(f"Model {title}")),
        element("h3", "Overall metrics"),
        _overall_table(version, title),
        element("h3", "Slices"),
        _slices_table(page, version, title),
        _slices_note(page, version),
    ]
    if version.figures:
        parts.append(element("h3", "Figures"))
        parts.extend(figure_html(image) for image in version.figures)
    parts += [element("h3", "Drift"), _drift_table(version, title)]
    if version.recalibration is not None:
        parts += [element("h3", "Recalibration"), _recalibration_table(version, title)]
        parts.extend(figure_html(image) for image in version.recalibration_figures)
    if version.slice_search is not None:
        parts += [element("h3", "Slice search"), _slice_search_table(version, title)]
        parts.extend(figure_html(image) for image in version.slice_search_figures)
    return element("section", "".join(parts), {"id": version_anchor(version.model_version)})


def _overall_table(version: VersionReport, title: str) -> str:
    frame = version.overall
    if frame.empty:
        return element("p", "No overall metric rows.", {"class": "note"})
    columns = [Column("metric", "metric", numeric=False), Column("value", "value")]
    columns += [Column(key, header) for key, header in OVERALL_EXTRA_COLUMNS if key in frame]
    return sortable_table(frame, columns, caption=f"Model {title}: overall slice, every metric")


def slice_columns(page: PageData, frame: pd.DataFrame | None = None) -> list[Column]:
    """The slice table's columns: the slice, its rank, n, the headline metrics of the task
    (each followed by its interval when ``frame`` has ``<metric>_ci_lower`` and
    ``<metric>_ci_upper``), the direction and the alerts."""
    columns = [
        Column("slice_label", "slice", numeric=False, render=_slice_cell),
        Column("rank", "rank"),
        Column("n", "n"),
    ]
    if page.run.task == REGRESSION_TASK:
        columns += [
            Column(column, REGRESSION_SLICE_TITLES.get(column, column))
            for column in REGRESSION_OVERVIEW_METRICS.values()
        ]
    else:
        pairs = POSITIVE_CLASS_COLUMNS if page.positive_class else SUMMARY_COLUMNS
        columns += [Column(column, title) for column, title in pairs]
        columns.append(Column("direction", "direction", numeric=False))
    columns += [
        Column(key, title)
        for key, title in NOISE_COLUMNS
        if frame is not None and key in frame and frame[key].notna().any()
    ]
    columns.append(Column("alerts", "alerts", numeric=False))
    return _with_intervals(columns, frame)


def _with_intervals(columns: list[Column], frame: pd.DataFrame | None) -> list[Column]:
    if frame is None:
        return columns
    shown: list[Column] = []
    for column in columns:
        shown.append(column)
        bounds = [f"{column.key}_ci_lower", f"{column.key}_ci_upper"]
        if all(bound in frame for bound in bounds):
            shown += [
                Column(bounds[0], f"{column.title} CI lower"),
                Column(bounds[1], f"{column.title} CI upper"),
            ]
    return shown


def _slice_cell(record: Mapping[str, Any]) -> str:
    return text(record["slice_label"])


def slice_rows(page: PageData, version: VersionReport) -> pd.DataFrame:
    """The version's slice rows with their label, direction and the alerts that fired on
    them (``FAIL rule`` / ``warn rule``)."""
    frame = version.slices.copy()
    alerts = _alerts_by_slice(page.alerts)
    frame["slice_label"] = [
        slice_label(name, value)
        for name, value in zip(frame["slice_name"], frame["slice_value"], strict=True)
    ]
    frame["alerts"] = [
        alerts.get((version.model_version, name, value), "")
        for name, value in zip(frame["slice_name"], frame["slice_value"], strict=True)
    ]
    if page.run.task != REGRESSION_TASK:
        frame["direction"] = [_direction(page, record) for record in frame.to_dict("records")]
    return frame


def _direction(page: PageData, record: Mapping[str, Any]) -> str:
    def value(name: str) -> float | None:
        found: Any = record.get(name)
        return None if is_missing(found) else float(found)

    if page.positive_class:
        return positive_class_direction(
            value("mean_confidence"), value("mean_outcome"), value("reliability_slope")
        )
    return direction(value("mean_confidence"), value("accuracy"))


def _alerts_by_slice(alerts: Sequence[Alert]) -> dict[AlertKey, str]:
    found: dict[AlertKey, list[str]] = {}
    for alert in alerts:
        key = (alert.model_version, alert.slice_name, alert.slice_value)
        found.setdefault(key, []).append(f"{'FAIL' if alert.fail else 'warn'} {alert.rule}")
    return {key: "; ".join(labels) for key, labels in found.items()}


def _slices_table(page: PageData, version: VersionReport, title: str) -> str:
    frame = slice_rows(page, version)
    ranked_by = (
        "miscalibration area" if page.run.task == REGRESSION_TASK else "ECE beyond its noise"
    )
    return sortable_table(
        frame,
        slice_columns(page, frame),
        caption=f"Model {title}: overall (rank 0), the worst slices by {ranked_by} "
        f"(rank 1…, n ≥ {page.min_slice_rows:,}) and the alerted slices (no rank)",
        table_id=f"slices-{version_anchor(version.model_version)}",
        row_id=lambda record: slice_anchor(
            version.model_version, record["slice_name"], record["slice_value"]
        ),
        row_class=lambda record: "alerted" if record["alerts"] else None,
    )


def _slices_note(page: PageData, version: VersionReport) -> str:
    notes = []
    if version.slices_not_shown:
        notes.append(
            f"{version.slices_not_shown:,} more slices with n ≥ {page.min_slice_rows:,} not shown"
        )
    if version.slices_below_min_rows:
        notes.append(f"{version.slices_below_min_rows:,} slices with fewer rows not ranked")
    if not notes:
        return ""
    return element(
        "p", text("; ".join(notes) + "; every slice is in calibration_metrics."), {"class": "note"}
    )


def _drift_table(version: VersionReport, title: str) -> str:
    frame = version.drift
    if frame.empty:
        return element(
            "p",
            "No significant change against the previous window or the baseline.",
            {"class": "note"},
        )
    frame = frame.copy()
    frame["slice_label"] = [
        slice_label(name, value)
        for name, value in zip(frame["slice_name"], frame["slice_value"], strict=True)
    ]
    columns = [
        Column("slice_label", "slice", numeric=False),
        Column("metric", "metric", numeric=False),
    ]
    if "class" in frame and frame["class"].notna().any():
        columns.append(Column("class", "class", numeric=False))
    columns += [Column(key, header) for key, header in DRIFT_COLUMNS if key in frame]
    note = (
        element(
            "p",
            text(
                f"{version.drift_not_shown:,} more significant changes not shown "
                "(see calibration_drift)."
            ),
            {"class": "note"},
        )
        if version.drift_not_shown
        else ""
    )
    return (
        sortable_table(
            frame,
            columns,
            caption=f"Model {title}: significant changes against the previous window or the "
            "baseline, largest first",
        )
        + note
    )


def _recalibration_table(version: VersionReport, title: str) -> str:
    frame = version.recalibration
    assert frame is not None
    if frame.empty:
        return element("p", "No recalibration rows for this model version.", {"class": "note"})
    columns = [
        Column(str(name), str(name), numeric=pd.api.types.is_numeric_dtype(frame[name]))
        for name in frame.columns
    ]
    return sortable_table(frame, columns, caption=f"Model {title}: calibration_recalibration")


def _slice_search_table(version: VersionReport, title: str) -> str:
    frame = version.slice_search
    assert frame is not None
    if frame.empty:
        return element("p", "No segment searched for this model version.", {"class": "note"})
    frame = frame.copy()
    frame["slice_label"] = [
        slice_label(name, value)
        for name, value in zip(frame["slice_name"], frame["slice_value"], strict=True)
    ]
    frame["significant"] = ["yes" if flag else "no" for flag in frame["significant"]]
    columns = [
        Column("rank", "rank"),
        Column("slice_label", "segment", numeric=False),
        *[Column(key, header) for key, header in SEARCH_COLUMNS],
        Column("significant", "significant", numeric=False),
    ]
    return sortable_table(
        frame,
        columns,
        caption=f"Model {title}: the crossed segments where calibration breaks most "
        "(calibration_slice_search, worst first)",
    )


def trends_section(page: PageData) -> str:
    """The trend figures of the watched metrics (every model version in each)."""
    if not page.trends:
        return ""
    return element(
        "section",
        element("h2", "Trends of the alerted metrics")
        + element(
            "p",
            text(
                f"The last {page.trend_windows} {page.run.granularity} windows; dashed lines are "
                "the rules' thresholds, red crosses the windows where an alert fired."
            ),
            {"class": "note"},
        )
        + "".join(figure_html(image) for image in page.trends),
        {"id": TRENDS_ID},
    )
