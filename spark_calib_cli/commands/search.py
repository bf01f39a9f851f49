"""``spark-calib search``: the slice search of one run date's input, written as three tables.

``calibration_slice_search`` holds each model version's ranked slices,
``calibration_multicalibration`` its summary (the multicalibration error) and
``calibration_slice_search_reliability`` the reported slices' and the version's reliability
bins (rank 0: the version overall), all partitioned by run_date with the run's run_id and
config_hash, as the evaluation tables are (``spark_calib.slice_search.search`` has their
columns). ``--figure DIR`` draws, per model
version, the reliability of its top slices against its overall one.
"""

from __future__ import annotations

import argparse
import datetime as dt
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_calib import SliceSearchResult, search_slices
from spark_calib.config import Config, config_hash
from spark_calib.errors import ConfigError
from spark_calib_cli.commands.cli import paths_text, progress_printer, start_session, validated
from spark_calib_cli.commands.common import check_job_config
from spark_calib_cli.exit_codes import ExitCode
from spark_calib_cli.io.input import describe_input, read_input
from spark_calib_cli.io.local_frames import in_memory
from spark_calib_cli.io.partitions import table_location, write_partition
from spark_calib_cli.io.tables import with_run_columns
from spark_calib_cli.report.labels import slice_label
from spark_calib_cli.report.slice_search_figure import draw_slice_search

SLICE_SEARCH_TABLE = "calibration_slice_search"
MULTICALIBRATION_TABLE = "calibration_multicalibration"
SLICE_SEARCH_RELIABILITY_TABLE = "calibration_slice_search_reliability"
# Console: at most this many significant slices per model version.
CONSOLE_SLICES = 10


@dataclass(frozen=True)
class SearchOutcome:
    """What a search run wrote: table → location, and the local frames of its two tables."""

    tables: dict[str, str]
    slices: DataFrame
    summary: DataFrame
    result: SliceSearchResult


def run_search(
    spark: SparkSession,
    config: Config,
    run_date: dt.date,
    *,
    frame: DataFrame | None = None,
    run_id: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> SearchOutcome:
    """Search the ``run_date`` input (or ``frame``) and replace the run date's partition of the
    three search tables. Raises ``ConfigError`` without a ``slice_search`` section."""
    say = progress or (lambda _: None)
    if config.slice_search is None:
        raise ConfigError("spark-calib search needs a slice_search section in the config")
    source, _ = check_job_config(config)
    if frame is None:
        say(f"reading {describe_input(source, run_date)}")
        frame = read_input(spark, source, run_date)
    search = config.slice_search
    say(f"searching {len(search.columns)} columns up to {search.max_level} at a time")
    result = search_slices(frame, config, progress=say)
    digest = config_hash(config)
    return write_search(spark, config, run_date, result, run_id or uuid.uuid4().hex, digest, say)


def write_search(
    spark: SparkSession,
    config: Config,
    run_date: dt.date,
    result: SliceSearchResult,
    run_id: str,
    digest: str,
    say: Callable[[str], None],
) -> SearchOutcome:
    """Replace the run date's partition of the three search tables with ``result``'s rows."""
    assert config.output is not None
    tables: dict[str, str] = {}
    frames: dict[str, DataFrame] = {}
    for table, rows in (
        (SLICE_SEARCH_TABLE, result.slices),
        (MULTICALIBRATION_TABLE, result.summary),
        (SLICE_SEARCH_RELIABILITY_TABLE, result.reliability),
    ):
        local = in_memory(spark, with_run_columns(rows, run_id, digest))
        say(f"writing {table_location(config.output, table)} (run_date={run_date})")
        tables[table] = write_partition(
            spark, local.frame, config.output, table, run_date, empty=local.empty
        )
        frames[table] = local.frame
    return SearchOutcome(tables, frames[SLICE_SEARCH_TABLE], frames[MULTICALIBRATION_TABLE], result)


def search_command(args: argparse.Namespace) -> int:
    """``spark-calib search``: one search of the run date's input; prints each model version's
    multicalibration error and its significant slices."""
    config, run_date = validated(args)
    check_job_config(config)
    if config.slice_search is None:
        raise ConfigError("spark-calib search needs a slice_search section in the config")
    progress = progress_printer()
    spark = start_session(args, progress)
    paths: list[Path] = []
    try:
        outcome = run_search(spark, config, run_date, progress=progress)
        text = search_text(outcome)
        if args.figure is not None:
            progress(f"drawing the top slices into {args.figure}")
            paths = draw_slice_search(
                outcome.result.slices, outcome.result.reliability, Path(args.figure)
            )
    finally:
        spark.stop()
    progress("done")
    print(text)
    if args.figure is not None:
        print(paths_text(paths, args.figure))
    return int(ExitCode.OK)


def search_text(outcome: SearchOutcome) -> str:
    """Per model version: its multicalibration error and significant slices, then where the
    tables went."""
    lines = [search_lines(outcome)]
    lines.extend(f"{table}: {location}" for table, location in outcome.tables.items())
    return "\n".join(lines)


def search_lines(outcome: SearchOutcome) -> str:
    """Per model version: its multicalibration error and its significant slices."""
    lines: list[str] = []
    slices = outcome.slices.where(F.col("significant")).orderBy("model_version", "rank").collect()
    for row in outcome.summary.orderBy("model_version").collect():
        version = row.model_version if row.model_version is not None else "(all rows)"
        error = (
            "n/a (no rows with weight)"
            if row.multicalibration_error is None
            else f"{row.multicalibration_error:.2f}σ (p {row.multicalibration_error_p:.2g})"
        )
        lines.append(
            f"model_version {version}: multicalibration error {error}"
            f" over {row.segments_tested} segments"
            f" ({row.segments_pruned} pruned); {row.significant_slices} significant"
        )
        mine = [s for s in slices if s.model_version == row.model_version][:CONSOLE_SLICES]
        for s in mine:
            lines.append(
                f"  {s.rank:>3}. {slice_label(s.slice_name, s.slice_value)}: n {s.n},"
                f" predicted {s.mean_prediction:.4f} vs observed {s.mean_label:.4f},"
                f" ECCE {s.ecce_sigma:.1f}σ (adjusted p {s.p_adjusted:.2g})"
            )
        if not mine:
            lines.append("  no significant slice")
    return "\n".join(lines)
