"""Statistics → calibration metrics of the binary score's fine cells (no extra pass).

Per key (model_version, slice) and non-empty cell c, in score order (``spark_calib.rows.cells``):
W_c = Σw, C_c = Σw·s, O_c = Σw·y, Q_c = Σw·s², X_c = Σw·s·y, Z_c = Σw·logit(s); W = Σ_c W_c.
All are sums, so the cells of a week are the sums of its days' cells.

- ``ks_calibration`` = max_c |Σ_{c' ≤ c} (C_{c'} − O_{c'})| / W: Gupta et al.'s (2021) KS
  calibration error, max over t of |Σ_{s ≤ t} w(s − y)| / W, evaluated at the cells' upper
  edges. ``error_bound`` = max_c Σ_{i∈c} w|s − y| / W = max_c (C_c − 2X_c + O_c) / W, the most
  the running sum can move inside one cell.
- ``hosmer_lemeshow`` = Σ_g (O_g − E_g)² / (E_g (1 − E_g/W_g)) over the non-empty groups of 10
  equal-mass groups: cell c goes to group g = min(9, ⌊10·(W_{<c} + W_c/2)/W⌋), W_{<c} the weight
  of the cells before it; O_g, E_g = C_g and W_g summed over its cells (with weights: calzone's
  form with n = Σw). ``hosmer_lemeshow_p`` = P(χ²₈ ≥ HL) = e^{−x/2} Σ_{i<4} (x/2)^i / i!
  (exact for 8 degrees of freedom).
- ``calibration_slope`` b and ``calibration_intercept`` a of logit P(y=1) = a + b·logit(s):
  weighted maximum likelihood (Cox 1958) on the pseudo-observations (z̄_c = Z_c/W_c; O_c
  positives, W_c − O_c negatives), by Newton steps from (a, b) = (0, 1): at most
  ``COX_NEWTON_STEPS``, stopping after the first step with |Δa| + |Δb| ≤ ``COX_STEP_TOLERANCE``
  ·(1 + |a| + |b|) (Newton converges quadratically, so the next step would be of the order of
  its square); null when the information matrix is singular (one cell, or all labels equal).
"""

from __future__ import annotations

import math

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_calib.metrics.output import ERROR_BOUND, FAMILY_COLUMNS, METRIC, VALUE, WEIGHT_SUM
from spark_calib.registry import MetricSpec
from spark_calib.stats import schema as stats

HL_GROUPS = 10
HL_DEGREES_OF_FREEDOM = HL_GROUPS - 2
COX_NEWTON_STEPS = 30
COX_STEP_TOLERANCE = 1e-10

_CELL_SUMS = {
    "_w": stats.SUM_WEIGHT,
    "_c": stats.SUM_WEIGHT_CONFIDENCE,
    "_o": stats.SUM_WEIGHT_OUTCOME,
    "_q": stats.SUM_WEIGHT_CONFIDENCE_SQ,
    "_x": stats.SUM_WEIGHT_CONFIDENCE_OUTCOME,
    "_z": stats.SUM_WEIGHT_LOGIT,
}


def cell_sums(stats_df: DataFrame) -> DataFrame:
    """One row per key and non-empty cell: n and the cell sums above (labels summed), with
    W_{<c} (``_w_before``), W (``_w_key``), n of the key (``_n_key``) and the running
    Σ(C − O) (``_run``)."""
    cells = (
        stats_df.where(
            F.col(stats.REASON).isNull()
            & F.col(stats.CLASS).isNull()
            & F.col(stats.CELL).isNotNull()
        )
        .groupBy(*stats.SLICE_KEY_COLUMNS, stats.CELL)
        .agg(
            F.sum(stats.N).alias(stats.N),
            *[F.sum(column).alias(name) for name, column in _CELL_SUMS.items()],
        )
        .where(F.col("_w") > 0.0)
    )
    key = Window.partitionBy(*stats.SLICE_KEY_COLUMNS)
    up = key.orderBy(stats.CELL).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    return cells.select(
        "*",
        (F.sum("_w").over(up) - F.col("_w")).alias("_w_before"),
        F.sum("_w").over(key).alias("_w_key"),
        F.sum(stats.N).over(key).alias("_n_key"),
        F.sum(F.col("_c") - F.col("_o")).over(up).alias("_run"),
    )


def cell_metrics(stats_df: DataFrame, specs: list[MetricSpec]) -> DataFrame:
    """Metric rows of the cell family (``FAMILY_COLUMNS`` plus ``error_bound``) per key."""
    # The fit is one column, read twice below (slope and intercept) but computed once.
    per_key = _per_key(cell_sums(stats_df)).withColumn("_cox", _cox_fit(F.col("_points")))
    cox = F.col("_cox")
    values = {
        "ks_calibration": (
            F.try_divide(F.col("_ks"), F.col("_wk")),
            F.try_divide(F.col("_ks_cell"), F.col("_wk")),
        ),
        "hosmer_lemeshow": (F.col("_hl"), None),
        "hosmer_lemeshow_p": (chi2_sf_8(F.col("_hl")), None),
        "calibration_slope": (cox["b"], None),
        "calibration_intercept": (cox["a"], None),
    }
    entries = F.array(
        *[
            F.struct(
                F.lit(None).cast("string").alias(stats.CLASS),
                F.lit(spec.name).alias(METRIC),
                values[spec.name][0].cast("double").alias(VALUE),
                F.col("_n").cast("long").alias(stats.N),
                F.col("_wk").cast("double").alias(WEIGHT_SUM),
                _or_null(values[spec.name][1]).alias(ERROR_BOUND),
            )
            for spec in specs
        ]
    )
    return per_key.select(*stats.SLICE_KEY_COLUMNS, F.inline(entries)).select(
        *FAMILY_COLUMNS, ERROR_BOUND
    )


def _or_null(bound: Column | None) -> Column:
    return (bound if bound is not None else F.lit(None)).cast("double")


def _per_key(cells: DataFrame) -> DataFrame:
    """Cells → their Hosmer–Lemeshow group → one row per key: HL (``_hl``), the KS maxima, the
    Cox pseudo-observations (``_points``), n (``_n``) and W (``_wk``). Two groupings and no
    join, so null keys (no model_version) need no null-safe conditions."""
    midpoint = (F.col("_w_before") + 0.5 * F.col("_w")) / F.col("_w_key")
    group = F.least(F.floor(midpoint * F.lit(float(HL_GROUPS))), F.lit(HL_GROUPS - 1))
    point = F.struct(
        (F.col("_z") / F.col("_w")).alias("z"), F.col("_o").alias("o"), F.col("_w").alias("w")
    )
    groups = (
        cells.withColumn("_g", group)
        .groupBy(*stats.SLICE_KEY_COLUMNS, "_g")
        .agg(
            F.sum("_w").alias("_wg"),
            F.sum("_c").alias("_e"),
            F.sum("_o").alias("_og"),
            F.max(F.abs("_run")).alias("_ks"),
            F.max(F.col("_c") - 2.0 * F.col("_x") + F.col("_o")).alias("_ks_cell"),
            F.collect_list(point).alias("_points"),
            F.max("_n_key").alias("_n"),
            F.max("_w_key").alias("_wk"),
        )
    )
    expected, observed, weight = F.col("_e"), F.col("_og"), F.col("_wg")
    term = F.try_divide(
        (observed - expected) * (observed - expected), expected * (1.0 - expected / weight)
    )
    return groups.groupBy(*stats.SLICE_KEY_COLUMNS).agg(
        F.sum(term).alias("_hl"),
        F.max("_ks").alias("_ks"),
        F.max("_ks_cell").alias("_ks_cell"),
        F.flatten(F.collect_list("_points")).alias("_points"),
        F.max("_n").alias("_n"),
        F.max("_wk").alias("_wk"),
    )


def chi2_sf_8(x: Column) -> Column:
    """P(χ²₈ ≥ x) = e^{−x/2} (1 + x/2 + (x/2)²/2 + (x/2)³/6), exact for even degrees of freedom."""
    half = x / 2.0
    series = F.lit(0.0)
    for i in range(HL_DEGREES_OF_FREEDOM // 2):
        series = series + F.pow(half, F.lit(float(i))) / F.lit(float(math.factorial(i)))
    return F.when(x.isNotNull(), F.exp(-half) * series)


def _cox_fit(points: Column) -> Column:
    """(a, b) of the weighted logistic fit of the cell pseudo-observations, as a struct; null
    fields when the information matrix is singular."""

    def sums(state: Column) -> Column:
        a, b = state["a"], state["b"]

        def add(acc: Column, p: Column) -> Column:
            z, positives, weight = p["z"], p["o"], p["w"]
            mu = 1.0 / (1.0 + F.exp(-(a + b * z)))
            residual = positives - weight * mu
            info = weight * mu * (1.0 - mu)
            return F.struct(
                (acc["ga"] + residual).alias("ga"),
                (acc["gb"] + residual * z).alias("gb"),
                (acc["haa"] + info).alias("haa"),
                (acc["hab"] + info * z).alias("hab"),
                (acc["hbb"] + info * z * z).alias("hbb"),
            )

        zero = F.struct(*[F.lit(0.0).alias(name) for name in ("ga", "gb", "haa", "hab", "hbb")])
        return F.aggregate(points, zero, add)

    def update(state: Column, s: Column) -> Column:
        det = s["haa"] * s["hbb"] - s["hab"] * s["hab"]
        ok = det > 0.0
        da = (s["hbb"] * s["ga"] - s["hab"] * s["gb"]) / det
        db = (s["haa"] * s["gb"] - s["hab"] * s["ga"]) / det
        scale = 1.0 + F.abs(state["a"]) + F.abs(state["b"])
        small = F.abs(da) + F.abs(db) <= F.lit(COX_STEP_TOLERANCE) * scale
        return F.struct(
            F.when(ok, state["a"] + da).alias("a"),
            F.when(ok, state["b"] + db).alias("b"),
            (~ok | small).alias("done"),
        )

    def step(state: Column, _: Column) -> Column:
        # The step's sums are bound once through a one-element transform: Spark does not share
        # a repeated expression inside a lambda, and each use of s would rescan the cells.
        # CASE WHEN evaluates only the branch it takes, so a converged key skips the sums.
        return F.when(state["done"], state).otherwise(
            F.transform(F.array(sums(state)), lambda s: update(state, s))[0]
        )

    start = F.struct(F.lit(0.0).alias("a"), F.lit(1.0).alias("b"), F.lit(False).alias("done"))
    return F.aggregate(F.sequence(F.lit(1), F.lit(COX_NEWTON_STEPS)), start, step)
