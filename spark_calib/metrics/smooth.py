"""Statistics → ``smooth_ece``: Błasiok & Nakkiran's (2023) smooth ECE with its self-chosen
bandwidth, as ``relplot.smECE`` computes it, from node sums of the fine cells.

relplot deposits each row's mass and residual f − y on a grid of G = 1,001 nodes x_j = j/1000
by linear interpolation (node j gets (1 − φ)·v, node j + 1 gets φ·v, φ = 1000·(f − x_j)),
convolves both with a Gaussian kernel reflected at 0 and 1, and returns
smECE_σ = Σ_t |(K_σ*R)(t)| / Σ_t ((K_σ*M)(t) + 10⁻⁴) over max(200, round(10/σ)) points t in
[0, 1]; σ* is found by ten bisection steps of σ < smECE_σ on [0, 1]. The deposits are sums,
and because every fine cell lies inside one interval [x_j, x_{j+1}) they come exactly from
the cell sums:
Σw·φ = 1000(Σw·f − x_jΣw) and Σw·φ·(f − y) = 1000(Σw·f² − Σw·f·y − x_j(Σw·f − Σw·y)).

With weights, the node sums are rescaled to a mean weight of 1 (relplot's 10⁻⁴ is in row units).
relplot uses G = 1,001 nodes for σ ≥ 0.01 and more below; this module always uses 1,001, so it
equals relplot whenever the bisection stays at σ ≥ 0.01 (σ* ≳ 0.02) and differs by about 1e-5
below (``docs/metrics.md``). The node sums (≤ 1,001 per key, one row of arrays per key) are
collected to the driver and the search runs in NumPy, with FFT convolutions: one small Spark job.

Output: metric rows (``FAMILY_COLUMNS`` and ``error_bound`` null) per key.
"""

from __future__ import annotations

import numpy as np
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_calib.local_data import local_dataframe
from spark_calib.metrics.cells import cell_sums
from spark_calib.metrics.output import ERROR_BOUND, FAMILY_COLUMNS
from spark_calib.rows.cells import EQUAL_WIDTH_CELLS, LOG_ODDS_CELLS
from spark_calib.stats import schema as stats

NODES = EQUAL_WIDTH_CELLS + 1
SMOOTH_ECE = "smooth_ece"
_DENSITY_EPS = 1e-4
_MESH_POINTS = 200
_BISECTION_STEPS = 10
# A power of two ≥ the full convolution's length (3·NODES − 2 + NODES − 1), so the FFT's
# circular convolution equals the linear one.
_FFT_SIZE = 4096
_SCHEMA = (
    "model_version string, slice_name string, slice_value string, class string, "
    "metric string, value double, n long, weight_sum double, error_bound double"
)


def node_sums(stats_df: DataFrame) -> DataFrame:
    """Per key: the occupied nodes j (``node``, ascending) with their mass M_j = Σ w·λ_j(f)
    (``m``) and residual R_j = Σ w·λ_j(f)(f − y) (``r``) as three aligned arrays, and the key's
    n and W. One row per key, so the driver receives a few arrays rather than a row per node."""
    cells = cell_sums(stats_df)
    h = 1.0 / EQUAL_WIDTH_CELLS
    left = F.floor(F.col(stats.CELL) / F.lit(LOG_ODDS_CELLS)).cast("int")
    x = left.cast("double") * F.lit(h)
    frac_mass = (F.col("_c") - x * F.col("_w")) / F.lit(h)
    residual = F.col("_c") - F.col("_o")
    frac_residual = (F.col("_q") - F.col("_x") - x * residual) / F.lit(h)
    deposits = F.array(
        F.struct(
            left.alias("node"),
            (F.col("_w") - frac_mass).alias("m"),
            (residual - frac_residual).alias("r"),
        ),
        F.struct((left + 1).alias("node"), frac_mass.alias("m"), frac_residual.alias("r")),
    )
    per_node = (
        cells.select(*stats.SLICE_KEY_COLUMNS, "_n_key", "_w_key", F.inline(deposits))
        .groupBy(*stats.SLICE_KEY_COLUMNS, "node")
        .agg(
            F.sum("m").alias("m"),
            F.sum("r").alias("r"),
            F.max("_n_key").alias("n"),
            F.max("_w_key").alias("w"),
        )
    )
    nodes = F.array_sort(F.collect_list(F.struct("node", "m", "r")))
    return (
        per_node.groupBy(*stats.SLICE_KEY_COLUMNS)
        .agg(nodes.alias("_nodes"), F.max("n").alias("n"), F.max("w").alias("w"))
        .select(
            *stats.SLICE_KEY_COLUMNS,
            *[_field(F.col("_nodes"), field).alias(field) for field in ("node", "m", "r")],
            "n",
            "w",
        )
    )


def _field(structs: Column, name: str) -> Column:
    """The array of field ``name`` of an array of structs."""
    return F.transform(structs, lambda e: e[name])


def smooth_ece_metrics(stats_df: DataFrame) -> DataFrame:
    """One ``smooth_ece`` row per key (a small collect of the node sums, then NumPy)."""
    rows = []
    for row in node_sums(stats_df).collect():
        n, weight = int(row["n"]), float(row["w"])
        occupied = np.asarray(row["node"], dtype=int)
        mass, residual = np.zeros(NODES), np.zeros(NODES)
        mass[occupied] = row["m"]
        residual[occupied] = row["r"]
        scale = n / weight if weight > 0 else 0.0
        ece = smooth_ece_from_nodes(mass * scale, residual * scale)
        key = (row[stats.MODEL_VERSION], row[stats.SLICE_NAME], row[stats.SLICE_VALUE])
        rows.append((*key, None, SMOOTH_ECE, ece, n, weight, None))
    session = stats_df.sparkSession
    return local_dataframe(session, rows, _SCHEMA).select(*FAMILY_COLUMNS, ERROR_BOUND)


def smooth_ece_from_nodes(mass: np.ndarray, residual: np.ndarray) -> float:
    """relplot's ``smECE`` (self-chosen σ) from node sums on the 1,001-node grid."""

    def at(sigma: float) -> float:
        return _smooth_ece(mass, residual, sigma)

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


def _smooth_ece(mass: np.ndarray, residual: np.ndarray, sigma: float) -> float:
    t = np.linspace(0.0, 1.0, max(round(10 / sigma), _MESH_POINTS))
    kernel = _kernel(sigma)
    smoothed_r = _interpolate(t, _reflected_convolve(residual, kernel))
    density = _interpolate(t, _reflected_convolve(mass, kernel)) + _DENSITY_EPS
    return float(np.sum(np.abs(smoothed_r / density) * density) / np.sum(density))


def _kernel(sigma: float) -> np.ndarray:
    t = np.linspace(0.0, 1.0, NODES)
    return np.exp(-((t - 0.5) ** 2) / (2 * sigma**2)) / (np.sqrt(2 * np.pi) * sigma)


def _reflected_convolve(values: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """The nodes convolved with the kernel, the values reflected at both ends: the middle
    ``NODES`` of ``np.convolve(reflected, kernel, "valid")``, by FFT (equal to it within
    about 1e-15 of its largest value, and faster)."""
    extended = np.concatenate([np.flip(values)[:-1], values, np.flip(values)[1:]])
    size = _FFT_SIZE
    full = np.fft.irfft(np.fft.rfft(extended, size) * np.fft.rfft(kernel, size), size)
    # "valid" output i is full output i + len(kernel) − 1; the middle starts at NODES // 2.
    start = NODES - 1 + NODES // 2
    return full[start : start + NODES]


def _interpolate(t: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    index = (t * (NODES - 1)).astype(int).clip(0, NODES - 2)
    residual = t * (NODES - 1) - index
    return nodes[index] * (1 - residual) + nodes[index + 1] * residual
