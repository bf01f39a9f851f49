"""Drift: a window's metric values against the previous window's and a baseline's.

``window_values`` gives the metrics of a statistics table with their standard errors: the metric's
own ``se`` (``uncertainty.method``: analytic, from n_eff-aware second moments, or the jackknife;
``spark_calib.metrics.uncertainty``), else the row-count model of ``spark_calib.monitoring.noise``
(accuracy, error rate, ECE; used under ``method: none``). ``metric_values`` reads the same rows
from a metrics table already computed from those statistics. ``drift_table`` joins the current
window's values with the previous window's (same model version, slice, class and metric) and with a
baseline's: either the same window's values of ``baseline_model_version``, or the values of the same
model version over a fixed date range (``baseline_values``).

For a reference r (previous or baseline): delta = value − r.value and
z = delta / sqrt(SE² + r.SE²) (null when a metric has no noise model or the denominator is 0).
A change is significant when both windows have n ≥ ``min_n`` rows, |delta| ≥ ``min_delta`` and,
when z is defined, |z| ≥ ``z``: it exceeds the absolute threshold and the sampling noise.
It is null when there is no reference value.

Output columns: model_version, slice_name, slice_value, class, metric, value, n, std_error,
previous_value, previous_n, previous_delta, previous_z, previous_significant, baseline,
baseline_value, baseline_n, baseline_delta, baseline_z, baseline_significant.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_calib.config import Config, ConfigSource, load_config
from spark_calib.config.monitoring import DriftConfig
from spark_calib.metrics.compute import metrics_from_stats
from spark_calib.metrics.output import METRIC, SE, VALUE
from spark_calib.monitoring.noise import NOISE_METRICS, STD_ERROR, standard_errors
from spark_calib.registry import resolve_metrics
from spark_calib.stats import schema as stats
from spark_calib.stats.combine import sum_to_bins

PREVIOUS = "previous"
BASELINE = "baseline"
VALUE_COLUMNS = (*stats.KEY_COLUMNS, METRIC, VALUE, stats.N, STD_ERROR)
COMPARISON_MEASURES = ("value", "n", "delta", "z", "significant")
DRIFT_COLUMNS = (
    *VALUE_COLUMNS,
    *[f"{PREVIOUS}_{measure}" for measure in COMPARISON_MEASURES],
    BASELINE,
    *[f"{BASELINE}_{measure}" for measure in COMPARISON_MEASURES],
)
_METRIC_KEYS = (stats.SLICE_NAME, stats.SLICE_VALUE, stats.CLASS, METRIC)


def window_values(stats_df: DataFrame, config: ConfigSource) -> DataFrame:
    """The drift metrics of ``stats_df`` (``drift_metrics``) with their standard errors:
    ``VALUE_COLUMNS``. Reads the statistics summed to their bins (``sum_to_bins``; with
    uniform bins over the fine cells too)."""
    cfg = load_config(config)
    names = drift_metrics(cfg)
    binned = sum_to_bins(stats_df, keep_cells=cfg.binning.strategy == "equal_mass")
    metrics = metrics_from_stats(binned, cfg.model_copy(update={"metrics": names}))
    return _with_std_error(metrics, binned)


def metric_values(
    metrics: DataFrame, config: ConfigSource, stats_df: DataFrame | None = None
) -> DataFrame:
    """``VALUE_COLUMNS`` of the drift metrics in ``metrics``, a metrics table that ``evaluate``
    (or a rollup) computed from ``stats_df`` with ``config``: the rows ``window_values(stats_df,
    config)`` computes again, read instead. ``std_error`` is the row's ``se``, else the noise
    model's of ``stats_df``; without ``stats_df`` it is the ``se`` alone, which is the same
    when no row of ``NOISE_METRICS`` has a null ``se`` (``needs_noise_model``)."""
    cfg = load_config(config)
    rows = metrics.where(F.col(METRIC).isin(list(drift_metrics(cfg))))
    if stats_df is None:
        return rows.select(
            *[F.col(SE).alias(name) if name == STD_ERROR else name for name in VALUE_COLUMNS]
        )
    return _with_std_error(rows, stats_df)


def needs_noise_model(metrics: DataFrame, config: ConfigSource) -> bool:
    """Whether a drift metric of ``NOISE_METRICS`` in ``metrics`` has a null ``se``, so its
    ``std_error`` comes from the noise model (one small Spark job over ``metrics``)."""
    names = [name for name in drift_metrics(load_config(config)) if name in NOISE_METRICS]
    return (
        bool(names) and not metrics.where(F.col(METRIC).isin(names) & F.col(SE).isNull()).isEmpty()
    )


def _with_std_error(metrics: DataFrame, stats_df: DataFrame) -> DataFrame:
    """``VALUE_COLUMNS`` of ``metrics`` with std_error = se, else the noise model's of
    ``stats_df`` (``standard_errors``: it sums the statistics to their bins itself)."""
    # Renamed keys: both frames may come from stats_df, so equal names would be one column.
    noise = standard_errors(stats_df).select(
        *[F.col(key).alias(f"_noise_{key}") for key in (*stats.KEY_COLUMNS, METRIC)],
        F.col(STD_ERROR),
    )
    keys = [*stats.KEY_COLUMNS, METRIC]
    on = [F.col(key).eqNullSafe(F.col(f"_noise_{key}")) for key in keys]
    joined = metrics.join(noise, on=on, how="left")
    std_error = F.coalesce(F.col(SE), F.col(STD_ERROR)).alias(STD_ERROR)
    return joined.select(*[std_error if name == STD_ERROR else name for name in VALUE_COLUMNS])


def drift_metrics(config: Config) -> tuple[str, ...]:
    """The configured metrics that drift covers: those of the calibration, per-class and
    regression families (computed from the bins), but ``count``. The decision and ranking
    metrics need the confusion cells or the 10,000-bucket score histogram of every window,
    and the exact AUCs the input rows, so they have value alerts only."""
    specs = resolve_metrics(config.task, config.metrics, config.features())
    return tuple(spec.name for spec in specs if spec.drift)


def drift_table(
    current: DataFrame,
    previous: DataFrame | None,
    baseline_values: DataFrame | None,
    config: Config,
) -> DataFrame:
    """``DRIFT_COLUMNS`` for every row of ``current`` (a ``window_values`` frame).

    ``previous`` and ``baseline_values`` are ``window_values`` frames of the previous window
    and of the baseline date range, or None when there is none. With
    ``drift.baseline_model_version`` the baseline comes from ``current`` itself.
    """
    drift = config.drift
    with_previous = _compare(current, previous, PREVIOUS, drift, same_version=True)
    label = drift.baseline_label()
    if drift.baseline_model_version is not None:
        reference = current.where(F.col(stats.MODEL_VERSION) == F.lit(drift.baseline_model_version))
        compared = _compare(with_previous, reference, BASELINE, drift, same_version=False)
    else:
        compared = _compare(with_previous, baseline_values, BASELINE, drift, same_version=True)
    return compared.withColumn(BASELINE, F.lit(label).cast("string")).select(*DRIFT_COLUMNS)


def _compare(
    current: DataFrame,
    reference: DataFrame | None,
    prefix: str,
    drift: DriftConfig,
    *,
    same_version: bool,
) -> DataFrame:
    """``current`` plus ``<prefix>_value``, ``_n``, ``_delta``, ``_z`` and ``_significant``."""
    ref_value, ref_n, ref_se = f"{prefix}_value", f"{prefix}_n", f"_{prefix}_se"
    if reference is None:
        joined = current.select(
            "*",
            F.lit(None).cast("double").alias(ref_value),
            F.lit(None).cast("long").alias(ref_n),
            F.lit(None).cast("double").alias(ref_se),
        )
    else:
        keys = (stats.MODEL_VERSION, *_METRIC_KEYS) if same_version else _METRIC_KEYS
        renamed = reference.select(
            *[F.col(key).alias(f"_ref_{key}") for key in keys],
            F.col(VALUE).alias(ref_value),
            F.col(stats.N).alias(ref_n),
            F.col(STD_ERROR).alias(ref_se),
        )
        on = [F.col(key).eqNullSafe(F.col(f"_ref_{key}")) for key in keys]
        joined = current.join(renamed, on=on, how="left").drop(*[f"_ref_{k}" for k in keys])
    delta = F.col(VALUE) - F.col(ref_value)
    noise = F.sqrt(F.col(STD_ERROR) * F.col(STD_ERROR) + F.col(ref_se) * F.col(ref_se))
    z = F.try_divide(delta, noise)
    return joined.select(
        *current.columns,
        F.col(ref_value),
        F.col(ref_n),
        delta.alias(f"{prefix}_delta"),
        z.alias(f"{prefix}_z"),
        significant(delta, z, F.col(stats.N), F.col(ref_n), drift).alias(f"{prefix}_significant"),
    )


def significant(delta: Column, z: Column, n: Column, ref_n: Column, drift: DriftConfig) -> Column:
    """|delta| ≥ min_delta, |z| ≥ z when z is defined, and n ≥ min_n in both windows
    (null when delta is)."""
    above_noise = F.coalesce(F.abs(z) >= F.lit(drift.z), F.lit(True))
    enough_rows = (n >= F.lit(drift.min_n)) & (ref_n >= F.lit(drift.min_n))
    return F.when(
        delta.isNotNull(), (F.abs(delta) >= F.lit(drift.min_delta)) & above_noise & enough_rows
    )
