"""The typed, frozen configuration: the same mapping as the YAML job config.

Every section forbids unknown keys, so a typo is an error and never a silent default.
``input`` and ``output`` are used by the job only; ``spark_calib.evaluate`` ignores them.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, field_validator, model_validator

from spark_calib.config.base import Float, Int, Number, StrictModel
from spark_calib.config.monitoring import AlertRule, DriftConfig, RollupConfig
from spark_calib.config.recalibration import RecalibrationConfig, check_recalibration
from spark_calib.config.slice_search import SliceSearchConfig
from spark_calib.config.uncertainty import UncertaintyConfig
from spark_calib.constants import (
    DEFAULT_COVERAGE_LEVELS,
    DEFAULT_MAX_INVALID_FRACTION,
    DEFAULT_MIN_SLICE_ROWS,
    DEFAULT_N_BINS,
    DEFAULT_ROC_POINTS,
    DEFAULT_SUM_TOLERANCE,
    DEFAULT_THRESHOLD,
    DEFAULT_THRESHOLDS,
    LOG_EPS,
)
from spark_calib.registry import EXACT_RANKING, SMOOTH, MetricSpec, resolve_metrics

Task = Literal["binary", "multiclass", "top_label", "regression"]
BinEdges = Literal["left_closed", "right_closed"]
# uniform: M equal-width bins; equal_mass: M bins of equal weight per key, merged from the cells.
BinStrategy = Literal["uniform", "equal_mass"]
# Which probability a binary log's calibration bins compare with the outcome.
BinaryView = Literal["positive_class", "top_label"]
SliceStrategy = Literal["auto", "finest_grain", "grouping_sets"]
InputFormat = Literal["parquet", "orc", "json", "csv", "delta"]


# Which column roles each task requires, allows, and which combinations are alternatives.
TASK_COLUMN_ROLES: dict[str, frozenset[str]] = {
    "binary": frozenset({"score", "label"}),
    "multiclass": frozenset({"probs", "logits", "label"}),
    "top_label": frozenset({"confidence", "correct", "prediction", "label", "quality"}),
    "regression": frozenset({"prediction", "target", "std", "variance"}),
}
COMMON_COLUMN_ROLES = frozenset({"weight", "model_version"})


class Columns(StrictModel):
    """Role → input column name. Which roles apply depends on ``task``."""

    score: str | None = None
    label: str | None = None
    probs: str | None = None
    logits: str | None = None
    confidence: str | None = None
    correct: str | None = None
    prediction: str | None = None
    quality: str | None = None
    target: str | None = None
    std: str | None = None
    variance: str | None = None
    weight: str | None = None
    model_version: str | None = None

    def roles(self) -> dict[str, str]:
        """The configured roles only, in declaration order."""
        return {role: name for role, name in self.model_dump().items() if name is not None}


class Binning(StrictModel):
    """``binning``: the number of calibration bins, their edges and their strategy."""

    n_bins: Int = Field(default=DEFAULT_N_BINS, ge=1)
    edges: BinEdges = "left_closed"
    strategy: BinStrategy = "uniform"


class Window(StrictModel):
    """``input.window``: the date column and how many days a run date covers."""

    column: str
    lookback_days: Int = Field(ge=1)


class InputConfig(StrictModel):
    """``input``: a catalog table or a path (with its format and reader options)."""

    table: str | None = None
    path: str | None = None
    format: InputFormat = "parquet"
    options: dict[str, str] = Field(default_factory=dict)
    window: Window | None = None

    @model_validator(mode="after")
    def _one_source(self) -> InputConfig:
        if (self.table is None) == (self.path is None):
            raise ValueError("input needs exactly one of 'table' or 'path'")
        return self


class OutputConfig(StrictModel):
    """``output``: a catalog database or a path for the output tables."""

    database: str | None = None
    path: str | None = None

    @model_validator(mode="after")
    def _one_sink(self) -> OutputConfig:
        if (self.database is None) == (self.path is None):
            raise ValueError("output needs exactly one of 'database' or 'path'")
        return self


class Config(StrictModel):
    """The evaluation configuration. See the README's config reference for every key."""

    task: Task
    columns: Columns
    slices: tuple[tuple[str, ...], ...] = ((),)
    binning: Binning = Binning()
    metrics: tuple[str, ...] | None = None
    num_classes: Int | None = Field(default=None, ge=2)
    class_names: tuple[str, ...] | None = None
    threshold: Float = Field(default=DEFAULT_THRESHOLD, ge=0.0, le=1.0)
    binary_view: BinaryView = "positive_class"
    quality_threshold: Float | None = None
    max_invalid_fraction: Float = Field(default=DEFAULT_MAX_INVALID_FRACTION, ge=0.0, le=1.0)
    sum_tolerance: Float = Field(default=DEFAULT_SUM_TOLERANCE, gt=0.0)
    nll_eps: Float = Field(default=LOG_EPS, gt=0.0, lt=0.5)
    slice_strategy: SliceStrategy = "auto"
    class_weights: dict[str | int, Number] | None = None
    cost_matrix: tuple[tuple[Number, ...], ...] | None = None
    thresholds: tuple[Float, ...] = DEFAULT_THRESHOLDS
    roc_points: Int = Field(default=DEFAULT_ROC_POINTS, ge=2)
    coverage_levels: tuple[Float, ...] = DEFAULT_COVERAGE_LEVELS
    input: InputConfig | None = None
    output: OutputConfig | None = None
    drift: DriftConfig = DriftConfig()
    alerts: tuple[AlertRule, ...] = ()
    rollup: RollupConfig = RollupConfig()
    uncertainty: UncertaintyConfig = UncertaintyConfig()
    # Slices with fewer rows stay in the tables but out of the worst-slice rankings.
    min_slice_rows: Int = Field(default=DEFAULT_MIN_SLICE_ROWS, ge=0)
    recalibration: RecalibrationConfig | None = None
    slice_search: SliceSearchConfig | None = None

    @field_validator("slices", mode="before")
    @classmethod
    def _slices_are_lists_of_lists(cls, slices: object) -> object:
        if isinstance(slices, list | tuple) and any(isinstance(item, str) for item in slices):
            raise ValueError(
                "slices is a list of slices, each a list of column names: "
                "[[], [country]] is the overall and the country slice"
            )
        return slices

    @field_validator("slices")
    @classmethod
    def _slices_well_formed(
        cls, slices: tuple[tuple[str, ...], ...]
    ) -> tuple[tuple[str, ...], ...]:
        if not slices:
            raise ValueError("slices must list at least one slice; use [[]] for the overall only")
        seen: set[tuple[str, ...]] = set()
        for columns in slices:
            if any(not name for name in columns):
                raise ValueError(f"slice {list(columns)} has an empty column name")
            if len(set(columns)) != len(columns):
                raise ValueError(f"slice {list(columns)} repeats a column")
            if columns in seen:
                raise ValueError(f"slice {list(columns)} is listed twice")
            seen.add(columns)
        return slices

    @field_validator("class_names")
    @classmethod
    def _class_names_distinct(cls, names: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if names is not None:
            if len(names) < 2:
                raise ValueError(f"class_names needs at least 2 names, got {list(names)}")
            if len(set(names)) != len(names):
                raise ValueError(f"class_names has duplicates: {list(names)}")
        return names

    @field_validator("class_weights")
    @classmethod
    def _class_weights_valid(
        cls, weights: dict[str | int, float] | None
    ) -> dict[str | int, float] | None:
        for key, weight in (weights or {}).items():
            if not math.isfinite(weight) or weight < 0.0:
                raise ValueError(
                    f"class_weights[{key!r}] must be a finite weight ≥ 0, got {weight}"
                )
        return weights

    @field_validator("cost_matrix")
    @classmethod
    def _cost_matrix_square(
        cls, matrix: tuple[tuple[float, ...], ...] | None
    ) -> tuple[tuple[float, ...], ...] | None:
        if matrix is not None:
            if any(len(row) != len(matrix) for row in matrix) or len(matrix) < 2:
                shape = [len(row) for row in matrix]
                raise ValueError(f"cost_matrix must be K×K with K ≥ 2, got row lengths {shape}")
            if not all(math.isfinite(cost) for row in matrix for cost in row):
                raise ValueError("cost_matrix entries must be finite numbers")
        return matrix

    @field_validator("thresholds")
    @classmethod
    def _thresholds_valid(cls, thresholds: tuple[float, ...]) -> tuple[float, ...]:
        return _distinct_levels(thresholds, "thresholds", closed=True)

    @field_validator("coverage_levels")
    @classmethod
    def _coverage_levels_valid(cls, levels: tuple[float, ...]) -> tuple[float, ...]:
        return _distinct_levels(levels, "coverage_levels", closed=False)

    @model_validator(mode="before")
    @classmethod
    def _removed_keys(cls, data: object) -> object:
        if isinstance(data, dict) and "auc_buckets" in data:
            raise ValueError(
                "auc_buckets was removed: binned AUCs come from the fixed fine cells "
                "(docs/metrics.md, 'Fine cells'); delete the key"
            )
        return data

    @model_validator(mode="after")
    def _columns_fit_task(self) -> Config:
        roles = set(self.columns.roles())
        unused = roles - TASK_COLUMN_ROLES[self.task] - COMMON_COLUMN_ROLES
        if unused:
            raise ValueError(
                f"columns.{sorted(unused)[0]} is not used by task {self.task}; "
                f"task {self.task} takes "
                f"{sorted(TASK_COLUMN_ROLES[self.task] | COMMON_COLUMN_ROLES)}"
            )
        if self.task == "binary":
            _require(roles, ["score", "label"], self.task)
        elif self.task == "multiclass":
            _require(roles, ["label"], self.task)
            if ("probs" in roles) == ("logits" in roles):
                raise ValueError(
                    "task multiclass needs exactly one of columns.probs or columns.logits"
                )
            if (
                self.num_classes is not None
                and self.class_names is not None
                and self.num_classes != len(self.class_names)
            ):
                raise ValueError(
                    f"num_classes is {self.num_classes} but class_names has "
                    f"{len(self.class_names)} names"
                )
        elif self.task == "regression":
            _require(roles, ["prediction", "target"], self.task)
            if "std" in roles and "variance" in roles:
                raise ValueError(
                    "task regression takes at most one of columns.std, columns.variance"
                )
        else:
            _require(roles, ["confidence"], self.task)
            modes = [
                "correct" in roles,
                "prediction" in roles or "label" in roles,
                "quality" in roles,
            ]
            if sum(modes) != 1:
                raise ValueError(
                    "task top_label needs exactly one of: columns.correct; columns.prediction "
                    "with columns.label; or columns.quality with quality_threshold"
                )
            if modes[1]:
                _require(roles, ["prediction", "label"], self.task)
            if modes[2] and self.quality_threshold is None:
                raise ValueError("columns.quality needs quality_threshold (correct = quality > τ)")
        if self.quality_threshold is not None and "quality" not in roles:
            raise ValueError("quality_threshold is set but columns.quality is not")
        if self.task != "multiclass" and self.num_classes is not None:
            raise ValueError(f"num_classes applies to task multiclass only, not {self.task}")
        if self.task == "binary" and self.class_names is not None and len(self.class_names) != 2:
            raise ValueError(f"task binary needs 2 class_names, got {list(self.class_names)}")
        if self.binning.strategy == "equal_mass" and "positive_class" not in self.features():
            raise ValueError(
                "binning.strategy equal_mass needs task binary with binary_view positive_class "
                f"(its bins are merged from the binary score's fine cells), not {self.task}"
            )
        if self.task != "binary" and "binary_view" in self.model_fields_set:
            raise ValueError(f"binary_view applies to task binary only, not {self.task}")
        if self.task in ("top_label", "regression") and self.class_names is not None:
            raise ValueError(f"class_names does not apply to task {self.task}")
        self._check_class_keys()
        if self.slice_search is not None and self.task == "regression":
            raise ValueError(
                "slice_search needs a classification task (it compares probabilities with "
                "outcomes), not regression"
            )
        if (
            self.slice_search is not None
            and self.task == "multiclass"
            and self.known_num_classes() is None
        ):
            raise ValueError("slice_search on task multiclass needs num_classes or class_names")
        if self.recalibration is not None:
            window = self.input.window if self.input is not None else None
            check_recalibration(
                self.recalibration,
                self.task,
                "positive_class" in self.features(),
                window.column if window is not None else None,
            )
        specs = resolve_metrics(self.task, self.metrics, self.features())
        self._check_alert_rules({spec.name: spec for spec in specs})
        return self

    def _check_alert_rules(self, specs: dict[str, MetricSpec]) -> None:
        """Each rule names a computed metric value and a configured slice; change rules need
        a metric the statistics give (drift is computed from them) and, against the
        baseline, a configured baseline."""
        if self.drift.baseline_model_version is not None and self.columns.model_version is None:
            raise ValueError("drift.baseline_model_version needs columns.model_version")
        for index, rule in enumerate(self.alerts):
            where = f"alerts[{index}] ({rule.label()})"
            spec = specs.get(rule.metric)
            if spec is None or spec.table:
                values = sorted(name for name, s in specs.items() if not s.table)
                raise ValueError(
                    f"{where}: metric {rule.metric!r} is not computed by this config; "
                    f"metrics: {values}"
                )
            if rule.slice is not None and rule.slice not in self.slices:
                raise ValueError(
                    f"{where}: slice {list(rule.slice)} is not one of the configured slices "
                    f"{[list(columns) for columns in self.slices]}"
                )
            if rule.on_change and not spec.drift:
                raise ValueError(
                    f"{where}: {rule.metric} has no drift (a change rule needs a calibration, "
                    f"per-class or regression metric); use max or min"
                )
            if (rule.on_change or rule.min_z is not None) and not self._has_se(spec):
                raise ValueError(
                    f"{where}: {rule.metric} has no standard error under uncertainty.method "
                    f"{self.uncertainty.method} (a change rule or min_z needs one; "
                    f"docs/uncertainty.md lists which metrics have one)"
                )
            if rule.on_change and rule.compare_to == "baseline" and not self.drift.has_baseline:
                raise ValueError(
                    f"{where}: compare_to baseline needs drift.baseline_model_version or "
                    f"drift.baseline_dates"
                )

    def _has_se(self, spec: MetricSpec) -> bool:
        """Whether ``spec`` gets a standard error under ``uncertainty.method`` (``none``: the
        metrics with an analytic one keep the drift table's row-count noise model)."""
        if self.uncertainty.jackknife:
            return spec.noise and spec.family not in {SMOOTH, EXACT_RANKING}
        return spec.analytic_se

    def _check_class_keys(self) -> None:
        """class_weights and cost_matrix must fit the classes when K is known from the config."""
        k = self.known_num_classes()
        if self.cost_matrix is not None and k is not None and len(self.cost_matrix) != k:
            raise ValueError(
                f"cost_matrix is {len(self.cost_matrix)}×{len(self.cost_matrix)} "
                f"but there are {k} classes"
            )
        for key in self.class_weights or {}:
            self.class_position(key, k)

    def known_num_classes(self) -> int | None:
        """K when the config fixes it: 2 for binary, else num_classes or len(class_names)."""
        if self.task == "binary":
            return 2
        if self.num_classes is not None:
            return self.num_classes
        return len(self.class_names) if self.class_names is not None else None

    def class_position(self, key: str | int, num_classes: int | None) -> int:
        """The class index a ``class_weights`` key names: a class name, or an index (int or
        its string). Raises ValueError for a key that names no class."""
        if self.class_names is not None and key in self.class_names:
            return self.class_names.index(str(key))
        try:
            index = int(key)
        except ValueError:
            index = -1
        if (
            str(index) != str(key).strip()
            or index < 0
            or (num_classes is not None and index >= num_classes)
        ):
            names = (
                list(self.class_names)
                if self.class_names
                else f"indices 0..{num_classes - 1}"
                if num_classes is not None
                else "indices ≥ 0"
            )
            raise ValueError(f"class_weights key {key!r} names no class (classes: {names})")
        return index

    def class_weight_vector(self, num_classes: int) -> list[float]:
        """c_k for k = 0..K−1: the configured weight, 1.0 for classes not listed."""
        weights = [1.0] * num_classes
        for key, weight in (self.class_weights or {}).items():
            weights[self.class_position(key, num_classes)] = float(weight)
        return weights

    def features(self) -> frozenset[str]:
        """Optional inputs some metrics need: ``std``, ``class_weights``, ``cost_matrix``, and
        ``positive_class`` (a binary task whose calibration pair is (s, y))."""
        roles = self.columns.roles()
        present = {
            "std": "std" in roles or "variance" in roles,
            "class_weights": self.class_weights is not None,
            "cost_matrix": self.cost_matrix is not None,
            "positive_class": self.task == "binary" and self.binary_view == "positive_class",
        }
        return frozenset(name for name, ok in present.items() if ok)

    def slice_columns(self) -> tuple[str, ...]:
        """Every column used by any slice, first-seen order."""
        return tuple(dict.fromkeys(name for columns in self.slices for name in columns))


def _distinct_levels(values: tuple[float, ...], key: str, closed: bool) -> tuple[float, ...]:
    """Distinct values in [0, 1] (closed) or (0, 1) (open)."""
    if not values:
        raise ValueError(f"{key} must list at least one value")
    for value in values:
        inside = 0.0 <= value <= 1.0 if closed else 0.0 < value < 1.0
        if not inside:
            interval = "[0, 1]" if closed else "(0, 1)"
            raise ValueError(f"{key} values must be in {interval}, got {value}")
    if len(set(values)) != len(values):
        raise ValueError(f"{key} has duplicates: {list(values)}")
    return values


def _require(roles: set[str], needed: list[str], task: str) -> None:
    for role in needed:
        if role not in roles:
            raise ValueError(f"task {task} needs columns.{role}")
