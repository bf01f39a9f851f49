"""The drift, alerts and rollup config sections: one-line errors, and config_hash."""

from __future__ import annotations

from typing import Any

import pytest

from spark_calib.config import config_hash, load_config
from spark_calib.errors import ConfigError


def config(**extra: Any) -> dict[str, Any]:
    mapping: dict[str, Any] = {
        "task": "binary",
        "columns": {"score": "s", "label": "y"},
        "slices": [[], ["country"]],
    }
    mapping.update(extra)
    return mapping


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"alerts": [{"metric": "ece"}]}, "needs exactly one of max, min, max_increase"),
        ({"alerts": [{"metric": "ece", "max": 0.1, "min": 0.0}]}, r"it has \['max', 'min'\]"),
        ({"alerts": [{"metric": "f1", "max": 0.1}]}, "metric 'f1' is not computed"),
        (
            {"alerts": [{"metric": "ece", "slice": ["device"], "max": 0.1}]},
            "not one of the configured slices",
        ),
        (
            {"metrics": ["roc_auc", "ece"], "alerts": [{"metric": "roc_auc", "max_decrease": 0.1}]},
            "roc_auc has no drift",
        ),
        (
            {"alerts": [{"metric": "ece", "max_increase": 0.1, "compare_to": "baseline"}]},
            "needs drift.baseline_model_version or drift.baseline_dates",
        ),
        ({"alerts": [{"metric": "count", "max_increase": 10}]}, "count has no drift"),
        (
            {"metrics": ["ece", "f1"], "alerts": [{"metric": "f1", "max_decrease": 0.1}]},
            "f1 has no drift",
        ),
        ({"alerts": [{"metric": "ece", "max": 0.1, "fail": "yes"}]}, "alerts.0.fail"),
        ({"alerts": [{"metric": "ece", "max": 0.1, "min_n": -1}]}, "alerts.0.min_n"),
        ({"alerts": [{"metric": "ece", "max_increase": -0.1}]}, "alerts.0.max_increase"),
        ({"alerts": [{"metric": "ece", "maxx": 0.1}]}, "alerts.0.maxx"),
        (
            {"metrics": ["ece", "mce"], "alerts": [{"metric": "mce", "max_increase": 0.1}]},
            "mce has no standard error under uncertainty.method analytic",
        ),
        (
            {"metrics": ["ece", "mce"], "alerts": [{"metric": "mce", "max": 0.3, "min_z": 2}]},
            "mce has no standard error",
        ),
        ({"alerts": [{"metric": "ece", "max": 0.1, "min_z": 0}]}, "alerts.0.min_z"),
        ({"uncertainty": {"method": "bootstrap"}}, "uncertainty.method"),
        ({"uncertainty": {"buckets": 1}}, "uncertainty.buckets"),
        ({"uncertainty": {"level": 1.0}}, "uncertainty.level"),
        ({"min_slice_rows": -1}, "min_slice_rows"),
        (
            {
                "drift": {
                    "baseline_model_version": "v1",
                    "baseline_dates": {"start": "2024-06-01", "end": "2024-06-07"},
                }
            },
            "one of baseline_model_version or baseline_dates",
        ),
        (
            {"drift": {"baseline_dates": {"start": "2024-06-08", "end": "2024-06-07"}}},
            "is after end",
        ),
        ({"drift": {"z": 0}}, "drift.z"),
        ({"drift": {"baseline_model_version": "v1"}}, "needs columns.model_version"),
        ({"rollup": {"require_all_days": 1}}, "rollup.require_all_days"),
    ],
)
def test_bad_monitoring_config_is_one_line(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as error:
        load_config(config(**extra))
    assert "\n" not in str(error.value)


def test_monitoring_sections_are_not_in_the_config_hash() -> None:
    plain = config_hash(load_config(config()))
    monitored = load_config(
        config(
            alerts=[{"metric": "ece", "max": 0.05}],
            drift={"baseline_dates": {"start": "2024-06-01", "end": "2024-06-07"}, "z": 2.0},
            rollup={"require_all_days": True},
        )
    )
    assert config_hash(monitored) == plain
    assert config_hash(load_config(config(binning={"n_bins": 7}))) != plain


def test_rule_defaults_and_label() -> None:
    rule = load_config(
        config(alerts=[{"metric": "ece", "slice": ["country"], "max_increase": 0.02}])
    ).alerts[0]
    assert (rule.condition, rule.threshold, rule.compare_to, rule.min_n, rule.fail) == (
        "max_increase",
        0.02,
        "previous",
        1000,
        False,
    )
    assert rule.label() == "ece max_increase 0.02 vs previous on [country]"


def test_where_rows_live_is_not_in_the_config_hash_but_the_window_is() -> None:
    window = {"column": "d", "lookback_days": 1}
    first = config(input={"path": "/logs/a", "window": window}, output={"path": "/out/a"})
    moved = config(
        input={"table": "db.log", "format": "orc", "window": window}, output={"database": "x"}
    )
    longer = config(input={"path": "/logs/a", "window": {**window, "lookback_days": 7}})
    assert config_hash(load_config(first)) == config_hash(load_config(moved))
    assert config_hash(load_config(first)) != config_hash(load_config(longer))


def test_the_jackknife_gives_mce_a_standard_error_for_change_rules() -> None:
    cfg = config(
        metrics=["ece", "mce"],
        uncertainty={"method": "jackknife"},
        alerts=[{"metric": "mce", "max_increase": 0.1}],
    )
    assert load_config(cfg).alerts[0].metric == "mce"


def test_uncertainty_changes_the_hash_and_min_slice_rows_does_not() -> None:
    base = config_hash(load_config(config()))
    assert config_hash(load_config(config(uncertainty={"method": "jackknife"}))) != base
    assert config_hash(load_config(config(min_slice_rows=5000))) == base


def test_the_fine_cell_grid_version_changes_the_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    """Statistics kept on another cell grid (cell ids 514·k + j in version 1) must not sum with
    version 2's, so a rollup or drift over both sees two hashes."""
    current = config_hash(load_config(config()))
    monkeypatch.setattr("spark_calib.config.load.CELL_GRID_VERSION", 1)
    assert config_hash(load_config(config())) != current


def test_the_statistics_label_version_changes_the_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    """Binary statistics that grouped by the label (true_class, version 1) have no label sums,
    so they must not sum with version 2's either."""
    current = config_hash(load_config(config()))
    monkeypatch.setattr("spark_calib.config.load.STATS_LABEL_VERSION", 1)
    assert config_hash(load_config(config())) != current
