"""The one module that writes SQL text quotes internal names only."""

from __future__ import annotations

import pytest

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
