"""Which optional per-row terms the requested metrics need (and so which keys the one
aggregation groups by). Everything not needed is left out of the scan."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from spark_calib.config import Config
from spark_calib.registry import resolve_metrics
from spark_calib.registry.metrics import (
    CELL_CALIBRATION,
    CELLS,
    CONFUSION,
    EXACT_RANKING,
    PER_CLASS,
    SMOOTH,
    THRESHOLDS,
    MetricSpec,
    families,
)


@dataclass(frozen=True)
class RowNeeds:
    """Flags for the optional canonical columns.

    per_class: one-vs-rest items per class (``_probs``, ``_label``); true_class /
    predicted_class: the confusion keys; positive: the binary label as summed terms
    (``_positive``, ``_positive_nll``) instead of a ``true_class`` key, which halves the
    fine-cell rows of a binary task; cells: the fine cell of the binary score
    (``spark_calib.rows.cells``) and its logit;
    threshold_bin: how many configured thresholds the score reaches; cost: the expected
    misclassification cost term; exact_score: the raw binary score for the exact ranking pass;
    exact_probs: ``_probs``/``_label`` for the exact one-vs-rest pass, without per-class items
    in the aggregation; logits: ``_logits`` and ``_label`` for multiclass temperature scaling.
    """

    per_class: bool = False
    true_class: bool = False
    positive: bool = False
    predicted_class: bool = False
    cells: bool = False
    threshold_bin: bool = False
    cost: bool = False
    exact_score: bool = False
    exact_probs: bool = False
    logits: bool = False

    @property
    def fine(self) -> bool:
        """The statistics hold fine cells or threshold counts, which most outputs sum away."""
        return self.cells or self.threshold_bin


def config_needs(config: Config) -> RowNeeds:
    """``row_needs`` of what ``config`` asks for: its metrics, equal-mass bins and
    recalibration (cells by label for binary and top-label, logits for multiclass)."""
    return row_needs(
        resolve_metrics(config.task, config.metrics, config.features()),
        cells=config.binning.strategy == "equal_mass",
        cells_by_label=config.recalibration is not None and config.task in ("binary", "top_label"),
        logits=config.recalibration is not None and config.task == "multiclass",
        binary=config.task == "binary",
    )


def row_needs(
    specs: Iterable[MetricSpec],
    *,
    cells: bool = False,
    cells_by_label: bool = False,
    logits: bool = False,
    binary: bool = False,
) -> RowNeeds:
    """The optional per-row terms and keys the specs' families and ``row_terms`` read;
    ``cells`` asks for the fine cells whatever the metrics (equal-mass bins),
    ``cells_by_label`` for the cells split by label too (binary recalibration) and ``logits``
    for the logit vectors (multiclass recalibration). A ``binary`` task's label is summed
    (Σ y, Σw·y, Σw·y·nll) rather than grouped: the confusion, cell, threshold and exact ranking
    families read it that way, and only recalibration's cells still split by label."""
    specs = list(specs)
    needed = families(specs)
    terms = frozenset(term for spec in specs for term in spec.row_terms)
    by_label = bool(needed & {CONFUSION, CELLS, THRESHOLDS, EXACT_RANKING})
    return RowNeeds(
        per_class=PER_CLASS in needed,
        true_class=cells_by_label or (by_label and not binary),
        positive=by_label and binary,
        predicted_class=CONFUSION in needed,
        cells=cells or cells_by_label or bool(needed & {CELLS, CELL_CALIBRATION, SMOOTH}),
        threshold_bin=THRESHOLDS in needed,
        cost="cost" in terms,
        exact_score="exact_score" in terms,
        exact_probs="exact_probs" in terms,
        logits=logits,
    )
