"""The test helper that runs a block with Spark's generated code restores the suite's
small-frame confs after it, so the tests after it keep their interpreted session."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from tests.support.generated_code import GENERATED_CODE, generated_code


def test_the_block_compiles_and_the_session_gets_its_values_back_even_after_an_error(
    spark: SparkSession,
) -> None:
    before = {key: spark.conf.get(key) for key in GENERATED_CODE}
    assert before != GENERATED_CODE  # the suite's session interprets (tests/conftest.py)
    with pytest.raises(ZeroDivisionError), generated_code(spark):
        assert {key: spark.conf.get(key) for key in GENERATED_CODE} == GENERATED_CODE
        assert spark.range(3).selectExpr("sum(id * 2)").first()[0] == 6
        1 / 0  # noqa: B018
    assert {key: spark.conf.get(key) for key in GENERATED_CODE} == before
