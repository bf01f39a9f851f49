"""pandas + NumPy baseline: what a user without Spark would write for the typical config.

Measured: reading the needed columns of the same Parquet log with pyarrow (string columns as
dictionaries, i.e. pandas categoricals), the per-row terms with NumPy, and for every slice set
one pandas groupby of model version × slice values × bin into per-bin sums, from which ECE, MCE,
RMSCE, Brier, NLL, accuracy, count and the reliability table (every bin, empty ones included)
follow per key. No Python loop runs over rows. The definitions are the README's, re-implemented
here independently of the engine: 15 equal-width left-closed bins (the last one holds 1.0),
binary confidence s if s ≥ 0.5 else 1 − s, correct = [s ≥ 0.5] == y, NLL clipped at 1e-15.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from bench.configs import MODEL_VERSION, slice_columns

N_BINS = 15
THRESHOLD = 0.5
NLL_EPS = 1e-15
OVERALL_NAME = "overall"
SEPARATOR = ","
SCORE = "score"
LABEL = "label"
BIN = "bin"
N = "n"
# Per-row terms summed per bin.
CONFIDENCE = "confidence"
CORRECT = "correct"
BRIER = "brier"
NLL = "nll"
SUMS = (CONFIDENCE, CORRECT, BRIER, NLL)
STRING_COLUMNS = ("model_version", "country", "device", "tier")


@dataclass(frozen=True)
class PandasResult:
    """Per key (model version × slice value): the metrics, and the reliability bins."""

    metrics: pd.DataFrame
    reliability: pd.DataFrame


def read_log(path: Path, columns: Sequence[str]) -> pd.DataFrame:
    """The ``columns`` of the Parquet log, string columns as categoricals."""
    dictionary = [name for name in columns if name in STRING_COLUMNS]
    table = pq.read_table(str(path), columns=list(columns), read_dictionary=dictionary)
    return table.to_pandas()


def row_terms(frame: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """The key columns plus, per row, its bin and the four terms that are summed per bin."""
    score = frame[SCORE].to_numpy(dtype=np.float64)
    positive = frame[LABEL].to_numpy() == 1
    predicted = score >= THRESHOLD
    confidence = np.where(predicted, score, 1.0 - score)
    # The edges are the quotients k/M themselves (as in the README), not floor(c·M).
    edges = np.arange(N_BINS + 1) / N_BINS
    bins = np.clip(np.searchsorted(edges, confidence, side="right") - 1, 0, N_BINS - 1)
    p_true = np.where(positive, score, 1.0 - score)
    terms = {
        BIN: bins.astype(np.int64),
        CONFIDENCE: confidence,
        CORRECT: (predicted == positive).astype(np.float64),
        BRIER: (score - positive) ** 2,
        NLL: -np.log(np.maximum(p_true, NLL_EPS)),
    }
    return pd.DataFrame({**{key: frame[key] for key in keys}, **terms})


def _per_bin(rows: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    grouped = rows.groupby([*keys, BIN], observed=True, sort=True)
    aggregations = {N: (CONFIDENCE, "size"), **{name: (name, "sum") for name in SUMS}}
    return grouped.agg(**aggregations)


def _slice_value(keys_frame: pd.DataFrame, slice_set: Sequence[str]) -> pd.Series:
    if not slice_set:
        return pd.Series("", index=keys_frame.index)
    parts = [keys_frame[name].astype(str) for name in slice_set]
    return parts[0].str.cat(parts[1:], sep=SEPARATOR) if len(parts) > 1 else parts[0]


def _labelled(frame: pd.DataFrame, slice_set: Sequence[str]) -> pd.DataFrame:
    """Key columns → model_version, slice_name, slice_value (the spark_calib convention)."""
    flat = frame.reset_index()
    flat.insert(1, "slice_name", SEPARATOR.join(slice_set) or OVERALL_NAME)
    flat.insert(2, "slice_value", _slice_value(flat, slice_set))
    flat[MODEL_VERSION] = flat[MODEL_VERSION].astype(str)
    return flat.drop(columns=list(slice_set))


def _metrics(per_bin: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    n_bin = per_bin[N]
    gap = per_bin[CORRECT] / n_bin - per_bin[CONFIDENCE] / n_bin
    by_key = per_bin.groupby(level=keys, observed=True)
    n = by_key[N].sum()
    return pd.DataFrame(
        {
            "ece": (per_bin[CORRECT] - per_bin[CONFIDENCE])
            .abs()
            .groupby(level=keys, observed=True)
            .sum()
            / n,
            "mce": gap.abs().groupby(level=keys, observed=True).max(),
            "rmsce": np.sqrt((n_bin * gap**2).groupby(level=keys, observed=True).sum() / n),
            "brier": by_key[BRIER].sum() / n,
            "nll": by_key[NLL].sum() / n,
            "accuracy": by_key[CORRECT].sum() / n,
            "count": n,
        }
    )


def _reliability(per_bin: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Every bin of every key; an empty bin has n = 0 and null means."""
    key_index = per_bin.groupby(level=keys, observed=True).size().index
    levels = [np.repeat(key_index.get_level_values(i), N_BINS) for i in range(len(keys))]
    every_bin = np.tile(np.arange(N_BINS, dtype=np.int64), len(key_index))
    full = pd.MultiIndex.from_arrays([*levels, every_bin], names=[*keys, BIN])
    table = per_bin.reindex(full)
    n = table[N].fillna(0).astype(np.int64)
    mean_confidence = table[CONFIDENCE] / n.where(n > 0)
    accuracy = table[CORRECT] / n.where(n > 0)
    bins = full.get_level_values(BIN)
    return pd.DataFrame(
        {
            "bin_lower": bins / N_BINS,
            "bin_upper": (bins + 1) / N_BINS,
            N: n,
            "mean_confidence": mean_confidence,
            "accuracy": accuracy,
            "gap": accuracy - mean_confidence,
        },
        index=full,
    )


def evaluate_pandas(path: Path, slices: Sequence[Sequence[str]]) -> PandasResult:
    """Metrics and reliability of the binary log at ``path`` per model version × slice value."""
    keys_all = [MODEL_VERSION, *slice_columns(slices)]
    frame = read_log(path, [*keys_all, SCORE, LABEL])
    rows = row_terms(frame, keys_all)
    metrics, reliability = [], []
    for slice_set in slices:
        keys = [MODEL_VERSION, *slice_set]
        per_bin = _per_bin(rows, keys)
        metrics.append(_labelled(_metrics(per_bin, keys), slice_set))
        reliability.append(_labelled(_reliability(per_bin, keys), slice_set))
    return PandasResult(
        metrics=pd.concat(metrics, ignore_index=True),
        reliability=pd.concat(reliability, ignore_index=True),
    )


def max_abs_ece_difference(result: PandasResult, spark_metrics: Path) -> float:
    """max over model versions of |ECE(pandas) − ECE(spark_calib)| on the overall population,
    spark_calib's read from the ``metrics`` Parquet output at ``spark_metrics``."""
    spark = pq.read_table(str(spark_metrics)).to_pandas()
    overall = spark[
        (spark["slice_name"] == OVERALL_NAME) & (spark["metric"] == "ece") & spark["class"].isna()
    ]
    theirs = overall.set_index(MODEL_VERSION)["value"].astype(np.float64)
    ours_rows = result.metrics[result.metrics["slice_name"] == OVERALL_NAME]
    ours = ours_rows.set_index(MODEL_VERSION)["ece"].astype(np.float64)
    if set(theirs.index) != set(ours.index):
        versions = f"spark_calib {sorted(theirs.index)}, pandas {sorted(ours.index)}"
        raise ValueError(f"model versions differ: {versions}")
    return float((ours - theirs.reindex(ours.index)).abs().max())
