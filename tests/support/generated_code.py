"""Spark's generated code for one block of a test, on the suite's session.

The suite's session interprets expressions (``tests/conftest.py``): it builds the small plans
of most tests faster, but runs each row several times slower. A test or fixture that pushes
hundreds of thousands of rows through Spark wraps that work in ``generated_code(spark)`` and
runs it as the jobs' own sessions do. The slice search's planted-segments test took 340 s
interpreted and 95 s compiled (docs/development.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

# The small-frame confs of the suite's session, at Spark's defaults.
GENERATED_CODE = {
    "spark.sql.codegen.wholeStage": "true",
    "spark.sql.codegen.factoryMode": "FALLBACK",
}


@contextmanager
def generated_code(spark: SparkSession) -> Iterator[SparkSession]:
    """The block runs with whole-stage and expression codegen on; the session's own values
    are restored after it, also when it raises."""
    before = {key: spark.conf.get(key) for key in GENERATED_CODE}
    for key, value in GENERATED_CODE.items():
        spark.conf.set(key, value)
    try:
        yield spark
    finally:
        for key, value in before.items():
            spark.conf.set(key, value)
