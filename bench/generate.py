"""Seeded synthetic prediction logs for the benchmark, written once as Parquet and cached.

Every log has ``model_version`` (3 values), ``country`` (50), ``device`` (3), ``tier`` (5) and
``event_date`` (30 days): slice columns of realistic cardinality (a warehouse log's segments). The
binary log adds ``score`` (double, P(y = 1)) and ``label`` (int); the multiclass logs add
``probs`` (array<double> of length K, a softmax of seeded logits) and ``label`` (int in [0, K)).
The ``ctr`` log is binary with a click-through base rate of about 2 %: the true log-odds
~ N(CTR_LOGIT_MEAN, CTR_LOGIT_STD), ``v2`` logs 1.4 × the true probability, ``v1`` and ``v3``
log it as is.

Every random column is ``rand``/``randn`` with its own seed over a fixed number of partitions, so
a (task, rows, seed) triple gives the same log on any machine. A log is written to
``<cache>/<task>_<rows>_<seed>/`` and reused while its ``_SUCCESS`` marker exists.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

DEFAULT_SEED = 5
# Fixed, so that rand(seed) draws the same numbers whatever the session's parallelism; also the
# number of Parquet files of a log.
PARTITIONS = 8
N_VERSIONS = 3
N_COUNTRIES = 50
DEVICES = ("mobile", "desktop", "tablet")
N_DEVICES = len(DEVICES)
N_TIERS = 5
N_DAYS = 30
FIRST_DAY = dt.date(2024, 6, 1)
# Logit scale per version index: calibrated, over-confident, under-confident.
LOGIT_SCALES = (1.0, 2.0, 0.5)
SLICE_COLUMNS = ("model_version", "country", "device", "tier", "event_date")
BINARY_LOG = "binary"
CTR_LOG = "ctr"
# Click-through log: true log-odds ~ N(mean, std) (base rate about 2 %); the score is this
# factor × the true probability per version index (only v2 is miscalibrated: 40 % over).
CTR_LOGIT_MEAN, CTR_LOGIT_STD = -4.3, 0.9
CTR_PREDICTION_FACTORS = (1.0, 1.4, 1.0)


def log_path(cache: Path, task: str, rows: int, seed: int = DEFAULT_SEED) -> Path:
    """Where the log of ``task`` (``binary``, ``ctr``, ``multiclass10``, ``multiclass100``) is
    cached."""
    return cache / f"{task}_{rows}_{seed}"


def ensure_log(
    spark: SparkSession, cache: Path, task: str, rows: int, seed: int = DEFAULT_SEED
) -> Path:
    """Write the log unless it is cached already; return its directory."""
    path = log_path(cache, task, rows, seed)
    if (path / "_SUCCESS").exists():
        return path
    if task == BINARY_LOG:
        frame = binary_log(spark, rows, seed)
    elif task == CTR_LOG:
        frame = ctr_log(spark, rows, seed)
    else:
        frame = multiclass_log(spark, rows, seed, num_classes(task))
    frame.write.mode("overwrite").parquet(str(path))
    return path


def num_classes(task: str) -> int:
    """K of a ``multiclassK`` task name."""
    if not task.startswith("multiclass"):
        raise ValueError(f"not a multiclass task: {task!r}")
    return int(task.removeprefix("multiclass"))


def binary_log(spark: SparkSession, rows: int, seed: int = DEFAULT_SEED) -> DataFrame:
    """``rows`` binary predictions: the slice columns, ``score`` and ``label``."""
    base = _traffic(spark, rows, seed)
    true_logit = F.randn(seed + 10) * 1.8 + 0.3
    scale = F.element_at(F.array(*[F.lit(s) for s in LOGIT_SCALES]), F.col("_v") + 1)
    score = 1.0 / (1.0 + F.exp(-true_logit * scale))
    probability = 1.0 / (1.0 + F.exp(-true_logit))
    with_score = base.select("*", score.alias("score"), probability.alias("_p"))
    label = (F.rand(seed + 11) < F.col("_p")).cast("int")
    return with_score.select(*SLICE_COLUMNS, "score", label.alias("label"))


def ctr_log(spark: SparkSession, rows: int, seed: int = DEFAULT_SEED) -> DataFrame:
    """``rows`` click-through predictions (base rate about 2 %): the slice columns, ``score``
    (the logged click probability, capped at 1) and ``label`` (int, clicked)."""
    base = _traffic(spark, rows, seed)
    true_logit = F.randn(seed + 20) * CTR_LOGIT_STD + CTR_LOGIT_MEAN
    probability = 1.0 / (1.0 + F.exp(-true_logit))
    factor = F.element_at(F.array(*[F.lit(f) for f in CTR_PREDICTION_FACTORS]), F.col("_v") + 1)
    with_truth = base.select("*", probability.alias("_p"))
    score = F.least(F.col("_p") * factor, F.lit(1.0))
    with_score = with_truth.select("*", score.alias("score"))
    label = (F.rand(seed + 21) < F.col("_p")).cast("int")
    return with_score.select(*SLICE_COLUMNS, "score", label.alias("label"))


def multiclass_log(spark: SparkSession, rows: int, seed: int, k: int) -> DataFrame:
    """``rows`` K-class predictions: the slice columns, ``probs`` (length K) and ``label``."""
    base = _traffic(spark, rows, seed)
    logits = F.array(*[F.randn(seed + 100 + j) * 1.5 for j in range(k)])
    scale = F.element_at(F.array(*[F.lit(s) for s in LOGIT_SCALES]), F.col("_v") + 1)
    with_logits = base.select("*", logits.alias("_z"), scale.alias("_scale"))
    probs = _softmax(F.transform(F.col("_z"), lambda z: z * F.col("_scale")))
    true_probs = _softmax(F.col("_z"))
    # Inverse-CDF draw of the label from the true probabilities.
    # One uniform draw per row, repeated K times outside the lambda (see below): rand inside a
    # lambda would be drawn again for every class.
    draws = F.array_repeat(F.rand(seed + 11), F.lit(k))
    below = F.zip_with(_prefix_sums(true_probs), draws, lambda c, u: c < u)
    label = F.size(F.filter(below, lambda is_below: is_below))
    labelled = with_logits.select(
        *SLICE_COLUMNS, probs.alias("probs"), F.least(label, F.lit(k - 1)).alias("label")
    )
    return labelled


# A column expression inside a lambda body is evaluated again for every element (Spark neither
# hoists it nor keeps a materialised column out of the lambda: CollapseProject inlines it), so
# every lambda below reads only its own arguments; a per-row scalar is zipped in as an array.
# That keeps a row O(K) (O(K²) for the prefix sums) instead of O(K⁴), with the same arithmetic in
# the same order, so the same numbers.


def _softmax(logits: Column) -> Column:
    """exp(z − max z) / Σ exp(z − max z), the sum taken left to right."""
    top = F.array_repeat(F.array_max(logits), F.size(logits))
    exps = F.zip_with(logits, top, lambda z, t: F.exp(z - t))
    total = F.aggregate(exps, F.lit(0.0), lambda a, e: a + e)
    return F.zip_with(exps, F.array_repeat(total, F.size(logits)), lambda e, s: e / s)


def _prefix_sums(values: Column) -> Column:
    """[0 + v1, (0 + v1) + v2, …]: element j is aggregate(slice(values, 1, j), 0.0, +)."""
    empty = F.array().cast("array<double>")
    return F.aggregate(
        values,
        empty,
        lambda sums, v: F.concat(
            sums, F.array(F.coalesce(F.try_element_at(sums, F.lit(-1)), F.lit(0.0)) + v)
        ),
    )


def _traffic(spark: SparkSession, rows: int, seed: int) -> DataFrame:
    """The slice columns: skewed countries (Zipf-like), devices, tiers, 30 days, 3 versions."""
    ids = spark.range(0, rows, 1, PARTITIONS)
    version = (F.rand(seed) * N_VERSIONS).cast("int")
    # u² concentrates mass on low country indices: a few big countries and a long tail.
    country = (F.pow(F.rand(seed + 1), F.lit(2.0)) * N_COUNTRIES).cast("int")
    device = (F.rand(seed + 2) * N_DEVICES).cast("int")
    tier = (F.rand(seed + 3) * N_TIERS).cast("int")
    day = (F.rand(seed + 4) * N_DAYS).cast("int")
    return ids.select(
        version.alias("_v"),
        F.concat(F.lit("v"), (version + 1).cast("string")).alias("model_version"),
        F.format_string("C%02d", country).alias("country"),
        F.element_at(F.array(*[F.lit(d) for d in DEVICES]), device + 1).alias("device"),
        F.concat(F.lit("tier"), tier.cast("string")).alias("tier"),
        F.date_add(F.lit(FIRST_DAY), day).alias("event_date"),
    )
