"""Multiclass fit rows → each key's T̂: a hash-chosen sample of the fit rows, cached once, and a
safeguarded Newton search on its exact NLL (``temperature_search``), one Spark pass a step.

**Sample.** A fit row of model version v is kept when
xxhash64(model version, slice columns, weight, d) mod 2³⁰ < r_v·2³⁰, with d the row's shifted
logits and r_v = min(1, ``max_fit_rows`` / N_v), N_v the valid rows of v that the scan counted
(every row with ``max_fit_rows: null``). The choice depends on the row's values only, so a
rerun keeps the same rows. The sample holds about r_v times v's fit rows: at most
``max_fit_rows`` in expectation, that many when every valid row is a fit row, fewer when ``fit``
selects a part of them. It is cached for the passes and released after.

**Passes.** The first sums, per key (model version × slice set × value), the sampled fit rows'
n, G and H at the three β of ``FIRST_BETAS`` (one copy of a row per β, summed per model version
× slice columns, then per slice set from that small table). Each next pass sums G and H of the
keys still searching at each one's own β (one copy of a row per slice set, the keys' β joined
by a broadcast); a key stops as ``temperature_search`` says, typically after 4–6 passes.

A key with fewer than ``min_fit_rows`` sampled fit rows takes its model version's ``overall``
T̂ (``fallback`` true) and is not searched; ``overall`` is fitted on whatever fit rows it has.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_calib.config import Config
from spark_calib.constants import OVERALL_SLICE_NAME, OVERALL_SLICE_VALUE
from spark_calib.local_data import local_dataframe
from spark_calib.recalibration.keyed_rows import (
    SLICE_NAME,
    SLICE_VALUE,
    join_key,
    labelled,
    slice_key_columns,
)
from spark_calib.recalibration.points import Key
from spark_calib.recalibration.temperature_search import (
    FIRST_BETAS,
    SearchState,
    advance,
    start,
)
from spark_calib.rows import canonical as row
from spark_calib.rows.temperature_terms import (
    derivatives,
    exponential_columns,
    projected_moments,
    shifted,
    shifted_names,
)

FIT_FLAG = "_fit_flag"
BETA = "_beta"
_POINT = "_point"
HASH_RANGE = 1 << 30


@dataclass(frozen=True)
class KeyFit:
    """One key's fit: its sampled fit rows' n, T̂, whether it is its model version's overall T̂
    (``fallback``), whether T̂ is interior (not at a bound), the sampling rate r_v of its
    model version and the Newton passes its search took."""

    n_fit: int = 0
    temperature: float | None = None
    fallback: bool = False
    interior: bool = False
    sample_rate: float = 1.0
    passes: int = 0


def sample_rates(
    valid_rows: Mapping[str | None, int], max_fit_rows: int | None
) -> dict[str | None, float]:
    """r_v = min(1, ``max_fit_rows`` / N_v) per model version (1 without a bound)."""
    if max_fit_rows is None:
        return dict.fromkeys(valid_rows, 1.0)
    return {v: min(1.0, max_fit_rows / n) if n > 0 else 1.0 for v, n in valid_rows.items()}


def fit_temperatures(
    base: DataFrame,
    config: Config,
    sets: Sequence[Sequence[str]],
    num_classes: int,
    valid_rows: Mapping[str | None, int],
) -> dict[Key, KeyFit]:
    """Each key's fit from ``base`` (valid rows with ``FIT_FLAG`` and the shifted logits)."""
    recalibration = config.recalibration
    assert recalibration is not None
    rates = sample_rates(valid_rows, recalibration.max_fit_rows)
    sample = _sample(base, config, num_classes, rates).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        counts, states = _first_pass(sample, config, sets, num_classes)
        searched = {
            key: state
            for key, state in states.items()
            if _own_fit(key, counts[key], recalibration.min_fit_rows)
        }
        while any(not state.done for state in searched.values()):
            pending = {key: state for key, state in searched.items() if not state.done}
            sums = _newton_pass(sample, config, sets, num_classes, pending)
            for key, state in pending.items():
                gradient, curvature = sums.get(key, (0.0, 0.0))
                searched[key] = advance(state, gradient, curvature)
    finally:
        sample.unpersist()
    fits: dict[Key, KeyFit] = {}
    for key, n in counts.items():
        rate = rates.get(key[0], 1.0)
        overall = searched.get((key[0], OVERALL_SLICE_NAME, OVERALL_SLICE_VALUE))
        own = searched.get(key)
        if own is not None:
            fits[key] = KeyFit(n, own.temperature, False, own.interior, rate, own.passes)
        else:
            found = overall.temperature if overall is not None else None
            fits[key] = KeyFit(n, found, fallback=True, sample_rate=rate)
    return fits


def _own_fit(key: Key, n: int, min_fit_rows: int) -> bool:
    return (key[1], key[2]) == (OVERALL_SLICE_NAME, OVERALL_SLICE_VALUE) or n >= min_fit_rows


def _sample(
    base: DataFrame, config: Config, num_classes: int, rates: Mapping[str | None, float]
) -> DataFrame:
    """The sampled fit rows: model version, slice columns, weight and shifted logits."""
    keep = [row.MODEL_VERSION, *slice_key_columns(config), row.WEIGHT, *shifted_names(num_classes)]
    fit_rows = base.where(F.col(FIT_FLAG) != 0).select(*keep)
    if all(rate >= 1.0 for rate in rates.values()):
        return fit_rows
    code = F.pmod(F.xxhash64(*[F.col(name) for name in keep]), F.lit(HASH_RANGE))
    return fit_rows.where(code < _threshold(F.col(row.MODEL_VERSION), rates))


def _threshold(version: Column, rates: Mapping[str | None, float]) -> Column:
    """r_v·2³⁰ of the row's model version (2³⁰, every row, for a version the scan did not
    count)."""
    found: Column = F.lit(HASH_RANGE)
    for name, rate in rates.items():
        matches = version.isNull() if name is None else version == F.lit(name)
        found = F.when(matches, F.lit(int(rate * HASH_RANGE))).otherwise(found)
    return found


def _class_sums(frame: DataFrame, num_classes: int, beta: Column, keys: list[str]) -> DataFrame:
    """n, Σw·g and Σw·h at ``beta`` per ``keys``."""
    d = shifted(num_classes)
    exponentials = exponential_columns(d, beta)
    found, _ = projected_moments(d, beta)
    projected = frame.select("*", *[e.alias(name) for name, e in exponentials.items()]).select(
        *keys,
        row.WEIGHT,
        d.true,
        found.total.alias("_s"),
        found.first.alias("_s1"),
        found.second.alias("_s2"),
    )
    terms = derivatives(F.col("_s"), F.col("_s1"), F.col("_s2"), d.true)
    weight = F.col(row.WEIGHT)
    return projected.groupBy(*keys).agg(
        F.count(F.lit(1)).alias("_n"),
        F.sum(weight * terms["g"]).alias("_g"),
        F.sum(weight * terms["h"]).alias("_h"),
    )


def _first_pass(
    sample: DataFrame, config: Config, sets: Sequence[Sequence[str]], num_classes: int
) -> tuple[dict[Key, int], dict[Key, SearchState]]:
    """Per key: sampled fit rows and the search's state after ``FIRST_BETAS``.

    The β are constants here, so the rows are summed per model version × slice columns first
    and the slice sets re-summed from that small table."""
    points = F.array(
        *[
            F.struct(F.lit(k).alias(_POINT), F.lit(float(beta)).alias(BETA))
            for k, beta in enumerate(FIRST_BETAS)
        ]
    )
    keep = [row.MODEL_VERSION, *slice_key_columns(config)]
    copies = sample.select("*", F.inline(points))
    fine = _class_sums(copies, num_classes, F.col(BETA), [*keep, _POINT])
    collected = (
        labelled(fine, config, sets)
        .groupBy(row.MODEL_VERSION, SLICE_NAME, SLICE_VALUE, _POINT)
        .agg(F.sum("_n").alias("n"), F.sum("_g").alias("g"), F.sum("_h").alias("h"))
        .collect()
    )
    size = len(FIRST_BETAS)
    counts: dict[Key, int] = {}
    gradients: dict[Key, list[float]] = {}
    curvatures: dict[Key, list[float]] = {}
    for r in collected:
        key = (r[row.MODEL_VERSION], r[SLICE_NAME], r[SLICE_VALUE])
        counts[key] = int(r["n"])
        gradients.setdefault(key, [0.0] * size)[r[_POINT]] = float(r["g"])
        curvatures.setdefault(key, [0.0] * size)[r[_POINT]] = float(r["h"])
    states = {
        key: start(
            (gradients[key][0], gradients[key][1], gradients[key][2]),
            (curvatures[key][0], curvatures[key][1], curvatures[key][2]),
        )
        for key in counts
    }
    return counts, states


def _newton_pass(
    sample: DataFrame,
    config: Config,
    sets: Sequence[Sequence[str]],
    num_classes: int,
    pending: Mapping[Key, SearchState],
) -> dict[Key, tuple[float, float]]:
    """Key → (G, H) at its state's β, for the keys of ``pending``."""
    table = local_dataframe(
        sample.sparkSession,
        [(key[0], key[1], key[2], state.beta) for key, state in pending.items()],
        f"_v string, _n string, _w string, {BETA} double",
    )
    keys = [row.MODEL_VERSION, SLICE_NAME, SLICE_VALUE]
    joined = join_key(labelled(sample, config, sets), table).where(F.col(BETA).isNotNull())
    collected = _class_sums(joined, num_classes, F.col(BETA), keys).collect()
    return {
        (r[row.MODEL_VERSION], r[SLICE_NAME], r[SLICE_VALUE]): (float(r["_g"]), float(r["_h"]))
        for r in collected
    }
