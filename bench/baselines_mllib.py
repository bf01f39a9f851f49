"""MLlib baseline: ``pyspark.ml.evaluation`` on the same Parquet log, one slice value at a time.

MLlib's evaluators compute one metric of one DataFrame: no calibration error, no reliability
bins, no slicing. A user who wants the typical config's slices therefore filters the log to one
model version × slice value and runs the evaluators on that subset, once per key (a "pass").
One pass here is three evaluator calls: ``MulticlassClassificationEvaluator`` logLoss and
accuracy (on a ``probability`` vector [1 − s, s] and ``prediction`` = [s ≥ 0.5]) and
``BinaryClassificationEvaluator`` areaUnderROC (``rawPrediction`` = the same vector).

Measured: the passes of the overall population and of every value of ONE slice set
(``device``), per model version. Reported: the time of all passes of the typical slice list,
extrapolated as n_overall × (mean overall pass) + n_other × (mean device pass), where n_* are
the numbers of model version × slice value keys, counted by one groupBy outside the timed
region. A smaller slice (one country × device) still reads the whole log, so a device pass is
a fair per-pass cost for the other slice sets.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.ml.evaluation import BinaryClassificationEvaluator, MulticlassClassificationEvaluator
from pyspark.ml.functions import array_to_vector
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.configs import MLLIB_SLICE, MODEL_VERSION, slice_columns

THRESHOLD = 0.5
LABEL = "label"
PREDICTION = "prediction"
PROBABILITY = "probability"
RAW_PREDICTION = "rawPrediction"
OVERALL = "overall"
DECIMALS = 4


@dataclass(frozen=True)
class Subset:
    """One pass: a model version and a value of the MLlib slice (None: the overall population)."""

    model_version: str
    value: str | None

    @property
    def kind(self) -> str:
        return OVERALL if self.value is None else MLLIB_SLICE


def evaluators() -> dict[str, Any]:
    """The three evaluator calls of one pass, by metric name."""
    multiclass = {
        "logLoss": MulticlassClassificationEvaluator(
            # Supported since Spark 3.0, but missing from the metricName Literal of the stubs.
            metricName="logLoss",  # type: ignore[arg-type]
            labelCol=LABEL,
            predictionCol=PREDICTION,
            probabilityCol=PROBABILITY,
        ),
        "accuracy": MulticlassClassificationEvaluator(
            metricName="accuracy", labelCol=LABEL, predictionCol=PREDICTION
        ),
    }
    binary = BinaryClassificationEvaluator(
        metricName="areaUnderROC", labelCol=LABEL, rawPredictionCol=RAW_PREDICTION
    )
    return {**multiclass, "areaUnderROC": binary}


def mllib_input(spark: SparkSession, path: Path) -> DataFrame:
    """The log in MLlib's shape: double label and prediction, the [1 − s, s] vector."""
    df = spark.read.parquet(str(path))
    score = F.col("score")
    vector = array_to_vector(F.array(1.0 - score, score))
    return df.select(
        MODEL_VERSION,
        MLLIB_SLICE,
        F.col(LABEL).cast("double").alias(LABEL),
        (score >= THRESHOLD).cast("double").alias(PREDICTION),
        vector.alias(PROBABILITY),
        vector.alias(RAW_PREDICTION),
    )


def key_cells(spark: SparkSession, path: Path, slices: Sequence[Sequence[str]]) -> pd.DataFrame:
    """The distinct model version × slice column combinations of the log (one small groupBy)."""
    columns = [MODEL_VERSION, *slice_columns([*slices, [MLLIB_SLICE]])]
    return spark.read.parquet(str(path)).groupBy(*columns).count().toPandas()


def key_counts(cells: pd.DataFrame, slices: Sequence[Sequence[str]]) -> dict[str, int]:
    """Model version × slice value keys per slice set of ``slices``."""
    return {
        ",".join(slice_set) or OVERALL: len(cells.drop_duplicates([MODEL_VERSION, *slice_set]))
        for slice_set in slices
    }


class MllibRunner:
    """Runs and times the passes; ``run`` returns the extrapolated seconds of the full list."""

    def __init__(
        self,
        spark: SparkSession,
        path: Path,
        slices: Sequence[Sequence[str]],
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.spark = spark
        self.path = path
        self.progress = progress
        cells = key_cells(spark, path, slices)
        self.keys = key_counts(cells, slices)
        pairs = cells[[MODEL_VERSION, MLLIB_SLICE]].drop_duplicates()
        pairs = pairs.sort_values([MODEL_VERSION, MLLIB_SLICE])
        self.subsets = [Subset(str(v), None) for v in sorted(pairs[MODEL_VERSION].unique())]
        self.subsets += [
            Subset(str(version), str(value))
            for version, value in pairs.itertuples(index=False, name=None)
        ]
        self.pass_times: dict[str, list[float]] = {OVERALL: [], MLLIB_SLICE: []}
        self.overall_values: dict[str, dict[str, float]] = {}

    @property
    def n_overall(self) -> int:
        return self.keys[OVERALL]

    @property
    def n_other(self) -> int:
        return sum(self.keys.values()) - self.n_overall

    def one_pass(self, subset: Subset) -> float:
        """The three evaluator calls on one subset; returns its wall time."""
        df = mllib_input(self.spark, self.path)
        condition = F.col(MODEL_VERSION) == subset.model_version
        if subset.value is not None:
            condition &= F.col(MLLIB_SLICE) == subset.value
        part = df.where(condition)
        start = time.perf_counter()
        values = {name: ev.evaluate(part) for name, ev in evaluators().items()}
        seconds = time.perf_counter() - start
        if subset.value is None:
            self.overall_values[subset.model_version] = values
        return seconds

    def warmup(self) -> float:
        """One pass (the first version's overall population) instead of a full run, which
        would take minutes; returns the estimated wall time of a full measured run."""
        return self.one_pass(self.subsets[0]) * len(self.subsets)

    def run(self) -> float:
        """Every measured pass; returns the extrapolated time of the typical slice list."""
        times: dict[str, list[float]] = {OVERALL: [], MLLIB_SLICE: []}
        for index, subset in enumerate(self.subsets, start=1):
            if self.progress is not None:
                where = "overall" if subset.value is None else f"{MLLIB_SLICE}={subset.value}"
                self.progress(
                    f"  mllib pass {index}/{len(self.subsets)}: {subset.model_version}, {where}"
                )
            times[subset.kind].append(self.one_pass(subset))
        for kind, values in times.items():
            self.pass_times[kind].extend(values)
        return self.extrapolate(times)

    def extrapolate(self, times: dict[str, list[float]]) -> float:
        return self.n_overall * statistics.mean(times[OVERALL]) + self.n_other * statistics.mean(
            times[MLLIB_SLICE]
        )

    def details(self) -> dict[str, Any]:
        """How the reported time was extrapolated from the measured passes."""
        return {
            "extrapolated": True,
            "evaluator_calls_per_pass": list(evaluators()),
            "measured_passes_per_run": len(self.subsets),
            "measured_slice_set": MLLIB_SLICE,
            "keys_per_slice_set": dict(self.keys),
            "passes_full_slice_list": sum(self.keys.values()),
            "mean_pass_s": {
                kind: round(statistics.mean(values), DECIMALS)
                for kind, values in self.pass_times.items()
                if values
            },
            "method": (
                f"reported = n_overall × mean overall pass + n_other × mean {MLLIB_SLICE} pass, "
                f"with n_overall = {self.n_overall} and n_other = {self.n_other} model version × "
                "slice value keys of the typical slice list (counted outside the timed region); "
                "each pass filters the log to one key and runs the three evaluators"
            ),
            "overall_values": self.overall_values,
        }
