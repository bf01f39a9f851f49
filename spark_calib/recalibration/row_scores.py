"""Exact "after" metrics of the binary and top-label logistic maps (``recalibration.after:
rows``): one pass over the evaluated canonical rows with each key's fitted map joined.

A map is u = a + b·z (temperature: a = 0, b = 1/T; Platt: a, b) on the row's clipped logit
z = logit(s) (``spark_calib.rows.cells.logit``, the z the maps are fitted on), p = σ(u), with y
the row's outcome (binary: the label; top-label: correct). Per key (model version × slice set
× value, ``overall`` included), method and after bin b = bin(p) of the configured bins, over
the evaluated rows (fit flag ≠ 1): n, W_b = Σw, O_b = Σw·y, P_b = Σw·p, Σw·(softplus(u) − y·u)
(the logistic NLL, no ε), Σw·(p − y)² and Σw·[decision right] (binary: [p ≥ threshold] = y).

From them, with W = Σ_b W_b: ECE = Σ_b |O_b − P_b| / W, NLL, Brier and accuracy = Σ_b sums / W
(top-label: accuracy before, as the map leaves the prediction alone), and the reliability bins
(b, W_b, P_b/W_b, O_b/W_b): row by row, so their bound is 0.

Each row is copied once per slice set and joined to one table row per (key, method); the
isotonic map is constant on every fine cell, so the cells score it exactly and it is not in
this pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_calib.config import Config
from spark_calib.local_data import local_dataframe
from spark_calib.recalibration.keyed_rows import (
    SLICE_NAME,
    SLICE_VALUE,
    join_key,
    labelled,
    slice_key_columns,
    table_slice_sets,
)
from spark_calib.recalibration.points import Key
from spark_calib.recalibration.scores import SCORES, ReliabilityBin, reliability_bins
from spark_calib.rows import canonical as row
from spark_calib.rows.binning import bin_index

METHOD = "_method"
_A = "_a"
_B = "_b"
_BIN_AFTER = "_bin_after"
_SUMS = ("w", "o", "p", "nll", "brier", "right")
# (model version, slice name, slice value, method) → (a, b) of u = a + b·z.
LogisticMaps = dict[tuple[str | None, str, str, str], tuple[float, float]]


@dataclass(frozen=True)
class RowScores:
    """One key and method's exact after scores (``SCORES``; None when the evaluated weight is
    0) and its after reliability bins."""

    values: dict[str, float | None]
    reliability: list[ReliabilityBin]


def logistic_row_scores(
    rows: DataFrame, config: Config, maps: LogisticMaps
) -> dict[tuple[Key, str], RowScores]:
    """(key, method) → its exact after scores on the evaluated rows, for every (key, method)
    of ``maps`` that has evaluated rows. One Spark job, its result collected as Arrow (at most
    keys × methods × bins rows)."""
    if not maps:
        return {}
    spark = rows.sparkSession
    table = local_dataframe(
        spark,
        [(*key, method, a, b) for (*key, method), (a, b) in maps.items()],
        f"_v string, _n string, _w string, {METHOD} string, {_A} double, {_B} double",
    )
    evaluated = rows.where(F.col(row.REASON).isNull())
    if row.FIT in rows.columns:
        evaluated = evaluated.where(F.col(row.FIT) != 1)
    base = evaluated.select(
        row.MODEL_VERSION,
        *slice_key_columns(config),
        row.WEIGHT,
        row.LOGIT,
        row.OUTCOME,
    )
    joined = join_key(labelled(base, config, table_slice_sets(config)), table).where(
        F.col(METHOD).isNotNull()
    )
    u = F.col(_A) + F.col(_B) * F.col(row.LOGIT)
    y = F.col(row.OUTCOME)
    p = 1.0 / (1.0 + F.exp(-u))
    terms = joined.select(
        row.MODEL_VERSION,
        SLICE_NAME,
        SLICE_VALUE,
        METHOD,
        row.WEIGHT,
        y.alias("_y"),
        u.alias("_u"),
        p.alias("_p"),
    )
    weight, outcome, logit, probability = F.col(row.WEIGHT), F.col("_y"), F.col("_u"), F.col("_p")
    summed = (
        terms.withColumn(
            _BIN_AFTER, bin_index(probability, config.binning.n_bins, config.binning.edges)
        )
        .groupBy(row.MODEL_VERSION, SLICE_NAME, SLICE_VALUE, METHOD, _BIN_AFTER)
        .agg(
            F.sum(weight).alias("w"),
            F.sum(weight * outcome).alias("o"),
            F.sum(weight * probability).alias("p"),
            F.sum(weight * (_softplus(logit) - outcome * logit)).alias("nll"),
            F.sum(weight * (probability - outcome) * (probability - outcome)).alias("brier"),
            F.sum(weight * _right(config, probability, outcome)).alias("right"),
        )
    )
    collected = summed.toArrow()
    return _scores(collected.to_pydict(), config)


def _softplus(u: Column) -> Column:
    """log(1 + e^u) = max(u, 0) + log1p(e^{−|u|}), which never overflows."""
    return F.greatest(u, F.lit(0.0)) + F.log1p(F.exp(-F.abs(u)))


def _right(config: Config, probability: Column, outcome: Column) -> Column:
    """1 where the decision after the map is right: binary [p ≥ threshold] = y; top-label the
    row's outcome (correct), as the map keeps the prediction."""
    if config.task == "top_label":
        return outcome
    predicted = (probability >= F.lit(config.threshold)).cast("double")
    return F.when(predicted == outcome, F.lit(1.0)).otherwise(F.lit(0.0))


def _scores(columns: dict[str, list], config: Config) -> dict[tuple[Key, str], RowScores]:
    """Per (key, method): the after scores and bins from the collected per-bin sums."""
    positions: dict[tuple[Key, str], list[int]] = {}
    keys = zip(
        columns[row.MODEL_VERSION],
        columns[SLICE_NAME],
        columns[SLICE_VALUE],
        columns[METHOD],
        strict=True,
    )
    for index, (version, name, value, method) in enumerate(keys):
        positions.setdefault(((version, name, value), method), []).append(index)
    arrays = {name: np.asarray(columns[name], dtype=float) for name in _SUMS}
    bins = np.asarray(columns[_BIN_AFTER], dtype=np.int64)
    found: dict[tuple[Key, str], RowScores] = {}
    for entry, indices in positions.items():
        chosen = np.asarray(indices)
        sums = {name: values[chosen] for name, values in arrays.items()}
        total = float(sums["w"].sum())
        n_bins = config.binning.n_bins
        if total <= 0.0:
            found[entry] = RowScores(dict.fromkeys(SCORES), [])
            continue
        gap = np.bincount(bins[chosen], sums["o"] - sums["p"], minlength=n_bins)
        found[entry] = RowScores(
            {
                "ece": float(np.abs(gap).sum() / total),
                "nll": float(sums["nll"].sum() / total),
                "brier": float(sums["brier"].sum() / total),
                "accuracy": float(sums["right"].sum() / total),
            },
            reliability_bins(bins[chosen], sums["w"], sums["p"], sums["o"], n_bins),
        )
    return found
