"""A seeded log with planted miscalibrated segments, generated in Spark (no driver copy), for
the slice search's acceptance test and benchmark.

Candidate columns ``c0``, ``c1``, … with the ``Layout``'s cardinalities (uniform, independent
values); the score s = σ(N(−1.5, 1)); two model versions, half the rows each. Version
``calibrated`` draws y ~ Bernoulli(s) everywhere. Version ``planted`` does too, except in the
layout's three segments, where the truth is s / (1 + the over-prediction): a level-1 value with
15 % over-prediction, a level-2 conjunction with 30 % and a level-3 conjunction with 40 %, each
0.5–2 % of the rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

Predicates = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Layout:
    """Cardinalities of c0, c1, … and the planted (predicates, over-prediction) segments."""

    cardinalities: tuple[int, ...]
    planted: tuple[tuple[Predicates, float], ...]

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(f"c{i}" for i in range(len(self.cardinalities)))


# The log: 12 columns with 2 to 50 values; segments of 2 %, 0.625 % and 0.69 %.
FULL = Layout(
    (2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 30, 50),
    (
        ((("c11", 7),), 0.15),
        ((("c5", 1), ("c9", 3)), 0.30),
        ((("c0", 1), ("c4", 2), ("c7", 5)), 0.40),
    ),
)
# The test suite's: 6 columns with 2 to 50 values; segments of 2 %, 0.83 % and 1.04 %.
SMALL = Layout(
    (2, 4, 6, 12, 20, 50),
    (
        ((("c5", 7),), 0.15),
        ((("c2", 1), ("c4", 3)), 0.30),
        ((("c0", 1), ("c1", 2), ("c3", 5)), 0.40),
    ),
)


def planted_log(
    spark: SparkSession, n: int, seed: int, planted: bool = True, layout: Layout = FULL
) -> DataFrame:
    """``n`` rows: the layout's columns, ``s``, ``y``, ``version``. With ``planted`` False
    both versions are calibrated everywhere (the null log)."""
    columns = [
        F.floor(F.rand(seed * 100 + i) * card).cast("int").alias(name)
        for i, (name, card) in enumerate(zip(layout.columns, layout.cardinalities, strict=True))
    ]
    frame = spark.range(n).select(
        *columns,
        (1 / (1 + F.exp(1.5 - F.randn(seed * 100 + 50)))).alias("s"),
        F.rand(seed * 100 + 51).alias("_u"),
        F.when(F.col("id") % 2 == 0, F.lit("planted"))
        .otherwise(F.lit("calibrated"))
        .alias("version"),
    )
    truth: Column = F.col("s")
    if planted:
        for predicates, over in layout.planted:
            inside = F.col("version") == "planted"
            for name, value in predicates:
                inside = inside & (F.col(name) == value)
            truth = F.when(inside, F.col("s") / (1.0 + over)).otherwise(truth)
    return frame.select(
        *layout.columns, "s", (F.col("_u") < truth).cast("int").alias("y"), "version"
    )


def predicate_key(predicates: Predicates, layout: Layout = FULL) -> tuple[str, str]:
    """The (slice_name, slice_value) the search reports for a planted segment."""
    ordered = sorted(predicates, key=lambda p: layout.columns.index(p[0]))
    return ",".join(p[0] for p in ordered), ",".join(str(p[1]) for p in ordered)
