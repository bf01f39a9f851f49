"""Multiclass temperature scaling against independent references, per model version and slice,
with weights: T against SciPy's bounded search on the rows' exact NLL, the before/after metrics
against a NumPy recomputation at the table's T, the Newton-step certificate against NumPy, and
the published CIFAR-10-LT ResNet-110 figures (``tests/data/README.md``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from scipy.special import softmax

from spark_calib import evaluate, recalibrate, recalibration_from_stats
from spark_calib.errors import ConfigError
from spark_calib.recalibration.table import RECALIBRATION_COLUMNS, RECALIBRATION_SCHEMA
from spark_calib.rows.temperature_terms import UNROLL_MAX_CLASSES
from tests.support import multiclass_temperature_reference as ref
from tests.support.evaluations import Evaluations
from tests.support.generated_code import generated_code

CIFAR = Path(__file__).resolve().parents[1] / "data" / "cifar10_lt_resnet110.parquet"
MIN_FIT_ROWS = 200
WHOLE_STAGE = "spark.sql.codegen.wholeStage"
HUGE_METHOD_LIMIT = "spark.sql.codegen.hugeMethodLimit"
CLASSES = 5
CONFIG: dict[str, Any] = {
    "task": "multiclass",
    "columns": {"logits": "z", "label": "y", "weight": "w", "model_version": "mv"},
    "slices": [[], ["country"]],
    "binning": {"n_bins": 10},
    "metrics": ["ece", "nll", "accuracy"],
    "recalibration": {
        "methods": ["temperature"],
        "fit": {"column": "split", "value": "val"},
        "min_fit_rows": MIN_FIT_ROWS,
    },
}
# The labels are drawn from softmax(sharpness·z): v2 over-confident (T > 1), v3 under (T < 1).
SHARPNESS = {"v2": 0.5, "v3": 1.8}


def _log(seed: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frames = []
    for version, sharpness in SHARPNESS.items():
        z = rng.normal(0.0, 2.5, size=(n, CLASSES))
        z[:, 0] += 1.0  # an unbalanced class
        p = softmax(sharpness * z, axis=1)
        y = (p.cumsum(axis=1) < rng.uniform(size=(n, 1))).sum(axis=1)
        country = rng.choice(["BR", "US"], size=n, p=[0.35, 0.65]).astype(object)
        country[:60] = "tiny"  # about 30 fit rows: takes the overall T
        country[60:100] = "evalonly"  # no fit row at all (its split is set to test below)
        frames.append(
            pd.DataFrame(
                {
                    "mv": version,
                    "z": list(z),
                    "y": y.astype(np.int32),
                    "w": rng.uniform(0.2, 3.0, size=n),
                    "country": country,
                    "split": rng.choice(["val", "test"], size=n),
                }
            )
        )
    log = pd.concat(frames, ignore_index=True)
    log.loc[log.country == "evalonly", "split"] = "test"
    return log


@pytest.fixture(scope="module")
def case(evaluations: Evaluations) -> tuple[pd.DataFrame, pd.DataFrame]:
    pdf = _log(5, 8_000)

    def compute(spark: SparkSession) -> pd.DataFrame:
        result = evaluate(spark.createDataFrame(pdf), CONFIG)
        assert result.recalibration is not None
        return result.recalibration.toPandas()

    return pdf, evaluations.get(("multiclass temperature", "weighted"), compute)


def _arrays(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    z = np.stack(rows["z"].to_numpy()).astype(float)
    return z, rows["y"].to_numpy(np.int64), rows["w"].to_numpy(float)


def _groups(pdf: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    found = []
    for version, rows in pdf.groupby("mv"):
        found.append((str(version), "", rows))
        found += [(str(version), str(value), g) for value, g in rows.groupby("country")]
    return found


def _row(table: pd.DataFrame, version: str, value: str) -> pd.Series:
    match = table[(table.model_version == version) & (table.slice_value == value)]
    assert len(match) == 1, (version, value)
    return match.iloc[0]


def _deployed(table: pd.DataFrame, pdf: pd.DataFrame, sets: list[list[str]]) -> np.ndarray:
    """Each row's T under the deployed map (docs/recalibration.md): its own value's T in the
    most specific slice set (most columns first, then config order) whose row is not a
    fallback, else its version's overall T. Values encoded as the table does (null "\\N")."""
    own = {
        (r.model_version, r.slice_name, r.slice_value): r.parameters["temperature"]
        for r in table.itertuples()
        if not r.fallback and r.parameters is not None
    }
    overall = {
        r.model_version: r.parameters["temperature"]
        for r in table.itertuples()
        if r.slice_name == "overall" and r.parameters is not None
    }
    order = sorted((s for s in sets if s), key=lambda s: -len(s))
    found = np.empty(len(pdf))
    for i, r in enumerate(pdf.to_dict("records")):
        found[i] = overall[r["mv"]]
        for columns in order:
            value = ",".join("\\N" if pd.isna(r[c]) else str(r[c]) for c in columns)
            key = (r["mv"], ",".join(columns), value)
            if key in own:
                found[i] = own[key]
                break
    return found


def _scaled(rows: pd.DataFrame, temperatures: np.ndarray) -> tuple[np.ndarray, ...]:
    """The rows' arrays with each row's logits divided by its own T (then scored at T = 1)."""
    z, y, w = _arrays(rows)
    return z / temperatures[:, None], y, w


def test_temperature_is_the_exact_minimiser_per_key(case: Any) -> None:
    pdf, table = case
    checked = 0
    for version, value, rows in _groups(pdf):
        if value in ("tiny", "evalonly"):
            continue
        row = _row(table, version, value)
        exact = ref.exact_temperature(*_arrays(rows[rows.split == "val"]))
        assert row.parameters["temperature"] == pytest.approx(exact, rel=1e-7)
        assert row.parameters["fit_sample_rate"] == 1.0
        assert not row.fallback and row.n_fit == (rows.split == "val").sum()
        checked += 1
    assert checked == 6
    assert _row(table, "v2", "").parameters["temperature"] > 1.5
    assert _row(table, "v3", "").parameters["temperature"] < 0.7


def test_a_slice_with_too_few_fit_rows_takes_the_overall_temperature(case: Any) -> None:
    _, table = case
    for version in SHARPNESS:
        tiny = _row(table, version, "tiny")
        overall = _row(table, version, "")
        assert tiny.fallback and tiny.n_fit < MIN_FIT_ROWS
        expected = {"temperature": overall.parameters["temperature"], "fit_sample_rate": 1.0}
        assert tiny.parameters == expected
        unseen = _row(table, version, "evalonly")
        assert unseen.fallback and unseen.n_fit == 0 and unseen.n_eval == 40
        assert unseen.parameters == expected


def test_before_and_after_metrics_equal_numpy_under_the_deployed_map(case: Any) -> None:
    pdf, table = case
    pdf = pdf.assign(_t=_deployed(table, pdf, CONFIG["slices"]))
    for version, value, rows in _groups(pdf):
        row = _row(table, version, value)
        evaluated = rows[rows.split != "val"]
        before = ref.scaled_scores(*_arrays(evaluated), 1.0, 10, "left_closed")
        after = ref.scaled_scores(
            *_scaled(evaluated, evaluated["_t"].to_numpy()), 1.0, 10, "left_closed"
        )
        assert row.n_eval == len(evaluated)
        for name in before:
            assert row[f"{name}_before"] == pytest.approx(before[name], rel=1e-9, abs=1e-12)
            assert row[f"{name}_after"] == pytest.approx(after[name], rel=1e-9, abs=1e-12)
        assert row.accuracy_after == row.accuracy_before
        assert row.after_bounds == {"ece": 0.0, "nll": 0.0, "brier": 0.0, "accuracy": 0.0}
        # Held out, the fitted temperatures lower the NLL of both mis-calibrated versions.
        if value == "":
            assert row.nll_after < row.nll_before and row.ece_after < row.ece_before
    # A country with its own fit is scored at its own T; overall mixes its countries' T.
    us = pdf[(pdf.mv == "v2") & (pdf.country == "US")]
    assert (us["_t"] == _row(table, "v2", "US").parameters["temperature"]).all()


def test_recalibrate_adds_softmax_of_the_scaled_logits(case: Any, spark: SparkSession) -> None:
    pdf, table = case
    sample = pdf.sample(n=400, random_state=3)
    recalibration = spark.createDataFrame(table[list(RECALIBRATION_COLUMNS)], RECALIBRATION_SCHEMA)
    scored = recalibrate(spark.createDataFrame(sample), recalibration, CONFIG).toPandas()
    temperatures = {
        (r.model_version, r.slice_value): r.parameters["temperature"] for r in table.itertuples()
    }
    for r in scored.itertuples():
        key = (r.mv, r.country) if r.country not in ("tiny", "evalonly") else (r.mv, "")
        expected = softmax(np.asarray(r.z) / temperatures[key])
        np.testing.assert_allclose(r.calibrated_probs, expected, rtol=1e-12, atol=1e-15)


def test_log_probabilities_are_scaled_like_logits(evaluations: Evaluations) -> None:
    rng = np.random.default_rng(8)
    z = rng.normal(0.0, 3.0, size=(3_000, 4))
    p = softmax(z, axis=1)
    y = (softmax(0.6 * z, axis=1).cumsum(axis=1) < rng.uniform(size=(3_000, 1))).sum(axis=1)
    pdf = pd.DataFrame({"p": list(p), "y": y.astype(np.int32)})
    config = {
        "task": "multiclass",
        "columns": {"probs": "p", "label": "y"},
        "metrics": ["ece"],
        "recalibration": {"methods": ["temperature"]},
    }

    def compute(spark: SparkSession) -> tuple[pd.DataFrame, tuple[str | None, ...], np.ndarray]:
        # Generated code on, as by default (the test session interprets); the scoring pass
        # lowers the huge-method limit for its query only and restores it.
        limit = spark.conf.get(HUGE_METHOD_LIMIT)
        with generated_code(spark):
            frame = spark.createDataFrame(pdf)
            result = evaluate(frame, config)
            assert result.recalibration is not None
            scored = recalibrate(frame.limit(50), result.recalibration, config).toPandas()
            calibrated = np.stack(scored["calibrated_probs"].to_numpy())
            after = (spark.conf.get(WHOLE_STAGE), limit, spark.conf.get(HUGE_METHOD_LIMIT))
            return result.recalibration.toPandas(), after, calibrated

    table, confs, calibrated = evaluations.get(("multiclass temperature", "probs"), compute)
    whole_stage, limit_before, limit_after = confs
    assert whole_stage == "true"
    assert limit_after == limit_before
    row = table.iloc[0]
    log_p = np.log(np.maximum(p, 1e-15))
    # recalibrate scales the same log-probabilities (the first rows, in input order).
    expected = softmax(log_p[:50] / row.parameters["temperature"], axis=1)
    np.testing.assert_allclose(calibrated, expected, rtol=1e-12, atol=1e-15)
    weights = np.ones(len(y))
    exact = ref.exact_temperature(log_p, y, weights)
    assert row.parameters["temperature"] == pytest.approx(exact, rel=1e-7)
    after = ref.scaled_scores(log_p, y, weights, row.parameters["temperature"], 15, "left_closed")
    assert row.ece_after == pytest.approx(after["ece"], rel=1e-9)
    assert row.nll_after == pytest.approx(after["nll"], rel=1e-9)


@pytest.mark.slow
def test_more_classes_than_are_written_out_use_the_array_sums(evaluations: Evaluations) -> None:
    """Above ``UNROLL_MAX_CLASSES`` the class sums are higher-order array functions."""
    classes = UNROLL_MAX_CLASSES + 6
    rng = np.random.default_rng(13)
    z = rng.normal(0.0, 2.0, size=(2_000, classes))
    y = (softmax(0.7 * z, axis=1).cumsum(axis=1) < rng.uniform(size=(2_000, 1))).sum(axis=1)
    w = rng.uniform(0.5, 2.0, size=2_000)
    pdf = pd.DataFrame({"z": list(z), "y": y.astype(np.int32), "w": w})
    config = {
        "task": "multiclass",
        "columns": {"logits": "z", "label": "y", "weight": "w"},
        "metrics": ["ece"],
        "recalibration": {"methods": ["temperature"]},
    }

    def compute(spark: SparkSession) -> pd.DataFrame:
        result = evaluate(spark.createDataFrame(pdf), config)
        assert result.recalibration is not None
        return result.recalibration.toPandas()

    row = evaluations.get(("multiclass temperature", "wide"), compute).iloc[0]
    temperature = row.parameters["temperature"]
    assert temperature == pytest.approx(ref.exact_temperature(z, y, w), rel=1e-7)
    after = ref.scaled_scores(z, y, w, temperature, 15, "left_closed")
    for name in after:
        assert row[f"{name}_after"] == pytest.approx(after[name], rel=1e-9, abs=1e-12)


@pytest.mark.slow
def test_cifar10_lt_resnet110_matches_the_published_figures(evaluations: Evaluations) -> None:
    """Fit on the validation split, evaluate on the test split (15 bins, (lo, hi])."""
    config = {
        "task": "multiclass",
        "columns": {"logits": "logits", "label": "label"},
        "binning": {"n_bins": 15, "edges": "right_closed"},
        "metrics": ["ece", "accuracy"],
        "recalibration": {"methods": ["temperature"], "fit": {"column": "split", "value": "val"}},
    }

    def compute(spark: SparkSession) -> pd.DataFrame:
        result = evaluate(spark.read.parquet(str(CIFAR)), config)
        assert result.recalibration is not None
        return result.recalibration.toPandas()

    row = evaluations.get(("multiclass temperature", "cifar10-lt"), compute).iloc[0]
    data = pd.read_parquet(CIFAR)
    val, test = data[data.split == "val"], data[data.split == "test"]
    exact = ref.exact_temperature(*_cifar(val))
    assert row.parameters["temperature"] == pytest.approx(exact, rel=1e-7)
    assert row.n_fit == 10_216 and row.n_eval == 10_000
    # Published (log/TS_CE.log): ECE 19.14 → 5.94 (%), accuracy 75.97 (%).
    assert 100 * row.ece_before == pytest.approx(19.14, abs=0.01)
    assert 100 * row.ece_after == pytest.approx(5.94, abs=0.1)
    assert 100 * row.accuracy_after == pytest.approx(75.97, abs=0.005)
    after = ref.scaled_scores(*_cifar(test), row.parameters["temperature"], 15, "right_closed")
    assert row.ece_after == pytest.approx(after["ece"], rel=1e-9)


def _cifar(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    z = np.stack(rows["logits"].to_numpy()).astype(np.float32).astype(float)
    return z, rows["label"].to_numpy(np.int64), np.ones(len(rows))


def test_a_rollup_cannot_refit_a_multiclass_temperature(spark: SparkSession) -> None:
    with pytest.raises(ConfigError, match="statistics do not hold"):
        recalibration_from_stats(spark.range(1), CONFIG)


def test_reliability_bins_before_and_after_equal_numpy(case: Any) -> None:
    pdf, table = case
    pdf = pdf.assign(_t=_deployed(table, pdf, CONFIG["slices"]))
    for version, value, rows in _groups(pdf):
        row = _row(table, version, value)
        evaluated = rows[rows.split != "val"]
        for column, arrays in (
            ("reliability_before", _arrays(evaluated)),
            ("reliability_after", _scaled(evaluated, evaluated["_t"].to_numpy())),
        ):
            expected = ref.scaled_bins(*arrays, 1.0, 10)
            found = [(b["bin"], b["weight"], b["confidence"], b["outcome"]) for b in row[column]]
            assert [b[0] for b in found] == [b[0] for b in expected], column
            np.testing.assert_allclose(
                np.array(found)[:, 1:], np.array(expected)[:, 1:], rtol=1e-9, atol=1e-12
            )


SAMPLED_MAX_FIT_ROWS = 4_000


@pytest.fixture(scope="module")
def sampled(evaluations: Evaluations) -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    """The weighted case with ``max_fit_rows`` 4,000 of its 16,000 valid rows (rate ¼, about
    1,000 of each version's 4,000 fit rows), evaluated twice; with each row's code computed
    by Spark's own xxhash64 of the input columns the config reads, in name order (the rule
    of docs/recalibration.md); and with ``after: none``."""
    pdf = _log(5, 8_000)
    sampled_config = {
        **CONFIG,
        "recalibration": {**CONFIG["recalibration"], "max_fit_rows": SAMPLED_MAX_FIT_ROWS},
    }
    fit_only = {**CONFIG, "recalibration": {**CONFIG["recalibration"], "after": "none"}}

    def compute(spark: SparkSession) -> list[pd.DataFrame]:
        frame = spark.createDataFrame(pdf)
        tables = []
        for config in (sampled_config, sampled_config, fit_only):
            result = evaluate(frame, config)
            assert result.recalibration is not None
            tables.append(result.recalibration.toPandas())
        read = ["country", "mv", "w", "y", "z"]
        tables.append(frame.select(F.xxhash64(*read).alias("code")).toPandas())
        return tables

    return pdf, evaluations.get(("multiclass temperature", "sampled"), compute)


def test_a_sampled_fit_is_the_exact_fit_of_the_rows_its_code_chooses(sampled: Any) -> None:
    pdf, (table, _, _, codes) = sampled
    # Spark keeps the frame's row order through a narrow select of a local frame.
    chosen = pdf[np.mod(codes["code"].to_numpy(), 1 << 30) < (1 << 28)]
    for version, value, rows in _groups(chosen):
        if value in ("tiny", "evalonly"):
            continue
        row = _row(table, version, value)
        fit = rows[rows.split == "val"]
        assert row.parameters["fit_sample_rate"] == 0.25
        assert row.n_fit == len(fit)
        # About a quarter of the 4,000 fit rows a version has (binomial, 5 sd).
        if value == "":
            assert abs(len(fit) - 1000) < 5 * np.sqrt(1000 * 0.75)
        exact = ref.exact_temperature(*_arrays(fit))
        assert row.parameters["temperature"] == pytest.approx(exact, rel=1e-7)


def test_a_sampled_fit_chooses_the_same_rows_on_a_rerun(sampled: Any) -> None:
    _, (first, second, _, _) = sampled
    columns = ["model_version", "slice_value", "n_fit"]
    pd.testing.assert_frame_equal(first[columns], second[columns])
    assert [p["temperature"] for p in first.parameters] == [
        p["temperature"] for p in second.parameters
    ]


def test_after_none_fits_only(case: Any, sampled: Any) -> None:
    _, scored = case
    _, (_, _, fit_only, _) = sampled
    # Without the scoring pass only the keys with fit rows are seen (not "evalonly").
    with_fit_rows = scored[scored.n_fit > 0]
    assert len(fit_only) == len(with_fit_rows) == len(scored) - 2
    for version, value in zip(with_fit_rows.model_version, with_fit_rows.slice_value, strict=True):
        row = _row(fit_only, version, value)
        assert (
            row.parameters["temperature"] == _row(scored, version, value).parameters["temperature"]
        )
        assert pd.isna(row.n_eval) and row.reliability_before is None
        for name in ("ece", "nll", "brier", "accuracy"):
            assert pd.isna(row[f"{name}_before"]) and pd.isna(row[f"{name}_after"])


def test_crossed_slice_sets_score_each_key_under_the_deployed_map(
    evaluations: Evaluations,
) -> None:
    """Slice sets of one and two columns with a null value: every key's after metrics equal
    NumPy under the deployed map, and each key with a fit of its own is the exact minimiser
    on its fit rows."""
    pdf = _log(11, 4_000)
    rng = np.random.default_rng(11)
    pdf["device"] = rng.choice(["ios", "android", None], size=len(pdf), p=[0.5, 0.4, 0.1])
    sets = [["device"], ["country", "device"]]
    config = {**CONFIG, "slices": sets}

    def compute(spark: SparkSession) -> pd.DataFrame:
        result = evaluate(spark.createDataFrame(pdf), config)
        assert result.recalibration is not None
        return result.recalibration.toPandas()

    table = evaluations.get(("multiclass temperature", "crossed"), compute)
    pdf = pdf.assign(_t=_deployed(table, pdf, sets))
    checked = 0
    for columns in [[], *sets]:
        grouped = pdf.groupby(["mv", *columns], dropna=False)
        for values, group in grouped:
            encoded = ",".join("\\N" if pd.isna(v) else str(v) for v in values[1:])
            name = ",".join(columns) if columns else "overall"
            match = table[
                (table.model_version == values[0])
                & (table.slice_name == name)
                & (table.slice_value == encoded)
            ]
            assert len(match) == 1, (values, name)
            row = match.iloc[0]
            evaluated = group[group.split != "val"]
            if len(evaluated) == 0:
                continue
            after = ref.scaled_scores(
                *_scaled(evaluated, evaluated["_t"].to_numpy()), 1.0, 10, "left_closed"
            )
            for metric in after:
                assert row[f"{metric}_after"] == pytest.approx(after[metric], rel=1e-9, abs=1e-12)
            if not row.fallback:
                exact = ref.exact_temperature(*_arrays(group[group.split == "val"]))
                assert row.parameters["temperature"] == pytest.approx(exact, rel=1e-7)
            checked += 1
    assert checked >= 20


@pytest.mark.parametrize("with_fit", [True, False])
def test_invalid_rows_and_rows_without_a_fit_value_are_not_fitted(
    spark: SparkSession, with_fit: bool
) -> None:
    # The sample caches the rows its code chooses with their reason and fit flag, and the
    # passes read only the valid fit rows: an invalid row (non-finite or short logits, a bad
    # label, a negative weight) or, with ``fit``, a row whose fit column is null must not
    # reach the sums. Without ``fit`` every valid row is a fit row.
    pdf = _log(11, 1_500)
    pdf = pdf[pdf.mv == "v2"].reset_index(drop=True)
    bad = pdf.iloc[:8].copy()
    bad["split"] = "val"
    bad.at[0, "z"] = np.array([np.nan, 0.0, 0.0, 0.0, 0.0])
    bad.at[1, "z"] = np.array([np.inf, 0.0, 0.0, 0.0, 0.0])
    bad.at[2, "z"] = np.array([1.0, 0.0, 0.0])
    bad.at[3, "y"] = CLASSES
    bad.at[4, "w"] = -1.0
    bad.loc[5:7, "split"] = None
    log = pd.concat([pdf, bad], ignore_index=True)
    recalibration = dict(CONFIG["recalibration"])
    if not with_fit:
        del recalibration["fit"]
    config = {**CONFIG, "slices": [[]], "max_invalid_fraction": 0.01}
    config["recalibration"] = recalibration
    result = evaluate(spark.createDataFrame(log), config)
    assert result.recalibration is not None
    assert result.n_invalid == 5
    row = _row(result.recalibration.toPandas(), "v2", "")
    fit = pdf[pdf.split == "val"] if with_fit else pd.concat([pdf, bad.iloc[5:]])
    assert row.n_fit == len(fit)
    exact = ref.exact_temperature(*_arrays(fit))
    assert row.parameters["temperature"] == pytest.approx(exact, rel=1e-7)
