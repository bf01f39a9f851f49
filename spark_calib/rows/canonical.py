"""Input rows → canonical rows: one narrow projection the statistics aggregation groups.

Output columns (internal names, so user column names never collide with ours):
``_reason`` (string, null when valid), ``_model_version`` (string), ``_slice_0`` … ``_slice_{S−1}``
(the slice columns, in ``Config.slice_columns()`` order), ``_weight``, ``_confidence``,
``_correct`` (0/1), ``_brier``, ``_nll`` (doubles, null for invalid rows), ``_bin`` (int, null
for invalid rows) and, when per-class statistics are needed, ``_probs`` (array<double>) and
``_label`` (int).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from spark_calib.config import Config
from spark_calib.rows.binning import bin_index
from spark_calib.rows.columns import input_col
from spark_calib.rows.task_terms import TaskTerms, task_terms
from spark_calib.rows.validation import Check, first_failure, weight_checks

REASON = "_reason"
MODEL_VERSION = "_model_version"
WEIGHT = "_weight"
CONFIDENCE = "_confidence"
CORRECT = "_correct"
BRIER = "_brier"
NLL = "_nll"
BIN = "_bin"
PROBS = "_probs"
LABEL = "_label"


def slice_key(index: int) -> str:
    """Internal name of the index-th slice column."""
    return f"_slice_{index}"


def reason_expression(
    config: Config, types: dict[str, DataType], num_classes: int | None
) -> Column:
    """The invalid reason of a row (null when valid), for the statistics and ``invalid``."""
    return first_failure(_all_checks(config, task_terms(config, types, num_classes)))


def canonical_rows(
    df: DataFrame,
    config: Config,
    types: dict[str, DataType],
    num_classes: int | None,
    with_classes: bool,
) -> DataFrame:
    """Project ``df`` to the canonical columns above (no Spark action)."""
    terms = task_terms(config, types, num_classes)
    weight = _weight(config)
    model_version = (
        input_col(config.columns.model_version).cast("string")
        if config.columns.model_version is not None
        else F.lit(None).cast("string")
    )
    slices = [
        input_col(name).alias(slice_key(index)) for index, name in enumerate(config.slice_columns())
    ]
    raw = [
        first_failure(_all_checks(config, terms)).alias(REASON),
        model_version.alias(MODEL_VERSION),
        *slices,
        weight.alias(WEIGHT),
        terms.confidence.alias(CONFIDENCE),
        terms.correct.alias(CORRECT),
        terms.brier.alias(BRIER),
        (terms.nll if terms.nll is not None else F.lit(None).cast("double")).alias(NLL),
    ]
    if with_classes:
        assert terms.probs is not None and terms.label is not None
        raw += [terms.probs.alias(PROBS), terms.label.alias(LABEL)]
    projected = df.select(*raw)
    valid = F.col(REASON).isNull()
    masked = [
        F.when(valid, F.col(name)).alias(name) for name in (WEIGHT, CONFIDENCE, CORRECT, BRIER, NLL)
    ]
    extra = [F.when(valid, F.col(name)).alias(name) for name in (PROBS, LABEL) if with_classes]
    return projected.select(
        REASON,
        MODEL_VERSION,
        *[slice_key(index) for index in range(len(slices))],
        *masked,
        F.when(
            valid, bin_index(F.col(CONFIDENCE), config.binning.n_bins, config.binning.edges)
        ).alias(BIN),
        *extra,
    )


def _weight(config: Config) -> Column:
    if config.columns.weight is None:
        return F.lit(1.0)
    return input_col(config.columns.weight).cast("double")


def _all_checks(config: Config, terms: TaskTerms) -> list[Check]:
    checks = list(terms.checks)
    if config.columns.weight is not None:
        checks += weight_checks(_weight(config))
    return checks
