"""A NumPy brute force of the slice search: every conjunction of a small log's columns, each
segment's scores from its own rows (written from the definitions in docs/slice_search.md, not
from spark_calib's kernel), and the report rule applied to them."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from mcgrad.metrics import ecce_pvalue_from_sigma
from scipy.stats import false_discovery_control

from tests.support.key_stats_cells import cell_ids


def encode(value: Any) -> str:
    """A value as the search writes it in slice_value (Spark's cast to string; no escapes
    needed for these logs)."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    return str(value)


def segment_scores(s: np.ndarray, y: np.ndarray, w: np.ndarray, n_bins: int) -> dict[str, float]:
    """One segment's scores: the cell path's range, σ, the sigma scale and its p-value
    (MCGrad's), the calibration summaries, and the M-bin ECE of the rows."""
    cells = cell_ids(s)
    unique, inverse = np.unique(cells, return_inverse=True)
    weight = w.sum()
    per_cell = np.bincount(inverse.ravel(), weights=w * (y - s), minlength=len(unique))
    path = np.r_[0.0, np.cumsum(per_cell)] / weight
    ecce = float(path.max() - path.min())
    variance = float(np.sum(w * w * s * (1 - s)))
    sigma = math.sqrt(variance) / weight
    ecce_sigma = ecce / sigma
    predicted, observed = float(np.sum(w * s)), float(np.sum(w * y))
    bins = np.minimum(np.floor(s * n_bins).astype(int), n_bins - 1)
    gaps = np.bincount(bins, weights=w * (s - y), minlength=n_bins)
    # ece_excess: each bin's gap as N(0, Σ w² s(1 − s) / W²) under perfect calibration.
    null_variance = np.bincount(bins, weights=w * w * s * (1 - s), minlength=n_bins)
    ece = float(np.abs(gaps).sum() / weight)
    ece_null = math.sqrt(2 / math.pi) * float(np.sqrt(null_variance).sum()) / weight
    excess_se = math.sqrt((1 - 2 / math.pi) * float(null_variance.sum())) / weight
    return {
        "n": float(len(s)),
        "weight_sum": float(weight),
        "ecce": ecce,
        "sigma": sigma,
        "ecce_sigma": ecce_sigma,
        "ecce_p": float(ecce_pvalue_from_sigma(ecce_sigma)),
        "calibration_in_the_large": (predicted - observed) / weight,
        "citl_z": (predicted - observed) / math.sqrt(variance),
        "calibration_ratio": predicted / observed if observed > 0 else math.nan,
        "mean_prediction": predicted / weight,
        "mean_label": observed / weight,
        "ece": ece,
        "ece_null": ece_null,
        "ece_excess": ece - ece_null,
        "ece_excess_se": excess_se,
        "ece_excess_z": (ece - ece_null) / excess_se,
    }


def brute_force(
    frame: pd.DataFrame,
    columns: Sequence[str],
    max_level: int,
    n_bins: int,
    score: str = "s",
    label: str = "y",
    weight: str | None = None,
) -> dict[tuple[str, str], dict[str, float]]:
    """(slice_name, slice_value) → scores, for every conjunction of up to ``max_level`` of
    ``columns`` (in their order) present in ``frame``."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    w_all = frame[weight].to_numpy(float) if weight else np.ones(len(frame))
    for level in range(1, max_level + 1):
        for combo in itertools.combinations(columns, level):
            for values, index in frame.groupby(list(combo), sort=False).indices.items():
                values = values if isinstance(values, tuple) else (values,)
                rows = frame.iloc[index]
                out[(",".join(combo), ",".join(encode(v) for v in values))] = segment_scores(
                    rows[score].to_numpy(float),
                    rows[label].to_numpy(float),
                    w_all[index],
                    n_bins,
                )
    return out


def report(
    segments: dict[tuple[str, str], dict[str, float]],
    min_rows: int,
    top_k: int,
    alpha: float,
    columns: Sequence[str],
) -> list[tuple[str, str]]:
    """The report rule of docs/slice_search.md over the brute force (pruning off): BH over the
    segments with n ≥ min_rows (SciPy's), a child dropped when a significant parent has a z at
    least its own, then the top_k by z."""
    tested = {key: s for key, s in segments.items() if s["n"] >= min_rows}
    keys = list(tested)
    adjusted = false_discovery_control([tested[k]["ecce_p"] for k in keys], method="bh")
    significant = {k for k, p in zip(keys, adjusted, strict=True) if p <= alpha}
    kept = []
    for name, value in keys:
        names, values = name.split(","), value.split(",")
        parents = [
            (",".join(names[:i] + names[i + 1 :]), ",".join(values[:i] + values[i + 1 :]))
            for i in range(len(names))
            if len(names) > 1
        ]
        z = tested[(name, value)]["ecce_sigma"]
        if any(p in significant and tested[p]["ecce_sigma"] >= z for p in parents):
            continue
        kept.append((name, value))
    order = {c: i for i, c in enumerate(columns)}
    kept.sort(
        key=lambda k: (
            -tested[k]["ecce_sigma"],
            len(k[0].split(",")),
            [order[c] for c in k[0].split(",")],
            k[1],
        )
    )
    return kept[:top_k]
