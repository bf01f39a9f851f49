"""Canonical multiclass rows → the ``recalibration`` table's temperature rows.

1. **Fit** (``temperature_fit``): a hash-chosen sample of about ``max_fit_rows`` fit rows at
   most, cached, and a safeguarded Newton search for each key's T̂ on its exact NLL, one pass
   over the cached sample a step. A key with fewer than ``min_fit_rows`` sampled fit rows
   takes its model version's ``overall`` T̂ (``fallback`` true).
2. **Scoring pass** over the evaluated rows (skipped with ``after: none``): each row's
   deployed β̂ = 1/T̂ (below), its K exponentials once, and per fine group (model version and
   every slice column), bin before and bin after the sums of w, w·correct and of
   w·confidence, w·NLL and w·Brier before (the row's metric terms,
   ``spark_calib.rows.task_terms``) and after (at β̂: confidence 1/s, NLL log s − β̂·d_y,
   Brier); that small table is labelled per slice set and re-summed per key.

From the scoring sums, on the evaluated rows (fit flag ≠ 1) with W = Σw: ECE = Σ_b |Σ_{bin=b}
w·(correct − confidence)| / W over the configured bins, NLL, Brier and accuracy = Σw·term / W,
before and after; they are exact (no cell approximation), so ``after_bounds`` is 0. Accuracy
after equals accuracy before: dividing the logits by T > 0 keeps their order. A key's after
metrics are those of its evaluated rows under the **deployed** map, the one ``recalibrate``
applies: a row scaled by the T of a more specific slice with its own fit counts with that T
in its coarser keys too (``overall`` is then not "every row at overall's T"). In the most
specific configured set, and for a key whose rows all fall back, that is the key's own T.
``fit_sample_rate`` (in ``parameters``) is the run's sampling rate r (1: every fit row).

The ``overall`` key of each model version is added as its own slice set when ``[]`` is not
configured. The logits are the input's (``columns.logits``) or log(max(p_k, ε)) of
``columns.probs``; at T = 1 the latter's after metrics differ from before only where p_k < ε.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StructField, StructType

from spark_calib.config import Config
from spark_calib.constants import OVERALL_SLICE_NAME, OVERALL_SLICE_VALUE
from spark_calib.local_data import local_dataframe
from spark_calib.recalibration.keyed_rows import (
    SLICE_NAME,
    SLICE_VALUE,
    labelled,
    slice_key_columns,
    table_slice_sets,
)
from spark_calib.recalibration.points import Key, sort_key
from spark_calib.recalibration.scores import SCORES, ReliabilityBin, reliability_bins
from spark_calib.recalibration.temperature_fit import BETA, Fits, KeyFit, fit_temperatures
from spark_calib.rows import canonical as row
from spark_calib.rows.binning import bin_index
from spark_calib.rows.temperature_terms import (
    exponential_columns,
    projected_moments,
    scaled_outputs,
    shifted,
    shifted_logits,
)
from spark_calib.slicing.values import slice_name

FIT_FLAG = "_fit_flag"
_OVERALL_BETA = "_overall_beta"
BIN_AFTER = "_bin_after"
_HUGE_METHOD_LIMIT = "spark.sql.codegen.hugeMethodLimit"
# HotSpot's HugeMethodLimit: larger methods are never compiled.
JIT_METHOD_LIMIT = 8000
# Scoring sums: name → the per-row term summed as Σw·term (n is a count).
_BEFORE = {"confidence": row.CONFIDENCE, "nll": row.NLL, "brier": row.BRIER}
_AFTER = ("confidence", "nll", "brier")


@dataclass
class _KeyScores:
    """One key's scoring sums: evaluated rows by (bin before, bin after), fit rows' G, H."""

    n_eval: int = 0
    bins: list[tuple[int, int, dict[str, float]]] = field(default_factory=list)


def multiclass_recalibration_rows(
    rows: DataFrame,
    config: Config,
    num_classes: int,
    valid_rows: Mapping[str | None, int] | None = None,
) -> list[tuple[Any, ...]]:
    """The temperature rows of the recalibration table (``RECALIBRATION_COLUMNS`` order).
    ``valid_rows``: each model version's valid rows, for the fit's sampling rate (without it,
    every fit row is read)."""
    recalibration = config.recalibration
    assert recalibration is not None
    sets = table_slice_sets(config)
    base = _base(rows, config, num_classes)
    fitted = fit_temperatures(rows, config, sets, num_classes, valid_rows or {})
    fits = fitted.fits
    scored = recalibration.after != "none"
    scores = _scoring_pass(base, config, sets, num_classes, fitted) if scored else {}
    out = []
    for key in sorted(set(fits) | set(scores), key=sort_key):
        overall = fits.get((key[0], OVERALL_SLICE_NAME, OVERALL_SLICE_VALUE))
        unfitted = KeyFit(
            0,
            overall.temperature if overall else None,
            fallback=True,
            sample_rate=overall.sample_rate if overall else 1.0,
        )
        fit = fits.get(key, unfitted)
        out.append(_row(key, fit, scores.get(key, _KeyScores()), config, scored))
    return out


def _base(rows: DataFrame, config: Config, num_classes: int) -> DataFrame:
    """Valid rows: keys, weight, fit flag (1 fit, 0 evaluated, −1 both), the metric terms
    before and the shifted logits (the scoring pass's rows)."""
    slices = slice_key_columns(config)
    fit = F.col(row.FIT) if row.FIT in rows.columns else F.lit(-1)
    shifted_columns = shifted_logits(F.col(row.LOGITS), F.col(row.LABEL), num_classes)
    return rows.where(F.col(row.REASON).isNull()).select(
        row.MODEL_VERSION,
        *slices,
        row.WEIGHT,
        fit.cast("int").alias(FIT_FLAG),
        row.BIN,
        row.CORRECT,
        *_BEFORE.values(),
        *[expression.alias(name) for name, expression in shifted_columns.items()],
    )


def _scoring_pass(
    base: DataFrame,
    config: Config,
    sets: Sequence[Sequence[str]],
    num_classes: int,
    fitted: Fits,
) -> dict[Key, _KeyScores]:
    """Key → its evaluated rows' sums by bin before and after the deployed map.

    Each row takes the β̂ of its own slice value in the most specific slice set (most
    columns first, then config order) whose key has a fit of its own, else its model
    version's overall β̂, as ``recalibrate`` applies the maps: one broadcast join per set on
    the set's columns. Its K exponentials are computed once, at that β̂. The rows are summed
    per fine group (model version and every slice column), fit flag and bins, and only that
    small table is copied per slice set, labelled and re-summed per key."""
    fits = fitted.fits
    overall_rows = [
        (key[0], 1.0 / fit.temperature)
        for key, fit in fits.items()
        if (key[1], key[2]) == (OVERALL_SLICE_NAME, OVERALL_SLICE_VALUE)
        and fit.temperature is not None
    ]
    frame = _join_betas(base, [row.MODEL_VERSION], overall_rows, _OVERALL_BETA)
    positions = {name: i for i, name in enumerate(config.slice_columns())}
    candidates = []
    for index in sorted(range(len(sets)), key=lambda i: (-len(sets[i]), i)):
        columns = sets[index]
        name = slice_name(columns)
        own = [
            (key[0], *fitted.values[key], 1.0 / fit.temperature)
            for key, fit in fits.items()
            if key[1] == name
            and fit.temperature is not None
            and not fit.fallback
            and key in fitted.values
        ]
        if not columns or not own:
            continue
        keys = [row.MODEL_VERSION, *[row.slice_key(positions[c]) for c in columns]]
        frame = _join_betas(frame, keys, own, f"{BETA}{index}")
        candidates.append(F.col(f"{BETA}{index}"))
    frame = frame.withColumn(BETA, F.coalesce(*candidates, F.col(_OVERALL_BETA)))
    d = shifted(num_classes)
    beta = F.col(BETA)
    exponentials = exponential_columns(d, beta)
    m, squares = projected_moments(d, beta)
    groups = [row.MODEL_VERSION, *slice_key_columns(config)]
    keys = [*groups, FIT_FLAG, row.BIN]
    sums = frame.select("*", *[e.alias(name) for name, e in exponentials.items()]).select(
        *keys,
        row.WEIGHT,
        row.CORRECT,
        *_BEFORE.values(),
        beta,
        d.true,
        m.total.alias("_s"),
        m.first.alias("_s1"),
        m.second.alias("_s2"),
        squares.alias("_s_sq"),
    )
    outputs = scaled_outputs(beta, d.true, F.col("_s"), F.col("_s1"), F.col("_s2"), F.col("_s_sq"))
    after = sums.select(
        *keys,
        row.WEIGHT,
        row.CORRECT,
        *_BEFORE.values(),
        *[outputs[name].alias(f"_after_{name}") for name in _AFTER],
    ).withColumn(
        BIN_AFTER,
        bin_index(F.col("_after_confidence"), config.binning.n_bins, config.binning.edges),
    )
    weight = F.col(row.WEIGHT)
    sums_before = [f"{name}_before" for name in _BEFORE]
    sums_after = [f"{name}_after" for name in _AFTER]
    fine = (
        after.where(F.col(FIT_FLAG) != 1)
        .groupBy(*keys, BIN_AFTER)
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.sum(weight).alias("w"),
            F.sum(weight * F.col(row.CORRECT)).alias("correct"),
            *[
                F.sum(weight * F.col(term)).alias(f"{name}_before")
                for name, term in _BEFORE.items()
            ],
            *[F.sum(weight * F.col(f"_after_{name}")).alias(f"{name}_after") for name in _AFTER],
        )
    )
    summed = (
        labelled(fine, config, sets)
        .groupBy(row.MODEL_VERSION, SLICE_NAME, SLICE_VALUE, row.BIN, BIN_AFTER)
        .agg(
            *[F.sum(name).alias(name) for name in ("n", "w", "correct", *sums_before, *sums_after)]
        )
    )
    with _compiled_methods_only(summed.sparkSession):
        collected = summed.collect()
    scores: dict[Key, _KeyScores] = {}
    key_columns = (row.MODEL_VERSION, SLICE_NAME, SLICE_VALUE, row.BIN, BIN_AFTER, "n")
    for r in collected:
        key = (r[row.MODEL_VERSION], r[SLICE_NAME], r[SLICE_VALUE])
        found = scores.setdefault(key, _KeyScores())
        found.n_eval += int(r["n"])
        values = {
            name: float(r[name]) if r[name] is not None else float("nan")
            for name in r.asDict()
            if name not in key_columns
        }
        bin_after = -1 if r[BIN_AFTER] is None else int(r[BIN_AFTER])
        found.bins.append((int(r[row.BIN]), bin_after, values))
    return scores


def _join_betas(
    frame: DataFrame, keys: list[str], rows: list[tuple[Any, ...]], beta: str
) -> DataFrame:
    """``frame`` with ``beta`` from ``rows`` (the values of ``keys``, then β) left-joined by a
    broadcast on ``keys`` (null-safe); null where no row matches."""
    types = {f.name: f.dataType for f in frame.schema.fields}
    names = [f"_k{i}" for i in range(len(keys))]
    schema = StructType(
        [StructField(n, types[k]) for n, k in zip(names, keys, strict=True)]
        + [StructField(beta, DoubleType())]
    )
    table = local_dataframe(frame.sparkSession, rows, schema)
    condition = reduce(
        lambda left, right: left & right,
        [F.col(k).eqNullSafe(F.col(n)) for k, n in zip(keys, names, strict=True)],
    )
    return frame.join(F.broadcast(table), on=condition, how="left").drop(*names)


@contextmanager
def _compiled_methods_only(spark: SparkSession) -> Iterator[None]:
    """``spark.sql.codegen.hugeMethodLimit`` at 8,000 bytes of bytecode for the duration
    (restored after): a stage whose generated method is larger runs per operator instead.

    The JVM does not compile a method above 8,000 bytes and runs it interpreted. The scoring
    pass fuses the copies per slice set, the join of T̂, K exponentials per copy and a 13-sum
    aggregation into one stage; fused and interpreted it ran 3× slower than per operator, and
    per operator 1.8× slower than fused and compiled (benchmark's multiclass log, K = 10, four
    slice sets). Spark's own default limit is the JVM's maximum method size, 65,535 bytes."""
    previous = spark.conf.get(_HUGE_METHOD_LIMIT, None)
    spark.conf.set(_HUGE_METHOD_LIMIT, str(JIT_METHOD_LIMIT))
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(_HUGE_METHOD_LIMIT)
        else:
            spark.conf.set(_HUGE_METHOD_LIMIT, previous)


def _row(
    key: Key, fit: KeyFit, scores: _KeyScores, config: Config, scored: bool
) -> tuple[Any, ...]:
    """One key's table row; without the scoring pass (``scored`` false) its n_eval, before
    and after columns and bins are null."""
    fitted = fit.temperature is not None
    parameters: dict[str, float] | None = None
    if fit.temperature is not None:
        parameters = {"temperature": fit.temperature, "fit_sample_rate": fit.sample_rate}
    if not scored:
        return (
            *key,
            "temperature",
            parameters,
            None,
            fit.n_fit,
            None,
            fit.fallback,
            *[None] * (2 * len(SCORES)),
            None,
            None,
            None,
        )
    before, after = _scores(scores, config, fitted)
    values = [value for name in SCORES for value in (before[name], after[name])]
    bounds = dict.fromkeys(SCORES, 0.0) if fitted else None
    return (
        *key,
        "temperature",
        parameters,
        None,
        fit.n_fit,
        scores.n_eval,
        fit.fallback,
        *values,
        bounds,
        *_reliability(scores, config, fitted),
    )


def _reliability(
    scores: _KeyScores, config: Config, scaled: bool
) -> tuple[list[ReliabilityBin], list[ReliabilityBin] | None]:
    """The evaluated rows' top-label bins before and (when ``scaled``) after T̂."""
    n_bins = config.binning.n_bins
    if not scores.bins:
        return [], None if not scaled else []
    before_bin = np.array([bins[0] for bins in scores.bins])
    after_bin = np.array([bins[1] for bins in scores.bins])
    w = np.array([values["w"] for _, _, values in scores.bins])
    correct = np.array([values["correct"] for _, _, values in scores.bins])
    before = [values["confidence_before"] for _, _, values in scores.bins]
    before_bins = reliability_bins(before_bin, w, np.array(before), correct, n_bins)
    if not scaled:
        return before_bins, None
    after = [values["confidence_after"] for _, _, values in scores.bins]
    return before_bins, reliability_bins(after_bin, w, np.array(after), correct, n_bins)


def _scores(
    scores: _KeyScores, config: Config, scaled: bool
) -> tuple[dict[str, float | None], dict[str, float | None]]:
    """ECE, NLL, Brier and accuracy of the evaluated rows before and (when ``scaled``) after."""
    empty: dict[str, float | None] = dict.fromkeys(SCORES)
    total = sum(values["w"] for _, _, values in scores.bins)
    if total <= 0.0:
        return empty, dict(empty)
    n_bins = config.binning.n_bins
    gap_before = np.zeros(n_bins)
    gap_after = np.zeros(n_bins)
    sums = dict.fromkeys(("nll_before", "nll_after", "brier_before", "brier_after", "correct"), 0.0)
    for bin_before, bin_after, values in scores.bins:
        gap_before[bin_before] += values["correct"] - values["confidence_before"]
        if scaled:
            gap_after[bin_after] += values["correct"] - values["confidence_after"]
        for name in sums:
            sums[name] += values[name]
    accuracy = sums["correct"] / total
    before: dict[str, float | None] = {
        "ece": float(np.abs(gap_before).sum() / total),
        "nll": sums["nll_before"] / total,
        "brier": sums["brier_before"] / total,
        "accuracy": accuracy,
    }
    if not scaled:
        return before, dict(empty)
    after: dict[str, float | None] = {
        "ece": float(np.abs(gap_after).sum() / total),
        "nll": sums["nll_after"] / total,
        "brier": sums["brier_after"] / total,
        "accuracy": accuracy,
    }
    return before, after
