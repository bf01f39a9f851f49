"""The smooth ECE family of one key (``smooth_ece``), from its fine cells.

Błasiok & Nakkiran's (2023) smooth ECE with its self-chosen bandwidth, as ``relplot.smECE``
computes it. relplot deposits each row's mass and residual f − y on a grid of G = 1,001 nodes
x_j = j/1000 by linear interpolation (node j gets (1 − φ)·v, node j + 1 gets φ·v,
φ = 1000·(f − x_j)), convolves both with a Gaussian kernel reflected at 0 and 1, and returns
smECE_σ = Σ_t |(K_σ*R)(t)| / Σ_t ((K_σ*M)(t) + 10⁻⁴) over max(200, round(10/σ)) points t in
[0, 1]; σ* is found by ten bisection steps of σ < smECE_σ on [0, 1].

The deposits are sums, and every fine cell c (``cell`` = 1186·k + j, k its equal-width cell)
lies inside one interval [x_k, x_{k+1}), so they come exactly from the cell sums
W_c = Σw, C_c = Σw·f, O_c = Σw·y, Q_c = Σw·f², X_c = Σw·f·y of the key's top-label rows
(class null) summed per cell, over the cells with W_c > 0:

- node k: M += W_c − Φ_c, R += (C_c − O_c) − Ψ_c; node k + 1: M += Φ_c, R += Ψ_c, with
  Φ_c = Σw·φ = 1000(C_c − x_k·W_c) and Ψ_c = Σw·φ·(f − y) = 1000(Q_c − X_c − x_k(C_c − O_c)).

With weights, the node sums are rescaled to a mean weight of 1 (× n/W, n and W = Σ_c W_c over
those cells; relplot's 10⁻⁴ is in row units). relplot uses G = 1,001 nodes for σ ≥ 0.01 and
more below; this kernel always uses 1,001, so it equals relplot whenever the bisection stays at
σ ≥ 0.01 (σ* ≳ 0.02) and differs by about 1e-5 below (``docs/metrics.md``).

Output: one row (class null, ``smooth_ece``) with n and W as above, no error bound and no
standard error under any method (no analytic form; the jackknife would repeat the bandwidth
search G times); its value is null when W overflowed. A key without a cell of positive weight
has no row. Under the jackknife ``values`` keeps the (R, rows) shape with NaN replicates.
"""

from __future__ import annotations

import math

import numpy as np

from spark_calib.kernels.arrow_batch import Rows, floats, ints, is_null
from spark_calib.kernels.cell_grid import EQUAL_WIDTH_CELLS, LOG_ODDS_CELLS
from spark_calib.kernels.estimates import Estimates
from spark_calib.kernels.plan import FinishPlan
from spark_calib.registry.metrics import SMOOTH
from spark_calib.stats import schema as stats

NODES = EQUAL_WIDTH_CELLS + 1
SMOOTH_ECE = "smooth_ece"
_DENSITY_EPS = 1e-4
_MESH_POINTS = 200
_BISECTION_STEPS = 10
# The FFT's circular convolution folds the linear one's outputs k ≥ L onto k − L. Its length is
# 3·NODES − 2 + NODES − 1 = 4,001 and the outputs read are NODES − 1 + NODES // 2 onwards, so
# any L ≥ 4,001 − 1,500 = 2,501 leaves them exact; 2,560 = 2⁹·5 transforms fast.
_FFT_SIZE = 2560
# Per σ and per mesh size, shared by every key (plain dicts, not functools.lru_cache: the
# kernels are pickled by value to workers without spark_calib, and an lru_cache wrapper only
# pickles by reference).
_SPECTRA: dict[float, np.ndarray] = {}
_MESHES: dict[int, tuple[np.ndarray, np.ndarray]] = {}
_CELL_SUMS = (
    stats.SUM_WEIGHT,
    stats.SUM_WEIGHT_CONFIDENCE,
    stats.SUM_WEIGHT_OUTCOME,
    stats.SUM_WEIGHT_CONFIDENCE_SQ,
    stats.SUM_WEIGHT_CONFIDENCE_OUTCOME,
)


def smooth_estimates(table: Rows, plan: FinishPlan) -> Estimates | None:
    """The smooth ECE row of one key's valid statistics rows (columns ``class``, ``cell``,
    ``n`` and the cell sums); None when the plan requests no metric of the family or the key
    has no cell of positive weight (no row).

    ``values`` has shape (R, rows) with the replicates NaN: the jackknife gives no se here."""
    if not plan.names(SMOOTH):
        return None
    deposits = node_deposits(table)
    if deposits is None:
        return None
    n, weight, mass, residual = deposits
    values = np.full((plan.replicates, 1), np.nan)
    if math.isfinite(weight):
        scale = n / weight
        values[0, 0] = smooth_ece_from_nodes(mass * scale, residual * scale)
    return Estimates(
        classes=[None],
        metrics=[SMOOTH_ECE],
        values=values,
        n=np.array([n], dtype=np.int64),
        weight_sum=np.array([weight]),
        se=np.array([np.nan]),
        error_bound=np.array([np.nan]),
        noise=np.array([True]),
    )


def node_deposits(table: Rows) -> tuple[int, float, np.ndarray, np.ndarray] | None:
    """n, W and the node sums M_j, R_j (two arrays of ``NODES``) of the key's top-label cells
    of positive weight (module docstring); None when it has no such cell."""
    top = is_null(table, stats.CLASS)
    cells = ints(table, stats.CELL, -1)
    kept = top & (cells >= 0)
    distinct, index = np.unique(cells[kept], return_inverse=True)
    size = distinct.size

    def per_cell(values: np.ndarray) -> np.ndarray:
        return np.bincount(index, weights=values[kept], minlength=size)

    count = per_cell(ints(table, stats.N, 0).astype(float))
    w, c, o, q, x_sum = (per_cell(floats(table, name)) for name in _CELL_SUMS)
    used = w > 0.0
    if not used.any():
        return None
    w, c, o, q, x_sum = w[used], c[used], o[used], q[used], x_sum[used]
    h = 1.0 / EQUAL_WIDTH_CELLS
    left = distinct[used] // LOG_ODDS_CELLS
    x = left.astype(float) * h
    mass, residual = np.zeros(NODES), np.zeros(NODES)
    # Sums near the double range overflow to ±∞ as in Spark; W = ∞ makes the value null.
    with np.errstate(over="ignore", invalid="ignore"):
        frac_mass = (c - x * w) / h
        gap = c - o
        frac_residual = (q - x_sum - x * gap) / h
        np.add.at(mass, left, w - frac_mass)
        np.add.at(mass, left + 1, frac_mass)
        np.add.at(residual, left, gap - frac_residual)
        np.add.at(residual, left + 1, frac_residual)
        weight = float(w.sum())
    return int(np.rint(count[used].sum())), weight, mass, residual


def smooth_ece_from_nodes(mass: np.ndarray, residual: np.ndarray) -> float:
    """relplot's ``smECE`` from node sums on the 1,001-node grid: smECE_σ* with σ* = 1 when
    1 < smECE_1, else the upper end after ten bisection steps on [0, 1] that keep the upper
    end where σ < smECE_σ fails (σ < 0.001 never fails)."""
    # The nodes' spectra do not depend on σ: transformed once for the whole search.
    spectra = np.fft.rfft(np.stack([_reflected(residual), _reflected(mass)]), _FFT_SIZE, axis=1)

    found: dict[float, float] = {}

    def at(sigma: float) -> float:
        if sigma not in found:
            found[sigma] = _smooth_ece(spectra, sigma)
        return found[sigma]

    def small_enough(sigma: float) -> bool:
        return sigma < 0.001 or sigma < at(sigma)

    if small_enough(1.0):
        return at(1.0)
    start, end = 1.0, 0.0
    for _ in range(_BISECTION_STEPS):
        midpoint = (start + end) / 2
        if small_enough(midpoint):
            end = midpoint
        else:
            start = midpoint
    return at(start)


def _smooth_ece(spectra: np.ndarray, sigma: float) -> float:
    """smECE_σ = Σ_t |(K_σ*R)(t)| / Σ_t ((K_σ*M)(t) + 10⁻⁴), from the spectra of the
    reflected R and M (``_reflected``)."""
    index, fraction = _mesh(max(round(10 / sigma), _MESH_POINTS))
    convolved = _convolved(spectra, sigma)
    smoothed = convolved[:, index] * (1 - fraction) + convolved[:, index + 1] * fraction
    smoothed_r = smoothed[0]
    density = smoothed[1] + _DENSITY_EPS
    # relplot's order of operations (|r/d|·d), kept so the values agree to the last bits.
    return float(np.sum(np.abs(smoothed_r / density) * density) / np.sum(density))


def _kernel_spectrum(sigma: float) -> np.ndarray:
    """The spectrum of the Gaussian density of scale σ at the nodes, centred at 1/2 (the
    bisection visits the same σ for every key: computed once per σ)."""
    if sigma not in _SPECTRA:
        t = np.linspace(0.0, 1.0, NODES)
        kernel = np.exp(-((t - 0.5) ** 2) / (2 * sigma**2)) / (np.sqrt(2 * np.pi) * sigma)
        spectrum = np.fft.rfft(kernel, _FFT_SIZE)
        spectrum.flags.writeable = False
        _SPECTRA[sigma] = spectrum
    return _SPECTRA[sigma]


def _mesh(points: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``points`` evaluation points t of [0, 1] as their node j (the left one) and their
    fraction t·1000 − j of the way to node j + 1."""
    if points not in _MESHES:
        t = np.linspace(0.0, 1.0, points)
        index = (t * (NODES - 1)).astype(int).clip(0, NODES - 2)
        fraction = t * (NODES - 1) - index
        index.flags.writeable = False
        fraction.flags.writeable = False
        _MESHES[points] = (index, fraction)
    return _MESHES[points]


def _reflected(values: np.ndarray) -> np.ndarray:
    """The nodes with their mirror images at both ends (relplot's reflection at 0 and 1)."""
    return np.concatenate([np.flip(values)[:-1], values, np.flip(values)[1:]])


def _convolved(spectra: np.ndarray, sigma: float) -> np.ndarray:
    """Each row of nodes convolved with the kernel of scale σ, the values reflected at both
    ends: the middle ``NODES`` of ``np.convolve(reflected, kernel, "valid")``, by FFT (equal to
    it within about 1e-15 of its largest value, and faster)."""
    full = np.fft.irfft(spectra * _kernel_spectrum(sigma), _FFT_SIZE, axis=1)
    # "valid" output i is full output i + len(kernel) − 1; the middle starts at NODES // 2.
    start = NODES - 1 + NODES // 2
    return full[:, start : start + NODES]
