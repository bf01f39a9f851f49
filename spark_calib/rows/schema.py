"""Check the input's columns and types against the config before any Spark action."""

from __future__ import annotations

import difflib

from pyspark.sql import DataFrame
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructType,
)

from spark_calib.config import Config
from spark_calib.config.recalibration import fit_column
from spark_calib.errors import SchemaError

INTEGRAL_TYPES = (ByteType, ShortType, IntegerType, LongType)
NUMERIC_TYPES = (*INTEGRAL_TYPES, FloatType, DoubleType, DecimalType)
RESERVED_OUTPUT_COLUMN = "reason"


def check_input_schema(df: DataFrame, config: Config) -> dict[str, DataType]:
    """Return role → data type of every configured column, or raise ``SchemaError``.

    Expected types: score, confidence, quality, weight numeric; binary label numeric or boolean;
    multiclass label numeric (integral values), or string with ``class_names``; probs and logits
    array<numeric>; correct boolean or numeric 0/1; top-label prediction and label of one kind;
    regression prediction, target, std and variance numeric;
    model_version, slice and ``recalibration.fit`` columns atomic (not array, map or struct).
    """
    _require_distinct_names(df)
    types = {field.name: field.dataType for field in df.schema.fields}
    if RESERVED_OUTPUT_COLUMN in types:
        raise SchemaError(
            f"input column {RESERVED_OUTPUT_COLUMN!r} clashes with the invalid-rows output's "
            f"reason column; rename it before evaluating"
        )
    found: dict[str, DataType] = {}
    for role, name in config.columns.roles().items():
        found[role] = _lookup(types, name, f"columns.{role}")
    for columns in config.slices:
        for name in columns:
            _require_key_type(name, _lookup(types, name, "slices"), "slices")
    search = config.slice_search.column_names() if config.slice_search is not None else []
    for name in search:
        key = "slice_search.columns"
        _require_key_type(name, _lookup(types, name, key), key)
    for role, data_type in found.items():
        _check_role(config, role, config.columns.roles()[role], data_type)
    fit_name = _fit_column(config)
    if fit_name is not None:
        _require_atomic(
            fit_name, _lookup(types, fit_name, "recalibration.fit"), "recalibration.fit"
        )
    if config.task == "top_label" and "prediction" in found:
        kinds = {_kind(found["prediction"]), _kind(found["label"])}
        if len(kinds) != 1:
            raise SchemaError(
                f"columns.prediction ({found['prediction'].simpleString()}) and columns.label "
                f"({found['label'].simpleString()}) must be of one kind to be compared"
            )
    return found


def _fit_column(config: Config) -> str | None:
    if config.recalibration is None:
        return None
    window = config.input.window if config.input is not None else None
    return fit_column(config.recalibration, window.column if window is not None else None)


def _lookup(types: dict[str, DataType], name: str, key: str) -> DataType:
    if name in types:
        return types[name]
    nearest = difflib.get_close_matches(name, list(types), n=1, cutoff=0.6)
    hint = f"; did you mean {nearest[0]!r}?" if nearest else ""
    raise SchemaError(
        f"column {name!r} ({key}) is not in the input{hint} (input columns: {sorted(types)})"
    )


def _check_role(config: Config, role: str, name: str, data_type: DataType) -> None:
    where = f"column {name!r} (columns.{role})"
    regression_value = config.task == "regression" and role == "prediction"
    if role in ("score", "confidence", "quality", "weight", "target", "std", "variance") or (
        regression_value
    ):
        _expect(isinstance(data_type, NUMERIC_TYPES), where, "numeric", data_type)
    elif role in ("probs", "logits"):
        ok = isinstance(data_type, ArrayType) and isinstance(data_type.elementType, NUMERIC_TYPES)
        _expect(ok, where, "array<double>", data_type)
    elif role == "correct":
        _expect(isinstance(data_type, (BooleanType, *NUMERIC_TYPES)), where, "boolean", data_type)
    elif role == "model_version":
        _require_key_type(name, data_type, "columns.model_version")
    elif role == "label" and config.task == "binary":
        ok = isinstance(data_type, (BooleanType, *NUMERIC_TYPES))
        _expect(ok, where, "0/1 numeric or boolean", data_type)
    elif role == "label" and config.task == "multiclass":
        if isinstance(data_type, StringType):
            if config.class_names is None:
                raise SchemaError(
                    f"{where} holds strings; set class_names to map them to class indices"
                )
        else:
            _expect(isinstance(data_type, NUMERIC_TYPES), where, "an int class index", data_type)
    elif role in ("label", "prediction"):
        _require_atomic(name, data_type, f"columns.{role}")


def _expect(ok: bool, where: str, expected: str, data_type: DataType) -> None:
    if not ok:
        raise SchemaError(f"{where} must be {expected}, found {data_type.simpleString()}")


def _require_atomic(name: str, data_type: DataType, key: str) -> None:
    if isinstance(data_type, (ArrayType, MapType, StructType)):
        raise SchemaError(
            f"column {name!r} ({key}) must be an atomic type, found {data_type.simpleString()}"
        )


def _require_key_type(name: str, data_type: DataType, key: str) -> None:
    """A slice or model_version column: atomic, with a text form that tells values apart
    (binary values that are not UTF-8 would all be cast to the same replacement text)."""
    _require_atomic(name, data_type, key)
    if isinstance(data_type, BinaryType):
        raise SchemaError(
            f"column {name!r} ({key}) is binary, which has no unambiguous text form for the "
            f"output keys; pass a string column instead, e.g. hex({name})"
        )


def _require_distinct_names(df: DataFrame) -> None:
    """Every input column name once, compared as Spark resolves them (case-insensitively unless
    spark.sql.caseSensitive is set): a repeated name cannot be referenced, not even to copy the
    row into the invalid-rows output."""
    case_sensitive = df.sparkSession.conf.get("spark.sql.caseSensitive", "false") == "true"
    seen: dict[str, list[str]] = {}
    for name in df.columns:
        seen.setdefault(name if case_sensitive else name.lower(), []).append(name)
    for names in seen.values():
        if len(names) > 1:
            spelled = ", ".join(repr(name) for name in names)
            raise SchemaError(
                f"input column {names[0]!r} appears {len(names)} times ({spelled}); "
                f"rename or drop the duplicates before evaluating"
            )


def _kind(data_type: DataType) -> str:
    if isinstance(data_type, NUMERIC_TYPES):
        return "numeric"
    return data_type.typeName()
