"""``python -m bench.slice_search``: what the slice search costs against the scan floor and
Spark's own aggregation of its level-1 keys, in one process.

The log is the acceptance test's planted log (``tests/support/planted_log.py``: 12 candidate
columns with 2 to 50 values, two model versions, three planted segments), ``--rows`` rows
written once as Parquet under ``--cache``. Measured, in this order, ``--repeats`` times each:

- ``scan``: read every column and sum it (the floor of any pass over the rows);
- ``bare_level1`` and ``bare_level2``: Spark's groupBy of the search's level-1 and level-2
  keys (version, combination, values, fine cell) with its eight sums, over the 12 or 66
  copies of each row, without the semi-join or the kernel: the floor of the search's levels;
- ``segments_level1`` up to ``--max-level`` (``--segment-floor``): the same groupBy at the
  segment grain, without the cell, every segment of the level keyed by a 64-bit hash of its
  values (the search's codes are 64-bit too): the floor of merely counting each level's
  segments, below any score that needs the order of the scores;
- ``search``: ``search_slices`` with ``--max-level`` (default 3), timed per level (and the
  refinement pass) from its progress lines; the record says which planted segments rank in
  the planted version's top 5 and how many of the calibrated version's slices are
  significant.

``--no-bare`` skips the two bare aggregations (level 2's takes minutes), ``--no-search`` the
search. Prints the medians and each measurement's ratio to the scan, and writes them as JSON
to ``--out``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from bench.session import build_session
from spark_calib import search_slices
from spark_calib.rows.cells import cell_index
from tests.support.planted_log import FULL, planted_log, predicate_key

COLUMNS = FULL.columns

DEFAULT_CACHE = Path("bench/data")


def _scan(frame: DataFrame) -> None:
    frame.select(*[F.sum(F.hash(c)) for c in frame.columns]).collect()


def _bare_level1(frame: DataFrame) -> None:
    _bare(frame, [(c,) for c in COLUMNS])


def _bare_level2(frame: DataFrame) -> None:
    _bare(frame, list(itertools.combinations(COLUMNS, 2)))


def _bare(frame: DataFrame, combos: list[tuple[str, ...]]) -> None:
    """Spark's own groupBy of a level's keys (version, combination, values, fine cell) with
    the search's eight sums, one copy of each row per combination: no join, no kernel."""
    copies = F.explode(
        F.array(
            *[
                F.struct(
                    F.lit(i).alias("k"),
                    F.concat_ws(",", *[F.col(c).cast("string") for c in combo]).alias("v"),
                )
                for i, combo in enumerate(combos)
            ]
        )
    )
    rows = frame.select(
        "version", "s", "y", cell_index(F.col("s")).alias("cell"), copies.alias("e")
    )
    _summed(rows, "version", "e.k", "e.v", "cell")


def _summed(rows: DataFrame, *keys: str) -> None:
    """Group ``rows`` by ``keys`` with the search's eight sums of s and y into Spark's
    ``noop`` sink."""
    s, y = F.col("s"), F.col("y")
    rows.groupBy(*keys).agg(
        F.count(F.lit(1)),
        F.sum(s),
        F.sum(y),
        F.sum(s * y),
        F.sum(s * (1 - s)),
        F.sum(F.when(y == 1, (1 - s) / s)),
        F.sum(F.when(y == 0, s / (1 - s))),
        F.sum(F.lit(1.0)),
    ).write.format("noop").mode("overwrite").save()


def _segments(frame: DataFrame, level: int) -> None:
    """Spark's own groupBy of every segment of ``level`` (version, combination, 64-bit hash of
    the values) with the eight sums, one copy of each row per combination."""
    combos = list(itertools.combinations(COLUMNS, level))
    copies = F.explode(
        F.array(
            *[
                F.struct(F.lit(i).alias("k"), F.xxhash64(*combo).alias("v"))
                for i, combo in enumerate(combos)
            ]
        )
    )
    _summed(frame.select("version", "s", "y", copies.alias("e")), "version", "e.k", "e.v")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--max-level", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--bare", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--segment-floor", action="store_true")
    parser.add_argument("--search", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args()
    spark = build_session()
    path = args.cache / f"planted_{args.rows}"
    if not (path / "_SUCCESS").exists():
        planted_log(spark, args.rows, seed=1).write.mode("overwrite").parquet(str(path))
    frame = spark.read.parquet(str(path))
    config = {
        "task": "binary",
        "columns": {"score": "s", "label": "y", "model_version": "version"},
        "slice_search": {"columns": list(COLUMNS), "max_level": args.max_level},
    }
    times: dict[str, list[float]] = {
        "scan": [],
        "bare_level1": [],
        "bare_level2": [],
        "segments_level1": [],
        "segments_level2": [],
        "segments_level3": [],
        "search": [],
    }
    levels: list[list[float]] = []
    counts: list[dict[str, Any]] = []
    for _ in range(args.repeats):
        bare = (("scan", _scan), ("bare_level1", _bare_level1), ("bare_level2", _bare_level2))
        floors = [(f"segments_level{level}", level) for level in range(1, args.max_level + 1)]
        for name, run in bare if args.bare else bare[:1]:
            start = time.perf_counter()
            run(frame)
            times[name].append(time.perf_counter() - start)
        for name, level in floors if args.segment_floor else []:
            start = time.perf_counter()
            _segments(frame, level)
            times[name].append(time.perf_counter() - start)
        if not args.search:
            continue
        marks: list[float] = []

        def mark(_: str, marks: list[float] = marks) -> None:
            marks.append(time.perf_counter())

        start = time.perf_counter()
        result = search_slices(frame, config, progress=mark)
        end = time.perf_counter()
        times["search"].append(end - start)
        levels.append([b - a for a, b in zip(marks, [*marks[1:], end], strict=True)])
        counts = [vars(level) for level in result.levels]
    medians = {name: statistics.median(values) for name, values in times.items() if values}
    record: dict[str, Any] = {
        "rows": args.rows,
        "columns": len(COLUMNS),
        "max_level": args.max_level,
        "seconds": medians,
        **{
            f"{name}_over_scan": medians[name] / medians["scan"]
            for name in medians
            if name != "scan"
        },
        "repeats": args.repeats,
    }
    if args.search:
        ranked = result.slices.where("model_version = 'planted'").orderBy("rank").collect()
        top5 = [(row.slice_name, row.slice_value) for row in ranked[:5]]
        calibrated = result.slices.where("model_version = 'calibrated' AND significant").count()
        record.update(
            planted_in_top5=[predicate_key(p) in top5 for p, _ in FULL.planted],
            calibrated_significant_slices=calibrated,
            level_seconds=[statistics.median(v) for v in zip(*levels, strict=True)],
            levels=counts,
        )
    print(json.dumps(record, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    spark.stop()


if __name__ == "__main__":
    main()
