"""The recalibration config section: one-line errors naming the problem, and what it accepts."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pytest

from spark_calib.config import config_hash, load_config
from spark_calib.errors import ConfigError
from spark_calib.recalibration.fit import pool_adjacent_violators


def config(recalibration: Any, **extra: Any) -> dict[str, Any]:
    mapping: dict[str, Any] = {
        "task": "binary",
        "columns": {"score": "s", "label": "y"},
        "recalibration": recalibration,
    }
    mapping.update(extra)
    return mapping


@pytest.mark.parametrize(
    ("recalibration", "extra", "message"),
    [
        (
            {"methods": ["temprature"]},
            {},
            r"'recalibration\.methods\.0': Input should be 'temperature'",
        ),
        ({"methods": []}, {}, "recalibration.methods must list at least one"),
        ({"methods": ["platt", "platt"]}, {}, r"recalibration\.methods has duplicates"),
        ({"min_fit_rows": 0}, {}, r"recalibration\.min_fit_rows.*greater than or equal to 1"),
        ({"fit": {"column": "split"}}, {}, r"takes either \{column, value\} or a date range"),
        ({"fit": {"value": "val"}}, {}, r"fit\.value needs recalibration\.fit\.column"),
        (
            {"fit": {"column": "split", "value": "val", "start": "2024-06-01"}},
            {},
            r"takes either \{column, value\} or a date range",
        ),
        ({"fit": {"start": "2024-06-01"}}, {}, "date range needs both start and end"),
        (
            {"fit": {"start": "2024-06-07", "end": "2024-06-01", "column": "day"}},
            {},
            "start 2024-06-07 is after end 2024-06-01",
        ),
        (
            {"fit": {"start": "2024-06-01", "end": "2024-06-07"}},
            {},
            r"needs recalibration\.fit\.column or input\.window\.column",
        ),
        ({"fit": {"column": "split", "value": "val", "colour": 1}}, {}, "unknown config key"),
        (
            {"after": "exact"},
            {},
            r"'recalibration\.after': Input should be 'cells', 'rows' or 'none'",
        ),
        (
            {"max_fit_rows": 0},
            {},
            r"'recalibration\.max_fit_rows': Input should be greater than or equal to 1",
        ),
        (
            {},
            {"binary_view": "top_label"},
            "recalibration on task binary needs binary_view positive_class",
        ),
    ],
)
def test_bad_recalibration_sections_are_one_line_errors(
    recalibration: Any, extra: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as error:
        load_config(config(recalibration, **extra))
    assert "\n" not in str(error.value)


def test_multiclass_fits_temperature_only_top_label_all_maps_and_regression_none() -> None:
    mapping: dict[str, Any] = {
        "task": "multiclass",
        "columns": {"logits": "z", "label": "y"},
        "recalibration": {"methods": ["temperature"]},
    }
    loaded = load_config(mapping).recalibration
    assert loaded is not None and loaded.methods == ("temperature",)
    mapping["recalibration"] = {"methods": ["temperature", "isotonic"]}
    with pytest.raises(ConfigError, match=r"methods \['isotonic'\] are binary maps"):
        load_config(mapping)
    top_label = {
        "task": "top_label",
        "columns": {"confidence": "c", "correct": "ok"},
        "recalibration": {"methods": ["temperature", "platt", "isotonic"]},
    }
    loaded = load_config(top_label).recalibration
    assert loaded is not None and loaded.methods == ("temperature", "platt", "isotonic")
    regression = {
        "task": "regression",
        "columns": {"prediction": "p", "target": "t"},
        "recalibration": {"methods": ["temperature"]},
    }
    with pytest.raises(
        ConfigError, match="needs task binary, top_label or multiclass, not regression"
    ):
        load_config(regression)


def test_defaults_and_the_two_forms_of_fit() -> None:
    default = load_config(config({})).recalibration
    assert default is not None
    assert default.methods == ("temperature",) and default.fit is None
    assert default.min_fit_rows == 1000
    assert default.after == "cells"
    by_value = load_config(config({"fit": {"column": "split", "value": "val"}})).recalibration
    assert by_value is not None and by_value.fit is not None
    assert by_value.fit.value == "val" and not by_value.fit.is_date_range
    window = {"path": "/logs", "window": {"column": "day", "lookback_days": 7}}
    by_dates = load_config(
        config({"fit": {"start": "2024-06-01", "end": "2024-06-06"}}, input=window)
    ).recalibration
    assert by_dates is not None and by_dates.fit is not None
    assert by_dates.fit.start == dt.date(2024, 6, 1) and by_dates.fit.is_date_range


def test_the_fit_rows_change_the_config_hash() -> None:
    plain = config_hash(load_config(config({})))
    split = config_hash(load_config(config({"fit": {"column": "split", "value": "val"}})))
    assert plain != split


def test_pool_adjacent_violators_pools_by_weight() -> None:
    # 0.2 (w 1) then 0.6 (w 1) then 0.3 (w 3): the last two pool to (0.6 + 0.9)/4 = 0.375.
    fitted = pool_adjacent_violators(np.array([0.2, 0.6, 0.3]), np.array([1.0, 1.0, 3.0]))
    np.testing.assert_allclose(fitted, [0.2, 0.375, 0.375], rtol=0, atol=1e-15)


def test_after_is_part_of_the_config_hash() -> None:
    """Exact and cell "after" metrics differ, so their runs must not compare as one config."""
    cells = config_hash(load_config(config({"after": "cells"})))
    rows = config_hash(load_config(config({"after": "rows"})))
    assert cells != rows
