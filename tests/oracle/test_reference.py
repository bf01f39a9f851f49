"""Hand-computed cases for the NumPy reference itself (no Spark), so the oracle is trusted."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import accuracy_score, brier_score_loss, log_loss

from tests.support import reference as ref

# Four binary rows: s, y → prediction [1, 0, 1, 0], confidence [0.9, 0.8, 0.6, 0.6],
# correct [1, 1, 0, 0]. The positive-class view bins (s, y) instead.
S = np.array([0.9, 0.2, 0.6, 0.4])
Y = np.array([1, 0, 0, 1])


def test_assign_bins_edge_conventions() -> None:
    """Values on edges: left_closed puts k/M in bin k (1.0 in M−1); right_closed in k−1 (0 in 0)."""
    c = np.array([0.0, 0.2, 0.5, 0.9999, 1.0])
    assert ref.assign_bins(c, 5, "left_closed").tolist() == [0, 1, 2, 4, 4]
    assert ref.assign_bins(c, 5, "right_closed").tolist() == [0, 0, 2, 4, 4]
    # Edges are compared as the doubles k / M, not via floor(c · M):
    # floor((15 / 22) * 22) == 14, yet 15/22 is the lower edge of bin 15.
    assert math.floor((15 / 22) * 22) == 14
    assert ref.assign_bins([15 / 22], 22, "left_closed").tolist() == [15]
    assert ref.assign_bins([15 / 22], 22, "right_closed").tolist() == [14]
    every_edge = np.arange(50) / 49
    assert ref.assign_bins(every_edge, 49, "left_closed").tolist() == [*range(49), 48]
    assert ref.assign_bins(every_edge, 49, "right_closed").tolist() == [0, *range(49)]


def test_binary_top_label_hand_case() -> None:
    """Prediction is s >= threshold; confidence is s or 1 − s; correct is prediction == y."""
    conf, correct = ref.binary_top_label(S, Y)
    np.testing.assert_allclose(conf, [0.9, 0.8, 0.6, 0.6], rtol=0, atol=1e-15)
    assert correct.tolist() == [1.0, 1.0, 0.0, 0.0]
    conf_t, _ = ref.binary_top_label([0.5], [1])
    assert conf_t.tolist() == [0.5]  # s == threshold predicts 1


def test_binary_positive_class_pairs() -> None:
    """The default view compares s with y; the top-label view keeps (confidence, correct)."""
    conf, outcome = ref.binary_calibration_pairs(S, Y)
    assert conf.tolist() == S.tolist()
    assert outcome.tolist() == [1.0, 0.0, 0.0, 1.0]
    conf_t, outcome_t = ref.binary_calibration_pairs(S, Y, view="top_label")
    np.testing.assert_allclose(conf_t, [0.9, 0.8, 0.6, 0.6], rtol=0, atol=1e-15)
    assert outcome_t.tolist() == [1.0, 1.0, 0.0, 0.0]


def test_binary_group_positive_class_left_closed_hand_case() -> None:
    """M=5 left_closed on s: 0.2 → bin 1 (edge 1/5), 0.4 → bin 2 (edge 2/5), 0.6 → bin 3
    (edge 3/5), 0.9 → bin 4, each alone; gaps y − s = −0.2, 0.6, −0.6, 0.1."""
    g = ref.binary_group(S, Y, n_bins=5, edges="left_closed")
    m = g.metrics
    assert m["ece"] == pytest.approx((0.2 + 0.6 + 0.6 + 0.1) / 4, abs=1e-15)
    assert m["mce"] == pytest.approx(0.6, abs=1e-15)
    assert m["rmsce"] == pytest.approx(
        math.sqrt((0.2**2 + 0.6**2 + 0.6**2 + 0.1**2) / 4), abs=1e-15
    )
    # The positive-class ECE is the class-1 classwise ECE (same bins of s against [y = 1]).
    assert g.classwise is not None
    assert m["ece"] == pytest.approx(g.classwise[1], abs=1e-15)
    # accuracy, brier and nll do not depend on the view.
    assert m["accuracy"] == 0.5
    assert m["brier"] == pytest.approx((0.01 + 0.04 + 0.36 + 0.36) / 4, abs=1e-15)
    assert g.calibration_bins.n.tolist() == [0, 1, 1, 1, 1]
    assert g.calibration_bins.accuracy[1:].tolist() == [0.0, 1.0, 0.0, 1.0]
    np.testing.assert_allclose(
        g.calibration_bins.mean_confidence[1:], [0.2, 0.4, 0.6, 0.9], rtol=0, atol=1e-15
    )


def test_binary_group_positive_class_right_closed_hand_case() -> None:
    """M=5 right_closed on s: edge values move down (0.2 → bin 0, 0.4 → 1, 0.6 → 2)."""
    g = ref.binary_group(S, Y, n_bins=5, edges="right_closed")
    assert g.calibration_bins.n.tolist() == [1, 1, 1, 0, 1]
    assert g.metrics["ece"] == pytest.approx((0.2 + 0.6 + 0.6 + 0.1) / 4, abs=1e-15)


def test_binary_group_left_closed_hand_case() -> None:
    """Top-label view, M=5 left_closed: bin 4 = {0.9, 0.8}, bin 3 = {0.6, 0.6}; ECE 0.375,
    MCE 0.6."""
    g = ref.binary_group(S, Y, n_bins=5, edges="left_closed", view="top_label")
    m = g.metrics
    assert m["ece"] == pytest.approx((abs(2 - 1.7) + abs(0 - 1.2)) / 4, abs=1e-15)
    assert m["mce"] == pytest.approx(0.6, abs=1e-15)
    assert m["rmsce"] == pytest.approx(math.sqrt(0.5 * 0.15**2 + 0.5 * 0.6**2), abs=1e-15)
    assert m["brier"] == pytest.approx((0.01 + 0.04 + 0.36 + 0.36) / 4, abs=1e-15)
    expected_nll = -(math.log(0.9) + math.log(0.8) + 2 * math.log(0.4)) / 4
    assert m["nll"] == pytest.approx(expected_nll, abs=1e-15)
    assert m["accuracy"] == 0.5
    assert m["count"] == 4.0
    assert g.calibration_bins.n.tolist() == [0, 0, 0, 2, 2]
    assert np.isnan(g.calibration_bins.mean_confidence[:3]).all()
    assert g.calibration_bins.accuracy[3:].tolist() == [0.0, 1.0]


def test_binary_group_right_closed_hand_case() -> None:
    """Top-label view, M=5 right_closed: edge values move down (0.6 → bin 2, 0.8 → bin 3);
    ECE = 1.5 / 4."""
    g = ref.binary_group(S, Y, n_bins=5, edges="right_closed", view="top_label")
    assert g.calibration_bins.n.tolist() == [0, 0, 2, 1, 1]
    assert g.metrics["ece"] == pytest.approx((1.2 + 0.2 + 0.1) / 4, abs=1e-15)


def test_binary_classwise_hand_case() -> None:
    """Binary classwise: class 0 is (1 − s, [y=0]), class 1 is (s, [y=1]); macro is their mean."""
    per_class, macro = ref.classwise_ece(ref.class_probabilities_binary(S), Y, n_bins=5)
    # class 1: s = 0.9 (bin 4, y=1), 0.2 (bin 1, y=0), 0.6 (bin 3, y=0), 0.4 (bin 2, y=1)
    c1 = (abs(1 - 0.9) + abs(0 - 0.2) + abs(0 - 0.6) + abs(1 - 0.4)) / 4
    # class 0: 1 − s = 0.1 (bin 0, y≠0), 0.8 (bin 4, y=0), 0.4 (bin 2, y=0), 0.6 (bin 3, y≠0)
    c0 = (abs(0 - 0.1) + abs(1 - 0.8) + abs(1 - 0.4) + abs(0 - 0.6)) / 4
    np.testing.assert_allclose(per_class, [c0, c1], rtol=0, atol=1e-15)
    assert macro == pytest.approx((c0 + c1) / 2, abs=1e-15)


def test_multiclass_tie_goes_to_first_argmax() -> None:
    """A tie predicts the lowest index: [0.4, 0.4, 0.2] with y=1 is wrong, with y=0 right."""
    conf, correct = ref.multiclass_top_label([[0.4, 0.4, 0.2], [0.4, 0.4, 0.2]], [1, 0])
    assert conf.tolist() == [0.4, 0.4]
    assert correct.tolist() == [0.0, 1.0]


def test_weight_two_equals_duplicate() -> None:
    """A row of weight 2 contributes exactly like two copies of weight 1."""
    w = np.array([2.0, 1.0, 1.0, 1.0])
    a = ref.binary_group(S, Y, w, n_bins=5)
    b = ref.binary_group(np.r_[S, S[:1]], np.r_[Y, Y[:1]], n_bins=5)
    for name, value in a.metrics.items():
        if name != "count":
            assert value == pytest.approx(b.metrics[name], abs=1e-15), name
    assert a.weight_sum == b.weight_sum == 5.0


def test_nll_eps_clips_confident_mistakes() -> None:
    """p_y = 0 costs −log(eps), not infinity."""
    assert ref.nll_binary([1.0], [0]) == pytest.approx(-math.log(1e-15))
    assert ref.nll_multiclass([[1.0, 0.0]], [1], eps=1e-3) == pytest.approx(-math.log(1e-3))


def test_nll_from_logits_is_the_exact_log_softmax() -> None:
    """From logits, −log p_y = logsumexp(z) − z_y, with no eps: z = (80, −80, 0), y = 1 costs
    160 + log(1 + e^−80 + e^−160) ≈ 160, far beyond −log(1e-15) ≈ 34.5; z = (0, log 3) gives
    p = (1/4, 3/4)."""
    assert ref.nll_from_logits([[80.0, -80.0, 0.0]], [1]) == pytest.approx(160.0, abs=1e-12)
    assert ref.nll_from_logits([[0.0, math.log(3.0)]], [0]) == pytest.approx(math.log(4.0))
    z = np.array([[0.0, math.log(3.0)], [math.log(4.0), 0.0]])
    assert ref.nll_from_logits(z, [1, 1], [1.0, 3.0]) == pytest.approx(
        (-math.log(3 / 4) - 3 * math.log(1 / 5)) / 4, abs=1e-15
    )


def test_mce_ignores_empty_bins_and_rmsce_weights_bins() -> None:
    """MCE is over non-empty bins only; RMSCE weights gaps by W_b / W."""
    conf = np.array([0.05, 0.95])
    correct = np.array([0.0, 1.0])
    w = np.array([3.0, 1.0])
    assert ref.mce(conf, correct, w, n_bins=10) == pytest.approx(0.05, abs=1e-15)
    assert ref.rmsce(conf, correct, w, n_bins=10) == pytest.approx(0.05, abs=1e-15)
    assert ref.ece(conf, correct, w, n_bins=10) == pytest.approx((3 * 0.05 + 0.05) / 4)


def test_softmax_is_shift_invariant_and_normalised() -> None:
    """softmax(z + c) == softmax(z), rows sum to 1, and huge logits do not overflow."""
    z = np.array([[1.0, 2.0, 3.0], [1000.0, 1000.0, -1000.0]])
    p = ref.softmax(z)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(ref.softmax(z + 7.5), p, rtol=0, atol=1e-15)
    np.testing.assert_allclose(p[1], [0.5, 0.5, 0.0], rtol=0, atol=1e-15)


def test_slice_encoding() -> None:
    """Overall is named "overall" with value ""; separators and backslashes escape, null is \\N."""
    assert ref.slice_name([]) == "overall"
    assert ref.slice_name(["country", "device"]) == "country,device"
    assert ref.encode_slice_value([]) == ""
    assert ref.encode_slice_value(["a,b", None, "c\\d", 3]) == "a\\,b,\\N,c\\\\d,3"


def test_reference_agrees_with_sklearn_on_random_data() -> None:
    """Brier, NLL, accuracy and the right-closed positive-class curve match scikit-learn."""
    rng = np.random.default_rng(7)
    n, k = 2000, 5
    p = ref.softmax(rng.normal(size=(n, k)))
    y = np.array([rng.choice(k, p=row) for row in p])
    w = rng.uniform(0.1, 3.0, size=n)
    assert ref.brier_multiclass(p, y, w) == pytest.approx(
        brier_score_loss(y, p, sample_weight=w, labels=np.arange(k), scale_by_half=False),
        abs=1e-12,
    )
    assert ref.nll_multiclass(p, y, w) == pytest.approx(
        log_loss(y, p, sample_weight=w, labels=np.arange(k)), abs=1e-12
    )
    _, correct = ref.multiclass_top_label(p, y)
    assert ref.accuracy(correct, w) == pytest.approx(
        accuracy_score(y, p.argmax(axis=1), sample_weight=w), abs=1e-12
    )
    s = rng.uniform(0.01, 0.99, size=n)
    yb = (rng.uniform(size=n) < s).astype(int)
    assert ref.brier_binary(s, yb, w) == pytest.approx(
        brier_score_loss(yb, s, sample_weight=w), abs=1e-12
    )
    assert ref.nll_binary(s, yb, w) == pytest.approx(log_loss(yb, s, sample_weight=w), abs=1e-12)
    bins = ref.classwise_bins(
        ref.class_probabilities_binary(s), yb, n_bins=10, edges="right_closed"
    )
    prob_true, prob_pred = calibration_curve(yb, s, n_bins=10, strategy="uniform")
    nonempty = bins[1].n > 0
    np.testing.assert_allclose(bins[1].accuracy[nonempty], prob_true, rtol=0, atol=1e-12)
    np.testing.assert_allclose(bins[1].mean_confidence[nonempty], prob_pred, rtol=0, atol=1e-12)
