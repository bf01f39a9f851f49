"""What one page shows, as plain data: the job layer fills it from the tables, the page
renders it. Frames are small (the job reads only the rows shown, and counts the rest)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class RunInfo:
    """The run: its window, identity and input rows (``None`` when the table lacks it)."""

    run_date: dt.date
    granularity: str
    window_start: dt.date | None
    window_end: dt.date | None
    run_id: str | None
    config_hash: str | None
    input_rows: int | None
    invalid_by_reason: Mapping[str, int]
    task: str
    days_missing: tuple[dt.date, ...] = ()


@dataclass(frozen=True)
class Alert:
    """One fired alert of the ``calibration_alerts`` table."""

    rule: str
    fail: bool
    metric: str
    model_version: str | None
    slice_name: str
    slice_value: str
    class_name: str | None
    message: str


@dataclass(frozen=True)
class FigureImage:
    """A figure as a ``data:`` URI, with its caption and the alt text that says what it
    shows."""

    caption: str
    alt: str
    data_uri: str


@dataclass(frozen=True)
class VersionReport:
    """One model version's section.

    ``overall``: the overall slice's metrics, one row per metric (``metric``, ``value``,
    ``n``, and ``error_bound``, ``se``, ``ci_lower``, ``ci_upper`` when the table has them).
    ``slices``: the overall slice (rank 0), the worst slices (rank 1…) and the alerted slices
    not among them (rank null), with the overview columns. ``drift``: the drift rows shown.
    ``recalibration``: the rows of ``calibration_recalibration``, when that table exists;
    ``recalibration_figures``: its reliability before and after the maps. ``slice_search``:
    the top rows of ``calibration_slice_search``, when that table exists;
    ``slice_search_figures``: their reliability against the version's overall one.
    """

    model_version: str | None
    overall: pd.DataFrame
    slices: pd.DataFrame
    slices_not_shown: int
    slices_below_min_rows: int
    figures: tuple[FigureImage, ...]
    drift: pd.DataFrame
    drift_not_shown: int
    recalibration: pd.DataFrame | None = None
    recalibration_figures: tuple[FigureImage, ...] = ()
    slice_search: pd.DataFrame | None = None
    slice_search_figures: tuple[FigureImage, ...] = ()


@dataclass(frozen=True)
class PageData:
    """Everything on the page. ``n_alerts`` counts every fired alert, ``alerts`` holds the
    ones shown (failing first). ``trends``: the trend figures of the watched metrics."""

    run: RunInfo
    alerts: tuple[Alert, ...]
    n_alerts: int
    versions: tuple[VersionReport, ...]
    trends: tuple[FigureImage, ...] = ()
    min_slice_rows: int = 0
    positive_class: bool = False
    trend_windows: int = 0
