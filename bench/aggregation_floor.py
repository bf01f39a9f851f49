"""``python -m bench.aggregation_floor``: what Spark's own aggregation of the statistics' keys
costs on the benchmark's binary log, next to its scan floor.

Each variant is a bare ``groupBy(keys).agg(sums)`` over the log, written to Spark's ``noop``
sink: no validation, no terms beyond the sums, no slice sets. What ``evaluate`` keys on is one
of them, so the fastest any evaluation with those keys can be is that variant's time:

- ``scan_floor``: the five columns read and summed once (as ``bench.spark_variants.scan_floor``);
- ``slices_bins_3`` / ``slices_bins_20``: model version × country × device × calibration bin ×
  predicted class, 3 or 20 sums (the ``typical`` case's grain);
- ``slices_bins_buckets_20``: ``slices_bins_20`` with the jackknife's bucket as one more key
  (``pmod(xxhash64(every column of the row), 20)``, ``uncertainty.method: jackknife``'s default);
- ``version_cells_3``: model version × fine cell, 3 sums (the cells of ``overall`` only);
- ``slices_cells_3`` / ``slices_cells_20``: model version × country × device × bin × predicted
  class × fine cell, 3 or 20 sums (``metrics_all``: the cells of every slice key);
- ``hashed_slices_cells_20``: the same grain keyed by one xxhash64 of the three strings, with the
  strings brought back by ``any_value`` (a variable-width buffer: Spark falls back to a
  sort-based aggregation).

It prints one line per variant: the median of ``--repeats`` timed runs (after one warm-up round,
variants alternating) and its ratio to the scan floor.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from bench.generate import BINARY_LOG, ensure_log
from bench.run import DEFAULT_CACHE, DEFAULT_ROWS
from bench.session import build_session
from bench.spark_variants import column_sum
from spark_calib.rows.binning import bin_index
from spark_calib.rows.cells import cell_index

SLICES = ("model_version", "country", "device")
N_BINS = 15
THRESHOLD = 0.5
JACKKNIFE_BUCKETS = 20


def _sums(frame: DataFrame, count: int) -> list[Column]:
    """n and ``count`` − 1 sums of per-row terms of the score s and the label y."""
    s, y = F.col("_s"), F.col("_y")
    terms = [s, y, s * y, s * s, F.log1p(s), F.log1p(-s), (s - y) * (s - y), s * s * y]
    terms += [s + float(k) for k in range(count)]
    return [F.count(F.lit(1)).alias("n")] + [
        F.sum(term).alias(f"_sum{k}") for k, term in enumerate(terms[: count - 1])
    ]


def keyed(log: DataFrame) -> DataFrame:
    """The log's slice columns with s, y and the keys ``evaluate`` derives from s."""
    s = F.col("score")
    return log.select(
        *SLICES,
        s.alias("_s"),
        F.col("label").cast("double").alias("_y"),
        bin_index(s, N_BINS).alias("_bin"),
        (s >= THRESHOLD).cast("int").alias("_predicted"),
        cell_index(s).alias("_cell"),
        F.pmod(F.xxhash64(*log.columns), F.lit(JACKKNIFE_BUCKETS)).alias("_bucket"),
    )


def variants(log: DataFrame) -> dict[str, DataFrame]:
    """Name → the aggregation it times (see the module docstring)."""
    rows = keyed(log)
    slices_bins = [*SLICES, "_bin", "_predicted"]
    hashed = F.xxhash64(*SLICES).alias("_key")
    return {
        "scan_floor": log.agg(*[column_sum(log, name) for name in (*SLICES, "score", "label")]),
        "slices_bins_3": rows.groupBy(*slices_bins).agg(*_sums(rows, 3)),
        "slices_bins_20": rows.groupBy(*slices_bins).agg(*_sums(rows, 20)),
        "slices_bins_buckets_20": rows.groupBy(*slices_bins, "_bucket").agg(*_sums(rows, 20)),
        "version_cells_3": rows.groupBy("model_version", "_cell").agg(*_sums(rows, 3)),
        "slices_cells_3": rows.groupBy(*slices_bins, "_cell").agg(*_sums(rows, 3)),
        "slices_cells_20": rows.groupBy(*slices_bins, "_cell").agg(*_sums(rows, 20)),
        "hashed_slices_cells_20": rows.groupBy(hashed, "_bin", "_predicted", "_cell").agg(
            *_sums(rows, 20), *[F.any_value(name).alias(name) for name in SLICES]
        ),
    }


def time_all(
    queries: dict[str, DataFrame], repeats: int, clock: Callable[[], float] = time.perf_counter
) -> dict[str, list[float]]:
    """Seconds of each query written to the ``noop`` sink: one warm-up round, then ``repeats``
    rounds, the queries alternating within each round."""
    times: dict[str, list[float]] = {name: [] for name in queries}
    for round_index in range(repeats + 1):
        for name, query in queries.items():
            start = clock()
            query.write.format("noop").mode("overwrite").save()
            if round_index > 0:
                times[name].append(clock() - start)
    return times


def report(times: dict[str, list[float]]) -> list[str]:
    """One line per variant: median, runs and the ratio of the medians to ``scan_floor``."""
    floor = statistics.median(times["scan_floor"])
    lines = []
    for name, runs in times.items():
        median = statistics.median(runs)
        listed = ", ".join(f"{run:.2f}" for run in runs)
        lines.append(f"{name}: median {median:.2f} s ({listed}); {median / floor:.1f}× scan floor")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--variants", default="", help="comma-separated names to time (default: all)"
    )
    args = parser.parse_args()
    spark = build_session()
    log = spark.read.parquet(str(ensure_log(spark, args.cache, BINARY_LOG, args.rows)))
    chosen = {name for name in args.variants.split(",") if name}
    queries = {
        name: query
        for name, query in variants(log).items()
        if not chosen or name in chosen or name == "scan_floor"
    }
    for line in report(time_all(queries, args.repeats)):
        print(line, flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
