"""The two Spark variants of every case: the scan floor and the full spark_calib evaluation.

scan floor: read exactly the columns the evaluation reads and sum each once in one
aggregation, collected. No evaluation can be faster than reading its input once, so
spark_calib / scan floor is the overhead of everything spark_calib does beyond the read.

spark_calib: ``evaluate`` and every output DataFrame written as Parquet, then ``unpersist``:
the whole cost a user pays to get the tables, not only the lazy plan. Each finished run records
the wall time of its ``evaluate`` call and of its writes (``RunPhases``; two clock reads, no
Spark work).
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, BooleanType, NumericType

from bench.configs import Config, needed_columns
from bench.timing import TimedOut
from spark_calib import EvaluationResult, evaluate
from spark_calib.stats import schema as S

METRICS_OUTPUT = "metrics"
STATS_OUTPUT = "stats"
# Statistics rows of one key (model version × slice value × class) that the issue allows: at
# most this many, and never more than the key's input rows.
STATS_ROWS_PER_KEY_TARGET = 1_600
OPTIONAL_OUTPUTS = ("confusion", "thresholds", "roc", "regression_calibration")
# After the timeout, the run's job group is cancelled again this often, so that the jobs the run
# starts after the first cancellation are cancelled too.
CANCEL_INTERVAL_S = 1.0


def column_sum(df: DataFrame, name: str) -> Column:
    """One sum that forces every value of the column to be read and decoded."""
    data_type = df.schema[name].dataType
    col = F.col(name)
    if isinstance(data_type, BooleanType):
        return F.sum(col.cast("int"))
    if isinstance(data_type, NumericType):
        return F.sum(col)
    if isinstance(data_type, ArrayType):
        return F.sum(F.aggregate(col, F.lit(0.0), lambda total, x: total + x))
    # Strings and dates: the length of the string form.
    return F.sum(F.length(col.cast("string")))


def scan_floor(spark: SparkSession, path: Path, columns: list[str]) -> None:
    """Read ``columns`` of the Parquet log at ``path`` and sum each once (one collected job)."""
    df = spark.read.parquet(str(path)).select(*columns)
    df.agg(*[column_sum(df, name).alias(name) for name in columns]).collect()


def outputs(result: EvaluationResult) -> dict[str, DataFrame]:
    """Every output DataFrame of a result: the four tables and the optional non-None ones."""
    frames = {
        METRICS_OUTPUT: result.metrics,
        "reliability": result.reliability,
        STATS_OUTPUT: result.stats,
        "invalid": result.invalid,
    }
    for name in OPTIONAL_OUTPUTS:
        frame = getattr(result, name)
        if frame is not None:
            frames[name] = frame
    return frames


@dataclass(frozen=True)
class RunPhases:
    """Wall seconds of one finished run: the ``evaluate`` call (the aggregation into the
    statistics and, when they come to the driver, the kernels) and the writes of its outputs."""

    evaluate_s: float
    write_s: float


class SparkCalibRunner:
    """Times ``evaluate`` + writing all outputs; each run writes into a fresh temp directory.

    The outputs of the latest run are kept (``last_output``) so that the pandas baseline can be
    checked against them and its statistics finished again after the timing
    (``bench.phases``); earlier ones are removed by ``prepare``, outside the timed region.
    ``phases`` has one entry per finished run, the warm-up's included (the first).
    """

    def __init__(
        self,
        spark: SparkSession,
        path: Path,
        cfg: Config,
        work_dir: Path,
        timeout_s: float | None = None,
    ) -> None:
        self.spark = spark
        self.path = path
        self.cfg = cfg
        self.work_dir = work_dir
        self.timeout_s = timeout_s
        self.last_output: Path | None = None
        self.strategy: str | None = None
        self.phases: list[RunPhases] = []
        self._next: Path | None = None

    @property
    def columns(self) -> list[str]:
        return needed_columns(self.cfg)

    def prepare(self) -> None:
        """Remove the previous run's outputs and reserve a fresh directory (not timed)."""
        if self.last_output is not None:
            shutil.rmtree(self.last_output, ignore_errors=True)
            self.last_output = None
        self._next = Path(tempfile.mkdtemp(prefix="spark_calib-", dir=self.work_dir))

    def run(self) -> None:
        """evaluate, write every output as Parquet (mode overwrite), unpersist.

        With ``timeout_s``, the run's Spark jobs are cancelled once it has taken that long and
        ``TimedOut`` is raised (the cache is cleared; ``last_output`` stays None)."""
        if self._next is None:
            self.prepare()
        assert self._next is not None
        out, self._next = self._next, None
        with _deadline(self.spark, self.timeout_s) as expired:
            try:
                started = time.perf_counter()
                df = self.spark.read.parquet(str(self.path))
                result = evaluate(df, self.cfg)
                evaluated = time.perf_counter()
                for name, frame in outputs(result).items():
                    frame.write.mode("overwrite").parquet(str(out / name))
                written = time.perf_counter()
                result.unpersist()
            except Exception:
                if not expired.is_set():
                    raise
            if expired.is_set():
                self.spark.catalog.clearCache()
                shutil.rmtree(out, ignore_errors=True)
                assert self.timeout_s is not None
                raise TimedOut(self.timeout_s)
        self.last_output = out
        self.strategy = result.strategy
        self.phases.append(RunPhases(evaluated - started, written - evaluated))

    def scan_floor(self) -> None:
        """The scan floor of this runner's config."""
        scan_floor(self.spark, self.path, self.columns)

    def stats_rows_per_key(self) -> dict[str, Any] | None:
        """Statistics rows per model version × slice value with ``class`` null, from the
        latest run's written outputs (one small query, not timed): max and median over keys,
        the largest key with its input rows and its rows by kind, and how many keys have more
        statistics rows than input rows (the key's ``n`` in the metrics table)."""
        if self.last_output is None:
            return None
        return stats_rows_per_key(self.spark, self.last_output)

    def stats_rows_without_timing(self) -> dict[str, Any] | None:
        """Statistics rows per key when no timed run finished (not timed): evaluate the config
        and write only its stats table (the statistics do not wait for the metrics), with the
        input rows per key from the metrics table of the same slices and metrics ``count``
        alone. None when that too is cancelled at the timeout."""
        directory = Path(tempfile.mkdtemp(prefix="spark_calib-stats-", dir=self.work_dir))
        try:
            with _deadline(self.spark, self.timeout_s) as expired:
                try:
                    df = self.spark.read.parquet(str(self.path))
                    result = evaluate(df, self.cfg)
                    result.stats.write.parquet(str(directory / STATS_OUTPUT))
                    result.unpersist()
                    counting = evaluate(df, {**self.cfg, "metrics": ["count"]})
                    counting.metrics.write.parquet(str(directory / METRICS_OUTPUT))
                    counting.unpersist()
                except Exception:
                    if not expired.is_set():
                        raise
                if expired.is_set():
                    self.spark.catalog.clearCache()
                    return None
            return stats_rows_per_key(self.spark, directory)
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    def cleanup(self) -> None:
        """Remove every output directory of this runner."""
        for directory in (self.last_output, self._next):
            if directory is not None:
                shutil.rmtree(directory, ignore_errors=True)
        self.last_output = self._next = None


@contextmanager
def _deadline(spark: SparkSession, timeout_s: float | None) -> Iterator[threading.Event]:
    """Run the body in its own job group; from ``timeout_s`` on, cancel that group every
    ``CANCEL_INTERVAL_S`` until the body ends. Yields the event set at the deadline."""
    expired = threading.Event()
    if timeout_s is None:
        yield expired
        return
    context = spark.sparkContext
    group = f"bench-{uuid.uuid4().hex}"
    done = threading.Event()

    def cancel() -> None:
        if done.wait(timeout_s):
            return
        expired.set()
        while not done.is_set():
            context.cancelJobGroup(group)
            done.wait(CANCEL_INTERVAL_S)

    context.setJobGroup(group, "bench run", interruptOnCancel=True)
    watcher = threading.Thread(target=cancel, daemon=True)
    watcher.start()
    try:
        yield expired
    finally:
        done.set()
        watcher.join()
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        context.setLocalProperty("spark.job.interruptOnCancel", None)  # type: ignore[arg-type]


def stats_rows_per_key(spark: SparkSession, output: Path) -> dict[str, Any]:
    """See ``SparkCalibRunner.stats_rows_per_key``; ``output`` holds the written tables."""
    keys = list(S.SLICE_KEY_COLUMNS)
    stats = spark.read.parquet(str(output / STATS_OUTPUT)).filter(F.col(S.CLASS).isNull())
    kinds = (S.CELL, S.BIN, S.PREDICTED_CLASS, S.THRESHOLD_BIN, S.REASON)
    per_key = stats.groupBy(*keys).agg(
        F.count(F.lit(1)).alias("stats_rows"),
        *[F.count(F.col(kind)).alias(f"with_{kind}") for kind in kinds],
    )
    metrics = spark.read.parquet(str(output / METRICS_OUTPUT)).filter(F.col(S.CLASS).isNull())
    rows = metrics.groupBy(*keys).agg(F.max(S.N).alias("input_rows"))
    collected = per_key.join(rows, keys, "left").collect()
    counts = [row["stats_rows"] for row in collected]
    largest = max(collected, key=lambda row: (row["stats_rows"], -(row["input_rows"] or 0)))
    over = [
        row
        for row in collected
        if row["input_rows"] is not None and row["stats_rows"] > row["input_rows"]
    ]
    return {
        "keys": len(collected),
        "max": max(counts),
        "median": statistics.median(counts),
        "largest_key": {
            **{key: largest[key] for key in keys},
            "stats_rows": largest["stats_rows"],
            "input_rows": largest["input_rows"],
            **{f"with_{kind}": largest[f"with_{kind}"] for kind in kinds},
        },
        "keys_with_more_stats_rows_than_input_rows": len(over),
        "target_max": STATS_ROWS_PER_KEY_TARGET,
    }
