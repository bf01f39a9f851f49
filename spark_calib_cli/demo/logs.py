"""Seeded synthetic prediction logs for the demo, generated with Spark SQL expressions.

The classification logs have three model versions over the same traffic: ``v1`` is well
calibrated, ``v2`` over-confident (its logits are sharpened), ``v3`` under-confident
(flattened). One segment, ``v1`` on ``country=BR, device=tablet``, has a local calibration
failure: its scores are shifted, while v1 looks fine overall. A few rows have a null score or
probability vector, so the invalid-rows table has something to show.

The binary log also degrades over time: from the tenth of its 14 days on, ``v1`` on
``country=MX`` over-predicts (its logits are shifted), which the demo's alert rules catch. Its
``split`` column holds half of each day's requests out (``val``: the even request ids) for the
demo's recalibration maps to be fitted on, and scored on the other half (``test``).

The segments log (for the slice search) has two versions over the traffic columns plus
``tier`` and ``hour``: ``v2`` is calibrated everywhere, and ``v1`` too except in one segment
that no single column shows, **tablets on the free tier from 20:00** (about 1.25 % of its
rows), where its logits are shifted and it over-predicts. Every country, device, tier and hour
of ``v1`` stays close to calibrated: the failure is diluted in each.

The regression log (a delivery-time estimate with a predictive σ) follows the same story with
the σ: ``v1``'s σ is the true noise level except on BR tablets, where it is too small; ``v2``'s
σ is too small everywhere (over-confident), ``v3``'s too large (under-confident). A few rows
have a null σ.

Every random column comes from ``F.rand``/``F.randn`` with its own seed over a fixed number of
partitions, so a seed gives the same log on any machine.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

DEFAULT_SEED = 20240630
DEFAULT_END_DATE = dt.date(2024, 6, 30)
DEFAULT_DAYS = 14
DEFAULT_BINARY_ROWS = 1_000_000
DEFAULT_MULTICLASS_ROWS = 100_000
DEFAULT_REGRESSION_ROWS = 200_000
DEFAULT_CTR_ROWS = 500_000
DEFAULT_SEGMENTS_ROWS = 400_000
# The segments log spans a week: the demo searches it as one 7-day window.
SEGMENTS_DAYS = 7
# Who was served when (``_traffic``): the first columns of every log.
TRAFFIC_COLUMNS = ("request_id", "event_date", "model_version", "country", "device")
# Fixed, so that rand(seed) draws the same numbers whatever the cluster's parallelism.
PARTITIONS = 4

MODEL_VERSIONS = ("v1", "v2", "v3")
# Logit scale per version: 1 is calibrated, > 1 over-confident, < 1 under-confident.
LOGIT_SCALE = {"v1": 1.0, "v2": 2.2, "v3": 0.45}
COUNTRIES = ("US", "IN", "BR", "DE", "JP", "MX")
COUNTRY_SHARES = (0.30, 0.22, 0.14, 0.12, 0.12, 0.10)
DEVICES = ("mobile", "desktop", "tablet")
DEVICE_SHARES = (0.55, 0.30, 0.15)
BROKEN_VERSION, BROKEN_COUNTRY, BROKEN_DEVICE = "v1", "BR", "tablet"
# Added to the broken segment's logits: v1 scores about 0.3 too high there.
BROKEN_LOGIT_SHIFT = 1.6
# The binary log's recalibration split: request ids ≡ 0 (mod SPLIT_MODULUS) fit the maps.
# From the id, not a rand() draw, so every other column is the same as without it.
SPLIT_MODULUS = 2
FIT_SPLIT, EVAL_SPLIT = "val", "test"
# The binary log's degradation: v1 on MX from day DRIFT_FIRST_DAY (1-based) of the log.
DRIFT_VERSION, DRIFT_COUNTRY = "v1", "MX"
DRIFT_FIRST_DAY = 10
DRIFT_LOGIT_SHIFT = 1.2
# Log-odds of the true probability: mean and spread.
TRUE_LOGIT_MEAN, TRUE_LOGIT_STD = 0.3, 1.8
NULL_SCORE_RATE = 5e-5

# The segments log: v1 fails only on device=tablet ∧ tier=free ∧ hour >= 20; v2 is calibrated.
SEGMENT_VERSIONS = ("v1", "v2")
TIERS = ("free", "plus", "pro")
TIER_SHARES = (0.5, 0.3, 0.2)
HOURS = 24
HIDDEN_VERSION, HIDDEN_DEVICE, HIDDEN_TIER, HIDDEN_FIRST_HOUR = "v1", "tablet", "free", 20
# Added to the hidden segment's logits: v1 scores about 0.2 too high there.
HIDDEN_LOGIT_SHIFT = 1.2

CLASS_NAMES = ("cat", "dog", "bird", "fish")
TRUE_CLASS_LOGIT_STD = 1.6
# Added to the broken segment's logit of the first class.
BROKEN_CLASS_SHIFT = 2.0

# Click-through log: log-odds of the true click probability ~ N(CTR_LOGIT_MEAN, CTR_LOGIT_STD)
# (a base rate of about 2 %); each version logs this factor × the true probability.
CTR_LOGIT_MEAN, CTR_LOGIT_STD = -4.3, 0.9
CTR_PREDICTION_FACTOR = {"v1": 1.0, "v2": 1.4, "v3": 0.75}

# Regression: predicted minutes ~ N(PREDICTION_MEAN, PREDICTION_STD), clipped below; the true
# noise σ grows with the prediction and depends on the device.
PREDICTION_MEAN, PREDICTION_STD, PREDICTION_MIN = 35.0, 10.0, 5.0
NOISE_BASE, NOISE_PER_MINUTE = 1.0, 0.1
DEVICE_NOISE = {"mobile": 1.0, "desktop": 0.8, "tablet": 1.3}
# Reported σ / true σ per version: 1 is calibrated, < 1 over-confident, > 1 under-confident.
STD_SCALE = {"v1": 1.0, "v2": 0.55, "v3": 1.8}
# The broken segment's reported σ / true σ.
BROKEN_STD_SCALE = 0.5


def binary_log(
    spark: SparkSession,
    rows: int = DEFAULT_BINARY_ROWS,
    seed: int = DEFAULT_SEED,
    end_date: dt.date = DEFAULT_END_DATE,
    days: int = DEFAULT_DAYS,
) -> DataFrame:
    """A binary log: ``request_id``, ``event_date``, ``model_version``, ``country``, ``device``,
    ``score`` (P(y=1), double, rarely null), ``label`` (int 0/1) and ``split`` (``val`` for
    the even request ids, ``test`` for the odd ones)."""
    draws = _traffic(spark, rows, seed, end_date, days).select(
        "*",
        F.randn(seed + 10).alias("_z"),
        F.rand(seed + 11).alias("_u_label"),
        F.rand(seed + 12).alias("_u_null"),
    )
    true_logit = F.col("_z") * F.lit(TRUE_LOGIT_STD) + F.lit(TRUE_LOGIT_MEAN)
    model_logit = (
        true_logit * _by_version(LOGIT_SCALE)
        + F.when(_broken_segment(), F.lit(BROKEN_LOGIT_SHIFT)).otherwise(F.lit(0.0))
        + F.when(_drifted_segment(end_date, days), F.lit(DRIFT_LOGIT_SHIFT)).otherwise(F.lit(0.0))
    )
    score = F.when(F.col("_u_null") < F.lit(NULL_SCORE_RATE), F.lit(None)).otherwise(
        _sigmoid(model_logit)
    )
    return draws.select(
        *TRAFFIC_COLUMNS,
        score.cast("double").alias("score"),
        (F.col("_u_label") < _sigmoid(true_logit)).cast("int").alias("label"),
        F.when(F.col("request_id") % F.lit(SPLIT_MODULUS) == F.lit(0), F.lit(FIT_SPLIT))
        .otherwise(F.lit(EVAL_SPLIT))
        .alias("split"),
    )


def ctr_log(
    spark: SparkSession,
    rows: int = DEFAULT_CTR_ROWS,
    seed: int = DEFAULT_SEED,
    end_date: dt.date = DEFAULT_END_DATE,
    days: int = DEFAULT_DAYS,
) -> DataFrame:
    """A click-through log with a low base rate (about 2 %): the traffic columns, ``score``
    (the logged click probability) and ``label`` (int 0/1, clicked). ``v1`` is calibrated,
    ``v2`` logs 1.4 × the true probability (40 % over-prediction), ``v3`` 0.75 ×."""
    draws = _traffic(spark, rows, seed, end_date, days).select(
        "*", F.randn(seed + 10).alias("_z"), F.rand(seed + 11).alias("_u_label")
    )
    truth = _sigmoid(F.col("_z") * F.lit(CTR_LOGIT_STD) + F.lit(CTR_LOGIT_MEAN))
    score = F.least(truth * _by_version(CTR_PREDICTION_FACTOR), F.lit(1.0))
    return draws.select(
        *TRAFFIC_COLUMNS,
        score.cast("double").alias("score"),
        (F.col("_u_label") < truth).cast("int").alias("label"),
    )


def multiclass_log(
    spark: SparkSession,
    rows: int = DEFAULT_MULTICLASS_ROWS,
    seed: int = DEFAULT_SEED + 1,
    end_date: dt.date = DEFAULT_END_DATE,
    days: int = DEFAULT_DAYS,
) -> DataFrame:
    """A multiclass log over ``CLASS_NAMES``: the traffic columns, ``probs`` (array<double>,
    softmax of the version-scaled true logits, rarely null) and ``label`` (int class index,
    drawn from the true probabilities)."""
    k = len(CLASS_NAMES)
    draws = _traffic(spark, rows, seed, end_date, days).select(
        "*",
        *[F.randn(seed + 20 + c).alias(f"_z{c}") for c in range(k)],
        F.rand(seed + 30).alias("_u_label"),
        F.rand(seed + 31).alias("_u_null"),
    )
    true_logits = [F.col(f"_z{c}") * F.lit(TRUE_CLASS_LOGIT_STD) for c in range(k)]
    scale = _by_version(LOGIT_SCALE)
    shift = F.when(_broken_segment(), F.lit(BROKEN_CLASS_SHIFT)).otherwise(F.lit(0.0))
    model_logits = [
        logit * scale + (shift if c == 0 else F.lit(0.0)) for c, logit in enumerate(true_logits)
    ]
    probs = F.when(F.col("_u_null") < F.lit(NULL_SCORE_RATE), F.lit(None)).otherwise(
        F.array(*_softmax(model_logits))
    )
    return draws.select(
        *TRAFFIC_COLUMNS,
        probs.alias("probs"),
        _sample_class(_softmax(true_logits), F.col("_u_label")).alias("label"),
    )


def regression_log(
    spark: SparkSession,
    rows: int = DEFAULT_REGRESSION_ROWS,
    seed: int = DEFAULT_SEED + 2,
    end_date: dt.date = DEFAULT_END_DATE,
    days: int = DEFAULT_DAYS,
) -> DataFrame:
    """A regression log: the traffic columns, ``prediction`` (predicted minutes, double),
    ``target`` (observed minutes = prediction + true σ · N(0, 1), so every version's mean is
    right) and ``std`` (the reported σ: the true σ scaled per version, rarely null)."""
    draws = _traffic(spark, rows, seed, end_date, days).select(
        "*",
        F.randn(seed + 40).alias("_z_prediction"),
        F.randn(seed + 41).alias("_z_noise"),
        F.rand(seed + 42).alias("_u_null"),
    )
    prediction = F.greatest(
        F.col("_z_prediction") * F.lit(PREDICTION_STD) + F.lit(PREDICTION_MEAN),
        F.lit(PREDICTION_MIN),
    )
    true_std = (F.lit(NOISE_BASE) + F.lit(NOISE_PER_MINUTE) * prediction) * _by_device(DEVICE_NOISE)
    scale = F.when(_broken_segment(), F.lit(BROKEN_STD_SCALE)).otherwise(_by_version(STD_SCALE))
    std = F.when(F.col("_u_null") < F.lit(NULL_SCORE_RATE), F.lit(None)).otherwise(true_std * scale)
    return draws.select(
        *TRAFFIC_COLUMNS,
        prediction.alias("prediction"),
        (prediction + true_std * F.col("_z_noise")).alias("target"),
        std.cast("double").alias("std"),
    )


def segments_log(
    spark: SparkSession,
    rows: int = DEFAULT_SEGMENTS_ROWS,
    seed: int = DEFAULT_SEED + 4,
    end_date: dt.date = DEFAULT_END_DATE,
    days: int = SEGMENTS_DAYS,
) -> DataFrame:
    """A binary log for the slice search: the traffic columns over ``SEGMENT_VERSIONS`` (half
    the rows each), ``tier`` (``TIERS`` with ``TIER_SHARES``), ``hour`` (int, uniform over
    0–23), ``score`` (double) and ``label`` (int 0/1).

    With z ~ N(0, 1), the true log-odds are t = ``TRUE_LOGIT_STD``·z + ``TRUE_LOGIT_MEAN``,
    label ~ Bernoulli(σ(t)), and score = σ(t), except for ``v1`` on device=tablet ∧
    tier=free ∧ hour ≥ 20, where score = σ(t + ``HIDDEN_LOGIT_SHIFT``)."""
    draws = _traffic(spark, rows, seed, end_date, days, SEGMENT_VERSIONS).select(
        "*",
        _categorical(F.rand(seed + 5), TIERS, TIER_SHARES).alias("tier"),
        F.floor(F.rand(seed + 6) * F.lit(HOURS)).cast("int").alias("hour"),
        F.randn(seed + 10).alias("_z"),
        F.rand(seed + 11).alias("_u_label"),
    )
    true_logit = F.col("_z") * F.lit(TRUE_LOGIT_STD) + F.lit(TRUE_LOGIT_MEAN)
    hidden = (
        (F.col("model_version") == F.lit(HIDDEN_VERSION))
        & (F.col("device") == F.lit(HIDDEN_DEVICE))
        & (F.col("tier") == F.lit(HIDDEN_TIER))
        & (F.col("hour") >= F.lit(HIDDEN_FIRST_HOUR))
    )
    model_logit = true_logit + F.when(hidden, F.lit(HIDDEN_LOGIT_SHIFT)).otherwise(F.lit(0.0))
    return draws.select(
        *TRAFFIC_COLUMNS,
        "tier",
        "hour",
        _sigmoid(model_logit).cast("double").alias("score"),
        (F.col("_u_label") < _sigmoid(true_logit)).cast("int").alias("label"),
    )


def write_log(frame: DataFrame, path: str) -> None:
    """Overwrite ``path`` with ``frame`` as Parquet partitioned by ``event_date``."""
    frame.write.mode("overwrite").partitionBy("event_date").parquet(path)


def _traffic(
    spark: SparkSession,
    rows: int,
    seed: int,
    end_date: dt.date,
    days: int,
    versions: Sequence[str] = MODEL_VERSIONS,
) -> DataFrame:
    """Who was served when: request_id, event_date, model_version (uniform over
    ``versions``), country, device."""
    draws = spark.range(0, rows, 1, PARTITIONS).select(
        F.col("id").alias("request_id"),
        F.rand(seed + 1).alias("_u_version"),
        F.rand(seed + 2).alias("_u_country"),
        F.rand(seed + 3).alias("_u_device"),
        F.rand(seed + 4).alias("_u_day"),
    )
    uniform = tuple(1.0 / len(versions) for _ in versions)
    return draws.select(
        "request_id",
        F.date_sub(F.lit(end_date), F.floor(F.col("_u_day") * F.lit(days)).cast("int")).alias(
            "event_date"
        ),
        _categorical(F.col("_u_version"), versions, uniform).alias("model_version"),
        _categorical(F.col("_u_country"), COUNTRIES, COUNTRY_SHARES).alias("country"),
        _categorical(F.col("_u_device"), DEVICES, DEVICE_SHARES).alias("device"),
    )


def _categorical(uniform: Column, values: Sequence[str], shares: Sequence[float]) -> Column:
    """The value whose cumulative share first exceeds ``uniform`` (a U[0, 1) column)."""
    choice = F.lit(values[-1])
    cumulative = [sum(shares[: i + 1]) for i in range(len(values) - 1)]
    for value, upper in reversed(list(zip(values[:-1], cumulative, strict=True))):
        choice = F.when(uniform < F.lit(upper), F.lit(value)).otherwise(choice)
    return choice


def _by_version(values: dict[str, float]) -> Column:
    column = F.lit(values[MODEL_VERSIONS[0]])
    for version in MODEL_VERSIONS[1:]:
        column = F.when(F.col("model_version") == F.lit(version), F.lit(values[version])).otherwise(
            column
        )
    return column


def _by_device(values: dict[str, float]) -> Column:
    column = F.lit(values[DEVICES[0]])
    for device in DEVICES[1:]:
        column = F.when(F.col("device") == F.lit(device), F.lit(values[device])).otherwise(column)
    return column


def _broken_segment() -> Column:
    return (
        (F.col("model_version") == F.lit(BROKEN_VERSION))
        & (F.col("country") == F.lit(BROKEN_COUNTRY))
        & (F.col("device") == F.lit(BROKEN_DEVICE))
    )


def drift_start(end_date: dt.date, days: int) -> dt.date:
    """The first event_date of the binary log's degradation (after ``end_date`` when the log
    is shorter than ``DRIFT_FIRST_DAY`` days: then nothing degrades)."""
    return end_date - dt.timedelta(days=days - DRIFT_FIRST_DAY)


def _drifted_segment(end_date: dt.date, days: int) -> Column:
    return (
        (F.col("model_version") == F.lit(DRIFT_VERSION))
        & (F.col("country") == F.lit(DRIFT_COUNTRY))
        & (F.col("event_date") >= F.lit(drift_start(end_date, days)))
    )


def _sigmoid(logit: Column) -> Column:
    return F.lit(1.0) / (F.lit(1.0) + F.exp(-logit))


def _softmax(logits: Sequence[Column]) -> list[Column]:
    # Subtracting the row max keeps exp() finite for any logit scale.
    top = F.greatest(*logits)
    exps = [F.exp(logit - top) for logit in logits]
    total = exps[0]
    for term in exps[1:]:
        total = total + term
    return [term / total for term in exps]


def _sample_class(probs: Sequence[Column], uniform: Column) -> Column:
    """Inverse-CDF draw: the number of cumulative probabilities at or below ``uniform``."""
    index = F.lit(0)
    cumulative = probs[0]
    for prob in probs[1:]:
        index = index + (uniform >= cumulative).cast("int")
        cumulative = cumulative + prob
    return index
