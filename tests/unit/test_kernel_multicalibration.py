"""The slice search's per-segment scores (``spark_calib.kernels.multicalibration``) against a
row-level NumPy reference, MCGrad's own functions and a simulated Brownian range."""

from __future__ import annotations

import numpy as np
import pytest
from mcgrad import metrics as mcgrad_metrics

from spark_calib.kernels.cell_grid import coarse_cell
from spark_calib.kernels.multicalibration import (
    range_cdf,
    range_p_value,
    segment_scores,
)
from tests.support.key_stats_cells import cell_ids


def _sums(s: np.ndarray, y: np.ndarray, w: np.ndarray) -> dict[str, np.ndarray]:
    with np.errstate(divide="ignore"):
        odds_pos = np.where(y == 1, (1 - s) / s, 0.0)
        odds_neg = np.where(y == 0, s / (1 - s), 0.0)
    return {
        "n": np.ones_like(s),
        "w": w,
        "wy": w * y,
        "ws": w * s,
        "wys": w * y * s,
        "w2v": w * w * s * (1 - s),
        "odds_pos": odds_pos,
        "odds_neg": odds_neg,
    }


def _cell_table(
    segment: np.ndarray, cell: np.ndarray, sums: dict[str, np.ndarray]
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Sum the rows' terms per (segment, cell), as the aggregation does."""
    keys, inverse = np.unique(np.stack([segment, cell], axis=1), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    summed = {k: np.bincount(inverse, weights=v, minlength=len(keys)) for k, v in sums.items()}
    return keys[:, 0], keys[:, 1], summed


def _row_ecce(s: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """Guy et al.'s row path: sort by s, D_k = Σ_{i≤k} w_i (y_i − s_i) / W, range with D_0 = 0."""
    order = np.argsort(s, kind="stable")
    path = np.r_[0.0, np.cumsum((w * (y - s))[order]) / w.sum()]
    return float(path.max() - path.min())


def _log(rng: np.random.Generator, n: int, weighted: bool) -> tuple[np.ndarray, ...]:
    s = rng.beta(0.7, 3.0, n)
    y = (rng.random(n) < np.clip(s * 1.3, 0, 1)).astype(float)
    w = rng.gamma(2.0, 0.5, n) if weighted else np.ones(n)
    return s, y, w


@pytest.mark.parametrize("weighted", [False, True])
def test_one_row_per_cell_gives_the_row_ecce_and_mcgrads_sigma_scale(weighted: bool) -> None:
    rng = np.random.default_rng(3)
    s, y, w = _log(rng, 3000, weighted)
    segment = rng.integers(0, 4, len(s))
    rank = np.argsort(np.argsort(s))  # distinct scores: each row its own cell, in score order
    out = segment_scores(segment, rank, _sums(s, y, w), n_bins=10)
    for index, h in enumerate(out["segment"]):
        m = segment == h
        assert out["ecce"][index] == pytest.approx(_row_ecce(s[m], y[m], w[m]), abs=1e-12)
        assert out["ecce"][index] == pytest.approx(
            mcgrad_metrics.ecce(y[m], s[m], w[m] if weighted else None), abs=1e-12
        )
        assert out["ecce_sigma"][index] == pytest.approx(
            mcgrad_metrics.ecce_sigma(y[m], s[m], w[m] if weighted else None), rel=1e-10
        )
        assert out["ecce_p"][index] == pytest.approx(
            mcgrad_metrics.ecce_pvalue(y[m], s[m], w[m] if weighted else None), abs=1e-12
        )
        assert out["weight_sum"][index] == pytest.approx(w[m].sum())
        assert out["n"][index] == m.sum()


@pytest.mark.parametrize("weighted", [False, True])
def test_fine_cells_bound_the_row_ecce(weighted: bool) -> None:
    rng = np.random.default_rng(5)
    s, y, w = _log(rng, 20000, weighted)
    s = np.round(s, 3)  # ties inside cells
    segment = rng.integers(0, 6, len(s))
    seg, cell, sums = _cell_table(segment, cell_ids(s), _sums(s, y, w))
    out = segment_scores(seg, cell, sums, n_bins=10)
    for index, h in enumerate(out["segment"]):
        m = segment == h
        row = _row_ecce(s[m], y[m], w[m])
        assert out["ecce"][index] <= row + 1e-12
        assert row <= out["ecce"][index] + out["ecce_bound"][index] + 1e-12
        # The bound is small against the statistic: fine cells.
        assert out["ecce_bound"][index] < 0.2 * row


@pytest.mark.parametrize("weighted", [False, True])
def test_coarse_cells_bound_the_fine_ecce_and_keep_the_sums(weighted: bool) -> None:
    rng = np.random.default_rng(11)
    s, y, w = _log(rng, 30000, weighted)
    s = np.concatenate([s, [0.0, 1.0, 0.5, 1e-9]])
    y = np.concatenate([y, [0.0, 1.0, 1.0, 0.0]])
    w = np.concatenate([w, [1.0, 1.0, 2.0, 1.0]])
    segment = rng.integers(0, 8, len(s))
    fine_cells = cell_ids(s)
    # A coarse cell is a union of fine cells contiguous in score order, ids in that order.
    order = np.argsort(s, kind="stable")
    assert np.all(np.diff(coarse_cell(fine_cells[order])) >= 0)
    assert np.all(coarse_cell(fine_cells) <= fine_cells)
    fine = segment_scores(*_cell_table(segment, fine_cells, _sums(s, y, w)), n_bins=10)
    coarse = segment_scores(
        *_cell_table(segment, coarse_cell(fine_cells), _sums(s, y, w)), n_bins=10
    )
    assert len(np.unique(coarse_cell(fine_cells))) < len(np.unique(fine_cells)) / 4
    # The fine cells' ECCE lies in the coarse [ecce, ecce + ecce_bound].
    assert np.all(coarse["ecce"] <= fine["ecce"] + 1e-12)
    assert np.all(fine["ecce"] <= coarse["ecce"] + coarse["ecce_bound"] + 1e-12)
    assert np.any(coarse["ecce"] < fine["ecce"] - 1e-6)
    # What does not read the cells' order is the same; so is the ECE (10 bins, 100 coarse).
    for name in ("n", "weight_sum", "sigma", "citl_z", "score_bound", "ece", "ece_null"):
        np.testing.assert_allclose(coarse[name], fine[name], rtol=1e-12, err_msg=name)


def test_calibration_summaries_and_ece_by_hand() -> None:
    # Two cells of one segment: s = 0.15 (w = 1, y = 1) and s = 0.85 twice (w = 1, y = 0, 1).
    s = np.array([0.15, 0.85, 0.85])
    y = np.array([1.0, 0.0, 1.0])
    w = np.ones(3)
    seg, cell, sums = _cell_table(np.zeros(3, dtype=int), cell_ids(s), _sums(s, y, w))
    out = segment_scores(seg, cell, sums, n_bins=10)
    assert out["mean_prediction"][0] == pytest.approx(1.85 / 3)
    assert out["mean_label"][0] == pytest.approx(2 / 3)
    assert out["calibration_ratio"][0] == pytest.approx(1.85 / 2)
    assert out["calibration_in_the_large"][0] == pytest.approx((1.85 - 2) / 3)
    variance = 0.15 * 0.85 * 3
    assert out["citl_z"][0] == pytest.approx((1.85 - 2) / np.sqrt(variance))
    # Bins 1 and 8: |0.15 − 1| + |1.7 − 1| over W = 3.
    assert out["ece"][0] == pytest.approx((0.85 + 0.7) / 3)
    # Path: 0, 0.85/3, (0.85 − 0.85)/3, (0.85 − 0.85 + 0.15)/3 → cells merge the last two rows.
    assert out["ecce"][0] == pytest.approx(0.85 / 3)
    # Null variances: bin 1 0.1275, bin 8 2·0.1275; ece_null = √(2/π)(√V₁ + √V₈)/W.
    v = 0.15 * 0.85
    null = np.sqrt(2 / np.pi) * (np.sqrt(v) + np.sqrt(2 * v)) / 3
    assert out["ece_null"][0] == pytest.approx(null, rel=1e-12)
    assert out["ece_excess"][0] == pytest.approx((0.85 + 0.7) / 3 - null, rel=1e-12)
    se = np.sqrt((1 - 2 / np.pi) * 3 * v) / 3
    assert out["ece_excess_se"][0] == pytest.approx(se, rel=1e-12)
    assert out["ece_excess_z"][0] == pytest.approx(((0.85 + 0.7) / 3 - null) / se, rel=1e-12)


def test_score_bound_holds_for_every_subset() -> None:
    rng = np.random.default_rng(11)
    s, y, w = _log(rng, 4000, True)
    parent_sums = _sums(s, y, w)
    rank = np.argsort(np.argsort(s))
    parent = segment_scores(np.zeros(len(s), dtype=int), rank, parent_sums, n_bins=10)
    bound = parent["score_bound"][0]
    subsets = [rng.random(len(s)) < f for f in (0.01, 0.1, 0.5)] + [y == 1, y == 0]
    for m in subsets:
        child = segment_scores(
            np.zeros(m.sum(), dtype=int), rank[m], {k: v[m] for k, v in parent_sums.items()}, 10
        )
        assert child["ecce_sigma"][0] <= bound + 1e-9
        assert abs(child["citl_z"][0]) <= bound + 1e-9


def test_range_cdf_matches_mcgrad_and_a_simulated_brownian_range() -> None:
    x = np.array([0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 6.0])
    assert range_cdf(x) == pytest.approx(mcgrad_metrics._ecce_cdf(x), abs=1e-14)
    rng = np.random.default_rng(0)
    steps = rng.standard_normal((4000, 2000)) / np.sqrt(2000)
    paths = np.cumsum(steps, axis=1)
    ranges = np.maximum(paths.max(axis=1), 0) - np.minimum(paths.min(axis=1), 0)
    empirical = (ranges[:, None] <= x[None, :]).mean(axis=0)
    # 4000 draws: the empirical CDF's standard error is at most 0.008; the walk's discreteness
    # lowers the range by about 0.58·2/√2000 ≈ 0.026 (Asmussen et al.), within the tolerance.
    assert np.abs(empirical - range_cdf(x)).max() < 0.04
    assert range_p_value(np.array([0.0, 10.0])) == pytest.approx([1.0, np.finfo(float).eps])
