"""The oracle tier's shared memo: every module's cases go through one session fixture."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from tests.support.evaluations import Evaluations


@pytest.fixture(scope="session")
def evaluations(spark: SparkSession) -> Evaluations:
    """Engine results per case key, computed once per session (they hold collected rows, not
    cached frames, so releasing the cache between modules costs nothing)."""
    return Evaluations(spark)
