"""What ``evaluate`` returns: four DataFrames plus the invalid-row counts of the one scan."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pyspark.sql import DataFrame

from spark_calib.config import Config
from spark_calib.slice_search.search import SliceSearchResult


@dataclass(frozen=True)
class EvaluationResult:
    """The outputs of one evaluation.

    ``metrics``, ``reliability`` and ``stats`` all read the cached statistics table, never the
    input; ``invalid`` re-reads the input only when ``invalid_counts`` is non-empty.

    Attributes:
        metrics: model_version, slice_name, slice_value, class, metric, value, n, weight_sum.
        reliability: model_version, slice_name, slice_value, class, bin, bin_lower, bin_upper,
            n, weight_sum, mean_confidence, accuracy, gap.
        stats: the additive sufficient statistics, one row per key × bin (valid rows) or
            key × reason (invalid rows).
        invalid: the input rows that failed validation, with a ``reason`` column.
        n_rows: input rows seen by the scan (valid + invalid).
        invalid_counts: reason → number of invalid input rows (empty when all rows are valid).
        strategy: how the one aggregation grouped slices: ``finest_grain`` or ``grouping_sets``.
        num_classes: K for classification tasks (2 for binary), None for top_label and
            regression.
        confusion: with ``confusion_matrix``: true × predicted cells per key (n > 0 only).
        thresholds: with ``threshold_metrics`` (binary): weighted counts, TPR, FPR and
            precision at each configured threshold.
        roc: with ``roc_curve`` (binary): ROC points per key from the score histogram.
        regression_calibration: regression with std/variance: expected against observed
            central-interval coverage at 19 levels.
        recalibration: with ``recalibration`` (binary and top-label; multiclass:
            temperature): the fitted temperature, Platt and isotonic maps per model version ×
            slice × method, with ECE, NLL, Brier and
            accuracy of the evaluated rows before and after
            (``spark_calib.recalibration.table``).
        slice_search: with ``slice_search``: the search's ranked slices, summary and
            reliability (``spark_calib.slice_search.search``); ``metrics`` then also holds
            each model version's ``multicalibration_error`` and ``multicalibration_error_p``.
    """

    metrics: DataFrame
    reliability: DataFrame
    stats: DataFrame
    invalid: DataFrame
    n_rows: int
    invalid_counts: Mapping[str, int]
    strategy: str
    num_classes: int | None
    config: Config
    confusion: DataFrame | None = None
    thresholds: DataFrame | None = None
    roc: DataFrame | None = None
    regression_calibration: DataFrame | None = None
    recalibration: DataFrame | None = None
    slice_search: SliceSearchResult | None = None
    _cached: tuple[DataFrame, ...] = field(default=(), repr=False)

    @property
    def n_invalid(self) -> int:
        """The number of invalid rows (the sum of ``invalid_counts``)."""
        return sum(self.invalid_counts.values())

    def unpersist(self) -> None:
        """Release the cached statistics once every output has been written."""
        for frame in self._cached:
            frame.unpersist()
