"""The one module that writes SQL text quotes internal names only, writes its literals
exactly, and refuses anything else."""

from __future__ import annotations

import re

import pytest

from spark_calib.rows import internal_sql as S
from spark_calib.rows.internal_sql import quoted


@pytest.mark.parametrize("name", ["_weight", "sum_weight_sq", "_slice_12", "n"])
def test_an_internal_name_is_quoted_as_it_is(name: str) -> None:
    assert quoted(name) == f"`{name}`"


@pytest.mark.parametrize(
    "name", ["a`b", "x; DROP TABLE t", "country code", "1st", "", "naïve", "a.b", "`x`"]
)
def test_any_other_name_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="not an internal column name"):
        quoted(name)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.1, "0.1D"),
        (1e-15, "1e-15D"),
        (-2.5, "(- 2.5D)"),
        (-0.0, "(- 0.0D)"),
        (float("inf"), "CAST('Infinity' AS DOUBLE)"),
        (float("-inf"), "CAST('-Infinity' AS DOUBLE)"),
        (float("nan"), "CAST('NaN' AS DOUBLE)"),
        (3, "3"),
        (2**40, f"{2**40}L"),
        (True, "TRUE"),
        (None, "NULL"),
        ("null_score", "'null_score'"),
    ],
)
def test_a_literal_is_written_exactly(value: object, text: str) -> None:
    assert S.lit(value).text == text


@pytest.mark.parametrize("value", ["it's", "a\\b", "x'; DROP TABLE t; --", "naïve", b"x", 1j])
def test_any_other_literal_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match="not an internal literal"):
        S.lit(value)


def test_operators_parenthesise_and_reflect() -> None:
    x = S.col("_x")
    assert (1.0 - x * 2).text == "(1.0D - (`_x` * 2))"
    assert (2 * x).text == "(2 * `_x`)"
    assert (~(x.isNull() | (x != 1))).text == "(NOT ((`_x` IS NULL) OR (`_x` != 1)))"
    assert x.try_cast("int").cast("double").text == "CAST(TRY_CAST(`_x` AS INT) AS DOUBLE)"
    assert S.when(x > 0, 1).when(x < 0, -1).otherwise(0).text == (
        "CASE WHEN (`_x` > 0) THEN 1 WHEN (`_x` < 0) THEN -1 ELSE 0 END"
    )
    with pytest.raises(ValueError, match="not a type"):
        x.cast("double); DROP TABLE t; --")
    with pytest.raises(ValueError, match="no truth value"):
        bool(x > 0)


def test_lambdas_get_fresh_variables_bare_or_in_parentheses() -> None:
    one = S.exists(S.col("_p"), lambda p: p.isNull())
    two = S.transform(S.col("_p"), lambda p, k: p * k)
    (one_variable,) = re.findall(r"(x_\d+) ->", one.text)
    assert one.text == f"exists(`_p`, {one_variable} -> ({one_variable} IS NULL))"
    first, second = re.fullmatch(
        r"transform\(`_p`, \((x_\d+), (x_\d+)\) -> .*\)", two.text
    ).groups()
    assert len({one_variable, first, second}) == 3


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("", "''"),
        (",", "','"),
        ("\\", "char(92)"),
        ("\\N", "concat(char(92), 'N')"),
        ("\\\\", "concat(char(92), char(92))"),
        ("a\\,b", "concat('a', char(92), ',b')"),
    ],
)
def test_a_constant_string_writes_its_backslashes_as_characters(value: str, text: str) -> None:
    assert S.string(value).text == text


def test_a_constant_string_refuses_what_a_literal_refuses() -> None:
    with pytest.raises(ValueError, match="not an internal literal"):
        S.string("it's\\")
