"""Is time linear in rows? A least-squares affine fit t(n) = a + b·n and each point's deviation.

A run has a fixed cost a (session jobs, planning, small output writes) and a per-row cost b, so
t(n)/n falls with n even when the work per row is constant: the proportional ratio
t(n)/n ÷ t(n₀)/n₀ is far below 1 for a fixed-cost-heavy run and says nothing about growth.
Linear growth means the points lie on a line: every t(n) within a tolerance of a + b·n, b > 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MILLION = 1_000_000


def affine_fit(rows: Sequence[int], seconds: Sequence[float]) -> tuple[float, float]:
    """(a, b) minimising Σ (t − a − b·n)²: a in seconds, b in seconds per million rows."""
    xs = [n / MILLION for n in rows]
    mean_x, mean_t = sum(xs) / len(xs), sum(seconds) / len(seconds)
    sxx = sum((x - mean_x) ** 2 for x in xs)
    sxt = sum((x - mean_x) * (t - mean_t) for x, t in zip(xs, seconds, strict=True))
    slope = sxt / sxx if sxx else 0.0
    return mean_t - slope * mean_x, slope


def fit_summary(points: Sequence[dict[str, Any]], variant: str) -> dict[str, Any] | None:
    """The fit of ``<variant>_s`` over the points: fixed_s, per_million_rows_s and, per point,
    t / fit (1.0 = on the line); None with fewer than two points."""
    if len(points) < 2:
        return None
    rows = [point["rows"] for point in points]
    seconds = [point[f"{variant}_s"] for point in points]
    fixed, slope = affine_fit(rows, seconds)
    ratios = [t / (fixed + slope * n / MILLION) for n, t in zip(rows, seconds, strict=True)]
    return {"fixed_s": fixed, "per_million_rows_s": slope, "vs_fit": ratios}
