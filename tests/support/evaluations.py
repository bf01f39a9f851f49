"""One memo of engine results for the oracle tier (the ``evaluations`` fixture of
tests/oracle/conftest.py): each case is evaluated once per session, however many tests read it."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from pyspark.sql import SparkSession

T = TypeVar("T")


class Evaluations:
    """Results keyed by case, computed on first use with the suite's session."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self._results: dict[Hashable, Any] = {}

    def get(self, key: Hashable, compute: Callable[[SparkSession], T]) -> T:
        """The result stored under ``key``, ``compute(spark)`` the first time it is asked for.
        Keys name their module, as in ``("oracle_decision", "binary")``."""
        if key not in self._results:
            self._results[key] = compute(self.spark)
        return self._results[key]  # type: ignore[no-any-return]
