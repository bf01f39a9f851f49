"""The boundary's converted rows (``KeyRows``): every read equals the same read of the Arrow
table, through slices and filters, and the kernels cannot write to them; ``finish_table`` over
many keys (one conversion, lazily cut per key) equals each key finished from its own Arrow
table."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from spark_calib.kernels.arrow_batch import (
    KeyRows,
    floats,
    ints,
    is_null,
    label_codes,
    labels,
    select,
    split_keys,
    to_table,
)
from spark_calib.kernels.finish import (
    OUTPUT_SCHEMAS,
    finish_group,
    finish_table,
    key_outputs,
    union_schema,
)
from spark_calib.kernels.plan import FinishPlan
from spark_calib.registry import CALIBRATION, CELL_CALIBRATION, SMOOTH
from spark_calib.stats.schema import SLICE_KEY_COLUMNS
from tests.support.key_stats_cell_calibration import cell_key_table

TABLE = pa.table(
    {
        "k": pa.array(["b", "a", None, "b", "a", "c"], pa.string()),
        "i": pa.array([3, None, 5, 7, 0, 2], pa.int32()),
        "x": pa.array([0.5, 1.5, None, -2.0, float("nan"), 4.0], pa.float64()),
    }
)


def _reads(rows: KeyRows | pa.Table) -> tuple[list[float], list[int], list[object], list[bool]]:
    return (
        [v if not math.isnan(v) else -99.0 for v in floats(rows, "x")],
        ints(rows, "i", -1).tolist(),
        labels(rows, "k").tolist(),
        is_null(rows, "i").tolist(),
    )


@pytest.mark.parametrize("start,stop", [(0, 6), (1, 5), (2, 2)])
def test_a_slice_reads_as_the_arrow_slice(start: int, stop: int) -> None:
    rows = KeyRows.of(TABLE).slice(start, stop)
    assert rows.num_rows == stop - start
    assert _reads(rows) == _reads(TABLE.slice(start, stop - start))


def test_a_filter_of_a_slice_reads_as_the_arrow_filter() -> None:
    mask = np.array([True, False, True, True])
    rows = select(KeyRows.of(TABLE).slice(1, 5), mask)
    expected = select(TABLE.slice(1, 4), mask)
    assert isinstance(rows, KeyRows) and rows.num_rows == 3
    assert _reads(rows) == _reads(expected)
    # Rows 1, 3 and 4 of the table: a null integer reads as the given -1.
    assert ints(rows, "i", -1).tolist() == [-1, 7, 0]
    assert labels(rows, "k").tolist() == ["a", "b", "a"]


def test_an_absent_column_reads_as_null_everywhere() -> None:
    rows = KeyRows.of(TABLE).slice(0, 3)
    assert np.isnan(floats(rows, "missing")).all() and len(floats(rows, "missing")) == 3
    assert ints(rows, "missing", 4).tolist() == [4, 4, 4]
    assert labels(rows, "missing").tolist() == [None, None, None]
    assert is_null(rows, "missing").tolist() == [True, True, True]


@pytest.mark.parametrize(
    "rows,distinct,index",
    [
        # k = b, a, null, b, a, c: null first, then the strings in order.
        (KeyRows.of(TABLE), [None, "a", "b", "c"], [2, 1, 0, 2, 1, 3]),
        (KeyRows.of(TABLE).slice(1, 5), [None, "a", "b"], [1, 0, 2, 1]),
        (select(KeyRows.of(TABLE), np.array([1, 0, 0, 0, 0, 1], bool)), ["b", "c"], [0, 1]),
        (KeyRows.of(TABLE).slice(2, 3), [None], [0]),
        (KeyRows.of(TABLE).slice(2, 2), [], []),
        (TABLE.slice(3, 3), ["a", "b", "c"], [1, 0, 2]),
    ],
)
def test_label_codes_are_the_sorted_distinct_labels_and_each_rows_index(
    rows: KeyRows | pa.Table, distinct: list[object], index: list[int]
) -> None:
    found, positions = label_codes(rows, "k")
    assert found == distinct
    assert positions.tolist() == index


def test_label_codes_of_an_absent_column_are_one_null() -> None:
    found, positions = label_codes(KeyRows.of(TABLE).slice(0, 2), "missing")
    assert found == [None] and positions.tolist() == [0, 0]


def test_float_output_cells_become_null_for_nan_and_none_and_any_number_is_kept() -> None:
    schema = pa.schema([pa.field("x", pa.float64()), pa.field("k", pa.string())])
    rows = [(1.5, "a"), (float("nan"), "b"), (None, None), (np.float64(2.0), "c"), (3, "d")]
    assert to_table(rows, schema).column("x").to_pylist() == [1.5, None, None, 2.0, 3.0]
    # A NumPy bool, which Arrow will not convert to a double, takes the value-by-value path.
    mixed = [(np.True_, "a"), (float("nan"), "b")]
    assert to_table(mixed, schema).column("x").to_pylist() == [1.0, None]


def test_the_converted_columns_are_read_only() -> None:
    for rows in (KeyRows.of(TABLE), KeyRows.of(TABLE).slice(1, 4), KeyRows.of(TABLE).slice(0, 6)):
        with pytest.raises(ValueError, match="read-only"):
            floats(rows, "x")[0] = 1.0


# Two chunks, as a toArrow() of several partitions arrives; "c" and "f" have no null (the
# conversion's path without a validity mask).
CHUNKED = pa.concat_tables(
    [
        TABLE.slice(0, 3).append_column("c", pa.array([1, 2, 3], pa.int32())),
        TABLE.slice(3, 3).append_column("c", pa.array([4, 5, 6], pa.int32())),
    ]
).append_column("f", pa.array([0.25, -1.0, 2.0, 8.0, 0.5, 3.0]))


@pytest.mark.parametrize("order", [[5, 0, 3, 1, 4, 2], [2, 2, 0], []])
def test_rows_in_a_given_order_read_as_the_arrow_take(order: list[int]) -> None:
    rows = KeyRows.of(CHUNKED, np.array(order, dtype=np.int64))
    expected = CHUNKED.take(pa.array(order, pa.int64()))
    assert rows.num_rows == len(order)
    assert _reads(rows) == _reads(expected)
    assert ints(rows, "c", -1).tolist() == expected.column("c").to_pylist()
    assert floats(rows, "f").tolist() == expected.column("f").to_pylist()
    assert is_null(rows, "f").tolist() == [False] * len(order)
    assert label_codes(rows, "k")[0] == label_codes(expected, "k")[0]
    assert label_codes(rows, "k")[1].tolist() == label_codes(expected, "k")[1].tolist()
    if order:
        assert _reads(rows.slice(1, len(order))) == _reads(expected.slice(1))


def test_columns_without_nulls_are_read_only_too() -> None:
    for rows in (KeyRows.of(CHUNKED), KeyRows.of(CHUNKED, np.array([1, 0])).slice(0, 1)):
        for name in ("c", "f"):
            with pytest.raises(ValueError, match="read-only"):
                floats(rows, name)[0] = 1.0
            with pytest.raises(ValueError, match="read-only"):
                rows.validity(name)[0] = False


def test_split_keys_gives_each_key_its_rows_in_order() -> None:
    table = pa.table(
        {
            "a": pa.array(["v", "w", "v", None, "v"]),
            "b": pa.array(["x", "x", None, "y", "x"]),
            "n": pa.array([1, 2, 3, 4, 5]),
        }
    )
    found = {key: ints(rows, "n", 0).tolist() for key, rows in split_keys(table, ["a", "b"])}
    assert found == {("v", "x"): [1, 5], ("w", "x"): [2], ("v", None): [3], (None, "y"): [4]}
    # Only the rows at the given positions: row 0 (n = 1) and the key of row 1 are left out.
    kept = np.array([2, 3, 4])
    found = {key: ints(rows, "n", 0).tolist() for key, rows in split_keys(table, ["a", "b"], kept)}
    assert found == {("v", "x"): [5], ("v", None): [3], (None, "y"): [4]}
    assert list(split_keys(table, ["a", "b"], np.array([], dtype=np.int64))) == []


def _many_keys() -> pa.Table:
    rng = np.random.default_rng(11)
    parts = []
    for index, value in enumerate(["", "MX", "US"]):
        size = 300 + 200 * index
        s = rng.uniform(0.01, 0.99, size) ** (1 + index)
        y = (rng.uniform(size=size) < s).astype(float)
        w = rng.uniform(0.5, 2.0, size)
        parts.append(
            cell_key_table(
                s, y, w, buckets=rng.integers(0, 4, size), decoys=True, slice_value=value
            )
        )
    return pa.concat_tables(parts).combine_chunks()


@pytest.mark.parametrize("method,buckets", [("analytic", 0), ("jackknife", 4)])
def test_many_keys_finish_as_each_key_from_its_own_arrow_table(method: str, buckets: int) -> None:
    table = _many_keys()
    plan = FinishPlan(
        metrics=(
            (CALIBRATION, ("ece", "mce", "brier", "count")),
            (CELL_CALIBRATION, ("ks_calibration", "calibration_slope")),
            (SMOOTH, ("smooth_ece",)),
        ),
        n_bins=15,
        equal_mass=False,
        method=method,
        critical_value=1.959963984540054,
        buckets=buckets,
    )
    kernels = (CALIBRATION, CELL_CALIBRATION, SMOOTH)
    outputs = ("metrics", "reliability")
    together = finish_table(table, plan, kernels, outputs)
    keys = {tuple(row[name] for name in SLICE_KEY_COLUMNS) for row in table.to_pylist()}
    assert len(keys) == 3
    for output in outputs:
        alone: list[tuple[object, ...]] = []
        for key in sorted(keys, key=str):
            mask = np.ones(table.num_rows, dtype=bool)
            for name, value in zip(SLICE_KEY_COLUMNS, key, strict=True):
                mask &= np.array([v == value for v in table.column(name).to_pylist()])
            alone.extend(key_outputs(key, select(table, mask), plan, kernels, outputs)[output])
        got = together[output].to_pylist()
        assert len(got) == len(alone) > 0
        names = together[output].column_names
        expected = sorted(
            (dict(zip(names, row, strict=True)) for row in alone), key=lambda r: repr(r)
        )
        for a, b in zip(sorted(got, key=lambda r: repr(r)), expected, strict=True):
            assert a.keys() == b.keys()
            for name in a:
                x, y = a[name], b[name]
                if isinstance(y, float) and math.isnan(y):
                    assert x is None
                else:
                    assert x == y, (output, name)


def test_a_group_of_keys_gives_the_driver_rows_of_each_output_tagged() -> None:
    # A group of the grouped pass: every row of several keys, the keys interleaved (each key's
    # rows in their order, so that its sums add up in the same order), with the group column.
    table = _many_keys()
    values = table.column("slice_value").to_pylist()
    seen: dict[object, int] = {}
    rank = []
    for value in values:
        rank.append(seen.get(value, 0))
        seen[value] = rank[-1] + 1
    order = sorted(range(table.num_rows), key=lambda i: (rank[i], repr(values[i])))
    assert values[order[0]] != values[order[1]]
    group = table.take(pa.array(order)).append_column(
        "_finish_group", pa.array(np.zeros(table.num_rows, dtype=np.int64))
    )
    plan = FinishPlan(
        metrics=((CALIBRATION, ("ece", "brier", "count")), (SMOOTH, ("smooth_ece",))),
        n_bins=15,
        equal_mass=False,
        method="analytic",
        critical_value=1.959963984540054,
        buckets=0,
    )
    kernels, outputs = (CALIBRATION, SMOOTH), ("metrics", "reliability")
    tagged = finish_group(plan, kernels, outputs)(group)
    driver = finish_table(table, plan, kernels, outputs)
    assert tagged.schema == union_schema(outputs)
    for output in outputs:
        mine = tagged.filter(pa.compute.equal(tagged.column("_output"), output))
        rows = mine.select(driver[output].column_names).to_pylist()
        assert sorted(map(repr, rows)) == sorted(map(repr, driver[output].to_pylist()))
        assert {row["slice_value"] for row in rows} == {"", "MX", "US"}
    # Each of the three keys' ece, brier, count and smooth ECE.
    assert tagged.column("_output").to_pylist().count("metrics") == 3 * 4
    assert finish_group(plan, kernels, outputs)(group.slice(0, 0)).num_rows == 0


def test_a_column_the_outputs_share_has_one_type_in_all_of_them() -> None:
    # The grouped pass puts each output's columns into the union's as they are, uncast.
    types: dict[str, set[pa.DataType]] = {}
    for schema in OUTPUT_SCHEMAS.values():
        for field in schema:
            types.setdefault(field.name, set()).add(field.type)
    assert {name: kinds for name, kinds in types.items() if len(kinds) > 1} == {}
    assert len(OUTPUT_SCHEMAS) > 1 and types["slice_value"] == {pa.string()}
