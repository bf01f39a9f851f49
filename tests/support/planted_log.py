"""A seeded log with planted miscalibrated segments, generated in Spark (no driver copy), for
the slice search's acceptance test and benchmark.

12 candidate columns ``c0`` … ``c11`` with 2 to 50 values each (uniform, independent); the
score s = σ(N(−1.5, 1)); two model versions, half the rows each. Version ``calibrated`` draws
y ~ Bernoulli(s) everywhere. Version ``planted`` does too, except in three segments where the
truth is s divided by 1 + the over-prediction:

- level 1: c11 = 7 (2 % of the rows), 15 % over-prediction;
- level 2: c9 = 3 ∧ c5 = 1 (0.625 %), 30 %;
- level 3: c0 = 1 ∧ c4 = 2 ∧ c7 = 5 (0.69 %), 40 %.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

CARDINALITIES = (2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 30, 50)
COLUMNS = tuple(f"c{i}" for i in range(len(CARDINALITIES)))
PLANTED = (
    ((("c11", 7),), 0.15),
    ((("c5", 1), ("c9", 3)), 0.30),
    ((("c0", 1), ("c4", 2), ("c7", 5)), 0.40),
)


def planted_log(spark: SparkSession, n: int, seed: int, planted: bool = True) -> DataFrame:
    """``n`` rows: the columns above, ``s``, ``y``, ``version``. With ``planted`` False both
    versions are calibrated everywhere (the null log)."""
    ids = spark.range(n)
    columns = [
        F.floor(F.rand(seed * 100 + i) * card).cast("int").alias(name)
        for i, (name, card) in enumerate(zip(COLUMNS, CARDINALITIES, strict=True))
    ]
    frame = ids.select(
        *columns,
        (1 / (1 + F.exp(1.5 - F.randn(seed * 100 + 50)))).alias("s"),
        F.rand(seed * 100 + 51).alias("_u"),
        F.when(F.col("id") % 2 == 0, F.lit("planted"))
        .otherwise(F.lit("calibrated"))
        .alias("version"),
    )
    truth: Column = F.col("s")
    if planted:
        for predicates, over in PLANTED:
            inside = F.col("version") == "planted"
            for name, value in predicates:
                inside = inside & (F.col(name) == value)
            truth = F.when(inside, F.col("s") / (1.0 + over)).otherwise(truth)
    return frame.select(*COLUMNS, "s", (F.col("_u") < truth).cast("int").alias("y"), "version")


def predicate_key(predicates: tuple[tuple[str, int], ...]) -> tuple[str, str]:
    """The (slice_name, slice_value) the search reports for a planted segment (columns in
    ``COLUMNS`` order)."""
    ordered = sorted(predicates, key=lambda p: COLUMNS.index(p[0]))
    return ",".join(p[0] for p in ordered), ",".join(str(p[1]) for p in ordered)
