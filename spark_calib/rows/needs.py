"""Which optional per-row terms the requested metrics need (and so which keys the one
aggregation groups by). Everything not needed is left out of the scan."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RowNeeds:
    """Flags for the optional canonical columns.

    per_class: one-vs-rest items per class (``_probs``, ``_label``); true_class /
    predicted_class: the confusion keys; score_bin: the binary score histogram bucket;
    threshold_bin: how many configured thresholds the score reaches; cost: the expected
    misclassification cost term; exact_score: the raw binary score for the exact ranking pass;
    exact_probs: ``_probs``/``_label`` for the exact one-vs-rest pass, without per-class items
    in the aggregation.
    """

    per_class: bool = False
    true_class: bool = False
    predicted_class: bool = False
    score_bin: bool = False
    threshold_bin: bool = False
    cost: bool = False
    exact_score: bool = False
    exact_probs: bool = False
