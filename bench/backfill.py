"""``python -m bench.backfill``: what a 14-day backfill costs, against one window of the same
rows and against the 14 day-by-day runs, in one process.

The log is the demo's binary log (``spark-calib demo-data``: 1,000,000 rows over the 14 days
to 2024-06-30, written once under ``--cache``) and the config is ``conf/demo_binary.yaml``
(every table the demo writes, recalibration, drift and alerts), writing Parquet tables into a
fresh directory per run. Three variants, each the whole job with its writes:

- ``backfill``: ``run_backfill`` of the 14 run dates (one scan);
- ``one_window``: ``run_evaluate`` of 2024-06-30 with ``lookback_days: 14``: the same rows as
  one window, the cost the issue compares the backfill with. A 14-day run cannot sum a
  baseline of daily statistics, so it runs without the drift baseline and the alert rule on
  it: it does a little less monitoring than the backfill, which makes the ratio conservative;
- ``day_by_day``: ``run_evaluate`` of each of the 14 dates in order.

Two floors, timed in the same rounds: Spark's bare aggregation of the statistics' keys
(``bench.aggregation_floor``'s ``slices_cells_16`` grain plus the threshold bin, the label and
the recalibration's fit flag, by which the demo's binary statistics are split), written to the
``noop`` sink:

- ``floor_backfill``: with the day as one more key, the grain of the backfill's statistics;
- ``floor_window``: without it, the grain of ``one_window``'s.

No backfill can cost less than ``floor_backfill``, so ``floor_backfill / one_window`` and
``floor_backfill / day_by_day`` are the least the two ratios can be with these statistics.

One warm-up round of ``one_window`` and the floors, then ``--repeats`` rounds with the variants
alternating. Prints each variant's median and the ratios, and writes them as JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import reduce
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.aggregation_floor import BIN, CELL, PREDICTED, SLICES, keyed, sums, write_noop
from bench.session import build_session
from spark_calib.config import Config, load_config
from spark_calib.constants import DRIVER_MAX_ROWS_CONF
from spark_calib_cli.commands.backfill import run_backfill
from spark_calib_cli.commands.evaluate import run_evaluate
from spark_calib_cli.demo import logs as demo

REPOSITORY = Path(__file__).resolve().parents[1]
DEMO_CONFIG = REPOSITORY / "conf" / "demo_binary.yaml"
END_DATE = demo.DEFAULT_END_DATE
DATES = [END_DATE - dt.timedelta(days=demo.DEFAULT_DAYS - 1 - i) for i in range(demo.DEFAULT_DAYS)]
DEFAULT_CACHE = Path("bench/data")
FLOOR_SUMS = 16
LABEL, FIT, THRESHOLD_BIN = "_y", "_fit", "_threshold_bin"
# conf/demo_binary.yaml's thresholds: its statistics key each row by how many it reaches.
THRESHOLDS = (0.3, 0.5, 0.7)
FLOORS = ("floor_backfill", "floor_window")


def ensure_demo_log(spark: SparkSession, cache: Path) -> Path:
    """The demo's binary log under ``cache``, written on first use."""
    path = cache / "demo_binary"
    if not (path / "_SUCCESS").exists():
        demo.write_log(demo.binary_log(spark), str(path))
    return path


def config_for(log: Path, out: Path, lookback_days: int = 1) -> Config:
    """The demo's binary config on ``log``, writing Parquet tables under ``out``."""
    config = load_config(DEMO_CONFIG)
    assert config.input is not None and config.output is not None
    assert config.input.window is not None
    window = config.input.window.model_copy(update={"lookback_days": lookback_days})
    update: dict[str, object] = {
        "input": config.input.model_copy(update={"path": str(log), "window": window}),
        "output": config.output.model_copy(update={"database": None, "path": str(out)}),
    }
    if lookback_days > 1:
        # A window of several days cannot sum a baseline of daily statistics.
        update["drift"] = config.drift.model_copy(update={"baseline_dates": None})
        update["alerts"] = [rule for rule in config.alerts if rule.compare_to != "baseline"]
    return config.model_copy(update=update)


def floor_queries(log: DataFrame) -> dict[str, DataFrame]:
    """``FLOORS`` → Spark's bare aggregation of the demo config's statistics keys over the
    demo's binary ``log``, with the day as a key (``floor_backfill``) and without it
    (``floor_window``): model version × country × device × calibration bin × predicted class
    × fine cell × threshold bin × label × fit flag, ``FLOOR_SUMS`` sums."""
    score, fit = F.col("score"), (F.col("split") == F.lit("val")).alias(FIT)
    reached = [(score >= F.lit(t)).cast("int") for t in THRESHOLDS]
    threshold_bin = reduce(lambda a, b: a + b, reached).alias(THRESHOLD_BIN)
    rows = keyed(log, F.col("event_date"), fit, threshold_bin)
    keys = (*SLICES, BIN, PREDICTED, CELL, THRESHOLD_BIN, LABEL, FIT)
    return {
        "floor_backfill": rows.groupBy("event_date", *keys).agg(*sums(rows, FLOOR_SUMS)),
        "floor_window": rows.groupBy(*keys).agg(*sums(rows, FLOOR_SUMS)),
    }


def variants(spark: SparkSession, log: Path) -> dict[str, Callable[[Path], object]]:
    """Variant name → the job, given a fresh output directory (a floor ignores it)."""
    floors = floor_queries(spark.read.parquet(str(log)))
    return {
        "backfill": lambda out: run_backfill(spark, config_for(log, out), DATES),
        "one_window": lambda out: run_evaluate(
            spark, config_for(log, out, demo.DEFAULT_DAYS), END_DATE
        ),
        "day_by_day": lambda out: [run_evaluate(spark, config_for(log, out), d) for d in DATES],
        **{name: _noop_job(query) for name, query in floors.items()},
    }


def _noop_job(query: DataFrame) -> Callable[[Path], object]:
    """A job that runs ``query`` to the ``noop`` sink (its output directory unused)."""

    def job(_out: Path) -> None:
        write_noop(query)

    return job


def timed(job: Callable[[Path], object]) -> float:
    """Seconds of ``job`` writing into a fresh temporary directory (removed after)."""
    out = Path(tempfile.mkdtemp(prefix="bench_backfill_"))
    try:
        start = time.perf_counter()
        job(out)
        return time.perf_counter() - start
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--driver-max-rows",
        type=int,
        default=None,
        help="set spark.calib.driverMaxRows (the job's embedded session sets 300 per MiB of "
        "driver heap); default: the library's bound",
    )
    args = parser.parse_args()
    spark = build_session()
    if args.driver_max_rows is not None:
        spark.conf.set(DRIVER_MAX_ROWS_CONF, str(args.driver_max_rows))
    log = ensure_demo_log(spark, args.cache)
    jobs = variants(spark, log)
    for name in ("one_window", *FLOORS):
        timed(jobs[name])
    times: dict[str, list[float]] = {name: [] for name in jobs}
    for round_index in range(args.repeats):
        for name, job in jobs.items():
            times[name].append(timed(job))
            print(f"round {round_index + 1} {name}: {times[name][-1]:.1f} s", flush=True)
    medians = {name: statistics.median(values) for name, values in times.items()}
    ratios = {
        "backfill/one_window": medians["backfill"] / medians["one_window"],
        "backfill/day_by_day": medians["backfill"] / medians["day_by_day"],
        "floor_backfill/one_window": medians["floor_backfill"] / medians["one_window"],
        "floor_backfill/day_by_day": medians["floor_backfill"] / medians["day_by_day"],
        "floor_backfill/floor_window": medians["floor_backfill"] / medians["floor_window"],
    }
    for name, value in medians.items():
        print(
            f"{name:12s} median {value:7.2f} s  runs {', '.join(f'{t:.1f}' for t in times[name])}"
        )
    for name, value in ratios.items():
        print(f"{name:28s} {value:.3f}")
    if args.out is not None:
        args.out.write_text(
            json.dumps({"times": times, "medians": medians, "ratios": ratios}, indent=2) + "\n"
        )
    spark.stop()


if __name__ == "__main__":
    main()
