"""Input rows → canonical rows: the narrow columns the statistics aggregation groups.

Output columns (internal names, so user column names never collide with ours):
``_reason`` (string, null when valid), ``_model_version`` (string), ``_slice_0`` … ``_slice_{S−1}``
(the slice columns, in ``Config.slice_columns()`` order), ``_weight`` and, null for invalid rows:

- classification: ``_confidence`` (c, the calibration probability), ``_outcome`` (o),
  ``_correct`` (0/1), ``_brier``, ``_nll``, the moment terms ``_weight_term`` (w, summed to
  Σw²), ``_confidence_sq`` (c²), ``_confidence_outcome`` (c·o) and ``_spiegelhalter`` (w(1 −
  2c)²c(1 − c), summed to Σw²(1 − 2c)²c(1 − c)) (doubles) and ``_bin`` (int, the bin of c);
- regression: ``_target``, ``_sq_error``, ``_abs_error`` and, with σ, ``_gaussian_nll`` and
  ``_bin`` (the coverage bucket, ``spark_calib.rows.coverage``);
- as ``RowNeeds`` asks: ``_probs`` (array<double>) and ``_label`` (int) for per-class items;
  ``_true_class`` and ``_predicted_class`` (int class indices); ``_positive`` (y of a binary
  row, 0/1: summed to Σ y and Σw·y) and ``_positive_nll`` (y·nll); ``_cell`` (the fine cell of
  the binary score, ``spark_calib.rows.cells``) and ``_logit`` (its clipped logit);
  ``_threshold_bin`` (how many configured thresholds the score reaches); ``_fit`` (1 for a
  recalibration fit row, 0 for an evaluated row, ``spark_calib.rows.fit_rows``); ``_cost``
  (Σ_k p_k C[y, k]); ``_score``; ``_logits`` (array<double>: the logits, or log(max(p_k, ε)))
  and ``_label`` for multiclass temperature scaling, with ``_row_code`` (xxhash64 of the input
  columns the config reads, on invalid rows too) that chooses its fit sample.
"""

from __future__ import annotations

from typing import TypeVar

from pyspark.sql import Column, DataFrame

# Col: pyspark's functions, for the first projection over user columns; F: the same names
# writing internal SQL text, for the terms over the renamed ones.
from pyspark.sql import functions as Col
from pyspark.sql.types import DataType, MapType

from spark_calib.config import Config
from spark_calib.rows import internal_sql as F
from spark_calib.rows import sql_statement as Q
from spark_calib.rows.arrays import array_sum
from spark_calib.rows.binning import bin_index
from spark_calib.rows.cells import cell_index, logit
from spark_calib.rows.columns import input_col
from spark_calib.rows.coverage import coverage_bucket, interval_levels
from spark_calib.rows.days import day_keyed_version
from spark_calib.rows.fit_rows import fit_condition
from spark_calib.rows.inputs import Inputs
from spark_calib.rows.internal_sql import Sql, column
from spark_calib.rows.needs import RowNeeds
from spark_calib.rows.task_terms import TaskTerms, task_terms
from spark_calib.rows.validation import Check, first_failure, weight_checks

REASON = "_reason"
MODEL_VERSION = "_model_version"
WEIGHT = "_weight"
CONFIDENCE = "_confidence"
CORRECT = "_correct"
OUTCOME = "_outcome"
WEIGHT_TERM = "_weight_term"
CONFIDENCE_SQ = "_confidence_sq"
CONFIDENCE_OUTCOME = "_confidence_outcome"
SPIEGELHALTER = "_spiegelhalter"
BRIER = "_brier"
NLL = "_nll"
BIN = "_bin"
PROBS = "_probs"
LABEL = "_label"
TRUE_CLASS = "_true_class"
PREDICTED_CLASS = "_predicted_class"
CELL = "_cell"
LOGIT = "_logit"
POSITIVE = "_positive"
POSITIVE_NLL = "_positive_nll"
THRESHOLD_BIN = "_threshold_bin"
FIT = "_fit"
COST = "_cost"
SCORE = "_score"
LOGITS = "_logits"
ROW_CODE = "_row_code"
TARGET = "_target"
SQ_ERROR = "_sq_error"
ABS_ERROR = "_abs_error"
GAUSSIAN_NLL = "_gaussian_nll"
BUCKET = "_bucket"
# w·x terms, summed to Σw²·x: the second moments of the standard errors.
W_OUTCOME = "_w_outcome"
W_CONFIDENCE = "_w_confidence"
W_CONFIDENCE_SQ = "_w_confidence_sq"
W_CONFIDENCE_OUTCOME = "_w_confidence_outcome"
W_CORRECT = "_w_correct"
W_BRIER = "_w_brier"
W_BRIER_SQ = "_w_brier_sq"
W_NLL = "_w_nll"
W_NLL_SQ = "_w_nll_sq"

# Columns summed as Σ w·term by the aggregation (when present in the canonical rows).
TERM_COLUMNS = (
    CONFIDENCE,
    CORRECT,
    BRIER,
    NLL,
    COST,
    TARGET,
    SQ_ERROR,
    ABS_ERROR,
    GAUSSIAN_NLL,
    OUTCOME,
    WEIGHT_TERM,
    CONFIDENCE_SQ,
    CONFIDENCE_OUTCOME,
    SPIEGELHALTER,
    LOGIT,
    POSITIVE,
    POSITIVE_NLL,
    W_OUTCOME,
    W_CONFIDENCE,
    W_CONFIDENCE_SQ,
    W_CONFIDENCE_OUTCOME,
    W_CORRECT,
    W_BRIER,
    W_BRIER_SQ,
    W_NLL,
    W_NLL_SQ,
)
# Integer grouping keys besides the slices (null when absent for a row or a task).
INDEX_KEYS = (TRUE_CLASS, PREDICTED_CLASS, BIN, CELL, THRESHOLD_BIN, BUCKET, FIT)


def slice_key(index: int) -> str:
    """Internal name of the index-th slice column."""
    return f"_slice_{index}"


def with_reason(
    df: DataFrame,
    config: Config,
    types: dict[str, DataType],
    num_classes: int | None,
    name: str,
) -> DataFrame:
    """``df``'s columns and ``name``, the row's invalid reason (null when valid): the same
    checks, in the same order, as the statistics' ``_reason``."""
    inputs = Inputs(df.columns)
    terms = task_terms(config, types, num_classes, inputs)
    reason = first_failure(_all_checks(config, terms, inputs), terms.guard)
    own = [input_col(own_name) for own_name in df.columns]
    return df.select(*own, *inputs.projection()).select(*own, column(reason, name))


def canonical_rows(
    df: DataFrame,
    config: Config,
    types: dict[str, DataType],
    num_classes: int | None,
    needs: RowNeeds,
    day: Column | None = None,
) -> DataFrame:
    """Project ``df`` to the canonical columns above (no Spark action). With ``day`` (a DATE
    expression), ``_model_version`` is the day-keyed version of ``spark_calib.rows.days``, so
    every key of the statistics and of the outputs is one day's.

    Two steps: a projection of the input columns the terms read, renamed
    (``spark_calib.rows.inputs``), then the terms as internal SQL over them, with the invalid
    rows masked, in one statement (``spark_calib.rows.sql_statement``)."""
    inputs = Inputs()
    terms = task_terms(config, types, num_classes, inputs)
    model_version = (
        input_col(config.columns.model_version).cast("string")
        if config.columns.model_version is not None
        else Col.lit(None).cast("string")
    )
    if day is not None:
        model_version = day_keyed_version(day, model_version)
    slices = [
        input_col(name).alias(slice_key(index)) for index, name in enumerate(config.slice_columns())
    ]
    row_terms = _row_terms(config, terms, needs, num_classes, inputs)
    reason = first_failure(_all_checks(config, terms, inputs), terms.guard)
    weight = _weight(config, inputs)
    # Not masked by the reason: a filter on the code alone then runs before the row's checks.
    code = [_row_code(config).alias(ROW_CODE)] if needs.logits else []
    bucket = [jackknife_bucket(df, config).alias(BUCKET)] if config.uncertainty.jackknife else []
    staged = df.select(
        *inputs.projection(), model_version.alias(MODEL_VERSION), *slices, *bucket, *code
    )
    slice_keys = [slice_key(index) for index in range(len(slices))]
    projected = Q.select(
        Q.source(staged),
        [
            (reason, REASON),
            MODEL_VERSION,
            *slice_keys,
            (weight, WEIGHT),
            *[(expression, name) for name, expression in row_terms.items()],
            *([BUCKET] if bucket else []),
            *([ROW_CODE] if code else []),
        ],
    )
    valid = F.col(REASON).isNull()
    masked: list[Q.Item] = [(F.when(valid, F.col(name)), name) for name in (WEIGHT, *row_terms)]
    return Q.run(
        staged,
        Q.select(
            projected,
            [
                REASON,
                MODEL_VERSION,
                *slice_keys,
                *masked,
                *_derived_keys(config, terms, needs, valid),
                *([ROW_CODE] if code else []),
            ],
        ),
    )


def _row_code(config: Config) -> Column:
    """xxhash64 of the input columns the config reads (its roles and slice columns, in name
    order): the same row gets the same code in every run, whatever the partitioning."""
    names = sorted({*config.columns.roles().values(), *config.slice_columns()})
    return Col.xxhash64(*[input_col(name) for name in names])


def _row_terms(
    config: Config, terms: TaskTerms, needs: RowNeeds, num_classes: int | None, inputs: Inputs
) -> dict[str, Sql]:
    """Name → expression of every per-row value, before invalid rows are masked."""
    if config.task == "regression":
        assert terms.error is not None and terms.target is not None
        found = {
            TARGET: terms.target,
            SQ_ERROR: terms.error * terms.error,
            ABS_ERROR: F.abs(terms.error),
            WEIGHT_TERM: _weight(config, inputs),
        }
        if terms.sigma is not None:
            variance = terms.sigma * terms.sigma
            found[GAUSSIAN_NLL] = 0.5 * F.log(F.lit(2.0 * 3.141592653589793) * variance) + (
                terms.error * terms.error
            ) / (2.0 * variance)
            found["_sigma"] = terms.sigma
            found["_error"] = terms.error
        return found
    assert terms.confidence is not None and terms.correct is not None and terms.brier is not None
    assert terms.outcome is not None
    found = {
        CONFIDENCE: terms.confidence,
        CORRECT: terms.correct,
        BRIER: terms.brier,
        NLL: terms.nll if terms.nll is not None else F.lit(None).cast("double"),
        **moment_terms(terms.confidence, terms.outcome, _weight(config, inputs)),
        **_weighted_terms(terms, _weight(config, inputs)),
    }
    if needs.per_class or needs.exact_probs:
        assert terms.probs is not None and terms.label is not None
        found[PROBS] = terms.probs
        found[LABEL] = terms.label
    if needs.logits:
        assert terms.logits is not None and terms.label is not None
        found[LOGITS] = terms.logits
        found[LABEL] = terms.label
    if needs.true_class:
        assert terms.label is not None
        found[TRUE_CLASS] = terms.label
    if needs.positive:
        assert terms.label is not None and terms.nll is not None
        positive = terms.label.cast("double")
        found[POSITIVE] = positive
        found[POSITIVE_NLL] = positive * terms.nll
    if needs.predicted_class:
        assert terms.predicted is not None
        found[PREDICTED_CLASS] = terms.predicted
    if needs.cells or needs.threshold_bin or needs.exact_score:
        assert terms.score is not None
        found[SCORE] = terms.score
    if needs.cells:
        assert terms.score is not None
        found[LOGIT] = logit(terms.score)
    fit = fit_condition(config)
    if fit is not None:
        # The fit column's value is a user value: a Column of the first projection.
        found[FIT] = inputs.computed(fit.cast("int"))
    if needs.cost:
        assert terms.probs is not None and terms.label is not None
        assert config.cost_matrix is not None and num_classes is not None
        found[COST] = _expected_cost(terms.probs, terms.label, config.cost_matrix)
    return found


E = TypeVar("E", Column, Sql)


def moment_terms(confidence: E, outcome: E, weight: E) -> dict[str, E]:
    """The outcome and the second-moment terms of a (confidence c, outcome o) pair; each is
    summed as Σw·term, so the w·x terms give Σw²·x (the standard errors' sums). Columns or
    internal SQL, as its arguments."""
    spread = 1.0 - 2.0 * confidence
    return {
        OUTCOME: outcome,
        WEIGHT_TERM: weight,
        CONFIDENCE_SQ: confidence * confidence,
        CONFIDENCE_OUTCOME: confidence * outcome,
        SPIEGELHALTER: weight * spread * spread * confidence * (1.0 - confidence),
        W_OUTCOME: weight * outcome,
        W_CONFIDENCE: weight * confidence,
        W_CONFIDENCE_SQ: weight * confidence * confidence,
        W_CONFIDENCE_OUTCOME: weight * confidence * outcome,
    }


def _weighted_terms(terms: TaskTerms, weight: Sql) -> dict[str, Sql]:
    """w·correct, w·brier, w·brier², w·nll and w·nll² (summed to Σw²·x and Σw²·x²)."""
    assert terms.correct is not None and terms.brier is not None
    found = {
        W_CORRECT: weight * terms.correct,
        W_BRIER: weight * terms.brier,
        W_BRIER_SQ: weight * terms.brier * terms.brier,
    }
    if terms.nll is not None:
        found[W_NLL] = weight * terms.nll
        found[W_NLL_SQ] = weight * terms.nll * terms.nll
    return found


def _derived_keys(
    config: Config, terms: TaskTerms, needs: RowNeeds, valid: Sql
) -> list[tuple[Sql, str]]:
    """The bin keys, null for invalid rows. They read the projected (not yet masked) columns,
    so each is guarded by ``valid``: CASE WHEN evaluates a branch only for the rows that take
    it, so an invalid score (±inf, NaN) never reaches ``floor`` (which fails on ±inf)."""
    keys: list[tuple[Sql, str]] = []
    if config.uncertainty.jackknife:
        keys.append((F.when(valid, F.col(BUCKET)), BUCKET))
    if config.task == "regression":
        if terms.sigma is not None:
            bucket = coverage_bucket(F.col("_error"), F.col("_sigma"), interval_levels(config))
            keys.append((F.when(valid, bucket), BIN))
        return keys
    confidence_bin = bin_index(F.col(CONFIDENCE), config.binning.n_bins, config.binning.edges)
    keys.append((F.when(valid, confidence_bin), BIN))
    score = F.col(SCORE)
    if needs.cells:
        keys.append((F.when(valid, cell_index(score)), CELL))
    if needs.threshold_bin:
        reached = [(score >= F.lit(t)).cast("int") for t in sorted(config.thresholds)]
        total = reached[0]
        for term in reached[1:]:
            total = total + term
        keys.append((F.when(valid, total), THRESHOLD_BIN))
    return keys


# Salted, so the buckets are independent of any other use of xxhash64 on the same key.
BUCKET_SALT = "spark_calib-jackknife-v1"


def jackknife_bucket(df: DataFrame, config: Config) -> Column:
    """pmod(xxhash64(key, salt), G): the row's jackknife bucket, a pure function of the key
    (``uncertainty.bucket_key``, default every column of the row but maps, which Spark cannot
    hash), so reruns, retries and every slice give a row the same bucket."""
    uncertainty = config.uncertainty
    if uncertainty.bucket_key is not None:
        keys = [input_col(uncertainty.bucket_key).cast("string")]
    else:
        keys = [
            input_col(field.name)
            for field in df.schema.fields
            if not isinstance(field.dataType, MapType)
        ]
    hashed = Col.xxhash64(*keys, Col.lit(BUCKET_SALT))
    return Col.pmod(hashed, Col.lit(uncertainty.buckets)).cast("int")


def _expected_cost(probs: Sql, label: Sql, cost_matrix: tuple[tuple[float, ...], ...]) -> Sql:
    """Σ_k p_k C[y, k]: the expected cost of the row's probability vector under its true class."""
    rows = F.array(*[F.array(*[F.lit(float(cost)) for cost in row]) for row in cost_matrix])
    return array_sum(F.zip_with(probs, F.get(rows, label), lambda p, cost: p * cost))


def _weight(config: Config, inputs: Inputs) -> Sql:
    if config.columns.weight is None:
        return F.lit(1.0)
    return inputs.ref(config.columns.weight).cast("double")


def _all_checks(config: Config, terms: TaskTerms, inputs: Inputs) -> list[Check]:
    checks = list(terms.checks)
    if config.columns.weight is not None:
        checks += weight_checks(_weight(config, inputs))
    return checks
