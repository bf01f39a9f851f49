"""The multiclass temperature fit's per-key sums in Spark against NumPy: n, G, H and the third
and fourth derivatives (cumulants κ₃, κ₄ of the logits under softmax(β·z), written here as
central moments), weighted, for written-out class sums and for the array form."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from scipy.special import softmax

from spark_calib.recalibration.temperature_fit import _class_sums
from spark_calib.rows import canonical as row
from spark_calib.rows.temperature_terms import UNROLL_MAX_CLASSES, shifted_logits


@pytest.mark.parametrize("classes", [4, UNROLL_MAX_CLASSES + 2])
def test_the_sums_equal_numpy_per_key(spark: SparkSession, classes: int) -> None:
    rng = np.random.default_rng(classes)
    n, beta = 300, 0.8
    z = rng.normal(0.0, 2.0, size=(n, classes))
    z[:3] = 0.0  # ties everywhere: p uniform
    z[3, 0] = 40.0  # one class far ahead
    y = rng.integers(0, classes, size=n)
    w = rng.uniform(0.2, 3.0, size=n)
    key = rng.choice(["a", "b"], size=n)
    pdf = pd.DataFrame({"k": key, row.WEIGHT: w, "z": list(z), "y": y.astype(np.int32)})
    frame = spark.createDataFrame(pdf)
    shifted = shifted_logits(F.col("z"), F.col("y"), classes)
    rows = frame.select("k", row.WEIGHT, *[e.alias(name) for name, e in shifted.items()])
    found = {
        r["k"]: r for r in _class_sums(rows, classes, F.lit(beta), ["k"], higher=True).collect()
    }
    p = softmax(beta * z, axis=1)
    mean = (p * z).sum(axis=1)
    centred = z - mean[:, None]
    variance = (p * centred**2).sum(axis=1)
    terms = {
        "_g": mean - z[np.arange(n), y],
        "_h": variance,
        "_t": (p * centred**3).sum(axis=1),
        "_q": (p * centred**4).sum(axis=1) - 3.0 * variance**2,
    }
    for value in ("a", "b"):
        mask = key == value
        assert found[value]["_n"] == mask.sum()
        for name, term in terms.items():
            expected = float(np.sum(w[mask] * term[mask]))
            assert found[value][name] == pytest.approx(expected, rel=1e-9, abs=1e-9), name
