"""Multiclass fit rows → each key's T̂: a hash-chosen sample of the fit rows, cached once, and a
safeguarded Newton search on its exact NLL (``temperature_search``), one Spark pass a step.

**Sample.** A fit row is kept when its ``_row_code`` (xxhash64 of the input columns the config
reads) mod 2³⁰ < r·2³⁰, with r = min(1, ``max_fit_rows`` / N) and N the valid rows the scan
counted, all model versions together (r = 1 with ``max_fit_rows: null``). The choice depends
on the row's values only, so a rerun keeps the same rows. The sample holds about r times the
fit rows: at most ``max_fit_rows`` in expectation, that many when every valid row is a fit
row, fewer when ``fit`` selects a part of them. Every model version (every day of a
backfill) is sampled at the same rate. The chosen rows are cached with their reason and fit
flag, and the passes read the valid fit rows off the cache (``_fit_rows``); the cache is
released after.

**Passes.** The first sums, per key (model version × slice set × value), the sampled fit rows'
n, G and H at the nine β of ``FIRST_BETAS`` (one copy of a row per β, summed per fine group,
the model version and every slice column, then per slice set from that small table). Each
next pass joins each fine group to the β of its keys still searching (a broadcast) and sums
G, H and the next two derivatives (G″, G‴: the cumulants κ₃, κ₄ of
``spark_calib.rows.temperature_terms``) per group and slice set; the driver adds them up per
key. A key stops as ``temperature_search`` says, typically after one or two such passes (the
third and fourth derivatives save one: two more class sums a row, no more exponentials).

A key with fewer than ``min_fit_rows`` sampled fit rows takes its model version's ``overall``
T̂ (``fallback`` true) and is not searched; ``overall`` is fitted on whatever fit rows it has.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

import numpy as np
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DoubleType,
    IntegerType,
    StructField,
    StructType,
)

from spark_calib.config import Config
from spark_calib.constants import OVERALL_SLICE_NAME, OVERALL_SLICE_VALUE
from spark_calib.local_data import local_dataframe
from spark_calib.recalibration.keyed_rows import (
    SLICE_NAME,
    SLICE_VALUE,
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
    cumulants,
    derivatives,
    exponential_columns,
    higher_sums,
    projected_moments,
    shifted,
    shifted_logits,
    shifted_names,
)
from spark_calib.stats.aggregate import SLICE_SET

BETA = "_beta"
_POINT = "_point"
_RAW = "_raw"
_BETAS = "_betas"
_FIT_ROW = "_fit_row"
HASH_RANGE = 1 << 30


@dataclass(frozen=True)
class KeyFit:
    """One key's fit: its sampled fit rows' n, T̂, whether it is its model version's overall T̂
    (``fallback``) and the run's sampling rate r."""

    n_fit: int = 0
    temperature: float | None = None
    fallback: bool = False
    sample_rate: float = 1.0


def sample_rate(valid_rows: Mapping[str | None, int], max_fit_rows: int | None) -> float:
    """r = min(1, ``max_fit_rows`` / N), N the valid rows of every model version (1 without a
    bound)."""
    total = sum(valid_rows.values())
    if max_fit_rows is None or total <= max_fit_rows:
        return 1.0
    return max_fit_rows / total


@dataclass(frozen=True)
class Fits:
    """Each key's fit, and the values of its slice set's columns (in the set's order) for the
    keys the sample saw."""

    fits: dict[Key, KeyFit]
    values: dict[Key, tuple[Any, ...]]


def fit_temperatures(
    rows: DataFrame,
    config: Config,
    sets: Sequence[Sequence[str]],
    num_classes: int,
    valid_rows: Mapping[str | None, int],
) -> Fits:
    """Each key's fit from the canonical ``rows`` (with ``_row_code`` and ``_logits``)."""
    recalibration = config.recalibration
    assert recalibration is not None
    rate = sample_rate(valid_rows, recalibration.max_fit_rows)
    cached = _sample(rows, config, num_classes, rate).persist(StorageLevel.MEMORY_AND_DISK)
    sample = _fit_rows(cached)
    try:
        counts, states, groups = _first_pass(sample, config, sets, num_classes)
        searched = {
            key: state
            for key, state in states.items()
            if _own_fit(key, counts[key], recalibration.min_fit_rows)
        }
        while any(not state.done for state in searched.values()):
            pending = {key: state for key, state in searched.items() if not state.done}
            sums = _newton_pass(sample, config, num_classes, groups, pending)
            for key, state in pending.items():
                searched[key] = advance(state, *sums.get(key, (0.0, 0.0, 0.0, 0.0)))
    finally:
        cached.unpersist()
    fits: dict[Key, KeyFit] = {}
    for key, n in counts.items():
        overall = searched.get((key[0], OVERALL_SLICE_NAME, OVERALL_SLICE_VALUE))
        own = searched.get(key)
        if own is not None:
            fits[key] = KeyFit(n, own.temperature, fallback=False, sample_rate=rate)
        else:
            found = overall.temperature if overall is not None else None
            fits[key] = KeyFit(n, found, fallback=True, sample_rate=rate)
    return Fits(fits, _key_values(groups, config, sets))


def _key_values(
    groups: _Groups, config: Config, sets: Sequence[Sequence[str]]
) -> dict[Key, tuple[Any, ...]]:
    """Key → the values of its set's slice columns, read off any of its fine groups."""
    positions = {name: i for i, name in enumerate(config.slice_columns())}
    found: dict[Key, tuple[Any, ...]] = {}
    for values, keys in zip(groups.values, groups.keys, strict=True):
        for columns, key in zip(sets, keys, strict=True):
            if key not in found:
                # values[0] is the model version; the slice columns follow.
                found[key] = tuple(values[1 + positions[name]] for name in columns)
    return found


def _own_fit(key: Key, n: int, min_fit_rows: int) -> bool:
    return (key[1], key[2]) == (OVERALL_SLICE_NAME, OVERALL_SLICE_VALUE) or n >= min_fit_rows


def _sample(rows: DataFrame, config: Config, num_classes: int, rate: float) -> DataFrame:
    """The rows the code chooses: model version, slice columns, weight, shifted logits, and
    the reason and whether the row is a fit row, which ``_fit_rows`` selects on.

    Only the code is tested here, so a row the sample leaves out is neither checked nor
    shifted, and a chosen row is checked once. Testing the reason here too would check it
    twice: Spark pushes the filter below the projection that computes the reason, as a copy
    of its expression, and still computes the reason for the masked columns."""
    if rate < 1.0:
        code = F.pmod(F.col(row.ROW_CODE), F.lit(HASH_RANGE))
        rows = rows.where(code < F.lit(int(rate * HASH_RANGE)))
    fit = F.coalesce(F.col(row.FIT) != 0, F.lit(False)) if row.FIT in rows.columns else F.lit(True)
    shifted_columns = shifted_logits(F.col(row.LOGITS), F.col(row.LABEL), num_classes)
    return rows.select(
        *_group_columns(config),
        row.WEIGHT,
        *[expression.alias(name) for name, expression in shifted_columns.items()],
        row.REASON,
        fit.alias(_FIT_ROW),
    )


def _fit_rows(cached: DataFrame) -> DataFrame:
    """The valid fit rows of the cached sample (a filter over the cache, not pushed into it),
    without the reason and the fit flag."""
    kept = [name for name in cached.columns if name not in (row.REASON, _FIT_ROW)]
    return cached.where(F.col(row.REASON).isNull() & F.col(_FIT_ROW)).select(*kept)


def _class_sums(
    frame: DataFrame, num_classes: int, beta: Column, keys: list[str], higher: bool = False
) -> DataFrame:
    """n, Σw·g and Σw·h at ``beta`` per ``keys``; with ``higher`` also Σw·κ₃ (``_t``) and
    Σw·κ₄ (``_q``)."""
    d = shifted(num_classes)
    exponentials = exponential_columns(d, beta)
    found, _ = projected_moments(d, beta)
    extra = []
    if higher:
        third, fourth = higher_sums(d, beta)
        extra = [third.alias("_s3"), fourth.alias("_s4")]
    projected = frame.select("*", *[e.alias(name) for name, e in exponentials.items()]).select(
        *keys,
        row.WEIGHT,
        d.true,
        found.total.alias("_s"),
        found.first.alias("_s1"),
        found.second.alias("_s2"),
        *extra,
    )
    s, s1, s2 = F.col("_s"), F.col("_s1"), F.col("_s2")
    terms = derivatives(s, s1, s2, d.true)
    weight = F.col(row.WEIGHT)
    sums = [
        F.count(F.lit(1)).alias("_n"),
        F.sum(weight * terms["g"]).alias("_g"),
        F.sum(weight * terms["h"]).alias("_h"),
    ]
    if higher:
        more = cumulants(s, s1, s2, F.col("_s3"), F.col("_s4"))
        sums += [F.sum(weight * more["t"]).alias("_t"), F.sum(weight * more["q"]).alias("_q")]
    return projected.groupBy(*keys).agg(*sums)


@dataclass
class _Groups:
    """The sample's fine groups (model version and every slice column) and, per group, its
    key in each slice set; the passes sum per group and the driver re-sums per key."""

    values: list[tuple[Any, ...]] = field(default_factory=list)
    keys: list[list[Key]] = field(default_factory=list)
    index: dict[tuple[Any, ...], int] = field(default_factory=dict)

    def add(self, values: tuple[Any, ...], set_index: int, key: Key, sets: int) -> None:
        if values not in self.index:
            self.index[values] = len(self.values)
            self.values.append(values)
            self.keys.append([key] * sets)
        self.keys[self.index[values]][set_index] = key


def _first_pass(
    sample: DataFrame, config: Config, sets: Sequence[Sequence[str]], num_classes: int
) -> tuple[dict[Key, int], dict[Key, SearchState], _Groups]:
    """Per key: sampled fit rows and the search's state after ``FIRST_BETAS``; the groups.

    The β are constants here, so the rows are summed per fine group first and the slice sets
    labelled on that small table (its group values kept under ``_RAW`` names)."""
    points = F.array(
        *[
            F.struct(F.lit(k).alias(_POINT), F.lit(float(beta)).alias(BETA))
            for k, beta in enumerate(FIRST_BETAS)
        ]
    )
    keep = _group_columns(config)
    fine = _class_sums(
        sample.select("*", F.inline(points)), num_classes, F.col(BETA), [*keep, _POINT]
    )
    raw = fine.select("*", *[F.col(name).alias(_RAW + name) for name in keep])
    collected = (
        labelled(raw, config, sets)
        .select(
            *[_RAW + name for name in keep],
            SLICE_SET,
            SLICE_NAME,
            SLICE_VALUE,
            _POINT,
            "_n",
            "_g",
            "_h",
        )
        .collect()
    )
    size = len(FIRST_BETAS)
    groups = _Groups()
    counts: dict[Key, int] = {}
    gradients: dict[Key, list[float]] = {}
    curvatures: dict[Key, list[float]] = {}
    for r in collected:
        key = (r[_RAW + row.MODEL_VERSION], r[SLICE_NAME], r[SLICE_VALUE])
        groups.add(tuple(r[_RAW + name] for name in keep), int(r[SLICE_SET]), key, len(sets))
        point = int(r[_POINT])
        if point == 0:
            counts[key] = counts.get(key, 0) + int(r["_n"])
        gradients.setdefault(key, [0.0] * size)[point] += float(r["_g"])
        curvatures.setdefault(key, [0.0] * size)[point] += float(r["_h"])
    states = {key: start(np.array(gradients[key]), np.array(curvatures[key])) for key in counts}
    return counts, states, groups


def _newton_pass(
    sample: DataFrame,
    config: Config,
    num_classes: int,
    groups: _Groups,
    pending: Mapping[Key, SearchState],
) -> dict[Key, tuple[float, float, float, float]]:
    """Key → (G, H, G″, G‴) at its state's β, for the keys of ``pending``.

    Each fine group is joined (a broadcast) to the β of its keys still searching, one struct
    per slice set; a row is copied once per such struct, after the join, and its G, H summed
    per group and set. No slice label is built: the driver maps (group, set) to the key."""
    keep = _group_columns(config)
    types = {f.name: f.dataType for f in sample.schema.fields}
    table_columns = [f"_t{i}" for i in range(len(keep))]
    betas = ArrayType(
        StructType([StructField(SLICE_SET, IntegerType()), StructField(BETA, DoubleType())])
    )
    schema = StructType(
        [StructField(t, types[name]) for t, name in zip(table_columns, keep, strict=True)]
        + [StructField(_BETAS, betas)]
    )
    table_rows = []
    for values, keys in zip(groups.values, groups.keys, strict=True):
        chosen = [(s, pending[key].beta) for s, key in enumerate(keys) if key in pending]
        if chosen:
            table_rows.append((*values, chosen))
    table = local_dataframe(sample.sparkSession, table_rows, schema)
    condition = reduce(
        lambda left, right: left & right,
        [F.col(name).eqNullSafe(F.col(t)) for name, t in zip(keep, table_columns, strict=True)],
    )
    joined = sample.join(F.broadcast(table), on=condition, how="inner")
    copies = joined.select(*keep, row.WEIGHT, *shifted_names(num_classes), F.inline(_BETAS))
    collected = _class_sums(
        copies, num_classes, F.col(BETA), [*keep, SLICE_SET], higher=True
    ).collect()
    sums: dict[Key, tuple[float, float, float, float]] = {}
    names = ("_g", "_h", "_t", "_q")
    for r in collected:
        group = groups.index[tuple(r[name] for name in keep)]
        key = groups.keys[group][int(r[SLICE_SET])]
        before = sums.get(key, (0.0, 0.0, 0.0, 0.0))
        g, h, t, q = (b + float(r[name]) for b, name in zip(before, names, strict=True))
        sums[key] = (g, h, t, q)
    return sums


def _group_columns(config: Config) -> list[str]:
    """The fine group: model version and every slice column."""
    return [row.MODEL_VERSION, *slice_key_columns(config)]
