"""Per-segment calibration scores of the slice search, from each segment's fine cells.

A segment h is a conjunction of (column = value) predicates of one model version. Its statistics
are, per fine cell c (``spark_calib.rows.cells``; ids order the cells by score), over its valid
rows with calibration probability s (the binary score, or the top-label confidence) and outcome
y ∈ {0, 1}: n_c, W_c = Σw, O_c = Σw·y, C_c = Σw·s, X_c = Σw·y·s, V_c = Σw²·s(1 − s), and the
label-odds sums A_c = Σ_{y=1} (1 − s)/s and B_c = Σ_{y=0} s/(1 − s) (unweighted; +∞ for a row
with s = 0, y = 1 or s = 1, y = 0). W = Σ_c W_c, O, C, V likewise; only cells with W_c > 0
count.

- ``ecce`` (Arrieta-Ibarra et al. 2022; MCGrad's ECCE): the range max_k D_k − min_k D_k of the
  cumulative differences D_0 = 0, D_c = Σ_{c' ≤ c} (O_{c'} − C_{c'}) / W over the cells in score
  order. At cell boundaries this is the row path of Guy et al. (2025) exactly; inside a cell the
  row path can move further, so the row ECCE lies in [ecce, ecce + ``ecce_bound``] with
  ``ecce_bound`` = (max_c (O_c − X_c) + max_c (C_c − X_c)) / W: the most the path can rise
  (Σ_{i∈c} w y (1 − s)) or fall (Σ_{i∈c} w (1 − y) s) inside one cell, in whatever order the
  rows of a cell (ties included) come.
- ``sigma`` = √V / W, the standard deviation of each D_k's scale under perfect calibration
  (y ~ Bernoulli(s)); ``ecce_sigma`` = ecce / sigma (+∞ when sigma = 0 < ecce, 0 when both are
  0) and ``ecce_p`` = 1 − F(ecce_sigma), F the CDF of the range of a standard Brownian motion on
  [0, 1] (``range_cdf``).
- ``mean_prediction`` = C/W, ``mean_label`` = O/W, ``calibration_ratio`` = C/O (null when
  O = 0), ``calibration_in_the_large`` = (C − O)/W (positive: over-prediction) and its
  ``citl_z`` = (C − O)/√V under perfect calibration (null when V = 0).
- ``ece``: Σ_b |C_b − O_b| / W over M uniform bins [b/M, (b+1)/M), each cell placed in the bin
  of its lower equal-width edge k/1000 (b = ⌊k·M/1000⌋): the rows' M-bin ECE exactly when M
  divides 1000; otherwise a 0.001-wide cell that straddles a bin edge goes whole to the lower
  bin.
- ``ece_null`` = √(2/π) · Σ_b √V_b / W, V_b = Σ_{i∈b} w² s(1 − s): the mean of the ECE a
  perfectly calibrated model shows on these rows, each bin's gap Σ_b w (s − y) / W taken as
  N(0, V_b/W²) (E|N(0, σ²)| = σ√(2/π)); ``ece_excess`` = ece − ece_null, its standard
  deviation under the same model ``ece_excess_se`` = √((1 − 2/π) Σ_b V_b) / W, and
  ``ece_excess_z`` = ece_excess / ece_excess_se (null when the se is 0). The rows' own s
  gives V_b, where the metrics table's ``ece_null`` (docs/uncertainty.md) has only the bin's
  mean prediction and n_eff.
- ``score_bound``: an upper bound on the ``ecce_sigma`` and on the |citl_z| of *every subset*
  of the segment's rows: √max(A, B). The range of a path is at most its total rise or its total
  fall, so ecce·W ≤ max(P, N) with P = Σ_{y=1} w(1 − s) and N = Σ_{y=0} w s; V ≥ V₊ (the y = 1
  rows' part) and by Cauchy–Schwarz P/√V₊ ≤ √Σ_{y=1} (w(1−s))²/(w² s(1−s)) = √A, and N/√V ≤ √B
  likewise. Both sums only grow with the rows, so a child segment's score is at most the
  smallest ``score_bound`` of its parents. It is loose (a segment of all the positives reaches
  it), so it prunes only children of small or nearly deterministic parents.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_calib.kernels.cell_grid import EQUAL_WIDTH_CELLS, LOG_ODDS_CELLS

# Above this, 1 − F(x) is below double precision (MCGrad's ECCE_SIGMA_MAX).
RANGE_CDF_LIMIT = 8.26732673
SMALLEST_P = float(np.finfo(float).eps)

SEGMENT_COLUMNS = (
    "n",
    "weight_sum",
    "ecce",
    "ecce_bound",
    "sigma",
    "ecce_sigma",
    "ecce_p",
    "mean_prediction",
    "mean_label",
    "calibration_ratio",
    "calibration_in_the_large",
    "citl_z",
    "ece",
    "ece_null",
    "ece_excess",
    "ece_excess_se",
    "ece_excess_z",
    "score_bound",
)


# The per-cell sums a segment's statistics carry (the module docstring's n, W, O, C, X, V, A, B).
CELL_SUMS = ("n", "w", "wy", "ws", "wys", "w2v", "odds_pos", "odds_neg")
# The binned reliability of a segment: M entries each (uniform bins, as for ``ece``).
BIN_COLUMNS = ("bin_weight", "bin_prediction", "bin_label")


def segment_table_function(
    key_columns: tuple[str, ...], cell_column: str, n_bins: int
) -> Callable[[pa.Table], pa.Table]:
    """The function a grouped Arrow pass runs on a group of segments' cell rows (any number of
    segments, each whole): one row per segment, its ``key_columns`` then ``SEGMENT_COLUMNS``
    then ``BIN_COLUMNS`` (list<double>)."""

    def run(table: pa.Table) -> pa.Table:
        keys = pa.Table.from_arrays(
            [table.column(name) for name in key_columns], names=list(key_columns)
        )
        codes = _segment_codes(keys)
        out = segment_scores(
            codes,
            table.column(cell_column).to_numpy(zero_copy_only=False),
            {name: table.column(name).to_numpy(zero_copy_only=False) for name in CELL_SUMS},
            n_bins,
        )
        first = np.unique(codes, return_index=True)[1]
        columns = {name: keys.column(name).take(pa.array(first)) for name in key_columns}
        columns.update({name: pa.array(out[name], pa.float64()) for name in SEGMENT_COLUMNS})
        for name in BIN_COLUMNS:
            columns[name] = pa.array(list(out[name]), pa.list_(pa.float64()))
        return pa.table(columns)

    return run


def _segment_codes(keys: pa.Table) -> np.ndarray:
    """One integer per distinct key row (a dictionary encoding of the joined key columns)."""
    if keys.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    # A null becomes "\x01", which no model version or slice value is expected to be.
    parts = [
        pc.fill_null(pc.cast(keys.column(name), pa.string()), "\x01") for name in keys.column_names
    ]
    joined = pc.binary_join_element_wise(*parts, "\x00")
    encoded = pc.dictionary_encode(joined).combine_chunks()
    return np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)


def range_cdf(x: np.ndarray) -> np.ndarray:
    """F(x) = P(max − min of a standard Brownian motion on [0, 1] ≤ x):
    Σ_{k≥0} (8/x² + 2/((k + ½)² π²)) · exp(−2 (k + ½)² π² / x²) (Feller 1951), summed until the
    terms fall below machine precision; 0 for x ≤ 0 and 1 − ε from ``RANGE_CDF_LIMIT`` on."""
    x = np.atleast_1d(np.asarray(x, dtype=float))
    out = np.where(x <= 0.0, 0.0, 1.0 - SMALLEST_P)
    inside = (x > 0.0) & (x < RANGE_CDF_LIMIT)
    if not inside.any():
        return out
    xs = x[inside]
    # The terms decay like exp(−2 (k + ½)² π² / x²): this many make the rest < ε.
    factor = 4.0 / math.sqrt(2.0 * math.pi) * (1.0 / xs + xs / math.pi**2)
    k_max = int(
        np.max(np.ceil(0.5 + xs / math.pi / math.sqrt(2.0) * np.sqrt(np.log(factor / SMALLEST_P))))
    )
    k_half = np.arange(k_max, dtype=float) + 0.5
    x2 = xs[:, None] ** 2
    terms = (8.0 / x2 + 2.0 / (k_half**2 * math.pi**2)) * np.exp(-2.0 * k_half**2 * math.pi**2 / x2)
    out[inside] = np.minimum(terms.sum(axis=1), 1.0)
    return out


def range_p_value(x: np.ndarray) -> np.ndarray:
    """1 − F(x), at least ε (so ε means "below double precision")."""
    return np.maximum(1.0 - range_cdf(x), SMALLEST_P)


def segment_scores(
    segment: np.ndarray,
    cell: np.ndarray,
    sums: dict[str, np.ndarray],
    n_bins: int,
) -> dict[str, np.ndarray]:
    """The ``SEGMENT_COLUMNS`` of every segment, one entry per distinct ``segment`` id in
    ascending order (also returned as ``segment``).

    ``segment`` and ``cell``: one entry per (segment, cell) row, in any order; ``sums``: the
    per-row sums ``n``, ``w``, ``wy``, ``ws``, ``wys``, ``w2v``, ``odds_pos`` and ``odds_neg``
    (the module docstring's n, W, O, C, X, V, A and B). Rows with W_c ≤ 0 are ignored; a segment
    without a positive-weight cell has n = 0 and null (NaN) scores. Also each segment's binned
    reliability (``BIN_COLUMNS``, shape segments × M): weight, mean prediction and mean label
    per uniform bin (NaN for an empty bin)."""
    segment = np.asarray(segment, dtype=np.int64)
    cell = np.asarray(cell, dtype=np.int64)
    keep = np.asarray(sums["w"], dtype=float) > 0.0
    ids = np.unique(segment)
    order = np.lexsort((cell[keep], segment[keep]))
    seg = segment[keep][order]
    columns = {
        name: np.asarray(sums[name], dtype=float)[keep][order]
        for name in ("n", "w", "wy", "ws", "wys", "w2v", "odds_pos", "odds_neg")
    }
    cells = cell[keep][order]
    position = np.searchsorted(ids, seg)
    size = len(ids)

    def total(values: np.ndarray) -> np.ndarray:
        return np.bincount(position, weights=values, minlength=size)

    n = total(columns["n"])
    weight = total(columns["w"])
    observed = total(columns["wy"])
    predicted = total(columns["ws"])
    variance = total(columns["w2v"])
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_weight = np.where(weight > 0.0, 1.0 / weight, np.nan)
        ecce = _path_range(position, columns["wy"] - columns["ws"], size) * inv_weight
        rise = _segment_max(position, columns["wy"] - columns["wys"], size)
        fall = _segment_max(position, columns["ws"] - columns["wys"], size)
        ecce_bound = (rise + fall) * inv_weight
        sigma = np.sqrt(np.maximum(variance, 0.0)) * inv_weight
        degenerate = np.where(ecce > 0.0, np.inf, np.where(weight > 0, 0.0, np.nan))
        ecce_sigma = np.where(sigma > 0.0, ecce / sigma, degenerate)
        ecce_p = np.where(np.isnan(ecce_sigma), np.nan, range_p_value(np.nan_to_num(ecce_sigma)))
        citl_z = np.where(variance > 0.0, (predicted - observed) / np.sqrt(variance), np.nan)
        ratio = np.where(observed > 0.0, predicted / observed, np.nan)
        odds = np.maximum(total(columns["odds_pos"]), total(columns["odds_neg"]))
    k = cells // LOG_ODDS_CELLS
    bins = np.minimum((k * n_bins) // EQUAL_WIDTH_CELLS, n_bins - 1)
    bin_key = position * n_bins + bins
    gap = np.bincount(bin_key, weights=columns["ws"] - columns["wy"], minlength=size * n_bins)
    ece = np.abs(gap).reshape(size, n_bins).sum(axis=1) * inv_weight
    bin_variance = np.bincount(bin_key, weights=columns["w2v"], minlength=size * n_bins)
    root = np.sqrt(np.maximum(bin_variance, 0.0)).reshape(size, n_bins).sum(axis=1)
    ece_null = math.sqrt(2.0 / math.pi) * root * inv_weight
    ece_excess = ece - ece_null
    excess_se = np.sqrt((1.0 - 2.0 / math.pi) * np.maximum(variance, 0.0)) * inv_weight
    bin_weight = np.bincount(bin_key, weights=columns["w"], minlength=size * n_bins)
    bin_predicted = np.bincount(bin_key, weights=columns["ws"], minlength=size * n_bins)
    bin_observed = np.bincount(bin_key, weights=columns["wy"], minlength=size * n_bins)
    with np.errstate(divide="ignore", invalid="ignore"):
        bin_prediction = np.where(bin_weight > 0, bin_predicted / bin_weight, np.nan)
        bin_label = np.where(bin_weight > 0, bin_observed / bin_weight, np.nan)
        excess_z = np.where(excess_se > 0.0, ece_excess / excess_se, np.nan)
    return {
        "segment": ids,
        "n": n,
        "weight_sum": weight,
        "ecce": ecce,
        "ecce_bound": ecce_bound,
        "sigma": sigma,
        "ecce_sigma": ecce_sigma,
        "ecce_p": ecce_p,
        "mean_prediction": predicted * inv_weight,
        "mean_label": observed * inv_weight,
        "calibration_ratio": ratio,
        "calibration_in_the_large": (predicted - observed) * inv_weight,
        "citl_z": citl_z,
        "ece": ece,
        "ece_null": ece_null,
        "ece_excess": ece_excess,
        "ece_excess_se": excess_se,
        "ece_excess_z": excess_z,
        "score_bound": np.sqrt(odds),
        "bin_weight": bin_weight.reshape(size, n_bins),
        "bin_prediction": bin_prediction.reshape(size, n_bins),
        "bin_label": bin_label.reshape(size, n_bins),
    }


def _path_range(position: np.ndarray, step: np.ndarray, size: int) -> np.ndarray:
    """max − min over k ≥ 0 of each segment's partial sums (with D_0 = 0), rows sorted by
    segment then cell."""
    if len(step) == 0:
        return np.zeros(size)
    running = np.cumsum(step)
    starts = np.flatnonzero(np.r_[True, position[1:] != position[:-1]])
    offset = np.repeat(running[starts] - step[starts], np.diff(np.r_[starts, len(step)]))
    path = running - offset
    high = np.maximum(_segment_max(position, path, size), 0.0)
    low = np.minimum(-_segment_max(position, -path, size), 0.0)
    return np.where(np.bincount(position, minlength=size) > 0, high - low, 0.0)


def _segment_max(position: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """Each segment's largest value (0 for a segment without rows); rows sorted by segment."""
    out = np.zeros(size)
    if len(values) == 0:
        return out
    starts = np.flatnonzero(np.r_[True, position[1:] != position[:-1]])
    out[position[starts]] = np.maximum.reduceat(values, starts)
    return out
