"""Statistics → regression metrics and the ``regression_calibration`` table.

Per key with e = y − μ: mse = Σ w e² / W, rmse = sqrt(mse), mae = Σ w |e| / W,
r2 = 1 − SSE / SST with SSE = Σ w e² and SST = Σ w y² − (Σ w y)² / W (null when SST ≤
1e-12 · Σ w y², a constant target; negative when worse than predicting the mean),
gaussian_nll = Σ w [½ log(2π σ²) + e² / (2σ²)] / W, coverage_<l> = Σ w [|e| ≤ z_l σ] / W with
z_l = Φ⁻¹((1 + l) / 2), miscalibration_area = mean over l = 0.05, …, 0.95 of
|coverage(l) − l|. Coverage comes from the coverage buckets (``spark_calib.rows.coverage``).

``regression_calibration`` columns: model_version, slice_name, slice_value, level, z,
observed (coverage at the level), gap (observed − level), n, weight_sum.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_calib.config import Config
from spark_calib.constants import REGRESSION_CALIBRATION_LEVELS
from spark_calib.metrics.output import FAMILY_COLUMNS, METRIC, VALUE, WEIGHT_SUM
from spark_calib.registry import MetricSpec
from spark_calib.rows.coverage import interval_levels, z_value
from spark_calib.stats import schema as stats

REGRESSION_CALIBRATION_COLUMNS = (
    *stats.SLICE_KEY_COLUMNS,
    "level",
    "z",
    "observed",
    "gap",
    stats.N,
    WEIGHT_SUM,
)
# SST below this fraction of Σ w y² is rounding noise of a constant target.
CONSTANT_TARGET_TOLERANCE = 1e-12


def coverage_metric_name(level: float) -> str:
    """``coverage_<level>`` with the level as Python prints it (``coverage_0.95``)."""
    return f"coverage_{level}"


def _per_key(stats_df: DataFrame, config: Config) -> DataFrame:
    """Per key: n, W, the regression sums and, with σ, the covered weight at every level."""
    valid = stats_df.where(F.col(stats.REASON).isNull() & F.col(stats.CLASS).isNull())
    weight = F.col(stats.SUM_WEIGHT)
    covered = [
        F.sum(F.when(F.col(stats.BIN) <= j, weight).otherwise(0.0)).alias(f"_cov{j}")
        for j in range(len(interval_levels(config)))
    ]
    sums = {
        "_n": stats.N,
        "_w": stats.SUM_WEIGHT,
        "_y": stats.SUM_WEIGHT_TARGET,
        "_yy": stats.SUM_WEIGHT_TARGET_SQ,
        "_sse": stats.SUM_WEIGHT_SQ_ERROR,
        "_sae": stats.SUM_WEIGHT_ABS_ERROR,
        "_gnll": stats.SUM_WEIGHT_GAUSSIAN_NLL,
    }
    return valid.groupBy(*stats.SLICE_KEY_COLUMNS).agg(
        *[F.sum(column).alias(name) for name, column in sums.items()], *covered
    )


def _coverage(config: Config, level: float) -> Column:
    return F.try_divide(F.col(f"_cov{interval_levels(config).index(level)}"), F.col("_w"))


def regression_metrics(stats_df: DataFrame, config: Config, specs: list[MetricSpec]) -> DataFrame:
    """Metric rows of the regression family for every key."""
    w = F.col("_w")
    mse = F.try_divide(F.col("_sse"), w)
    sst = F.col("_yy") - F.try_divide(F.col("_y") * F.col("_y"), w)
    values: dict[str, Column] = {
        "mse": mse,
        "rmse": F.sqrt(mse),
        "mae": F.try_divide(F.col("_sae"), w),
        "r2": F.when(
            sst > F.lit(CONSTANT_TARGET_TOLERANCE) * F.col("_yy"), 1.0 - F.col("_sse") / sst
        ),
        "gaussian_nll": F.try_divide(F.col("_gnll"), w),
    }
    gaps = [F.abs(_coverage(config, level) - level) for level in REGRESSION_CALIBRATION_LEVELS]
    values["miscalibration_area"] = sum(gaps[1:], gaps[0]) / float(len(gaps))
    named: list[tuple[str, Column]] = []
    for spec in specs:
        if spec.name == "coverage":
            named += [
                (coverage_metric_name(level), _coverage(config, level))
                for level in config.coverage_levels
            ]
        else:
            named.append((spec.name, values[spec.name]))
    entries = F.array(
        *[
            F.struct(
                F.lit(None).cast("string").alias(stats.CLASS),
                F.lit(name).alias(METRIC),
                value.cast("double").alias(VALUE),
                F.col("_n").cast("long").alias(stats.N),
                w.cast("double").alias(WEIGHT_SUM),
            )
            for name, value in named
        ]
    )
    per_key = _per_key(stats_df, config)
    return per_key.select(*stats.SLICE_KEY_COLUMNS, F.inline(entries)).select(*FAMILY_COLUMNS)


def regression_calibration_from_stats(stats_df: DataFrame, config: Config) -> DataFrame:
    """Expected against observed coverage at the 19 levels 0.05..0.95, per key."""
    rows = [
        F.struct(
            F.lit(level).alias("level"),
            F.lit(z_value(level)).alias("z"),
            _coverage(config, level).alias("observed"),
            (_coverage(config, level) - level).alias("gap"),
            F.col("_n").cast("long").alias(stats.N),
            F.col("_w").cast("double").alias(WEIGHT_SUM),
        )
        for level in REGRESSION_CALIBRATION_LEVELS
    ]
    return (
        _per_key(stats_df, config)
        .select(*stats.SLICE_KEY_COLUMNS, F.inline(F.array(*rows)))
        .select(*REGRESSION_CALIBRATION_COLUMNS)
    )
