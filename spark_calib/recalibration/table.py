"""Statistics → the ``recalibration`` table: per model version × slice × method, the fitted map
and the evaluated rows' metrics before and after it.

One small collect of cell sums (``points``), fits in NumPy (``fit``), scores from the
evaluated cells (``scores``); no pass over the input, except with ``after: rows``, where one
pass scores the temperature and Platt maps row by row (``row_scores``). Every key of the
configured slices gets a row, plus ``overall`` per model version (the fallback, summed from
the first slice set when ``[]`` is not configured).

Fallback: a key with fewer than ``min_fit_rows`` fit rows, or whose fit is undefined (Platt on
one label), takes its model version's overall map and has ``fallback`` true. The overall map is
fitted on whatever fit rows it has; with none, the parameters and after metrics are null.

Output columns (``RECALIBRATION_SCHEMA``): model_version, slice_name, slice_value, method,
parameters (map: ``temperature``, or ``a`` and ``b``; empty for isotonic), knots (isotonic: the
blocks' first fine cell, its lower score edge and the block's value, in score order), n_fit,
n_eval, fallback, ece/nll/brier/accuracy ``_before`` and ``_after`` on the evaluated rows,
``after_bounds`` (map score → bound on |after − its row-by-row value|, ``scores``), and
``reliability_before`` and ``reliability_after``: the evaluated rows' non-empty calibration bins
(``binning``, 0-based ``bin``) as they are and under the map, each ``weight`` = Σw,
``confidence`` = Σw·p/Σw and ``outcome`` = Σw·y/Σw, with p placed as the ECE places it
(``scores``), so Σ weight·|outcome − confidence| / Σ weight is ``ece_before`` and ``ece_after``;
``reliability_after`` is null when the map is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame

from spark_calib.config import Config, ConfigSource, load_config
from spark_calib.constants import OVERALL_SLICE_NAME, OVERALL_SLICE_VALUE
from spark_calib.errors import ConfigError
from spark_calib.local_data import local_dataframe
from spark_calib.recalibration.fit import (
    FitPoints,
    IsotonicMap,
    fit_isotonic,
    fit_platt,
    fit_temperature,
)
from spark_calib.recalibration.multiclass import multiclass_recalibration_rows
from spark_calib.recalibration.points import CellRows, Key, collect_cell_rows, sort_key
from spark_calib.recalibration.row_scores import LogisticMaps, RowScores, logistic_row_scores
from spark_calib.recalibration.scores import (
    SCORES,
    ReliabilityBin,
    Scores,
    after_reliability,
    before_reliability,
    before_scores,
    isotonic_after,
    logistic_after,
    logistic_probability,
)
from spark_calib.rows.cells import EQUAL_WIDTH_CELLS, LOG_ODDS_CELLS, LOG_ODDS_STEP
from spark_calib.slicing.values import slice_name

RECALIBRATION_SCHEMA = (
    "model_version string, slice_name string, slice_value string, method string, "
    "parameters map<string, double>, knots array<struct<cell: int, lower: double, "
    "value: double>>, n_fit bigint, n_eval bigint, fallback boolean, "
    "ece_before double, ece_after double, nll_before double, nll_after double, "
    "brier_before double, brier_after double, accuracy_before double, accuracy_after double, "
    "after_bounds map<string, double>, "
    "reliability_before array<struct<bin: int, weight: double, confidence: double, "
    "outcome: double>>, "
    "reliability_after array<struct<bin: int, weight: double, confidence: double, "
    "outcome: double>>"
)
RECALIBRATION_COLUMNS = (
    "model_version",
    "slice_name",
    "slice_value",
    "method",
    "parameters",
    "knots",
    "n_fit",
    "n_eval",
    "fallback",
    *[f"{score}_{when}" for score in SCORES for when in ("before", "after")],
    "after_bounds",
    "reliability_before",
    "reliability_after",
)

# A fitted map: temperature T, Platt (a, b) or the isotonic step map.
FittedMap = float | tuple[float, float] | IsotonicMap


@dataclass(frozen=True)
class _Fit:
    fitted: FittedMap | None
    fallback: bool


def recalibration_from_stats(stats_df: DataFrame, config: ConfigSource) -> DataFrame:
    """The recalibration table of ``config`` from any statistics table aggregated with it (a
    run's, or several days' summed by ``combine_stats``: a week's maps are fitted on the
    week's cells). The statistics hold no rows, so the temperature and Platt maps' after
    metrics are the cells' (within ``after_bounds``) whatever ``after`` says. Raises
    ``ConfigError`` when the config has no ``recalibration`` section."""
    cfg = load_config(config)
    if cfg.recalibration is None:
        raise ConfigError("recalibration_from_stats needs a config with a recalibration section")
    if cfg.task == "multiclass":
        raise ConfigError(
            "multiclass temperature scaling is fitted from the rows' logits, which the "
            "statistics do not hold: evaluate the window's rows instead"
        )
    return recalibration_table(stats_df, cfg)


def recalibration_table(
    stats_df: DataFrame,
    config: Config,
    rows: DataFrame | None = None,
    head: pa.Table | None = None,
) -> DataFrame:
    """The recalibration table of ``config.recalibration`` from a statistics table whose cells
    were aggregated with it (``recalibration_fit`` set when ``fit`` is).

    With ``after: rows`` and the canonical ``rows`` the statistics came from, the temperature
    and Platt maps' after metrics and bins come from one more pass over the evaluated rows
    (``row_scores``), exact; without ``rows`` (a rollup of statistics) they are the cells'.
    ``head``: every row of ``stats_df`` on the driver, read there instead of in Spark."""
    recalibration = config.recalibration
    assert recalibration is not None
    source = () if () in config.slices else config.slices[0]
    cells = collect_cell_rows(stats_df, slice_name(source), head)
    chosen: dict[tuple[Key, str], _Fit] = {}
    for method in recalibration.methods:
        overall: dict[str | None, FittedMap | None] = {}
        for key, key_rows in cells.items():
            if key[1] == OVERALL_SLICE_NAME:
                overall[key[0]] = _fit(method, key_rows.fit_rows())
        for key, key_rows in cells.items():
            chosen[(key, method)] = _choose(
                method, key, key_rows, overall.get(key[0]), recalibration.min_fit_rows
            )
    exact = (
        logistic_row_scores(rows, config, _logistic_maps(chosen))
        if recalibration.after == "rows" and rows is not None
        else None
    )
    out = [
        _row(key, method, cells[key], chosen[(key, method)], config, exact)
        for method in recalibration.methods
        for key in sorted(cells, key=sort_key)
    ]
    return local_dataframe(stats_df.sparkSession, out, RECALIBRATION_SCHEMA)


def _logistic_maps(chosen: dict[tuple[Key, str], _Fit]) -> LogisticMaps:
    """(a, b) of u = a + b·z per key and method, for the fitted temperature and Platt maps."""
    maps: LogisticMaps = {}
    for (key, method), fit in chosen.items():
        if fit.fitted is None or isinstance(fit.fitted, IsotonicMap):
            continue
        maps[(*key, method)] = _logistic(fit.fitted)
    return maps


def _logistic(fitted: float | tuple[float, float]) -> tuple[float, float]:
    """(a, b) of a temperature T (0, 1/T) or a Platt map (a, b)."""
    return (0.0, 1.0 / fitted) if isinstance(fitted, float) else fitted


def _choose(
    method: str, key: Key, rows: CellRows, overall: FittedMap | None, min_fit_rows: int
) -> _Fit:
    if key[1] == OVERALL_SLICE_NAME and key[2] == OVERALL_SLICE_VALUE:
        return _Fit(overall, fallback=False)
    fit_rows = rows.fit_rows()
    if fit_rows.sums["n"].sum() < min_fit_rows:
        return _Fit(overall, fallback=True)
    own = _fit(method, fit_rows)
    return _Fit(own, fallback=False) if own is not None else _Fit(overall, fallback=True)


def multiclass_recalibration_table(
    rows: DataFrame,
    config: Config,
    num_classes: int,
    valid_rows: Mapping[str | None, int] | None = None,
) -> DataFrame:
    """The temperature rows of a multiclass config from its canonical rows (a sampled fit and
    one scoring pass, ``spark_calib.recalibration.multiclass``); ``valid_rows`` per model
    version set the fit's sampling rate."""
    out = multiclass_recalibration_rows(rows, config, num_classes, valid_rows)
    return local_dataframe(rows.sparkSession, out, RECALIBRATION_SCHEMA)


def fit_points(rows: CellRows) -> FitPoints:
    """The fit rows merged per cell and label: (cell, z̄, W, O) in cell order (computed once
    per rows)."""
    if "points" not in rows.memo:
        rows.memo["points"] = _merged_points(rows)
    return cast(FitPoints, rows.memo["points"])


def _merged_points(rows: CellRows) -> FitPoints:
    # A stable sort by (cell, label), so each pair's rows are summed in their own order.
    order = np.lexsort((rows.label, rows.cell))
    cell, label = rows.cell[order], rows.label[order]
    starts = np.ones(cell.size, dtype=bool)
    starts[1:] = (cell[1:] != cell[:-1]) | (label[1:] != label[:-1])
    group = np.cumsum(starts) - 1
    pairs = int(starts.sum())
    weight = np.bincount(group, rows.sums["w"][order], minlength=pairs)
    positive = np.bincount(group, rows.sums["o"][order], minlength=pairs)
    logit_sum = np.bincount(group, rows.sums["z"][order], minlength=pairs)
    keep = weight > 0.0
    return FitPoints(
        cell=cell[starts][keep],
        z=logit_sum[keep] / weight[keep],
        weight=weight[keep],
        positive=positive[keep],
    )


def _fit(method: str, rows: CellRows) -> FittedMap | None:
    points = fit_points(rows)
    if method == "temperature":
        return fit_temperature(points)
    if method == "platt":
        return fit_platt(points)
    return fit_isotonic(points)


def _row(
    key: Key,
    method: str,
    rows: CellRows,
    chosen: _Fit,
    config: Config,
    exact: dict[tuple[Key, str], RowScores] | None,
) -> tuple[Any, ...]:
    evaluated = rows.eval_rows()
    before = before_scores(evaluated, config)
    from_rows = _from_rows(key, method, chosen.fitted, exact)
    bounds: dict[str, float] | None
    reliability: tuple[list[ReliabilityBin], list[ReliabilityBin] | None]
    if from_rows is not None:
        after, bounds = Scores(from_rows.values), dict.fromkeys(SCORES, 0.0)
        reliability = (before_reliability(evaluated, config), from_rows.reliability)
    elif config.recalibration is not None and config.recalibration.after == "none":
        after, bounds = Scores(dict.fromkeys(SCORES)), None
        reliability = (before_reliability(evaluated, config), None)
    else:
        after, bounds = _after(evaluated, config, chosen.fitted)
        reliability = _reliability(evaluated, config, chosen.fitted)
    parameters, knots = _describe(chosen.fitted)
    scores = [value for name in SCORES for value in (before.values[name], after.values[name])]
    return (
        *key,
        method,
        parameters,
        knots,
        int(rows.fit_rows().sums["n"].sum()),
        int(evaluated.sums["n"].sum()),
        chosen.fallback,
        *scores,
        bounds,
        *reliability,
    )


def _from_rows(
    key: Key,
    method: str,
    fitted: FittedMap | None,
    exact: dict[tuple[Key, str], RowScores] | None,
) -> RowScores | None:
    """The row pass's scores of a fitted logistic map (empty when the key has no evaluated
    rows); None when the after metrics come from the cells."""
    if exact is None or fitted is None or isinstance(fitted, IsotonicMap):
        return None
    return exact.get((key, method), RowScores(dict.fromkeys(SCORES), []))


def _after(
    rows: CellRows, config: Config, fitted: FittedMap | None
) -> tuple[Scores, dict[str, float] | None]:
    if fitted is None:
        return Scores(dict.fromkeys(SCORES)), None
    if isinstance(fitted, IsotonicMap):
        return isotonic_after(rows, config, fitted), dict.fromkeys(SCORES, 0.0)
    a, b = _logistic(fitted)
    return logistic_after(rows, config, a, b)


def _reliability(
    rows: CellRows, config: Config, fitted: FittedMap | None
) -> tuple[list[ReliabilityBin], list[ReliabilityBin] | None]:
    """The evaluated rows' bins before and after ``fitted`` (None without a map)."""
    before = before_reliability(rows, config)
    if fitted is None:
        return before, None
    if isinstance(fitted, IsotonicMap):
        return before, after_reliability(rows, config, fitted.at_cells(rows.cell))
    a, b = _logistic(fitted)
    return before, after_reliability(rows, config, logistic_probability(rows, a, b))


def _describe(
    fitted: FittedMap | None,
) -> tuple[dict[str, float] | None, list[tuple[int, float, float]] | None]:
    if fitted is None:
        return None, None
    if isinstance(fitted, IsotonicMap):
        lower = cell_lower(fitted.cells)
        knots = [
            (int(cell), float(edge), float(value))
            for cell, edge, value in zip(fitted.cells, lower, fitted.values, strict=True)
        ]
        return {}, knots
    if isinstance(fitted, float):
        return {"temperature": fitted}, None
    return {"a": fitted[0], "b": fitted[1]}, None


def cell_lower(cell: np.ndarray) -> np.ndarray:
    """``spark_calib.rows.cells.cell_lower`` in NumPy: max(k/1000, σ((j − 593)/16)), 0 for
    j = 0."""
    k = cell // LOG_ODDS_CELLS
    j = cell % LOG_ODDS_CELLS
    log_odds = np.where(
        j == 0, 0.0, 1.0 / (1.0 + np.exp(-(j - LOG_ODDS_CELLS // 2) / LOG_ODDS_STEP))
    )
    lower: np.ndarray = np.maximum(k / EQUAL_WIDTH_CELLS, log_odds)
    return lower
