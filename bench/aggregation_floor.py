"""``python -m bench.aggregation_floor``: what Spark's own aggregation of the statistics' keys
costs on the benchmark's binary log, next to its scan floor.

Each variant is a bare ``groupBy(keys).agg(sums)`` over the log, written to Spark's ``noop``
sink: no validation, no terms beyond the sums, no slice sets. What ``evaluate`` keys on is one
of them, so the fastest any evaluation with those keys can be is that variant's time:

- ``scan_floor``: the five columns read and summed once (as ``bench.spark_variants.scan_floor``);
- ``slices_bins_3`` / ``slices_bins_20``: model version × country × device × calibration bin ×
  predicted class, 3 or 20 sums;
- ``slices_bins_12``: model version × country × device × calibration bin, 12 sums: the grain and
  sums of the ``typical`` case (the default metrics group by no predicted class and no cell;
  n, Σw and ten Σw·term, the Σw²·x copies not summed);
- ``version_bins_12``: model version × calibration bin, 12 sums (``slices_1``: overall only);
- ``slices_bins_buckets_20``: ``slices_bins_20`` with the jackknife's bucket as one more key
  (``pmod(xxhash64(every column of the row), 20)``, ``uncertainty.method: jackknife``'s default);
- ``slices_bins_buckets_12``: ``slices_bins_12`` with that bucket (``typical`` with the jackknife);
- ``version_cells_3``: model version × fine cell, 3 sums (the cells of ``overall`` only);
- ``slices_cells_3`` / ``slices_cells_20``: model version × country × device × bin × predicted
  class × fine cell, 3 or 20 sums;
- ``slices_cells_16``: the same grain with 16 sums (``metrics_all`` and ``ctr``: every one-pass
  binary metric adds the predicted class and the fine cell to the keys and Σy, Σw·y, Σw·y·nll
  and Σw·logit to the sums);
- ``hashed_slices_cells_20``: the same grain keyed by one xxhash64 of the three strings, with the
  strings brought back by ``any_value`` (a variable-width buffer: Spark falls back to a
  sort-based aggregation).

The slice keys are country and device: the benchmark's four slice sets ([], [country], [device],
[country, device]) come from one covering group, country × device (``finest_grain``), which
``evaluate`` aggregates once before summing each set from that small table (``slices_1`` has
no slice column). ``bench.run`` times the variant at each case's grain in the case's rounds
(``TYPICAL_FLOOR`` and the others below).

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
from bench.session import build_session
from bench.spark_variants import column_sum
from spark_calib.rows.binning import bin_index
from spark_calib.rows.cells import cell_index

SCAN_FLOOR = "scan_floor"
SLICES = ("model_version", "country", "device")
N_BINS = 15
THRESHOLD = 0.5
JACKKNIFE_BUCKETS = 20
BIN, PREDICTED, CELL, BUCKET = "_bin", "_predicted", "_cell", "_bucket"
HASHED = "hashed_slices_cells_20"
# Name → (keys, number of sums) of every plain groupBy variant, in the order they are timed.
GRAINS: dict[str, tuple[tuple[str, ...], int]] = {
    "slices_bins_3": ((*SLICES, BIN, PREDICTED), 3),
    "slices_bins_12": ((*SLICES, BIN), 12),
    "slices_bins_20": ((*SLICES, BIN, PREDICTED), 20),
    "version_bins_12": (("model_version", BIN), 12),
    "slices_bins_buckets_12": ((*SLICES, BIN, BUCKET), 12),
    "slices_bins_buckets_20": ((*SLICES, BIN, PREDICTED, BUCKET), 20),
    "version_cells_3": (("model_version", CELL), 3),
    "slices_cells_3": ((*SLICES, BIN, PREDICTED, CELL), 3),
    "slices_cells_16": ((*SLICES, BIN, PREDICTED, CELL), 16),
    "slices_cells_20": ((*SLICES, BIN, PREDICTED, CELL), 20),
}
NAMES = (SCAN_FLOOR, *GRAINS, HASHED)
# The variant at the grain (keys and number of sums) of each bench.run case's statistics:
# typical and slices_1 (the default metrics: the calibration bins), typical with the jackknife
# (the bucket too) and metrics_all and ctr (the predicted class and the fine cells).
TYPICAL_FLOOR = "slices_bins_12"
OVERALL_FLOOR = "version_bins_12"
JACKKNIFE_FLOOR = "slices_bins_buckets_12"
CELLS_FLOOR = "slices_cells_16"
_KEY_NAMES = {
    "model_version": "model version",
    "country": "country",
    "device": "device",
    BIN: "calibration bin",
    PREDICTED: "predicted class",
    CELL: "fine cell",
    BUCKET: "jackknife bucket",
}


def grain(name: str) -> str:
    """The keys and sums of a ``GRAINS`` variant in words, e.g. "model version × calibration
    bin; 12 sums"."""
    keys, count = GRAINS[name]
    return " × ".join(_KEY_NAMES[key] for key in keys) + f"; {count} sums"


def sums(frame: DataFrame, count: int) -> list[Column]:
    """n and ``count`` − 1 sums of per-row terms of the score s and the label y."""
    s, y = F.col("_s"), F.col("_y")
    terms = [s, y, s * y, s * s, F.log1p(s), F.log1p(-s), (s - y) * (s - y), s * s * y]
    terms += [s + float(k) for k in range(count)]
    return [F.count(F.lit(1)).alias("n")] + [
        F.sum(term).alias(f"_sum{k}") for k, term in enumerate(terms[: count - 1])
    ]


def keyed(log: DataFrame, *extra: Column | str) -> DataFrame:
    """The log's slice columns with s, y and the keys ``evaluate`` derives from s (a key that
    a query does not group by is pruned from its plan), and the ``extra`` columns first."""
    s = F.col("score")
    return log.select(
        *extra,
        *SLICES,
        s.alias("_s"),
        F.col("label").cast("double").alias("_y"),
        bin_index(s, N_BINS).alias(BIN),
        (s >= THRESHOLD).cast("int").alias(PREDICTED),
        cell_index(s).alias(CELL),
        F.pmod(F.xxhash64(*log.columns), F.lit(JACKKNIFE_BUCKETS)).alias(BUCKET),
    )


def query(log: DataFrame, name: str) -> DataFrame:
    """The aggregation that variant ``name`` (one of ``NAMES``) times over ``log``."""
    if name == SCAN_FLOOR:
        return log.agg(*[column_sum(log, column) for column in (*SLICES, "score", "label")])
    rows = keyed(log)
    if name == HASHED:
        hashed = F.xxhash64(*SLICES).alias("_key")
        return rows.groupBy(hashed, BIN, PREDICTED, CELL).agg(
            *sums(rows, 20), *[F.any_value(column).alias(column) for column in SLICES]
        )
    keys, count = GRAINS[name]
    return rows.groupBy(*keys).agg(*sums(rows, count))


def variants(log: DataFrame) -> dict[str, DataFrame]:
    """Name → the aggregation it times (see the module docstring)."""
    return {name: query(log, name) for name in NAMES}


def write_noop(frame: DataFrame) -> None:
    """Run ``frame`` to the end and discard its rows (Spark's ``noop`` sink)."""
    frame.write.format("noop").mode("overwrite").save()


def time_all(
    queries: dict[str, DataFrame], repeats: int, clock: Callable[[], float] = time.perf_counter
) -> dict[str, list[float]]:
    """Seconds of each query written to the ``noop`` sink: one warm-up round, then ``repeats``
    rounds, the queries alternating within each round."""
    times: dict[str, list[float]] = {name: [] for name in queries}
    for round_index in range(repeats + 1):
        for name, frame in queries.items():
            start = clock()
            write_noop(frame)
            if round_index > 0:
                times[name].append(clock() - start)
    return times


def report(times: dict[str, list[float]]) -> list[str]:
    """One line per variant: median, runs and the ratio of the medians to ``scan_floor``."""
    floor = statistics.median(times[SCAN_FLOOR])
    lines = []
    for name, runs in times.items():
        median = statistics.median(runs)
        listed = ", ".join(f"{run:.2f}" for run in runs)
        lines.append(f"{name}: median {median:.2f} s ({listed}); {median / floor:.1f}× scan floor")
    return lines


def main() -> None:
    # bench.run imports this module (its cases time the floors): import its defaults late.
    from bench.run import DEFAULT_CACHE, DEFAULT_ROWS

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
        name: query(log, name)
        for name in NAMES
        if not chosen or name in chosen or name == SCAN_FLOOR
    }
    for line in report(time_all(queries, args.repeats)):
        print(line, flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
