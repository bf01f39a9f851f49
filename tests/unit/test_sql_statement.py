"""A chain of steps is nested sub-selects over the one frame, with its columns tracked, and no
user string ever enters the text."""

from __future__ import annotations

import json

import pytest

from spark_calib.rows import internal_sql as S
from spark_calib.rows import sql_statement as Q


def test_steps_nest_as_sub_selects_and_track_their_columns() -> None:
    frame = Q.Relation(Q.FRAME, ("_a", "_b", "_s"))
    projected = Q.select(frame, ["_a", (S.col("_b") * 2, "_c")])
    assert projected.text == "SELECT `_a`, (`_b` * 2) AS `_c` FROM {frame}"
    assert projected.columns == ("_a", "_c")
    grouped = Q.group_by(projected, ["_a"], [(S.Sql("sum(`_c`)"), "_sum"), (0, "_g")])
    assert grouped.text == (
        "SELECT `_a`, sum(`_c`) AS `_sum`, 0 AS `_g` FROM "
        "(SELECT `_a`, (`_b` * 2) AS `_c` FROM {frame}) GROUP BY `_a`"
    )
    assert grouped.columns == ("_a", "_sum", "_g")
    copied = Q.select(
        grouped,
        ["_sum"],
        generator=S.Sql("inline(array(named_struct('_i', 0, '_a', `_a`)))"),
        generated=["_i", "_a"],
    )
    assert copied.columns == ("_sum", "_i", "_a")
    assert copied.text.startswith(
        "SELECT `_sum`, inline(array(named_struct('_i', 0, '_a', `_a`))) FROM (SELECT"
    )


def test_names_are_internal_and_user_strings_are_bound_parameters() -> None:
    frame = Q.Relation(Q.FRAME, ("_a",))
    with pytest.raises(ValueError, match="not an internal column name"):
        Q.select(frame, ["user col"])
    params = Q.Params()
    hostile = "x'); DROP TABLE t; --"
    assert params.bind(hostile).text == ":p0"
    names = params.bind_strings(["a", hostile])
    assert names.text == "from_json(:p1, 'array<string>')"
    assert params.values == {"p0": hostile, "p1": json.dumps(["a", hostile])}
    assert json.loads(params.values["p1"]) == ["a", hostile]


def test_a_brace_outside_the_frame_is_refused() -> None:
    stray = Q.Relation("SELECT 1 AS `_a` FROM {frame} WHERE {other}", ("_a",))
    with pytest.raises(ValueError, match="no brace but the frame's"):
        Q.run(None, stray)  # type: ignore[arg-type]
