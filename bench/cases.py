"""The timed cases: which variants run on which log, and what each case records.

A case is one log and a few variants timed together (``bench.timing.time_variants``): the scan
floor of the columns the case's configs read, the bare aggregation at the grain of its statistics
(``bench.aggregation_floor``; binary logs), one or more spark_calib configs and, for the typical
binary case, the MLlib and pandas baselines. After the rounds, each spark_calib variant's time is
split into aggregation, finishing and writing (``bench.phases``). Every case returns a JSON-ready
dict.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from bench.aggregation_floor import grain, query, write_noop
from bench.baselines_mllib import MllibRunner
from bench.baselines_pandas import PandasResult, evaluate_pandas, max_abs_ece_difference
from bench.configs import Config, needed_columns
from bench.generate import ensure_log, log_path
from bench.phases import phases, time_finishing, timed_runs
from bench.spark_variants import METRICS_OUTPUT, STATS_OUTPUT, SparkCalibRunner
from bench.timing import DEFAULT_REPEAT_BUDGET_S, Progress, Variant, VariantTiming, time_variants

SCAN_FLOOR = "scan_floor"
AGGREGATION_FLOOR = "aggregation_floor"
SPARK_CALIB = "spark_calib"
MLLIB = "mllib"
PANDAS = "pandas"
DECIMALS = 4
ROWS_PER_MILLION = 1_000_000
# The pandas and spark_calib ECE are sums in a different order: they agree to about 1e-15.
ECE_TOLERANCE = 1e-9
ECE_DIFF_KEY = "pandas_vs_spark_calib_overall_ece_max_abs_diff"
ECE_TOLERANCE_KEY = "pandas_vs_spark_calib_ece_tolerance"
ECE_OK_KEY = "pandas_vs_spark_calib_ece_ok"
# A spark_calib variant whose warm-up run takes longer than this is timed by that run alone.
SINGLE_RUN_BUDGET_S = 300.0


@dataclass
class Context:
    """What every case shares: the session, the log cache, the temp dir and the progress."""

    spark: SparkSession
    cache: Path
    seed: int
    work_dir: Path
    progress: Progress
    repeats: int
    warmup: bool = True
    generated: list[str] = field(default_factory=list)
    # A spark_calib run still going after this many seconds is cancelled (a lower bound).
    timeout_s: float | None = None

    def log(self, task: str, rows: int) -> Path:
        """The cached log, generated first when it is missing (not timed)."""
        path = log_path(self.cache, task, rows, self.seed)
        if not (path / "_SUCCESS").exists():
            self.progress(f"generating {task} log of {rows:,} rows into {path}")
            self.generated.append(path.name)
        return ensure_log(self.spark, self.cache, task, rows, self.seed)


def ratio(numerator: float, denominator: float) -> float | None:
    """numerator / denominator, None when the denominator is 0."""
    if denominator <= 0 or not math.isfinite(numerator):
        return None
    return round(numerator / denominator, DECIMALS)


def per_million(seconds: float, rows: int) -> float:
    return round(seconds / (rows / ROWS_PER_MILLION), DECIMALS)


@dataclass(frozen=True)
class AggregationFloor:
    """A variant timing the bare aggregation ``query`` of ``bench.aggregation_floor`` (one of
    its ``GRAINS``), the floor of the spark_calib ``variants`` that aggregate at that grain."""

    name: str
    query: str
    variants: tuple[str, ...]


@dataclass
class Baselines:
    """Which baselines the typical case also times (binary logs only)."""

    mllib: bool = False
    pandas: bool = False


def run_case(
    ctx: Context,
    name: str,
    task: str,
    rows: int,
    configs: dict[str, Config],
    baselines: Baselines | None = None,
    relative: Sequence[tuple[str, str]] = (),
    log: str | None = None,
    stats_rows: bool = False,
    floors: Sequence[AggregationFloor] = (),
) -> dict[str, Any]:
    """Time the scan floor, the ``floors`` and every config of ``configs`` (variant name →
    config) on the ``log`` log (default: the ``task`` log) of ``rows`` rows, plus the
    requested baselines on the first config.

    Ratios: every variant / scan_floor, each floor's variants / that floor, the baselines /
    spark_calib, and ``relative`` pairs. After the timing (outside the timed region): each
    spark_calib variant's phases (``bench.phases``) and, with ``stats_rows``, the statistics
    rows per key of the first config's latest outputs (``stats_rows_per_key``).
    """
    baselines = baselines or Baselines()
    log = log or task
    path = ctx.log(log, rows)
    first = next(iter(configs.values()))
    columns = needed_columns(first)
    runners = {
        variant: SparkCalibRunner(ctx.spark, path, cfg, ctx.work_dir, ctx.timeout_s)
        for variant, cfg in configs.items()
    }
    first_runner = runners[next(iter(configs))]
    variants = [Variant(SCAN_FLOOR, _none(first_runner.scan_floor))]
    variants += [Variant(floor.name, _floor_run(ctx.spark, path, floor.query)) for floor in floors]
    relative = [*[(v, floor.name) for floor in floors for v in floor.variants], *relative]
    variants += [
        Variant(
            v,
            _none(r.run),
            prepare=r.prepare,
            repeat_budget_s=DEFAULT_REPEAT_BUDGET_S,
            single_run_budget_s=SINGLE_RUN_BUDGET_S,
        )
        for v, r in runners.items()
    ]
    mllib = pandas = None
    if baselines.mllib:
        ctx.progress(f"case {name}: counting slice keys for the MLlib extrapolation (not timed)")
        mllib = MllibRunner(ctx.spark, path, first["slices"], ctx.progress)
        variants.append(
            Variant(MLLIB, mllib.run, warmup=mllib.warmup, repeat_budget_s=DEFAULT_REPEAT_BUDGET_S)
        )
    if baselines.pandas:
        pandas = _PandasRunner(path, first["slices"])
        variants.append(Variant(PANDAS, _none(pandas.run)))
    timings = time_variants(name, variants, ctx.repeats, ctx.progress, ctx.warmup)
    case = _case_record(task, rows, path, configs, columns, timings, runners, relative)
    case["log_kind"] = log
    if floors:
        case["aggregation_floors"] = {
            floor.name: {
                "query": floor.query,
                "grain": grain(floor.query),
                "variants": list(floor.variants),
            }
            for floor in floors
        }
    for variant, runner in runners.items():
        _add_phases(ctx, name, variant, runner, timings[variant], case)
    if stats_rows:
        ctx.progress(f"case {name}: statistics rows per key (not timed)")
        try:
            case["stats_rows_per_key"] = _stats_rows(runners)
        except Exception as error:  # the timings above are kept; the page shows the error
            ctx.progress(f"case {name}: statistics rows per key failed: {error}")
            case["stats_rows_per_key"] = None
            case["notes"].append(f"Statistics rows per key: the count failed ({error}).")
    if mllib is not None:
        case["variants"][MLLIB].update(mllib.details())
    if pandas is not None and pandas.last is not None:
        case["checks"].update(_pandas_check(pandas.last, first_runner, case["notes"]))
    for runner in runners.values():
        runner.cleanup()
    return case


def _stats_rows(runners: dict[str, SparkCalibRunner]) -> dict[str, Any] | None:
    """Statistics rows per key of the first variant whose latest run finished (a cancelled run
    leaves no outputs), with that variant's name; when every run was cancelled, of an untimed
    run of the first variant that writes only the stats table."""
    for variant, runner in runners.items():
        counted = runner.stats_rows_per_key()
        if counted is not None:
            return {"variant": variant, **counted}
    variant, runner = next(iter(runners.items()))
    counted = runner.stats_rows_without_timing()
    if counted is None:
        return None
    return {"variant": variant, "from_untimed_run": True, **counted}


def _case_record(
    task: str,
    rows: int,
    path: Path,
    configs: dict[str, Config],
    columns: list[str],
    timings: dict[str, VariantTiming],
    runners: dict[str, SparkCalibRunner],
    relative: Sequence[tuple[str, str]],
) -> dict[str, Any]:
    """The case's JSON-ready dict: its log, configs and scanned columns, each variant's
    timing (with seconds per million rows and, for spark_calib, the strategy) and the ratios;
    ``checks`` and ``notes`` start empty."""
    case: dict[str, Any] = {
        "task": task,
        "rows": rows,
        "log": path.name,
        "configs": configs,
        "scan_columns": columns,
        "variants": {},
        "ratios": _ratios(timings, relative),
        "lower_bound_ratios": _lower_bound_ratios(timings, relative),
        "checks": {},
        "notes": [],
    }
    for variant, timing in timings.items():
        entry = timing.as_dict()
        entry["median_s_per_million_rows"] = per_million(timing.median_s, rows)
        if variant in runners:
            entry["strategy"] = runners[variant].strategy
        case["variants"][variant] = entry
    return case


def _floor_run(spark: SparkSession, path: Path, name: str) -> Callable[[], None]:
    """One run of the aggregation floor ``name``: read the log (as every spark_calib run does)
    and write the bare aggregation to the ``noop`` sink."""

    def run() -> None:
        write_noop(query(spark.read.parquet(str(path)), name))

    return run


def _add_phases(
    ctx: Context,
    case_name: str,
    variant: str,
    runner: SparkCalibRunner,
    timing: VariantTiming,
    case: dict[str, Any],
) -> None:
    """Add the variant's ``phases`` (``bench.phases``) to ``case``: from its timed runs and
    the kernels timed on its last run's statistics (outside the timed region); nothing when
    a run was cancelled, the error when the finishing fails (the timings are kept)."""
    runs = timed_runs(runner.phases, ctx.warmup and not timing.from_warmup)
    if timing.lower_bound or not runs or runner.last_output is None:
        return
    ctx.progress(f"case {case_name}: {variant} finishing alone (not timed with the runs)")
    try:
        finishing = time_finishing(
            ctx.spark, runner.cfg, runner.last_output / STATS_OUTPUT, ctx.repeats, ctx.warmup
        )
    except Exception as error:
        ctx.progress(f"case {case_name}: {variant} finishing failed: {error}")
        case["notes"].append(f"Phases of {variant}: timing the finishing failed ({error}).")
        return
    case["variants"][variant]["phases"] = phases(runs, finishing)


def _none(call: Callable[[], object]) -> Callable[[], None]:
    """Wrap a call so that the timing uses its wall time (the return value is ignored)."""

    def wrapped() -> None:
        call()

    return wrapped


class _PandasRunner:
    def __init__(self, path: Path, slices: Sequence[Sequence[str]]) -> None:
        self.path = path
        self.slices = slices
        self.last: PandasResult | None = None

    def run(self) -> None:
        self.last = evaluate_pandas(self.path, self.slices)


def _pairs(
    timings: dict[str, VariantTiming], relative: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    pairs = [(variant, SCAN_FLOOR) for variant in timings if variant != SCAN_FLOOR]
    pairs += [(baseline, SPARK_CALIB) for baseline in (MLLIB, PANDAS) if baseline in timings]
    return pairs + list(relative)


def _ratios(timings: dict[str, VariantTiming], relative: Sequence[tuple[str, str]]) -> dict:
    """a/b of the medians; None when b was cancelled (a lower bound below a ratio is no
    bound at all)."""
    medians = {variant: timing.median_s for variant, timing in timings.items()}
    return {
        f"{a}/{b}": None if timings[b].lower_bound else ratio(medians[a], medians[b])
        for a, b in _pairs(timings, relative)
    }


def _lower_bound_ratios(
    timings: dict[str, VariantTiming], relative: Sequence[tuple[str, str]]
) -> list[str]:
    """The ratios whose numerator was cancelled and denominator measured: lower bounds."""
    return [
        f"{a}/{b}"
        for a, b in _pairs(timings, relative)
        if timings[a].lower_bound and not timings[b].lower_bound
    ]


def _pandas_check(result: PandasResult, runner: SparkCalibRunner, notes: list[str]) -> dict:
    if runner.last_output is None:
        return {}
    difference = max_abs_ece_difference(result, runner.last_output / METRICS_OUTPUT)
    if not difference < ECE_TOLERANCE:
        notes.append(
            f"pandas and spark_calib overall ECE differ by {difference:.3g} "
            f"(expected < {ECE_TOLERANCE:g}): the baselines do not compute the same thing"
        )
    return {
        ECE_DIFF_KEY: difference,
        ECE_TOLERANCE_KEY: ECE_TOLERANCE,
        ECE_OK_KEY: difference < ECE_TOLERANCE,
    }


def scaling_point(
    ctx: Context, rows: int, cfg: Config, reuse: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Scan floor and spark_calib medians at ``rows``; ``reuse`` is a case already measured
    with the same config at that size (its medians are taken instead of timing again)."""
    if reuse is not None:
        variants = reuse["variants"]
        floor, calib = variants[SCAN_FLOOR]["median_s"], variants[SPARK_CALIB]["median_s"]
        source = "typical case"
    else:
        case = run_case(ctx, f"scaling {rows:,}", "binary", rows, {SPARK_CALIB: cfg})
        floor = case["variants"][SCAN_FLOOR]["median_s"]
        calib = case["variants"][SPARK_CALIB]["median_s"]
        source = "measured"
    return {
        "rows": rows,
        "scan_floor_s": floor,
        "spark_calib_s": calib,
        "scan_floor_s_per_million_rows": per_million(floor, rows),
        "spark_calib_s_per_million_rows": per_million(calib, rows),
        "source": source,
    }


def with_linearity(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Add t(n)/n ÷ t(smallest)/smallest per variant (1.0 = linear, > 1 = worse than linear)."""
    points = sorted(points, key=lambda point: point["rows"])
    base = points[0]
    for point in points:
        for variant in (SCAN_FLOOR, SPARK_CALIB):
            key = f"{variant}_s"
            point[f"{variant}_ratio_to_linear"] = ratio(
                point[key] / point["rows"], base[key] / base["rows"]
            )
    return points
