"""Orchestration: input DataFrame → one scan → statistics → metrics and reliability tables."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from spark_calib.config import Config, ConfigSource, load_config
from spark_calib.errors import ConfigError, InvalidRowsError, SchemaError
from spark_calib.metrics.exact_ranking import exact_ranking_metrics
from spark_calib.metrics.finish import (
    LOCAL_FRAME_MAX_ROWS,
    METRICS,
    RELIABILITY,
    Finished,
    finish,
    finished_specs,
    reads_cells,
    statistics_head,
)
from spark_calib.metrics.output import defined_values
from spark_calib.metrics.uncertainty import with_intervals
from spark_calib.recalibration.table import multiclass_recalibration_table, recalibration_table
from spark_calib.registry import EXACT_RANKING, MetricSpec, resolve_metrics
from spark_calib.result import EvaluationResult
from spark_calib.rows.canonical import canonical_rows, with_reason
from spark_calib.rows.columns import input_col
from spark_calib.rows.needs import config_needs
from spark_calib.rows.schema import RESERVED_OUTPUT_COLUMN, check_input_schema
from spark_calib.slice_search.search import search_slices
from spark_calib.slicing.plan import choose_strategy
from spark_calib.stats.aggregate import aggregate_stats
from spark_calib.stats.combine import bin_grain
from spark_calib.stats.counts import (
    VersionCounts,
    reason_totals,
    version_counts_by_reason,
    version_row_counts,
)

# With no non-null array to measure, K is irrelevant: every row is invalid (null_probs).
FALLBACK_NUM_CLASSES = 2


def evaluate(df: DataFrame, config: ConfigSource) -> EvaluationResult:
    """Evaluate calibration of the predictions in ``df`` per model version, slice and class.

    ``config`` is a mapping, a YAML path or a ``Config`` (see the README's config reference).
    Config and schema problems raise ``ConfigError``/``SchemaError`` before any Spark action.
    Then one aggregation scans ``df`` once and its small statistics table is cached. When it
    has at most ``DRIVER_MAX_ROWS`` rows, it comes to the driver whole in that one action, and
    every output (the metrics, reliability, confusion, ROC, thresholds and regression
    calibration tables) is finished there by the NumPy kernels and returned as a local frame;
    otherwise one grouped Arrow pass over the cached statistics finishes them on the workers.
    For multiclass without ``num_classes`` or ``class_names``, K is read from the first
    non-null array (a one-row job).

    With ``recalibration``, the binary and top-label maps are fitted and scored from the
    statistics' fine cells (the driver's copy, else one small collect; no pass over ``df``)
    into ``result.recalibration``, with ``after: rows`` one more pass scoring the temperature and
    Platt maps row by row; the multiclass temperature takes two more passes over ``df`` (its
    logits are not summable).

    With ``slice_search``, the search runs after the scan (at most ``max_level`` more passes
    over ``df``) into ``result.slice_search``, and its ``multicalibration_error`` rows are
    appended to ``result.metrics``.

    Raises ``InvalidRowsError`` (with counts per reason) when the fraction of invalid rows is
    above ``max_invalid_fraction``. Call ``result.unpersist()`` when done with the outputs.
    """
    cfg = load_config(config)
    result, _ = evaluation(
        df, cfg, check=lambda counts: check_invalid_fraction(reason_totals(counts), cfg)
    )
    if cfg.slice_search is None:
        return result
    try:
        search = search_slices(df, cfg)
    except Exception:
        result.unpersist()
        raise
    metrics = result.metrics.unionByName(search.metrics)
    return dataclasses.replace(result, metrics=metrics, slice_search=search)


def check_invalid_fraction(counts: Mapping[str | None, int], cfg: Config, scope: str = "") -> None:
    """``InvalidRowsError`` when the invalid fraction of ``counts`` (reason → rows, None =
    valid) is above ``max_invalid_fraction``; ``scope`` prefixes its message."""
    n_rows = sum(counts.values())
    invalid = {reason: n for reason, n in counts.items() if reason is not None}
    if n_rows and sum(invalid.values()) / n_rows > cfg.max_invalid_fraction:
        raise InvalidRowsError(invalid, n_rows, cfg.max_invalid_fraction, scope)


def evaluation(
    df: DataFrame,
    cfg: Config,
    day: Column | None = None,
    check: Callable[[VersionCounts], None] | None = None,
    on_statistics: Callable[[DataFrame, VersionCounts], None] | None = None,
) -> tuple[EvaluationResult, VersionCounts]:
    """``evaluate``, and the input rows per (model version, reason). ``check`` sees those
    counts right after the scan, before any output is finished; when it raises, the cache is
    released and nothing more runs. ``on_statistics`` then gets the statistics frame (the
    result's ``stats``, already computed) and the same counts, before the outputs are
    finished: a caller can start writing them while the driver finishes. With ``day`` (a
    DATE expression of ``df``), every key's model version is day-keyed
    (``spark_calib.rows.days``): one scan gives each day's statistics and outputs."""
    specs = resolve_metrics(cfg.task, cfg.metrics, cfg.features())
    types = check_input_schema(df, cfg)
    num_classes = _num_classes(df, cfg)
    _check_class_config(cfg, num_classes)
    needs = config_needs(cfg)
    rows = canonical_rows(df, cfg, types, num_classes, needs, day)
    plan = choose_strategy(cfg)
    stats_df = aggregate_stats(rows, cfg, needs.per_class, plan).persist(
        StorageLevel.MEMORY_AND_DISK
    )
    # One action: small statistics come to the driver whole, and every output the kernels
    # finish is computed there from this one table.
    head = statistics_head(stats_df)
    counts = (
        version_row_counts(stats_df, cfg) if head is None else version_counts_by_reason(head, cfg)
    )
    if check is not None:
        try:
            check(counts)
        except Exception:
            stats_df.unpersist()
            raise
    totals = reason_totals(counts)
    n_rows = sum(totals.values())
    invalid_counts = {reason: n for reason, n in totals.items() if reason is not None}
    n_invalid = sum(invalid_counts.values())
    cached = head is None or head.num_rows > LOCAL_FRAME_MAX_ROWS
    if not cached:
        assert head is not None
        # Small statistics on the driver whole: a local frame of them replaces the cache, so
        # reading or writing them starts no job over the cached aggregation.
        local = stats_df.sparkSession.createDataFrame(head, stats_df.schema)
        stats_df.unpersist()
        stats_df = local
    if on_statistics is not None:
        on_statistics(stats_df, counts)
    outputs = _outputs(cfg, specs)
    finished = _finished(stats_df, head, cfg, specs, outputs)
    tables: dict[str, Any] = {
        name: finished.outputs[name] for name in outputs if name not in _OWN_FIELDS
    }
    result = EvaluationResult(
        metrics=_metrics(stats_df, rows, cfg, specs, finished.outputs[METRICS]),
        reliability=finished.outputs[RELIABILITY],
        stats=stats_df,
        invalid=_invalid_rows(df, cfg, types, num_classes, any_invalid=n_invalid > 0),
        n_rows=n_rows,
        invalid_counts=invalid_counts,
        strategy=plan.name,
        num_classes=num_classes,
        config=cfg,
        **tables,
        recalibration=_recalibration(stats_df, rows, cfg, num_classes, head, counts),
        _cached=(*([stats_df] if cached else []), *finished.cached),
    )
    return result, counts


# The outputs that are EvaluationResult fields of their own (the others go by their name).
_OWN_FIELDS = frozenset({METRICS, RELIABILITY})
REGRESSION_CALIBRATION = "regression_calibration"


def _outputs(cfg: Config, specs: list[MetricSpec]) -> tuple[str, ...]:
    """The kernels' outputs of ``cfg``: the metrics, the reliability table, the tables the
    requested names produce, and the regression calibration table of a regression with σ."""
    tables = [spec.table for spec in specs if spec.table]
    if cfg.task == "regression" and "std" in cfg.features():
        tables.append(REGRESSION_CALIBRATION)
    return (METRICS, RELIABILITY, *dict.fromkeys(tables))


def _finished(
    stats_df: DataFrame,
    head: pa.Table | None,
    cfg: Config,
    specs: list[MetricSpec],
    outputs: tuple[str, ...],
) -> Finished:
    """The kernels' outputs, on the driver from ``head`` (every statistics row) or in one
    grouped pass over the statistics: the fine cells when an output reads them, else their
    sum over the cells (``bin_grain``: on a binary task with cells some 25 times fewer rows)."""
    finished = finished_specs(specs)
    source = stats_df if reads_cells(cfg, finished, outputs) else bin_grain(stats_df, cfg)
    return finish(source, cfg, finished, outputs, head)


def _metrics(
    stats_df: DataFrame,
    rows: DataFrame,
    cfg: Config,
    specs: list[MetricSpec],
    finished: DataFrame,
) -> DataFrame:
    """The metrics table: the kernels' rows, and the exact ranking metrics from a second pass
    over the canonical rows when they are requested."""
    exact = [spec for spec in specs if spec.family == EXACT_RANKING]
    if not exact:
        return finished
    exact_metrics = defined_values(exact_ranking_metrics(rows, cfg, exact))
    return finished.unionByName(with_intervals(exact_metrics, stats_df, cfg))


def _recalibration(
    stats_df: DataFrame,
    rows: DataFrame,
    cfg: Config,
    num_classes: int | None,
    head: pa.Table | None,
    counts: VersionCounts,
) -> DataFrame | None:
    """The recalibration table: binary and top-label from the statistics' cells (read from
    ``head`` when the statistics are on the driver), multiclass from the rows (its fit sample's
    rate from each model version's valid rows in ``counts``)."""
    if cfg.recalibration is None:
        return None
    if cfg.task == "multiclass":
        assert num_classes is not None
        valid = {version: n for (version, reason), n in counts.items() if reason is None}
        return multiclass_recalibration_table(rows, cfg, num_classes, valid)
    return recalibration_table(stats_df, cfg, rows, head)


def _check_class_config(cfg: Config, num_classes: int | None) -> None:
    """cost_matrix and class_weights against K once it is known (it may come from the data)."""
    if num_classes is None:
        return
    if cfg.cost_matrix is not None and len(cfg.cost_matrix) != num_classes:
        size = len(cfg.cost_matrix)
        raise ConfigError(f"cost_matrix is {size}×{size} but the input has {num_classes} classes")
    for key in cfg.class_weights or {}:
        try:
            cfg.class_position(key, num_classes)
        except ValueError as error:
            raise ConfigError(str(error)) from None


def _num_classes(df: DataFrame, cfg: Config) -> int | None:
    if cfg.task == "binary":
        return 2
    if cfg.task in ("top_label", "regression"):
        return None
    if cfg.num_classes is not None:
        return cfg.num_classes
    if cfg.class_names is not None:
        return len(cfg.class_names)
    name = cfg.columns.probs or cfg.columns.logits
    assert name is not None
    first = df.where(input_col(name).isNotNull()).select(F.size(input_col(name))).limit(1).collect()
    if not first:
        return FALLBACK_NUM_CLASSES
    inferred = int(first[0][0])
    if inferred < 2:
        raise SchemaError(
            f"cannot infer the number of classes from column {name!r}: its first array has "
            f"length {inferred}; set num_classes"
        )
    return inferred


def _invalid_rows(
    df: DataFrame,
    cfg: Config,
    types: dict[str, DataType],
    num_classes: int | None,
    any_invalid: bool,
) -> DataFrame:
    """Input rows with their reason. Without invalid rows the filter is constant false, which
    Spark folds to an empty relation, so the input is not read again (and the checks are not
    built: building and analysing them costs a few JVM round trips)."""
    if any_invalid:
        reasons = with_reason(df, cfg, types, num_classes, RESERVED_OUTPUT_COLUMN)
        return reasons.where(F.col(RESERVED_OUTPUT_COLUMN).isNotNull())
    return df.select(
        *[input_col(name) for name in df.columns],
        F.lit(None).cast("string").alias(RESERVED_OUTPUT_COLUMN),
    ).where(F.lit(False))
