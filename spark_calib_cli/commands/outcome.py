"""What an evaluate run reports: its outcome, its console summary rows and recalibration lines.

Shared by the daily run (``run_evaluate``) and the backfill (``run_backfill``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame

from spark_calib.config import Config
from spark_calib.windows import TimeWindow
from spark_calib_cli.commands.common import REGRESSION_TASK
from spark_calib_cli.commands.monitoring import MonitorOutcome
from spark_calib_cli.console.recalibration_text import (
    RecalibrationLine,
    collect_recalibration_lines,
)
from spark_calib_cli.console.regression_summary import collect_regression_summary
from spark_calib_cli.console.summary import SummaryRow, collect_summary
from spark_calib_cli.io.tables import METRICS_TABLE, RECALIBRATION_TABLE, RELIABILITY_TABLE


@dataclass(frozen=True)
class EvaluateOutcome:
    """What one run did: its identity, the rows it saw, where it wrote, and the summary rows
    (regression rows when ``task`` is ``regression``)."""

    run_id: str
    config_hash: str
    run_date: dt.date
    n_rows: int
    invalid_counts: Mapping[str, int]
    strategy: str
    tables: Mapping[str, str]
    summary: tuple[SummaryRow, ...]
    monitoring: MonitorOutcome
    window: TimeWindow
    task: str = "binary"
    recalibration: tuple[RecalibrationLine, ...] = ()
    # With slice_search: the console lines of the search (``search.search_lines``).
    search: str = ""


def summary_rows(
    config: Config,
    written: Mapping[str, DataFrame],
    top_slices: int,
    min_slice_rows: int,
) -> Sequence[SummaryRow]:
    """The console summary rows, from the local frames of the metrics (and, for
    classification, the reliability bins) just written."""
    metrics = written[METRICS_TABLE]
    if config.task == REGRESSION_TASK:
        return collect_regression_summary(metrics, top=top_slices, min_rows=min_slice_rows)
    return collect_summary(
        metrics,
        written[RELIABILITY_TABLE],
        top=top_slices,
        min_rows=min_slice_rows,
        positive_class="positive_class" in config.features(),
    )


def recalibration_lines(written: Mapping[str, DataFrame]) -> tuple[RecalibrationLine, ...]:
    """The console lines of the recalibration table just written (none without one)."""
    if RECALIBRATION_TABLE not in written:
        return ()
    return tuple(collect_recalibration_lines(written[RECALIBRATION_TABLE]))
