"""``Lattice.refinement``, without Spark: which coarse-scored segments are scored again from
fine cells. The scores are written by hand; a segment's sigma-scale ECCE lies in
[ecce/σ, (ecce + ecce_bound)/σ] and ranks by its lower end (docs/slice_search.md, "Coarse
cells first")."""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa

from spark_calib.config.slice_search import SliceSearchConfig
from spark_calib.kernels.multicalibration import BIN_COLUMNS, SEGMENT_COLUMNS
from spark_calib.slice_search.lattice import VERSION, Lattice
from spark_calib.slice_search.rows import COMBO, KEY, OVERALL_COMBO, predicate_column

# Level-1 values of the two candidate columns, and their codes (any distinct integers).
CODES = {0: {"a": 11, "b": 12}, 1: {"x": 21, "y": 22}}
ROWS = 1_000
FEW = 50  # below min_rows: scored for the multicalibration error, never ranked
MIN_ROWS = 100


def scores(n: int, lower: float, upper: float) -> dict[str, Any]:
    """A segment of ``n`` rows whose sigma-scale ECCE lies in [lower, upper] (σ = 1)."""
    values: dict[str, Any] = dict.fromkeys(SEGMENT_COLUMNS, 0.0)
    values.update(
        n=n,
        weight_sum=float(n),
        sigma=1.0,
        ecce=lower,
        ecce_bound=upper - lower,
        ecce_sigma=lower,
        # Nothing significant, so that no segment is left out of the report under a parent.
        ecce_p=0.5,
        score_bound=math.inf,
    )
    return values


def table(rows: list[dict[str, Any]]) -> pa.Table:
    """The rows as a pass's scored table (``level_segments``' columns; the bins unused)."""
    names = [*SEGMENT_COLUMNS, *BIN_COLUMNS]
    columns = {name: [row.get(name) for row in rows] for name in rows[0] if name not in names}
    columns.update({name: [row[name] for row in rows] for name in SEGMENT_COLUMNS})
    columns.update({name: [[1.0]] * len(rows) for name in BIN_COLUMNS})
    return pa.table(columns)


def level_one(sigmas: dict[tuple[int, str], float]) -> pa.Table:
    """The overall segment (1σ) and each level-1 value with its (exact) sigma-scale ECCE."""
    rows = [{VERSION: "v", COMBO: OVERALL_COMBO, KEY: None, **_codes(()), **scores(ROWS, 1.0, 1.0)}]
    for (column, value), sigma in sigmas.items():
        codes = _codes((CODES[column][value],))
        rows.append(
            {VERSION: "v", COMBO: column, KEY: value, **codes, **scores(ROWS, sigma, sigma)}
        )
    return table(rows)


def _codes(codes: tuple[int, ...]) -> dict[str, Any]:
    """The predicate code columns of a row: ``codes``, then nulls up to ``max_level``."""
    return {predicate_column(p): codes[p] if p < len(codes) else None for p in range(2)}


def searched(top_k: int, pairs: dict[tuple[str, str], tuple[int, float, float]]) -> Lattice:
    """A lattice after level 1 (a: 5σ, b: 3σ, x, y: 1σ) and a coarse level 2 with ``pairs``:
    (c0 value, c1 value) → (n, lower, upper)."""
    lattice = Lattice(
        SliceSearchConfig(columns=("c0", "c1"), max_level=2, min_rows=MIN_ROWS, top_k=top_k)
    )
    lattice.first_level()
    lattice.add(level_one({(0, "a"): 5.0, (0, "b"): 3.0, (1, "x"): 1.0, (1, "y"): 1.0}))
    combos, candidates = lattice.next_level()
    assert combos == [(0, 1)]
    assert len(candidates) == 4
    rows = []
    for (a, x), (n, lower, upper) in pairs.items():
        codes = _codes((CODES[0][a], CODES[1][x]))
        rows.append({VERSION: "v", COMBO: 0, **codes, **scores(n, lower, upper)})
    lattice.add(table(rows), refined=False)
    return lattice


def refined_pairs(lattice: Lattice) -> set[tuple[str, str]]:
    """The (c0, c1) values of the segments ``refinement`` picks."""
    combos, candidates = lattice.refinement()
    values = {code: value for column in CODES.values() for value, code in column.items()}
    assert all(combos[combo] == (0, 1) for _, combo, _ in candidates)
    return {(values[codes[0]], values[codes[1]]) for _, _, codes in candidates}


PAIRS = {
    # With top_k 2 the report is a (5σ), b (3σ), and the largest known ECCE is 5σ.
    # Rankable, its upper bound below the report's last z: cannot enter the report.
    ("a", "x"): (ROWS, 2.0, 2.5),
    # Rankable, its upper bound above the report's last z (and below 5σ): could enter the
    # report, not change the error.
    ("a", "y"): (ROWS, 2.0, 4.0),
    # Too few rows to rank, its upper bound above every known ECCE: could be the
    # multicalibration error.
    ("b", "y"): (FEW, 0.5, 9.0),
    # Too few rows to rank, its upper bound below 5σ: can change nothing.
    ("b", "x"): (FEW, 0.5, 4.0),
}


def test_refinement_picks_what_could_change_the_report_or_the_error() -> None:
    lattice = searched(top_k=2, pairs=PAIRS)
    assert [(s.values, s.z) for s in lattice.report("v")] == [(("a",), 5.0), (("b",), 3.0)]
    assert refined_pairs(lattice) == {("a", "y"), ("b", "y")}


def test_a_short_report_refines_every_rankable_coarse_segment() -> None:
    # With top_k 10 the report (six rankable segments) is shorter than top_k, so any
    # rankable coarse segment could still enter it.
    lattice = searched(top_k=10, pairs=PAIRS)
    assert refined_pairs(lattice) == {("a", "x"), ("a", "y"), ("b", "y")}


def test_refined_segments_are_not_picked_again() -> None:
    lattice = searched(top_k=2, pairs=PAIRS)
    _, candidates = lattice.refinement()
    fine = []
    for _, combo, codes in candidates:
        row = {VERSION: "v", COMBO: combo, **_codes(codes), **scores(ROWS, 3.0, 3.0)}
        fine.append(row)
    lattice.add(table(fine), refined=True)
    assert lattice.refinement() == ([], [])
    assert lattice.levels[1].refined == 2
