"""``search_slices``: where calibration breaks, over crossed segments nobody named.

One Spark job per level (at most ``max_level``), each one pass over the input rows, one more
before them when a column is cut at quantiles (``bins``), and with coarse cells
(``Lattice.coarse``) one refinement pass after them, repeated while it finds segments to score
again from fine cells (``spark_calib.slice_search.rows``); the lattice, pruning and report run
on the driver over the passes' per-segment scores (``spark_calib.slice_search.lattice``). See
``docs/slice_search.md``.

Output tables (Spark DataFrames built on the driver from at most ``top_k`` rows per version):

``slices`` (the ``calibration_slice_search`` table): model_version, rank (1 = worst), level
(predicates in the conjunction), slice_name, slice_value (the slices' encoding), n, weight_sum,
score_name, score (ecce, calibration_in_the_large or ece_excess: the measure ``score`` ranks
by), se (its standard deviation under perfect calibration: σ = √Σw²s(1−s)/W, or
ece_excess_se), z (score/se: ecce_sigma, the signed citl z, or ece_excess_z),
ecce, ecce_bound (the row ECCE is in [ecce, ecce + ecce_bound]), ecce_sigma, ece,
calibration_in_the_large, calibration_ratio, mean_prediction, mean_label, p_value, p_adjusted,
significant.

``summary``: one row per model version: segments_tested (m), segments_scored, segments_pruned,
levels_searched, significant_slices, multicalibration_error (the largest ecce_sigma over every
segment scored, the overall one included: MCGrad's MCE on the sigma scale),
multicalibration_error_p (its p-value, not adjusted, as MCGrad reports it), worst_slice_name,
worst_slice_value.

``reliability``: model_version, rank (0 for the version's overall segment), bin, weight,
mean_prediction, mean_label: each reported slice's M uniform bins (M = binning.n_bins).

``metrics``: per model version, the metrics table's rows (``METRICS_ARROW_SCHEMA``, slice
``overall``, class null) of ``multicalibration_error`` (as in ``summary``, with
``error_bound`` = max over every segment scored of (ECCE + ecce_bound)/σ, minus it: the rows'
MCE lies in [value, value + error_bound]) and ``multicalibration_error_p`` (its p-value); n
and weight_sum are the version's. ``evaluate`` appends them to its metrics.

``segments`` (an Arrow table on the driver, for audits and tests): every segment scored, the
overall ones (level 0) included: model_version, level, slice_name, slice_value, z, p_value,
refined (false: scored from coarse cells only, so ecce, ecce_sigma, z and p_value are the
coarse bounds), then the kernel's columns
(``spark_calib.kernels.multicalibration.SEGMENT_COLUMNS``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from spark_calib.config import Config
from spark_calib.config.load import ConfigSource, load_config
from spark_calib.constants import OVERALL_SLICE_NAME, OVERALL_SLICE_VALUE
from spark_calib.errors import ConfigError
from spark_calib.kernels.multicalibration import SEGMENT_COLUMNS
from spark_calib.kernels.output_columns import (
    ERROR_BOUND,
    METRIC,
    METRICS_ARROW_SCHEMA,
    MODEL_VERSION,
    SLICE_NAME,
    SLICE_VALUE,
    VALUE,
    WEIGHT_SUM,
    N,
    spark_ddl,
)
from spark_calib.slice_search.lattice import (
    Lattice,
    LevelCount,
    Segment,
    sigma_lower,
    sigma_upper,
)
from spark_calib.slice_search.rows import (
    COMBO,
    cut_edges,
    level_segments,
    predicate_column,
    search_rows,
)

MULTICALIBRATION_ERROR = "multicalibration_error"
MULTICALIBRATION_ERROR_P = "multicalibration_error_p"
SLICE_SEARCH_SCHEMA = pa.schema(
    [
        ("model_version", pa.string()),
        ("rank", pa.int32()),
        ("level", pa.int32()),
        ("slice_name", pa.string()),
        ("slice_value", pa.string()),
        ("n", pa.int64()),
        ("weight_sum", pa.float64()),
        ("score_name", pa.string()),
        ("score", pa.float64()),
        ("se", pa.float64()),
        ("z", pa.float64()),
        ("ecce", pa.float64()),
        ("ecce_bound", pa.float64()),
        ("ecce_sigma", pa.float64()),
        ("ece", pa.float64()),
        ("calibration_in_the_large", pa.float64()),
        ("calibration_ratio", pa.float64()),
        ("mean_prediction", pa.float64()),
        ("mean_label", pa.float64()),
        ("p_value", pa.float64()),
        ("p_adjusted", pa.float64()),
        ("significant", pa.bool_()),
    ]
)
SUMMARY_SCHEMA = pa.schema(
    [
        ("model_version", pa.string()),
        ("segments_tested", pa.int64()),
        ("segments_scored", pa.int64()),
        ("segments_pruned", pa.int64()),
        ("levels_searched", pa.int32()),
        ("significant_slices", pa.int64()),
        ("multicalibration_error", pa.float64()),
        ("multicalibration_error_p", pa.float64()),
        ("worst_slice_name", pa.string()),
        ("worst_slice_value", pa.string()),
    ]
)
RELIABILITY_SCHEMA = pa.schema(
    [
        ("model_version", pa.string()),
        ("rank", pa.int32()),
        ("bin", pa.int32()),
        ("weight", pa.float64()),
        ("mean_prediction", pa.float64()),
        ("mean_label", pa.float64()),
    ]
)


@dataclass(frozen=True)
class SliceSearchResult:
    """The search's tables (module docstring) and what each level did."""

    slices: DataFrame
    summary: DataFrame
    reliability: DataFrame
    segments: pa.Table
    levels: tuple[LevelCount, ...]
    metrics: DataFrame


def search_slices(
    df: DataFrame,
    config: ConfigSource,
    progress: Callable[[str], None] | None = None,
) -> SliceSearchResult:
    """Search ``config.slice_search``'s crossed segments of ``df`` for miscalibration, per model
    version. One Spark job per level, one pass over ``df`` each (one more for the quantiles
    of ``bins`` columns, and the refinement passes after coarse levels); ``progress`` (if
    given) hears one line per level and per refinement pass."""
    cfg = load_config(config)
    search = cfg.slice_search
    if search is None:
        raise ConfigError("the config has no slice_search section: name its candidate columns")
    names = search.column_names()
    say = progress or (lambda _: None)
    edges = cut_edges(df, cfg)
    rows = search_rows(df, cfg, edges)
    lattice = Lattice(search)
    combos = lattice.first_level()
    say(f"slice search level 1: {len(names)} columns")
    width = search.max_level
    lattice.add(level_segments(rows, combos, None, cfg.binning.n_bins, width))
    for level in range(2, search.max_level + 1):
        combos, candidates = lattice.next_level()
        count = lattice.levels[-1]
        say(
            f"slice search level {level}: {count.candidates} candidates"
            f" ({count.pruned} pruned by bound)"
        )
        if not candidates:
            break
        table = _candidates(candidates, width)
        coarse = lattice.coarse
        segments = level_segments(rows, combos, table, cfg.binning.n_bins, width, coarse=coarse)
        lattice.add(segments, refined=not coarse)
    while lattice.coarse:
        combos, candidates = lattice.refinement()
        if not candidates:
            break
        say(f"slice search: {len(candidates)} segments scored again from fine cells")
        table = _candidates(candidates, width)
        lattice.add(level_segments(rows, combos, table, cfg.binning.n_bins, width))
    return _result(df.sparkSession, lattice, cfg, names)


def _candidates(candidates: list[tuple[str | None, int, tuple[int, ...]]], width: int) -> pa.Table:
    """The candidate rows as ``level_segments`` reads them (codes past a segment's level 0)."""
    return pa.table(
        {
            "_model_version": pa.array([c[0] for c in candidates], pa.string()),
            COMBO: pa.array([c[1] for c in candidates], pa.int32()),
            **{
                predicate_column(p): pa.array(
                    [c[2][p] if p < len(c[2]) else 0 for c in candidates], pa.int64()
                )
                for p in range(width)
            },
        }
    )


def _result(
    spark: SparkSession, lattice: Lattice, cfg: Config, names: list[str]
) -> SliceSearchResult:
    search = cfg.slice_search
    assert search is not None
    slices: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    reliability: list[dict[str, Any]] = []
    metrics: list[dict[str, Any]] = []
    for version in lattice.versions():
        reported = lattice.report(version)
        overall = lattice.overall[version]
        for rank, segment in enumerate(reported, start=1):
            slices.append(_slice_row(lattice, segment, rank, names, search.score))
        for rank, segment in [(0, overall), *enumerate(reported, start=1)]:
            reliability.extend(_bins(version, rank, segment))
        scored = [s for s in lattice.scored.values() if s.version == version]
        every = [overall, *scored]
        worst = max(every, key=lambda s: sigma_lower(s.scores))
        error, error_p = _multicalibration_error(worst)
        summary.append(
            {
                "model_version": version,
                "segments_tested": lattice.tested(version),
                "segments_scored": len(scored),
                "segments_pruned": lattice.pruned[version],
                "levels_searched": max((s.level for s in scored), default=0),
                "significant_slices": sum(1 for s in scored if s.significant),
                "multicalibration_error": error,
                "multicalibration_error_p": error_p,
                "worst_slice_name": lattice.slice_name(worst, names),
                "worst_slice_value": worst.slice_value,
            }
        )
        metrics.extend(_metric_rows(version, overall, worst, every))
    return SliceSearchResult(
        slices=_frame(spark, slices, SLICE_SEARCH_SCHEMA),
        summary=_frame(spark, summary, SUMMARY_SCHEMA),
        reliability=_frame(spark, reliability, RELIABILITY_SCHEMA),
        segments=_segments(lattice, names),
        levels=tuple(lattice.levels),
        metrics=_frame(spark, metrics, METRICS_ARROW_SCHEMA),
    )


def _metric_rows(
    version: str | None, overall: Segment, worst: Segment, every: list[Segment]
) -> list[dict[str, Any]]:
    """The version's ``multicalibration_error`` and ``multicalibration_error_p`` rows (null
    when no segment has a weight, as a metric over a zero denominator is)."""
    value, p_value = _multicalibration_error(worst)
    upper = max(sigma_upper(s.scores) for s in every)
    bound = None if value is None else 0.0 if math.isinf(value) else upper - value
    common = {
        MODEL_VERSION: version,
        SLICE_NAME: OVERALL_SLICE_NAME,
        SLICE_VALUE: OVERALL_SLICE_VALUE,
        N: int(overall.scores["n"]),
        WEIGHT_SUM: overall.scores["weight_sum"],
    }
    return [
        {**common, METRIC: MULTICALIBRATION_ERROR, VALUE: value, ERROR_BOUND: bound},
        {**common, METRIC: MULTICALIBRATION_ERROR_P, VALUE: p_value},
    ]


def _multicalibration_error(worst: Segment) -> tuple[float | None, float | None]:
    """The MCE and its p-value from the segment with the largest sigma-scale ECCE; both None
    when no segment has a weight (``sigma_lower`` is −∞ then)."""
    value = sigma_lower(worst.scores)
    if value == -math.inf:
        return None, None
    return value, worst.scores["ecce_p"]


def _slice_row(
    lattice: Lattice, segment: Segment, rank: int, names: list[str], score: str
) -> dict[str, Any]:
    s = segment.scores
    value, se, z = {
        "ecce_sigma": ("ecce", "sigma", "ecce_sigma"),
        "calibration_in_the_large": ("calibration_in_the_large", "sigma", "citl_z"),
        "ece_excess": ("ece_excess", "ece_excess_se", "ece_excess_z"),
    }[score]
    return {
        "model_version": segment.version,
        "rank": rank,
        "level": segment.level,
        "slice_name": lattice.slice_name(segment, names),
        "slice_value": segment.slice_value,
        "n": int(s["n"]),
        "weight_sum": s["weight_sum"],
        "score_name": "ecce" if score == "ecce_sigma" else score,
        "score": s[value],
        "se": s[se],
        "z": s[z],
        "ecce": s["ecce"],
        "ecce_bound": s["ecce_bound"],
        "ecce_sigma": s["ecce_sigma"],
        "ece": s["ece"],
        "calibration_in_the_large": s["calibration_in_the_large"],
        "calibration_ratio": s["calibration_ratio"],
        "mean_prediction": s["mean_prediction"],
        "mean_label": s["mean_label"],
        "p_value": segment.p_value,
        "p_adjusted": segment.p_adjusted,
        "significant": segment.significant,
    }


def _bins(version: str | None, rank: int, segment: Segment) -> list[dict[str, Any]]:
    s = segment.scores
    return [
        {
            "model_version": version,
            "rank": rank,
            "bin": index,
            "weight": weight,
            "mean_prediction": prediction,
            "mean_label": label,
        }
        for index, (weight, prediction, label) in enumerate(
            zip(s["bin_weight"], s["bin_prediction"], s["bin_label"], strict=True)
        )
        if weight and weight > 0
    ]


def _segments(lattice: Lattice, names: list[str]) -> pa.Table:
    every = [*lattice.overall.values(), *lattice.scored.values()]
    columns: dict[str, list[Any]] = {
        "model_version": [s.version for s in every],
        "level": [s.level for s in every],
        "slice_name": [lattice.slice_name(s, names) for s in every],
        "slice_value": [s.slice_value for s in every],
        "z": [s.z for s in every],
        "p_value": [s.p_value for s in every],
        "refined": [s.refined for s in every],
    }
    for name in SEGMENT_COLUMNS:
        columns[name] = [s.scores[name] for s in every]
    return pa.table(columns)


def _frame(spark: SparkSession, rows: list[dict[str, Any]], schema: pa.Schema) -> DataFrame:
    table = pa.Table.from_pylist(rows, schema=schema)
    return spark.createDataFrame(table, spark_ddl(schema))
