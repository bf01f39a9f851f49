"""The benchmark's classwise cases: which variants ``--skip`` leaves (``bench.run``), with the
case runner replaced by one that records its configs: no Spark, no timing."""

from __future__ import annotations

from typing import Any

import pytest

from bench import run


def _variants(monkeypatch: pytest.MonkeyPatch, skip: list[str]) -> dict[str, dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}

    def record(
        ctx: Any, name: str, task: str, rows: int, configs: dict[str, Any], relative: Any
    ) -> dict[str, Any]:
        seen[name] = {"configs": configs, "relative": relative}
        return {"notes": []}

    monkeypatch.setattr(run, "run_case", record)
    run._all_cases(None, "multiclass10", 1000, skip, 1000, 0, selected=[])  # type: ignore[arg-type]
    return seen


def test_every_temperature_variant_runs_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    case = _variants(monkeypatch, [])["classwise_multiclass10"]
    assert set(case["configs"]) == {
        run.SPARK_CALIB,
        run.CLASSWISE,
        run.TEMPERATURE,
        run.TEMPERATURE_FIT,
    }
    assert case["configs"][run.TEMPERATURE_FIT]["recalibration"]["after"] == "none"
    assert (run.TEMPERATURE, run.SPARK_CALIB) in case["relative"]


def test_skipping_the_scoring_keeps_the_fit_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    case = _variants(monkeypatch, ["classwise_ece", "temperature_scoring"])[
        "classwise_multiclass10"
    ]
    assert set(case["configs"]) == {run.SPARK_CALIB, run.TEMPERATURE_FIT}
    assert case["relative"] == [(run.TEMPERATURE_FIT, run.SPARK_CALIB)]
