"""The slice search against a NumPy brute force over every conjunction of a small log, and
against MCGrad's MulticalibrationError on the same segments."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest
from mcgrad.metrics import MulticalibrationError
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_calib import search_slices
from spark_calib.errors import ConfigError, SchemaError
from spark_calib.kernels.cell_grid import coarse_cell as numpy_coarse_cell
from spark_calib.rows.cells import cell_index, coarse_cell
from tests.support.generated_code import generated_code
from tests.support.key_stats_cells import cell_ids
from tests.support.multicalibration_reference import brute_force, report

COLUMNS = ["country", "device", "tier", "hour", "member"]
N_BINS = 10


def small_log(n: int = 50_000, seed: int = 7) -> pd.DataFrame:
    """5 columns (2 to 6 values); over-prediction on (MX, tablet), under-prediction on
    (phone, tier 2, hour 4); weights from a gamma."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "country": rng.choice(["US", "MX", "BR", "DE", "IN", "JP"], n),
            "device": rng.choice(["phone", "tablet", "desktop"], n, p=[0.5, 0.2, 0.3]),
            "tier": rng.integers(0, 4, n),
            "hour": rng.integers(0, 5, n),
            "member": rng.random(n) < 0.3,
        }
    )
    s = rng.beta(1.2, 4.0, n)
    truth = s.copy()
    over = (frame.country == "MX") & (frame.device == "tablet")
    truth[over] *= 0.6
    under = (frame.device == "phone") & (frame.tier == 2) & (frame.hour == 4)
    truth[under] = np.minimum(1.0, truth[under] * 1.8)
    frame["s"] = s
    frame["y"] = (rng.random(n) < truth).astype(int)
    frame["w"] = rng.gamma(2.0, 0.5, n)
    return frame


@pytest.fixture(autouse=True)
def compiled(spark: SparkSession) -> Iterator[None]:
    """Every search here pushes tens of thousands of rows through a few hundred segments:
    with Spark's generated code the module takes 102 s instead of 120 s."""
    with generated_code(spark):
        yield


@pytest.fixture(scope="module")
def log() -> pd.DataFrame:
    return small_log()


@pytest.fixture(scope="module")
def log_frame(spark: SparkSession, log: pd.DataFrame) -> DataFrame:
    """The log as one cached frame. A search reads its input once per level, and a frame made
    from pandas is decoded from Arrow again at each read: uncached, a search of it took twice
    as long (10 s against 5 s, 2026-12-02)."""
    return spark.createDataFrame(log).cache()


@pytest.fixture(scope="module")
def reference(log: pd.DataFrame) -> dict[tuple[str, str], dict[str, float]]:
    return brute_force(log, COLUMNS, 3, N_BINS, weight="w")


def _config(**search: Any) -> dict[str, Any]:
    return {
        "task": "binary",
        "columns": {"score": "s", "label": "y", "weight": "w"},
        "binning": {"n_bins": N_BINS},
        "slice_search": {"columns": COLUMNS, "max_level": 3, **search},
    }


def _scored(table: Any) -> dict[tuple[str, str], dict[str, Any]]:
    rows = table.to_pylist()
    return {(r["slice_name"], r["slice_value"]): r for r in rows if r["level"] > 0}


def test_every_conjunction_scores_as_the_brute_force_and_the_report_follows_its_rule(
    log_frame: DataFrame, reference: dict[tuple[str, str], dict[str, float]]
) -> None:
    result = search_slices(log_frame, _config(min_rows=1, top_k=15, prune=False))
    scored = _scored(result.segments)
    assert set(scored) == set(reference)
    for key, expected in reference.items():
        for name, value in expected.items():
            assert scored[key][name] == pytest.approx(value, rel=1e-9, abs=1e-12, nan_ok=True), (
                key,
                name,
            )
    expected_report = report(reference, 1, 15, 0.05, COLUMNS)
    rows = result.slices.orderBy("rank").collect()
    assert [(r.slice_name, r.slice_value) for r in rows] == expected_report
    # The planted conjunctions are found, with their exact predicates.
    top = [(r.slice_name, r.slice_value) for r in rows[:5]]
    assert ("country,device", "MX,tablet") in top
    assert ("device,tier,hour", "phone,2,4") in top
    assert all(r.significant for r in rows[:2])


@pytest.mark.slow  # a brute force over a 400-value column and two searches: about a minute
def test_pruning_drops_no_segment_of_the_top_k(spark: SparkSession, log: pd.DataFrame) -> None:
    # A column of 400 rare values makes parents of a few dozen rows, whose bound is low.
    frame = log.assign(zip=np.random.default_rng(1).integers(0, 400, len(log)))
    columns = ["country", "device", "tier", "zip"]
    reference = brute_force(frame, columns, 3, N_BINS, weight="w")
    config = _config(min_rows=20, top_k=5, columns=columns)
    pruned = search_slices(spark.createDataFrame(frame), config)
    assert sum(level.pruned for level in pruned.levels) > 100  # the bound did prune here
    rankable = {k for k, r in _scored(pruned.segments).items() if r["n"] >= 20}
    eligible = {k: s for k, s in reference.items() if s["n"] >= 20}
    assert rankable < set(eligible)  # some were never scored
    best = sorted(eligible, key=lambda k: -eligible[k]["ecce_sigma"])[:5]
    assert set(best) <= rankable
    # The report equals the unpruned search's (ranks, z, p-values: the pruned children count
    # as tests with p = 1 in both; z to rounding, the fine cells summed in another order).
    unpruned = {**config, "slice_search": {**config["slice_search"], "prune": False}}
    full = search_slices(spark.createDataFrame(frame), unpruned)
    names = ["rank", "slice_name", "slice_value", "z", "p_value"]
    got = pruned.slices.select(*names).orderBy("rank").collect()
    expected = full.slices.select(*names).orderBy("rank").collect()
    assert [r[:3] for r in got] == [r[:3] for r in expected]
    for row, want in zip(got, expected, strict=True):
        assert (row.z, row.p_value) == pytest.approx((want.z, want.p_value), rel=1e-12)
    # Levels 2 and 3 were scored from coarse cells; the report's segments from fine ones.
    coarse = {k: r for k, r in _scored(pruned.segments).items() if not r["refined"]}
    assert len(coarse) > 100
    assert not {(r.slice_name, r.slice_value) for r in got} & set(coarse)
    # A coarse segment's sums are exact, and its bounds hold its fine scores.
    fine = _scored(full.segments)
    for key, row in coarse.items():
        want = fine[key]
        assert (row["n"], row["citl_z"]) == pytest.approx((want["n"], want["citl_z"]), rel=1e-9)
        assert row["ecce"] <= want["ecce"] + 1e-12
        assert want["ecce"] <= row["ecce"] + row["ecce_bound"] + 1e-12
        assert row["p_value"] >= want["p_value"] - 1e-12
    # The multicalibration error and its p-value are the fine search's.
    mce = {r.metric: r.value for r in pruned.metrics.collect()}
    assert mce == pytest.approx({r.metric: r.value for r in full.metrics.collect()}, rel=1e-12)


def test_sigma_scale_ecce_agrees_with_mcgrad_within_the_cells_bound(
    spark: SparkSession, log: pd.DataFrame
) -> None:
    sample = log.iloc[:20_000]
    result = search_slices(
        spark.createDataFrame(sample),
        _config(min_rows=1, max_level=2, prune=False, columns=["country", "device", "tier"]),
    )
    ours = _scored(result.segments)
    overall = next(r for r in result.segments.to_pylist() if r["level"] == 0)
    frame = sample.assign(tier=sample.tier.astype(str))
    mce = MulticalibrationError(
        frame,
        "y",
        "s",
        weight_column="w",
        categorical_segment_columns=["country", "device", "tier"],
        max_depth=2,
        max_values_per_segment_feature=10,
        min_samples_per_segment=1,
        max_n_segments=None,
        precision_dtype="float64",
    )
    sigmas = mce.segments_ecce_sigma
    features = mce._segments[1]
    order = {"country": 0, "device": 1, "tier": 2}
    matched = 0
    for index in range(1, len(sigmas)):
        predicates = features[features.idx_segment == index]
        pairs = sorted(
            zip(predicates.segment_column, predicates.value, strict=False),
            key=lambda p: order[p[0]],
        )
        key = (",".join(p[0] for p in pairs), ",".join(str(p[1]) for p in pairs))
        row = ours[key]
        # The cells' ECCE is below the rows' by at most ecce_bound (docs/slice_search.md).
        tolerance = row["ecce_bound"] / row["sigma"] + 1e-9
        assert row["ecce_sigma"] <= sigmas[index] + 1e-9
        assert sigmas[index] <= row["ecce_sigma"] + tolerance
        matched += 1
    assert matched == len(ours)
    assert overall["ecce_sigma"] <= sigmas[0] + 1e-9
    mce_ours = max(r["ecce_sigma"] for r in result.segments.to_pylist())
    worst = max(result.segments.to_pylist(), key=lambda r: r["ecce_sigma"])
    assert mce_ours <= mce.mce_sigma + 1e-9
    assert mce.mce_sigma <= mce_ours + worst["ecce_bound"] / worst["sigma"] + 1e-9
    summary = result.summary.collect()[0]
    assert summary.multicalibration_error == pytest.approx(mce_ours)


def test_calibration_in_the_large_ranks_by_its_z(
    log_frame: DataFrame, reference: dict[tuple[str, str], dict[str, float]]
) -> None:
    result = search_slices(
        log_frame,
        _config(min_rows=500, max_level=2, top_k=3, score="calibration_in_the_large"),
    )
    rows = result.slices.orderBy("rank").collect()
    top = rows[0]
    expected = reference[(top.slice_name, top.slice_value)]
    assert top.score_name == "calibration_in_the_large"
    assert top.z == pytest.approx(expected["citl_z"], rel=1e-9)
    assert top.score == pytest.approx(expected["calibration_in_the_large"], rel=1e-9)
    assert top.p_value == pytest.approx(math.erfc(abs(expected["citl_z"]) / math.sqrt(2)))
    # The largest |citl_z| of the brute force's segments of up to 2 columns with 500 rows.
    eligible = {
        k: abs(s["citl_z"])
        for k, s in reference.items()
        if s["n"] >= 500 and len(k[0].split(",")) <= 2
    }
    assert (top.slice_name, top.slice_value) == max(eligible, key=eligible.__getitem__)


def test_ece_excess_ranks_by_its_z_without_the_bound(
    spark: SparkSession,
    log: pd.DataFrame,
    log_frame: DataFrame,
    reference: dict[tuple[str, str], dict[str, float]],
) -> None:
    result = search_slices(
        log_frame,
        _config(min_rows=500, max_level=2, top_k=3, score="ece_excess"),
    )
    rows = result.slices.orderBy("rank").collect()
    top = rows[0]
    expected = reference[(top.slice_name, top.slice_value)]
    assert top.score_name == "ece_excess"
    assert top.score == pytest.approx(expected["ece_excess"], rel=1e-9)
    assert top.se == pytest.approx(expected["ece_excess_se"], rel=1e-9)
    assert top.z == pytest.approx(expected["ece_excess_z"], rel=1e-9)
    assert top.p_value == pytest.approx(math.erfc(expected["ece_excess_z"] / math.sqrt(2)) / 2)
    eligible = {
        k: s["ece_excess_z"]
        for k, s in reference.items()
        if s["n"] >= 500 and len(k[0].split(",")) <= 2
    }
    assert (top.slice_name, top.slice_value) == max(eligible, key=eligible.__getitem__)
    # Rare values make small parents, whose bound prunes for ecce_sigma; not for ece_excess.
    frame = log.iloc[:20_000].assign(zip=np.random.default_rng(1).integers(0, 400, 20_000))
    rare = {"min_rows": 20, "max_level": 2, "top_k": 5, "columns": ["country", "device", "zip"]}
    pruned = {
        score: sum(
            level.pruned
            for level in search_slices(
                spark.createDataFrame(frame), _config(**rare, score=score)
            ).levels
        )
        for score in ("ecce_sigma", "ece_excess")
    }
    assert pruned["ecce_sigma"] > 0
    assert pruned["ece_excess"] == 0


def test_numeric_edges_nulls_and_model_versions(spark: SparkSession) -> None:
    frame = pd.DataFrame(
        {
            "amount": [None, 0.5, 1.0, 1.5, 2.0, 7.0] * 50,
            "site": ["a", None, "a,b", "a", "a,b", None] * 50,
            "v": ["v1"] * 150 + ["v2"] * 150,
            "s": [0.2] * 300,
            "y": [0, 1, 0, 0, 1, 0] * 50,
        }
    )
    config = {
        "task": "binary",
        "columns": {"score": "s", "label": "y", "model_version": "v"},
        "slice_search": {
            "columns": [{"column": "amount", "edges": [1.0, 2.0]}, "site"],
            "max_level": 2,
            "min_rows": 1,
            "top_k": 100,
        },
    }
    result = search_slices(spark.createDataFrame(frame), config)
    scored = {
        (r["model_version"], r["slice_name"], r["slice_value"]): r["n"]
        for r in result.segments.to_pylist()
    }
    assert scored[("v1", "amount", "(-inf\\, 1)")] == 25
    assert scored[("v1", "amount", "[1\\, 2)")] == 50
    assert scored[("v1", "amount", "[2\\, inf)")] == 50
    assert scored[("v1", "amount", "\\N")] == 25
    assert scored[("v2", "site", "a\\,b")] == 50
    assert scored[("v2", "site", "\\N")] == 50
    assert scored[("v1", "amount,site", "[2\\, inf),a\\,b")] == 25
    assert scored[("v1", "overall", "")] == 150


def test_bins_cut_a_numeric_column_at_its_quantiles(spark: SparkSession) -> None:
    rng = np.random.default_rng(11)
    n = 20_000
    amount = rng.exponential(3.0, n)
    present = rng.random(n) > 0.01
    frame = pd.DataFrame(
        {
            "amount": np.where(present, amount, np.nan),
            "s": rng.uniform(0.05, 0.95, n),
        }
    )
    frame["y"] = (rng.random(n) < frame.s).astype(int)
    frame["amount"] = frame.amount.astype(object).where(present, None)
    config = {
        "task": "binary",
        "columns": {"score": "s", "label": "y"},
        "slice_search": {
            "columns": [{"column": "amount", "bins": 4}],
            "max_level": 1,
            "min_rows": 1,
            "top_k": 10,
        },
    }
    # A column without any value has no quantiles: its rows all fall in the null value.
    config["slice_search"]["columns"].append({"column": "empty", "bins": 3})  # type: ignore[index]
    rows = spark.createDataFrame(frame).withColumn("empty", F.lit(None).cast("double"))
    result = search_slices(rows, config)
    segments = result.segments.to_pylist()
    assert {r["slice_value"]: r["n"] for r in segments if r["slice_name"] == "empty"} == {"\\N": n}
    counts = {r["slice_value"]: r["n"] for r in segments if r["slice_name"] == "amount"}
    labels = sorted(v for v in counts if v != "\\N")
    lows = sorted(float(v[1:].split("\\,")[0]) for v in labels if v.startswith("["))
    assert len(lows) == 3
    values = amount[present]
    # Each edge is the k/4 quantile within percentile_approx's rank error (1/10,000), give or
    # take the rounding to 6 significant digits.
    for k, edge in enumerate(lows, start=1):
        assert abs(np.mean(values < edge) - k / 4) < 5e-4
    edges = [-np.inf, *lows, np.inf]
    for low, high in itertools.pairwise(edges):
        inside = int(np.sum((values >= low) & (values < high)))
        label = next(v for v in labels if v.startswith("(-inf" if low == -np.inf else f"[{low:g}"))
        assert counts[label] == inside
    assert counts["\\N"] == int(np.sum(~present))


def test_bad_configs_are_one_line_errors(spark: SparkSession) -> None:
    frame = spark.createDataFrame(pd.DataFrame({"s": [0.5], "y": [1], "c": ["x"]}))
    base = {"task": "binary", "columns": {"score": "s", "label": "y"}}
    with pytest.raises(ConfigError, match="no slice_search section"):
        search_slices(frame, base)
    with pytest.raises(SchemaError, match="edges cut numeric columns only"):
        search_slices(
            frame,
            {
                **base,
                "slice_search": {"columns": [{"column": "c", "edges": [1.0]}], "max_level": 1},
            },
        )
    with pytest.raises(ConfigError, match="max_level 3 is more than its 1 columns"):
        search_slices(frame, {**base, "slice_search": {"columns": ["c"]}})
    with pytest.raises(SchemaError, match=r"'nope' \(slice_search.columns\) is not in the input"):
        search_slices(frame, {**base, "slice_search": {"columns": ["nope"], "max_level": 1}})
    with pytest.raises(SchemaError, match="edges cut numeric columns only"):
        search_slices(
            frame,
            {**base, "slice_search": {"columns": [{"column": "c", "bins": 4}], "max_level": 1}},
        )
    with pytest.raises(ConfigError, match="'c' needs exactly one of edges and bins"):
        search_slices(frame, {**base, "slice_search": {"columns": [{"column": "c"}]}})


def test_coarse_cells_in_spark_are_the_kernels(spark: SparkSession) -> None:
    rng = np.random.default_rng(2)
    s = np.r_[
        0.0, 1.0, 1e-300, 1 - 1e-16, 0.5, 0.01, 0.0099999, rng.random(500), rng.beta(0.2, 8, 500)
    ]
    frame = spark.createDataFrame(pd.DataFrame({"i": np.arange(len(s)), "s": s}))
    got = frame.select("i", coarse_cell(cell_index(F.col("s"))).alias("c")).orderBy("i")
    expected = numpy_coarse_cell(cell_ids(s))
    np.testing.assert_array_equal([r.c for r in got.collect()], expected)
    assert len(np.unique(expected)) > 50
