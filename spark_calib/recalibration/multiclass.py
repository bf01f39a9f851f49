"""Canonical multiclass rows → the ``recalibration`` table's temperature rows.

1. **Fit** (``temperature_fit``): a hash-chosen sample of at most about ``max_fit_rows`` fit
   rows per model version, cached, and a safeguarded Newton search for each key's T̂ on its
   exact NLL, one pass over the cached sample a step. A key with fewer than ``min_fit_rows``
   sampled fit rows takes its model version's ``overall`` T̂ (``fallback`` true).
2. **Scoring pass** over every valid row (skipped with ``after: none``), with the keys' T̂
   joined (a broadcast of one row per key): per key, fit flag, bin before and bin after, the
   sums of w, w·confidence, w·correct, w·NLL and w·Brier before (the row's metric terms,
   ``spark_calib.rows.task_terms``) and after (at β̂ = 1/T̂: confidence 1/s, NLL log s − β̂·d_y,
   Brier), and Σw·g, Σw·h at β̂.

From the scoring sums, on the evaluated rows (fit flag ≠ 1) with W = Σw: ECE = Σ_b |Σ_{bin=b}
w·(correct − confidence)| / W over the configured bins, NLL, Brier and accuracy = Σw·term / W,
before and after; they are exact (no cell approximation), so ``after_bounds`` is 0. Accuracy
after equals accuracy before: dividing the logits by T > 0 keeps their order. On **all** the fit
rows of a key fitted on its own rows, ``temperature_step`` (in ``parameters``) is the exact
Newton step T′ − T̂ from Σw·g and Σw·h at T̂: the distance from the sample's T̂ to the one of
every fit row, to second order (omitted at a bound, where the step need not vanish).
``fit_sample_rate`` (in ``parameters``) is the model version's sampling rate r_v (1: every fit
row).

The ``overall`` key of each model version is added as its own slice set when ``[]`` is not
configured. The logits are the input's (``columns.logits``) or log(max(p_k, ε)) of
``columns.probs``; at T = 1 the latter's after metrics differ from before only where p_k < ε.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_calib.config import Config
from spark_calib.constants import OVERALL_SLICE_NAME, OVERALL_SLICE_VALUE
from spark_calib.local_data import local_dataframe
from spark_calib.recalibration.keyed_rows import (
    SLICE_NAME,
    SLICE_VALUE,
    join_key,
    labelled,
    slice_key_columns,
    table_slice_sets,
)
from spark_calib.recalibration.points import Key, sort_key
from spark_calib.recalibration.scores import SCORES, ReliabilityBin, reliability_bins
from spark_calib.recalibration.temperature_fit import BETA, KeyFit, fit_temperatures
from spark_calib.recalibration.temperature_search import newton_step
from spark_calib.rows import canonical as row
from spark_calib.rows.binning import bin_index
from spark_calib.rows.temperature_terms import (
    exponential_columns,
    projected_moments,
    scaled_outputs,
    shifted,
    shifted_logits,
)

FIT_FLAG = "_fit_flag"
BIN_AFTER = "_bin_after"
_HUGE_METHOD_LIMIT = "spark.sql.codegen.hugeMethodLimit"
# HotSpot's HugeMethodLimit: larger methods are never compiled.
JIT_METHOD_LIMIT = 8000
# Scoring sums: name → the per-row term summed as Σw·term (n is a count).
_BEFORE = {"confidence": row.CONFIDENCE, "nll": row.NLL, "brier": row.BRIER}
_AFTER = ("confidence", "nll", "brier", "g", "h")


@dataclass
class _KeyScores:
    """One key's scoring sums: evaluated rows by (bin before, bin after), fit rows' G, H."""

    n_eval: int = 0
    bins: list[tuple[int, int, dict[str, float]]] = field(default_factory=list)
    fit_gradient: float = 0.0
    fit_curvature: float = 0.0


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
    fits = fit_temperatures(rows, config, sets, num_classes, valid_rows or {})
    scored = recalibration.after != "none"
    scores = _scoring_pass(base, config, sets, num_classes, fits) if scored else {}
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
    fits: dict[Key, KeyFit],
) -> dict[Key, _KeyScores]:
    """Key → its scoring sums at its T̂, or its model version's overall T̂ when the fit did
    not see the key (keys without either are scored before only)."""
    spark = base.sparkSession
    table = local_dataframe(
        spark,
        [
            (key[0], key[1], key[2], 1.0 / fit.temperature)
            for key, fit in fits.items()
            if fit.temperature is not None
        ],
        f"_v string, _n string, _w string, {BETA} double",
    )
    overall = local_dataframe(
        spark,
        [
            (key[0], 1.0 / fit.temperature)
            for key, fit in fits.items()
            if key[1] == OVERALL_SLICE_NAME and fit.temperature is not None
        ],
        "_ov string, _overall_beta double",
    )
    # A key without fit rows (a slice value seen only in the evaluated rows) is not in
    # ``table``: it takes its model version's overall T̂, as a fallback key does.
    joined = (
        join_key(labelled(base, config, sets), table)
        .join(
            F.broadcast(overall),
            on=F.col(row.MODEL_VERSION).eqNullSafe(F.col("_ov")),
            how="left",
        )
        .withColumn(BETA, F.coalesce(F.col(BETA), F.col("_overall_beta")))
        .drop("_ov", "_overall_beta")
    )
    d = shifted(num_classes)
    beta = F.col(BETA)
    exponentials = exponential_columns(d, beta)
    m, squares = projected_moments(d, beta)
    keys = [row.MODEL_VERSION, SLICE_NAME, SLICE_VALUE, FIT_FLAG, row.BIN]
    sums = joined.select("*", *[e.alias(name) for name, e in exponentials.items()]).select(
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
    summed = after.groupBy(*keys, BIN_AFTER).agg(
        F.count(F.lit(1)).alias("n"),
        F.sum(weight).alias("w"),
        F.sum(weight * F.col(row.CORRECT)).alias("correct"),
        *[F.sum(weight * F.col(term)).alias(f"{name}_before") for name, term in _BEFORE.items()],
        *[F.sum(weight * F.col(f"_after_{name}")).alias(f"{name}_after") for name in _AFTER],
    )
    with _compiled_methods_only(summed.sparkSession):
        collected = summed.collect()
    scores: dict[Key, _KeyScores] = {}
    for r in collected:
        key = (r[row.MODEL_VERSION], r[SLICE_NAME], r[SLICE_VALUE])
        found = scores.setdefault(key, _KeyScores())
        flag = int(r[FIT_FLAG])
        if flag != 0:
            found.fit_gradient += float(r["g_after"] or 0.0)
            found.fit_curvature += float(r["h_after"] or 0.0)
        if flag != 1:
            found.n_eval += int(r["n"])
            values = {
                name: float(r[name]) if r[name] is not None else float("nan")
                for name in r.asDict()
                if name not in (*keys, BIN_AFTER, "n")
            }
            bin_after = -1 if r[BIN_AFTER] is None else int(r[BIN_AFTER])
            found.bins.append((int(r[row.BIN]), bin_after, values))
    return scores


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
        if scored and not fit.fallback and fit.interior:
            step = newton_step(fit.temperature, scores.fit_gradient, scores.fit_curvature)
            if step is not None:
                parameters["temperature_step"] = step
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
