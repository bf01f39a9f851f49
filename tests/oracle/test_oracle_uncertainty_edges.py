"""Edges of the uncertainty columns: the jackknife's standard error is null unless all G
leave-one-bucket-out replicates have a value (and defined when a slice merely misses some
buckets), and ``method: none`` leaves every interval null, the reliability bins' Wilson bounds
included. The buckets are computed here with Spark's own xxhash64, as docs/uncertainty.md
defines them, not with the library's code."""

from __future__ import annotations

from typing import cast

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from scipy import stats

from spark_calib import evaluate
from spark_calib.rows.canonical import BUCKET_SALT
from tests.support import calibration_reference as ref
from tests.support import uncertainty_reference as uref

G = 20
N_BINS = 15
METRICS = ["brier", "calibration_ratio", "ece"]


def _local(df: DataFrame) -> pd.DataFrame:
    return cast(pd.DataFrame, df.toPandas())


def _buckets_of_users(spark: SparkSession, users: int, n_buckets: int) -> np.ndarray:
    """pmod(xxhash64(string(user), salt), G) of users 0..users−1 (index = user)."""
    ids = spark.range(users).select(
        "id",
        F.pmod(F.xxhash64(F.col("id").cast("string"), F.lit(BUCKET_SALT)), F.lit(n_buckets))
        .cast("int")
        .alias("bucket"),
    )
    local = _local(ids).sort_values("id")
    return local["bucket"].to_numpy()


def _slice_rows(
    rng: np.random.Generator, name: str, users: np.ndarray, positives: np.ndarray | None = None
) -> pd.DataFrame:
    s = rng.beta(2, 3, users.size)
    y = (rng.random(users.size) < s).astype(int) if positives is None else positives
    return pd.DataFrame(
        {"g": name, "user": users, "score": s, "label": y, "w": rng.lognormal(0.0, 0.5, users.size)}
    )


def _config(method: str, **extra: object) -> dict[str, object]:
    return {
        "task": "binary",
        "columns": {"score": "score", "label": "label", "weight": "w"},
        "slices": [[], ["g"]],
        "metrics": METRICS,
        "uncertainty": {"method": method, **extra},
    }


def _by_slice_and_metric(metrics: DataFrame) -> pd.DataFrame:
    table = _local(metrics.where(F.col("slice_name") == "g"))
    return table.set_index(["slice_value", "metric"])


def _brier(s: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    return float(np.sum(w * (s - y) ** 2) / np.sum(w))


@pytest.fixture(scope="module")
def jackknife_case(spark: SparkSession) -> tuple[pd.DataFrame, np.ndarray, pd.DataFrame]:
    """Four slices, the users' buckets, and the engine's metric rows under the jackknife.

    - ``many``: users 0..399, every bucket;
    - ``one``: a single row, so one bucket holds all of it;
    - ``few``: 40 rows of users from exactly 3 buckets;
    - ``positives_in_one_bucket``: users 0..399 again, but the only y = 1 rows are those of
      users in one bucket.
    """
    buckets = _buckets_of_users(spark, 2000, G)
    rng = np.random.default_rng(31)
    many = np.arange(400)
    few_buckets = np.unique(buckets[:50])[:3]
    few_users = np.flatnonzero(np.isin(buckets, few_buckets))[:40]
    positive_bucket = int(buckets[0])
    frame = pd.concat(
        [
            _slice_rows(rng, "many", many),
            _slice_rows(rng, "one", np.array([1999])),
            _slice_rows(rng, "few", few_users),
            _slice_rows(
                rng,
                "positives_in_one_bucket",
                many,
                positives=(buckets[many] == positive_bucket).astype(int),
            ),
        ],
        ignore_index=True,
    )
    config = _config("jackknife", buckets=G, bucket_key="user")
    table = _by_slice_and_metric(evaluate(spark.createDataFrame(frame), config).metrics)
    return frame, buckets, table


def test_jackknife_se_is_null_when_one_bucket_holds_all_of_a_slices_rows(
    jackknife_case: tuple[pd.DataFrame, np.ndarray, pd.DataFrame],
) -> None:
    """The slice's only row is in one bucket b: the replicate without b has no statistics of
    the slice, so only G − 1 replicates have a value."""
    frame, _, table = jackknife_case
    (row,) = frame[frame["g"] == "one"].itertuples()
    for metric in METRICS:
        got = table.loc[("one", metric)]
        assert pd.isna(got["se"]), metric
        assert pd.isna(got["ci_lower"]) and pd.isna(got["ci_upper"]), metric
        assert got["n_eff"] == pytest.approx(1.0, rel=1e-12)
    # The point estimate itself is there.
    expected = (row.score - row.label) ** 2
    assert table.loc[("one", "brier"), "value"] == pytest.approx(expected, rel=1e-12)


def test_jackknife_se_is_defined_on_a_slice_covering_every_bucket(
    jackknife_case: tuple[pd.DataFrame, np.ndarray, pd.DataFrame],
) -> None:
    frame, buckets, table = jackknife_case
    rows = frame[frame["g"] == "many"]
    row_buckets = buckets[rows["user"].to_numpy()]
    assert set(row_buckets) == set(range(G))
    s, y, w = (rows[c].to_numpy(dtype=float) for c in ("score", "label", "w"))
    t = stats.t.ppf(0.975, G - 1)
    for metric in METRICS:
        got = table.loc[("many", metric)]
        assert got["se"] > 0, metric
        assert got["ci_upper"] - got["value"] == pytest.approx(t * got["se"], rel=1e-9)
        assert got["value"] - got["ci_lower"] == pytest.approx(t * got["se"], rel=1e-9)
    expected = uref.jackknife_se(lambda m: _brier(s[m], y[m], w[m]), row_buckets, G)
    assert table.loc[("many", "brier"), "se"] == pytest.approx(expected, rel=1e-9)


def test_jackknife_se_is_defined_when_a_slice_misses_some_buckets(
    jackknife_case: tuple[pd.DataFrame, np.ndarray, pd.DataFrame],
) -> None:
    """Leaving out a bucket the slice has no rows in gives the slice's own value: a replicate
    with a value, so the SE exists (the brute force counts those replicates too)."""
    frame, buckets, table = jackknife_case
    rows = frame[frame["g"] == "few"]
    row_buckets = buckets[rows["user"].to_numpy()]
    assert len(set(row_buckets)) == 3
    s, y, w = (rows[c].to_numpy(dtype=float) for c in ("score", "label", "w"))
    bins = ref.uniform_bins(s, N_BINS)
    references = {
        "brier": lambda m: _brier(s[m], y[m], w[m]),
        "ece": lambda m: ref.ece_from_bins(s[m], y[m], w[m], bins[m]),
    }
    for metric, reference in references.items():
        expected = uref.jackknife_se(reference, row_buckets, G)
        got = table.loc[("few", metric)]
        assert got["se"] == pytest.approx(expected, rel=1e-9, abs=1e-12), metric
        assert not pd.isna(got["ci_lower"]) and not pd.isna(got["ci_upper"]), metric


def test_jackknife_se_is_null_when_a_replicate_of_the_metric_has_no_value(
    jackknife_case: tuple[pd.DataFrame, np.ndarray, pd.DataFrame],
) -> None:
    """All y = 1 rows in one bucket b: without b, Σw·y = 0 and the calibration ratio
    Σw·s / Σw·y has no value, so its SE is null; the Brier score of the same replicates is
    defined."""
    frame, buckets, table = jackknife_case
    rows = frame[frame["g"] == "positives_in_one_bucket"]
    row_buckets = buckets[rows["user"].to_numpy()]
    assert set(row_buckets) == set(range(G))
    positive_buckets = set(row_buckets[rows["label"].to_numpy() == 1])
    assert len(positive_buckets) == 1
    s, y, w = (rows[c].to_numpy(dtype=float) for c in ("score", "label", "w"))
    ratio = table.loc[("positives_in_one_bucket", "calibration_ratio")]
    assert ratio["value"] == pytest.approx(ref.calibration_ratio(s, y, w), rel=1e-12)
    assert pd.isna(ratio["se"])
    assert pd.isna(ratio["ci_lower"]) and pd.isna(ratio["ci_upper"])
    brier = table.loc[("positives_in_one_bucket", "brier")]
    expected = uref.jackknife_se(lambda m: _brier(s[m], y[m], w[m]), row_buckets, G)
    assert brier["se"] == pytest.approx(expected, rel=1e-9)


def test_method_none_leaves_every_interval_null_including_the_reliability_bins(
    spark: SparkSession,
) -> None:
    rng = np.random.default_rng(37)
    frame = pd.concat(
        [_slice_rows(rng, name, np.arange(150)) for name in ("a", "b")], ignore_index=True
    )
    df = spark.createDataFrame(frame)
    result = evaluate(df, _config("none"))
    metrics = _local(result.metrics)
    reliability = _local(result.reliability)
    result.unpersist()

    assert len(metrics) == 3 * len(METRICS)  # overall, g=a, g=b
    assert metrics["value"].notna().all()
    for column in ("se", "ci_lower", "ci_upper"):
        assert metrics[column].isna().all(), column
    # n_eff is still written: Kish's (Σw)²/Σw² of the slice.
    for name, rows in frame.groupby("g"):
        w = rows["w"].to_numpy()
        n_eff = metrics[(metrics["slice_name"] == "g") & (metrics["slice_value"] == name)]["n_eff"]
        np.testing.assert_allclose(n_eff, w.sum() ** 2 / np.sum(w**2), rtol=1e-12)

    occupied = reliability[reliability["n"] > 0]
    assert len(occupied) > 0
    assert reliability["ci_lower"].isna().all() and reliability["ci_upper"].isna().all()
    assert occupied["n_eff"].notna().all()

    # The same input under analytic: the metrics with a closed form and every occupied bin
    # do have bounds, so the nulls above are the method's.
    analytic = evaluate(df, _config("analytic"))
    analytic_metrics = _local(analytic.metrics)
    analytic_bins = _local(analytic.reliability.where(F.col("n") > 0))
    analytic.unpersist()
    assert analytic_metrics[analytic_metrics["metric"] == "brier"]["ci_lower"].notna().all()
    assert analytic_bins["ci_lower"].notna().all() and analytic_bins["ci_upper"].notna().all()
