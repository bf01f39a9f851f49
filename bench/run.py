"""``python -m bench.run``: time spark_calib against its scan floor, the bare aggregation at its
grain (``bench.aggregation_floor``), MLlib and pandas, and split its time into aggregation,
finishing and writing (``bench.phases``).

Every case runs in one Spark session: one warm-up run per variant, then ``repeats`` rounds with
the variants alternating; the median is reported (see ``bench.timing``). The results go to
``<out>/<YYYY-MM-DD>.json`` and are rendered as ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shlex
import sys
import tempfile
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from bench import aggregation_floor as floor
from bench import configs as C
from bench.cases import (
    AGGREGATION_FLOOR,
    MLLIB,
    PANDAS,
    SPARK_CALIB,
    AggregationFloor,
    Baselines,
    Context,
    run_case,
    scaling_point,
    with_linearity,
)
from bench.generate import CTR_LOG, DEFAULT_SEED
from bench.low_memory import check as check_low_memory
from bench.machine import describe, load_average, memory
from bench.report import write_docs, write_json
from bench.session import DEFAULT_DRIVER_MEMORY, build_session, spark_settings
from bench.targets import evaluate_targets
from bench.timing import Progress
from spark_calib.metrics.finish import DRIVER_MAX_ROWS

DEFAULT_ROWS = 20_000_000
DEFAULT_REPEATS = 3
DEFAULT_SCALING = (1_000_000, 5_000_000, 20_000_000, 50_000_000)
DEFAULT_OUT = Path("bench/results")
DEFAULT_DOCS = Path("docs/benchmarks.md")
DEFAULT_CACHE = Path("bench/data")
DEFAULT_LOW_MEMORY = "1g"
# pandas holds the needed columns and the per-row terms of the whole log in memory at once.
PANDAS_MAX_ROWS = 50_000_000
# Multiclass logs hold K doubles a row: the classwise cases use rows / K, at least this many.
MULTICLASS_MIN_ROWS = 100_000
MULTICLASS_TASKS = ("multiclass10", "multiclass100")
CLASSWISE = "spark_calib_classwise"
# classwise_ece: the classwise cases without their classwise_ece variant (temperature only);
# temperature_scoring: without their fit + scoring variant (the fit alone stays).
SKIPPABLE = (
    "mllib",
    "pandas",
    "classwise",
    "classwise_ece",
    "temperature_scoring",
    "scaling",
    "low_memory",
)
TYPICAL = "typical"
WIDE = "wide"
METRICS_ALL = "metrics_all"
SLICES_1 = "slices_1"
CTR = "ctr"
# The spark_calib cases that --cases selects from (slices_6 comes with wide; the classwise
# cases are skipped with --skip classwise).
CASES = (TYPICAL, WIDE, "metrics_3", METRICS_ALL, SLICES_1, CTR)
# The cases whose statistics rows per key are counted after the timing.
STATS_ROWS_CASES = (METRICS_ALL, CTR)
EQUAL_MASS = f"{SPARK_CALIB}_equal_mass"
JACKKNIFE = f"{SPARK_CALIB}_jackknife"
WITHOUT_COX = f"{SPARK_CALIB}_without_cox"
TEMPERATURE = f"{SPARK_CALIB}_temperature"
TEMPERATURE_FIT = f"{SPARK_CALIB}_temperature_fit"
# The bare aggregation under the jackknife: the typical grain with the bucket as one more key.
AGGREGATION_FLOOR_JACKKNIFE = f"{AGGREGATION_FLOOR}_jackknife"
# A spark_calib run still going after this many seconds is cancelled; its time is a lower bound.
DEFAULT_TIMEOUT_S = 600.0


def multiclass_rows(rows: int, task: str, minimum: int) -> int:
    """Rows of a classwise case for a main size of ``rows``: rows / K, at least ``minimum``."""
    return max(minimum, rows // C.num_classes(task))


def _floors(task: str, case: str) -> list[AggregationFloor]:
    """The aggregation floors timed in ``case`` (binary logs only: the bare aggregations read
    ``score``): the ``bench.aggregation_floor`` query at the grain of the case's statistics."""
    if task != C.BINARY:
        return []
    if case == TYPICAL:
        # The equal-mass bins read the fine cells: that variant is divided by the bin grain's
        # floor all the same (see the notes).
        return [
            AggregationFloor(AGGREGATION_FLOOR, floor.TYPICAL_FLOOR, (SPARK_CALIB, EQUAL_MASS)),
            AggregationFloor(AGGREGATION_FLOOR_JACKKNIFE, floor.JACKKNIFE_FLOOR, (JACKKNIFE,)),
        ]
    if case in (METRICS_ALL, CTR):
        # Without the two Cox metrics the keys and sums are the same.
        return [AggregationFloor(AGGREGATION_FLOOR, floor.CELLS_FLOOR, (SPARK_CALIB, WITHOUT_COX))]
    if case == SLICES_1:
        return [AggregationFloor(AGGREGATION_FLOOR, floor.OVERALL_FLOOR, (SPARK_CALIB,))]
    return []


def _spark_cases(
    ctx: Context, task: str, rows: int, baselines: Baselines, selected: Collection[str] = CASES
) -> dict[str, dict[str, Any]]:
    """typical (default bins and equal-mass bins), wide (auto and both strategies), metrics_3,
    metrics_all, slices_1, slices_6 and, for binary, ctr: those of ``selected``; typical,
    metrics_all, slices_1 and ctr with their aggregation floors (binary)."""
    cfg = C.config
    cases: dict[str, dict[str, Any]] = {}
    if TYPICAL in selected:
        typical = {SPARK_CALIB: cfg(task, C.TYPICAL_SLICES)}
        relative: list[tuple[str, str]] = []
        if task == C.BINARY:
            typical[EQUAL_MASS] = cfg(task, C.TYPICAL_SLICES, binning=C.EQUAL_MASS)
            relative.append((EQUAL_MASS, SPARK_CALIB))
        # The same config with the grouped jackknife (G = 20 hash buckets) instead of the
        # default analytic standard errors.
        typical[JACKKNIFE] = {**typical[SPARK_CALIB], "uncertainty": {"method": "jackknife"}}
        relative.append((JACKKNIFE, SPARK_CALIB))
        cases[TYPICAL] = run_case(
            ctx, TYPICAL, task, rows, typical, baselines, relative, floors=_floors(task, TYPICAL)
        )
    wide = {SPARK_CALIB: cfg(task, C.WIDE_SLICES)}
    for strategy in C.STRATEGIES:
        wide[f"{SPARK_CALIB}_{strategy}"] = cfg(task, C.WIDE_SLICES, strategy=strategy)
    if WIDE in selected:
        cases[WIDE] = run_case(ctx, WIDE, task, rows, wide)
    simple = {
        "metrics_3": {SPARK_CALIB: cfg(task, C.TYPICAL_SLICES, C.METRICS_3)},
        METRICS_ALL: {SPARK_CALIB: cfg(task, C.TYPICAL_SLICES, C.metrics_all(task))},
        SLICES_1: {SPARK_CALIB: cfg(task, [C.OVERALL])},
    }
    if task == C.BINARY:
        simple[METRICS_ALL][WITHOUT_COX] = _without_cox(task)
    for name, configs in simple.items():
        if name in selected:
            counted = name in STATS_ROWS_CASES
            relative = [(WITHOUT_COX, SPARK_CALIB)] if WITHOUT_COX in configs else []
            cases[name] = run_case(
                ctx,
                name,
                task,
                rows,
                configs,
                relative=relative,
                stats_rows=counted,
                floors=_floors(task, name),
            )
    if WIDE in selected:
        cases["slices_6"] = {"same_as": WIDE, "configs": {SPARK_CALIB: wide[SPARK_CALIB]}}
    if CTR in selected and task == C.BINARY:
        ctr = {SPARK_CALIB: cfg(task, C.TYPICAL_SLICES, C.METRICS_ALL_BINARY)}
        ctr[WITHOUT_COX] = _without_cox(task)
        relative = [(WITHOUT_COX, SPARK_CALIB)]
        case = run_case(
            ctx,
            CTR,
            task,
            rows,
            ctr,
            relative=relative,
            log=CTR_LOG,
            stats_rows=True,
            floors=_floors(task, CTR),
        )
        case["notes"].append(
            "Click-through log: true log-odds ~ N(−4.3, 0.9) (base rate about 2 %); v2 logs "
            "1.4 × the true probability, v1 and v3 log it as is; the slice columns of the "
            "binary log."
        )
        cases[CTR] = case
    return cases


def _without_cox(task: str) -> C.Config:
    """metrics_all of a binary task without calibration_slope and calibration_intercept."""
    return C.config(task, C.TYPICAL_SLICES, C.METRICS_ALL_BINARY_WITHOUT_COX)


def _classwise_cases(
    ctx: Context,
    task: str,
    rows: int,
    minimum: int,
    with_classwise: bool = True,
    with_scoring: bool = True,
) -> dict[str, dict[str, Any]]:
    """Default metrics vs + classwise_ece (unless not ``with_classwise``) and vs temperature
    scaling (fit and scoring pass unless not ``with_scoring``, and the fit alone) on
    multiclass logs (K + 1 items per row)."""
    tasks = MULTICLASS_TASKS if task == C.BINARY else (task,)
    cases = {}
    for multiclass in tasks:
        size = multiclass_rows(rows, multiclass, minimum) if task == C.BINARY else rows
        configs = {SPARK_CALIB: C.config(multiclass, C.TYPICAL_SLICES)}
        relative = []
        if with_classwise:
            configs[CLASSWISE] = C.config(multiclass, C.TYPICAL_SLICES, C.CLASSWISE_METRICS)
            relative.append((CLASSWISE, SPARK_CALIB))
        # Multiclass temperature scaling, fitted and evaluated on the same rows: a sampled fit
        # (at most 1M rows, cached) and one scoring pass; and the fit alone (after: none).
        if with_scoring:
            configs[TEMPERATURE] = {
                **configs[SPARK_CALIB],
                "recalibration": {"methods": ["temperature"]},
            }
            relative.append((TEMPERATURE, SPARK_CALIB))
        configs[TEMPERATURE_FIT] = {
            **configs[SPARK_CALIB],
            "recalibration": {"methods": ["temperature"], "after": "none"},
        }
        relative.append((TEMPERATURE_FIT, SPARK_CALIB))
        name = f"classwise_{multiclass}"
        case = run_case(ctx, name, multiclass, size, configs, relative=relative)
        if size != rows:
            case["notes"].append(
                f"{size:,} rows (the main size {rows:,} / K, at least {minimum:,}): a "
                f"{multiclass} log holds {C.num_classes(multiclass)} doubles a row"
            )
        cases[name] = case
    return cases


def _notes(
    task: str,
    rows: int,
    skip: Collection[str],
    pandas_max_rows: int,
    generated: list[str],
    selected: Collection[str] = CASES,
    timeout_s: float | None = None,
) -> list[str]:
    notes = [
        "scan_floor: read exactly the columns the config needs and sum each once in one "
        "aggregation (numbers: sum; strings and dates: sum of the string length; arrays: sum "
        "of the elements), collected. No evaluation can read its input faster.",
        "spark_calib: evaluate, then every output DataFrame (metrics, reliability, stats, "
        "invalid and the optional non-None ones) written as Parquet into a fresh temp "
        "directory, then unpersist. The log is read from Parquet in every run.",
        "Every run of every variant reads the same cached Parquet log (8 files); the page "
        "cache is warm after its first run.",
    ]
    if task == C.BINARY and any(name in selected for name in FLOOR_CASES):
        notes += _floor_notes()
    notes.append(PHASES_NOTE)
    if task == C.BINARY and (METRICS_ALL in selected or CTR in selected):
        notes.append(
            f"{WITHOUT_COX} (metrics_all and ctr): the same config without "
            + " and ".join(C.COX_METRICS)
            + ", the two metrics of the Newton fit on the cells, to show what the rest of "
            "metrics_all costs; the targets use the full spark_calib variant."
        )
    if timeout_s is not None:
        notes.append(
            f"A spark_calib run still going after {timeout_s:,.0f} s is cancelled (its job "
            "group); its time and its ratios are then lower bounds, shown as '> x'."
        )
    if task != C.BINARY:
        notes.append(f"MLlib and pandas baselines are binary only: not run for {task}.")
    typical = TYPICAL in selected
    if MLLIB not in skip and task == C.BINARY and typical:
        notes.append(
            "mllib: MulticlassClassificationEvaluator (logLoss, accuracy) and "
            "BinaryClassificationEvaluator (areaUnderROC) give no calibration error and no "
            "slicing, so one pass filters the log to one model version × slice value. The "
            "overall population and every device value were timed per model version and the "
            "time extrapolated to every key of the typical slice list (see the case's "
            "'method'); the warm-up is one pass, not a full run. MLlib computes less than "
            "spark_calib (no ECE/MCE/RMSCE, no Brier, no reliability bins)."
        )
    if PANDAS not in skip and task == C.BINARY and typical:
        if rows > pandas_max_rows:
            notes.append(
                f"pandas: skipped at {rows:,} rows (above {pandas_max_rows:,}, the log would "
                "not fit in memory with its temporaries)."
            )
        else:
            notes.append(
                "pandas: pyarrow reads the needed columns (strings as categoricals), NumPy "
                "computes the row terms, one pandas groupby per slice set gives per-bin sums "
                "and the metrics and reliability bins follow per key; single-threaded."
            )
    not_run = [name for name in (MLLIB, PANDAS) if name in skip or not typical]
    if not_run and task == C.BINARY:
        notes.append(
            "Baselines NOT run in this benchmark: "
            + " and ".join(not_run)
            + "; the page shows no baseline timings and their targets say n/a."
        )
    if skip:
        notes.append("Skipped: " + ", ".join(sorted(skip)) + ".")
    left_out = [name for name in CASES if name not in selected]
    if left_out:
        notes.append("Cases not run (--cases): " + ", ".join(left_out) + ".")
    if generated:
        notes.append(
            "Generated in this run (the peak RSS includes it): " + ", ".join(generated) + "."
        )
    return notes


# The cases timed with an aggregation floor (binary logs).
FLOOR_CASES = (TYPICAL, METRICS_ALL, SLICES_1, CTR)
PHASES_NOTE = (
    "Phases (each spark_calib variant; medians over its timed runs): every run records the "
    "wall time of its evaluate call and of its writes. After the rounds, outside the timed "
    "runs, the last run's written stats table is read back and cached, and the kernels finish "
    "it as evaluate does (spark_calib.evaluate._finished, the same config): with at most "
    f"{DRIVER_MAX_ROWS:,} statistics rows on the driver from one toArrow() of them (the timed "
    "part is the kernels and the local frames of their outputs; the toArrow() is in the JSON "
    "as statistics_to_arrow_s), else the grouped applyInArrow pass with every output written "
    "to Spark's noop sink; a warm-up run when the rounds had one, then as many runs as the "
    "rounds, and finishing is their median. On the driver path evaluate holds the kernels: "
    "aggregation = evaluate − finishing, writing = the writes. On the grouped path the "
    "kernels run inside the first writes: aggregation = evaluate, writing = the writes − "
    "finishing. So aggregation is reading the log, the one aggregation, caching the "
    "statistics and bringing them to the driver (driver path: and the local frame of them "
    "that replaces the cache; grouped path: the head of "
    f"{DRIVER_MAX_ROWS + 1:,} rows and the row-count job); writing is every output written "
    "as Parquet. With recalibration, its passes count as aggregation."
)


def _floor_notes() -> list[str]:
    """What the aggregation floors time, and the grain of each case's."""
    grains = {
        "typical (aggregation_floor)": floor.TYPICAL_FLOOR,
        f"typical's jackknife ({AGGREGATION_FLOOR_JACKKNIFE})": floor.JACKKNIFE_FLOOR,
        "slices_1": floor.OVERALL_FLOOR,
        "metrics_all and ctr": floor.CELLS_FLOOR,
    }
    return [
        "aggregation_floor: the bare groupBy(keys).agg(sums) of bench.aggregation_floor over "
        "the same log at the grain of the case's statistics, written to Spark's noop sink and "
        "timed in the same alternating rounds: no validation, no reason or class key, no "
        "slice-set roll-up and no metrics, only the keys evaluate groups by and as many sums "
        "as it keeps (the Σw²·x copies of the unit weights not counted), their terms cheap "
        "functions of score and label. The four slice sets [], [country], [device], "
        "[country, device] come from one covering group, country × device (finest_grain), "
        "so the slice keys are model_version, country and device. No evaluation with those "
        "keys can be faster; × aggregation floor is each variant over the floor of its grain.",
        "Floor grains: "
        + "; ".join(f"{case}: {name} ({floor.grain(name)})" for case, name in grains.items())
        + ". The default metrics of typical and slices_1 group by no predicted class and no "
        "fine cell; metrics_all's confusion metrics add the predicted class, and its cell "
        "metrics the fine cell (and Σy, Σw·y, Σw·y·nll and Σw·logit); the jackknife bucket is "
        "pmod(xxhash64(every column of the row), 20). spark_calib_equal_mass reads the fine "
        "cells (its bins are cut from them) but is divided by typical's bin-grain floor; "
        f"{WITHOUT_COX} aggregates at metrics_all's grain.",
    ]


def run_benchmark(
    spark: SparkSession,
    *,
    rows: int,
    task: str = C.BINARY,
    repeats: int = DEFAULT_REPEATS,
    cache: Path,
    out: Path | None = DEFAULT_OUT,
    docs: Path | None = DEFAULT_DOCS,
    scaling: Sequence[int] = (),
    skip: Collection[str] = (),
    cases: Collection[str] = CASES,
    seed: int = DEFAULT_SEED,
    multiclass_min_rows: int = MULTICLASS_MIN_ROWS,
    pandas_max_rows: int = PANDAS_MAX_ROWS,
    low_memory: str | None = None,
    driver_memory: str | None = None,
    warmup: bool = True,
    command: str | None = None,
    progress: Progress | None = None,
    timeout_s: float | None = None,
    conditions: Sequence[str] = (),
) -> dict[str, Any]:
    """Run every case on ``spark``; write the JSON to ``out`` and the page to ``docs`` (when
    not None) and return the results dict.

    ``low_memory`` (e.g. ``"1g"``): also evaluate the typical config on the largest size in a
    child process with that driver memory. ``skip``: any of ``SKIPPABLE``. ``cases``: the
    spark_calib cases to run (any of ``CASES``, all by default). ``warmup`` False
    skips the warm-up runs: for smoke tests only, the timings are then cold. ``timeout_s``:
    cancel a spark_calib run after that many seconds (its time is then a lower bound).
    ``conditions``: what the machine was doing besides (other jobs), first in the notes.
    """
    _check_arguments(rows, repeats, skip, cases)
    selected = [name for name in CASES if name in cases]
    progress = progress or Progress()
    started = dt.datetime.now(dt.timezone.utc)
    results: dict[str, Any] = {
        "date": dt.date.today().isoformat(),
        "started_at": started.isoformat(timespec="seconds"),
        "command": command or f"run_benchmark(rows={rows}, task={task!r}, repeats={repeats})",
        "machine": describe(spark),
        "settings": _settings(
            spark, rows, task, repeats, warmup, seed, scaling, skip, driver_memory
        ),
    }
    results["settings"]["timeout_s"] = timeout_s
    results["machine"]["load_average_at_start"] = load_average()
    with tempfile.TemporaryDirectory(prefix="bench-") as work:
        ctx = Context(
            spark, cache, seed, Path(work), progress, repeats, warmup, timeout_s=timeout_s
        )
        measured = _all_cases(ctx, task, rows, skip, multiclass_min_rows, pandas_max_rows, selected)
        results["cases"] = measured
        results["scaling"] = _scaling(ctx, task, rows, scaling, skip, measured)
        results["low_memory"] = _low_memory(ctx, task, rows, scaling, skip, low_memory)
    results["memory"] = memory(spark)
    results["machine"]["load_average_at_end"] = load_average()
    results["settings"]["cases"] = selected
    results["notes"] = [
        *conditions,
        *_notes(task, rows, skip, pandas_max_rows, ctx.generated, selected, timeout_s),
    ]
    _finish(results, progress)
    _write(results, out, docs, progress)
    return results


def _all_cases(
    ctx: Context,
    task: str,
    rows: int,
    skip: Collection[str],
    multiclass_min_rows: int,
    pandas_max_rows: int,
    selected: Collection[str] = CASES,
) -> dict[str, dict[str, Any]]:
    """The ``selected`` spark_calib cases (with the baselines not skipped, binary only) and the
    classwise cases unless skipped."""
    binary = task == C.BINARY
    baselines = Baselines(
        mllib=binary and MLLIB not in skip,
        pandas=binary and PANDAS not in skip and rows <= pandas_max_rows,
    )
    cases = _spark_cases(ctx, task, rows, baselines, selected)
    if "classwise" not in skip:
        cases.update(
            _classwise_cases(
                ctx,
                task,
                rows,
                multiclass_min_rows,
                with_classwise="classwise_ece" not in skip,
                with_scoring="temperature_scoring" not in skip,
            )
        )
    return cases


def _finish(results: dict[str, Any], progress: Progress) -> None:
    """Add the finish time, the elapsed seconds and the targets' verdicts to ``results``."""
    results["finished_at"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    results["elapsed_s"] = round(progress.elapsed(), 1)
    results["targets"] = evaluate_targets(results)


def _check_arguments(
    rows: int, repeats: int, skip: Collection[str], cases: Collection[str] = CASES
) -> None:
    """ValueError for an unknown name in ``skip`` or ``cases``, or ``rows`` or ``repeats``
    below 1."""
    unknown = set(skip) - set(SKIPPABLE)
    if unknown:
        raise ValueError(f"cannot skip {sorted(unknown)}; choose from {list(SKIPPABLE)}")
    unknown = set(cases) - set(CASES)
    if unknown:
        raise ValueError(f"unknown cases {sorted(unknown)}; choose from {list(CASES)}")
    if repeats < 1 or rows < 1:
        raise ValueError("rows and repeats must be at least 1")


def _settings(
    spark: SparkSession,
    rows: int,
    task: str,
    repeats: int,
    warmup: bool,
    seed: int,
    scaling: Sequence[int],
    skip: Collection[str],
    driver_memory: str | None,
) -> dict[str, Any]:
    """The results' ``settings``: the arguments of the run and the session's Spark settings."""
    return {
        "rows": rows,
        "task": task,
        "repeats": repeats,
        "warmup": warmup,
        "seed": seed,
        "scaling": list(scaling),
        "skip": sorted(skip),
        "driver_memory": driver_memory
        or spark.sparkContext.getConf().get("spark.driver.memory", "default"),
        "spark": spark_settings(spark),
    }


def _scaling(
    ctx: Context,
    task: str,
    rows: int,
    scaling: Sequence[int],
    skip: Collection[str],
    cases: dict[str, dict[str, Any]],
) -> dict[str, Any] | None:
    """The scaling table of the typical config at each size (binary only; the main size
    reuses the typical case), or None when not asked for."""
    if not (scaling and "scaling" not in skip and task == C.BINARY):
        return None
    cfg = C.config(task, C.TYPICAL_SLICES)
    points = [
        scaling_point(ctx, size, cfg, cases.get(TYPICAL) if size == rows else None)
        for size in sorted(set(scaling))
    ]
    return {"config": TYPICAL, "points": with_linearity(points)}


def _low_memory(
    ctx: Context,
    task: str,
    rows: int,
    scaling: Sequence[int],
    skip: Collection[str],
    low_memory: str | None,
) -> dict[str, Any] | None:
    """The typical config on the largest size in a child process with ``low_memory`` driver
    memory, or None when not asked for."""
    if not (low_memory and "low_memory" not in skip):
        return None
    largest = max([rows, *scaling]) if task == C.BINARY else rows
    log = ctx.log(task, largest)
    ctx.progress(f"low-memory check: typical on {largest:,} rows with {low_memory} driver")
    return check_low_memory(log, low_memory, largest)


def _write(
    results: dict[str, Any], out: Path | None, docs: Path | None, progress: Progress
) -> None:
    """Write the JSON into ``out`` and the page to ``docs`` (each when not None)."""
    json_path = write_json(results, out) if out is not None else None
    if docs is not None:
        write_docs(results, docs, json_path)
    progress(f"done: {json_path or 'no JSON'}, {docs or 'no docs'}")


def _sizes(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()] if text else []


def _split(text: str, choices: Sequence[str]) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()] if text else []
    unknown = set(names) - set(choices)
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown {sorted(unknown)}; choose from {choices}")
    return names


def _names(text: str) -> list[str]:
    return _split(text, SKIPPABLE)


def _cases(text: str) -> list[str]:
    return _split(text, CASES)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    parser.add_argument(
        "--task", default=C.BINARY, choices=[C.BINARY, *MULTICLASS_TASKS], help="main log"
    )
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results directory")
    parser.add_argument("--docs", type=Path, default=DEFAULT_DOCS, help="markdown page")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="generated logs")
    parser.add_argument(
        "--scaling",
        type=_sizes,
        default=list(DEFAULT_SCALING),
        help="comma-separated sizes for the scaling table ('' to skip)",
    )
    parser.add_argument(
        "--skip", type=_names, default=[], help=f"comma-separated, any of {','.join(SKIPPABLE)}"
    )
    parser.add_argument(
        "--cases",
        type=_cases,
        default=list(CASES),
        help=f"comma-separated spark_calib cases to run, any of {','.join(CASES)} (default all)",
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--driver-memory", default=DEFAULT_DRIVER_MEMORY)
    parser.add_argument(
        "--low-memory",
        default=DEFAULT_LOW_MEMORY,
        help="driver memory of the child-process check on the largest size ('' to skip)",
    )
    parser.add_argument("--multiclass-min-rows", type=int, default=MULTICLASS_MIN_ROWS)
    parser.add_argument(
        "--condition",
        action="append",
        default=[],
        help="the machine's load during the run, e.g. 'other agents were running tests' "
        "(repeatable; first in the page's notes)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        help="cancel a spark_calib run after this many seconds (0: never); its time is then "
        "a lower bound",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(arguments)
    progress = Progress()
    progress(f"starting Spark (local[2], driver memory {args.driver_memory})")
    spark = build_session(args.driver_memory)
    try:
        run_benchmark(
            spark,
            rows=args.rows,
            task=args.task,
            repeats=args.repeats,
            cache=args.cache,
            out=args.out,
            docs=args.docs,
            scaling=args.scaling,
            skip=args.skip,
            cases=args.cases,
            seed=args.seed,
            multiclass_min_rows=args.multiclass_min_rows,
            low_memory=args.low_memory or None,
            driver_memory=args.driver_memory,
            command=shlex.join(["python", "-m", "bench.run", *arguments]),
            progress=progress,
            timeout_s=args.timeout or None,
            conditions=[f"Load: {text}" for text in args.condition],
        )
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
