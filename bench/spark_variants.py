"""The two Spark variants of every case: the scan floor and the full spark_calib evaluation.

scan floor: read exactly the columns the evaluation reads and sum each once in one
aggregation, collected. No evaluation can be faster than reading its input once, so
spark_calib / scan floor is the overhead of everything spark_calib does beyond the read.

spark_calib: ``evaluate`` and every output DataFrame written as Parquet, then ``unpersist``:
the whole cost a user pays to get the tables, not only the lazy plan.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, BooleanType, NumericType

from bench.configs import Config, needed_columns
from spark_calib import EvaluationResult, evaluate

METRICS_OUTPUT = "metrics"
OPTIONAL_OUTPUTS = ("confusion", "thresholds", "roc", "regression_calibration")


def _column_sum(df: DataFrame, name: str) -> Column:
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
    df.agg(*[_column_sum(df, name).alias(name) for name in columns]).collect()


def outputs(result: EvaluationResult) -> dict[str, DataFrame]:
    """Every output DataFrame of a result: the four tables and the optional non-None ones."""
    frames = {
        METRICS_OUTPUT: result.metrics,
        "reliability": result.reliability,
        "stats": result.stats,
        "invalid": result.invalid,
    }
    for name in OPTIONAL_OUTPUTS:
        frame = getattr(result, name)
        if frame is not None:
            frames[name] = frame
    return frames


class SparkCalibRunner:
    """Times ``evaluate`` + writing all outputs; each run writes into a fresh temp directory.

    The outputs of the latest run are kept (``last_output``) so that the pandas baseline can be
    checked against them; earlier ones are removed by ``prepare``, outside the timed region.
    """

    def __init__(self, spark: SparkSession, path: Path, cfg: Config, work_dir: Path) -> None:
        self.spark = spark
        self.path = path
        self.cfg = cfg
        self.work_dir = work_dir
        self.last_output: Path | None = None
        self.strategy: str | None = None
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
        """evaluate, write every output as Parquet (mode overwrite), unpersist."""
        if self._next is None:
            self.prepare()
        assert self._next is not None
        out, self._next = self._next, None
        df = self.spark.read.parquet(str(self.path))
        result = evaluate(df, self.cfg)
        for name, frame in outputs(result).items():
            frame.write.mode("overwrite").parquet(str(out / name))
        result.unpersist()
        self.last_output = out
        self.strategy = result.strategy

    def scan_floor(self) -> None:
        """The scan floor of this runner's config."""
        scan_floor(self.spark, self.path, self.columns)

    def cleanup(self) -> None:
        """Remove every output directory of this runner."""
        for directory in (self.last_output, self._next):
            if directory is not None:
                shutil.rmtree(directory, ignore_errors=True)
        self.last_output = self._next = None
