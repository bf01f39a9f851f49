"""Apply a recalibration table to rows: one calibrated probability column, Column expressions
only (broadcast joins of the small table, no UDF).

Binary, for a row with score s (top-label: its confidence), z = logit(s) clipped to ±37
(``spark_calib.rows.cells.logit``):
temperature σ(z/T); Platt σ(a + b·z); isotonic the value of the last knot whose cell is at or
before the row's fine cell (the first knot's value below it), the same step map the table's
after metrics score. Multiclass: the probability vector softmax(z/T) of the logits z (or of
log(max(p_k, ε)) from ``columns.probs``), null when the vector is null.

Which parameters: the row's own slice value in the most specific configured slice set (most
columns first, then config order) whose row has ``fallback`` false; else its model version's
``overall`` row. A null, NaN or out-of-[0, 1] binary score or confidence, or a model version
with no ``overall`` row, gives null.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_calib.config import Config, ConfigSource, load_config
from spark_calib.constants import OVERALL_SLICE_NAME
from spark_calib.errors import ConfigError
from spark_calib.rows.arrays import log_probabilities, softmax
from spark_calib.rows.cells import cell_index, logit
from spark_calib.rows.columns import input_col
from spark_calib.slicing.values import slice_name, slice_value_expression

DEFAULT_OUTPUT_COLUMN = "calibrated_score"
TOP_LABEL_OUTPUT_COLUMN = "calibrated_confidence"
MULTICLASS_OUTPUT_COLUMN = "calibrated_probs"
_PARAMETERS = "parameters"
_KNOTS = "knots"


def recalibrate(
    df: DataFrame,
    recalibration_df: DataFrame,
    config: ConfigSource,
    method: str | None = None,
    output_col: str | None = None,
) -> DataFrame:
    """``df`` with ``output_col`` (default ``calibrated_score``; ``calibrated_confidence`` for
    top-label and ``calibrated_probs`` for multiclass): its score mapped by ``method``
    (default: the first of ``recalibration.methods``) with the parameters of its model version
    and slice in ``recalibration_df`` (a ``calibration_recalibration`` table or
    ``result.recalibration``; extra columns such as ``run_date`` are ignored, so filter it to
    one run first).

    Raises ``ConfigError`` when the config has no ``recalibration`` section or ``method`` is
    not one of its methods.
    """
    cfg = load_config(config)
    if cfg.recalibration is None:
        raise ConfigError("recalibrate needs a config with a recalibration section")
    chosen = method if method is not None else cfg.recalibration.methods[0]
    if chosen not in cfg.recalibration.methods:
        raise ConfigError(
            f"method {chosen!r} is not one of recalibration.methods "
            f"{list(cfg.recalibration.methods)}"
        )
    table = recalibration_df.where(F.col("method") == F.lit(chosen))
    version = (
        input_col(cfg.columns.model_version).cast("string")
        if cfg.columns.model_version is not None
        else F.lit(None).cast("string")
    )
    sets = sorted(
        (columns for columns in cfg.slices if columns),
        key=lambda columns: -len(columns),
    )
    joined = df
    found: list[tuple[str, str]] = []
    for index, columns in enumerate([*sets, ()]):
        prefix = f"_recal_{index}_"
        own = table.where(F.col("slice_name") == F.lit(slice_name(columns)))
        if columns:
            own = own.where(~F.col("fallback"))
        else:
            own = own.where(F.col("slice_name") == F.lit(OVERALL_SLICE_NAME))
        own = own.select(
            F.col("model_version").alias(prefix + "version"),
            F.col("slice_value").alias(prefix + "value"),
            F.col(_PARAMETERS).alias(prefix + _PARAMETERS),
            F.col(_KNOTS).alias(prefix + _KNOTS),
        )
        value = slice_value_expression([input_col(name) for name in columns])
        condition = version.eqNullSafe(F.col(prefix + "version")) & (
            value == F.col(prefix + "value")
        )
        joined = joined.join(F.broadcast(own), on=condition, how="left")
        found.append((prefix + _PARAMETERS, prefix + _KNOTS))
    parameters = F.coalesce(*[F.col(name) for name, _ in found])
    knots = F.coalesce(*[F.col(name) for _, name in found])
    if cfg.task == "multiclass":
        logits = _logits(cfg)
        temperature = F.element_at(parameters, F.lit("temperature"))
        scaled = softmax(F.transform(logits, lambda z: z / temperature))
        return joined.select(
            *[input_col(name) for name in df.columns],
            F.when(logits.isNotNull(), scaled).alias(output_col or MULTICLASS_OUTPUT_COLUMN),
        )
    top_label = cfg.task == "top_label"
    scored = cfg.columns.confidence if top_label else cfg.columns.score
    assert scored is not None
    score = input_col(scored).cast("double")
    calibrated = _mapped(chosen, score, parameters, knots)
    valid = score.isNotNull() & ~F.isnan(score) & (score >= 0.0) & (score <= 1.0)
    default = TOP_LABEL_OUTPUT_COLUMN if top_label else DEFAULT_OUTPUT_COLUMN
    return joined.select(
        *[input_col(name) for name in df.columns],
        F.when(valid, calibrated).cast("double").alias(output_col or default),
    )


def _logits(config: Config) -> Column:
    """The logits temperature scaling divides: ``columns.logits``, or log(max(p_k, ε))."""
    columns = config.columns
    if columns.logits is not None:
        return F.transform(input_col(columns.logits), lambda z: z.cast("double"))
    assert columns.probs is not None
    return log_probabilities(input_col(columns.probs), config.nll_eps)


def _mapped(method: str, score: Column, parameters: Column, knots: Column) -> Column:
    """The calibrated probability of ``score`` under the joined parameters or knots."""
    z = logit(score)
    if method == "temperature":
        return _sigmoid(z / F.element_at(parameters, F.lit("temperature")))
    if method == "platt":
        a = F.element_at(parameters, F.lit("a"))
        b = F.element_at(parameters, F.lit("b"))
        return _sigmoid(a + b * z)
    cell = cell_index(score)
    first = F.element_at(knots, 1)["value"]
    return F.aggregate(
        knots, first, lambda acc, knot: F.when(knot["cell"] <= cell, knot["value"]).otherwise(acc)
    )


def _sigmoid(u: Column) -> Column:
    return 1.0 / (1.0 + F.exp(-u))
