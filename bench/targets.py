"""The performance targets of the issue, checked against a results dict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.linearity import fit_summary

MET = "met"
NOT_MET = "not met"
NOT_MEASURED = "n/a"
TARGET_ROWS = 20_000_000
LINEAR_TOLERANCE = 0.2
SCALING_FROM, SCALING_TO = 1_000_000, 50_000_000


@dataclass(frozen=True)
class RatioTarget:
    """``case``'s ``ratio`` compared with ``bound`` (``at_most`` or at least)."""

    name: str
    description: str
    case: str
    ratio: str
    bound: float
    at_most: bool
    strict: bool = False
    rows: int | None = None


RATIO_TARGETS = (
    RatioTarget(
        "typical_overhead",
        "typical: spark_calib ≤ 1.3× scan floor",
        "typical",
        "spark_calib/scan_floor",
        1.3,
        at_most=True,
    ),
    RatioTarget(
        "wide_overhead",
        "wide: spark_calib ≤ 2.5× scan floor",
        "wide",
        "spark_calib/scan_floor",
        2.5,
        at_most=True,
    ),
    RatioTarget(
        "mllib_slower",
        "MLlib ≥ 20× slower than spark_calib (typical slices)",
        "typical",
        "mllib/spark_calib",
        20.0,
        at_most=False,
    ),
    RatioTarget(
        "pandas_slower",
        "pandas slower than spark_calib at 20M rows (typical)",
        "typical",
        "pandas/spark_calib",
        1.0,
        at_most=False,
        strict=True,
        rows=TARGET_ROWS,
    ),
)


def _ratio_target(target: RatioTarget, results: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": target.name, "target": target.description}
    case = results["cases"].get(target.case)
    value = case["ratios"].get(target.ratio) if case else None
    if value is None:
        return {**entry, "measured": None, "status": NOT_MEASURED, "note": "not measured"}
    if target.at_most:
        met = value <= target.bound
    else:
        met = value > target.bound if target.strict else value >= target.bound
    entry.update(measured=f"{target.ratio} = {value:.2f}", value=value)
    entry["status"] = MET if met else NOT_MET
    if target.rows is not None and case["rows"] != target.rows:
        entry["note"] = (
            f"measured at {case['rows']:,} rows; the target is stated for {target.rows:,}"
        )
    return entry


def _scaling_target(results: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": "scaling_linear",
        "target": "spark_calib within ±20% of a straight line t = a + b·n, 1M → 50M rows",
    }
    points = (results.get("scaling") or {}).get("points") or []
    fit = fit_summary(points, "spark_calib")
    if fit is None:
        return {**entry, "measured": None, "status": NOT_MEASURED, "note": "not measured"}
    low, high = min(fit["vs_fit"]), max(fit["vs_fit"])
    met = fit["per_million_rows_s"] > 0 and (
        low >= 1 - LINEAR_TOLERANCE and high <= 1 + LINEAR_TOLERANCE
    )
    entry.update(
        measured=(
            f"t ≈ {fit['fixed_s']:.2f} s + {fit['per_million_rows_s']:.3f} s per M rows; "
            f"every point at {low:.2f}–{high:.2f}× the fit"
        ),
        value=[low, high],
    )
    entry["status"] = MET if met else NOT_MET
    sizes = [p["rows"] for p in points]
    if sizes[0] != SCALING_FROM or sizes[-1] != SCALING_TO:
        entry["note"] = f"measured from {sizes[0]:,} to {sizes[-1]:,} rows"
    return entry


def evaluate_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per target: description, measured value, ``met``/``not met``/``n/a``."""
    return [_ratio_target(t, results) for t in RATIO_TARGETS] + [_scaling_target(results)]
