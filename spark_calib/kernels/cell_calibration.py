"""The cell-calibration family of one key, from the binary score's fine cells.

Per key (model_version, slice_name, slice_value), over the valid top-label rows (class null)
that have a fine cell (``spark_calib.rows.cells``), summed per cell c over every other key of
the statistics (bin, true_class, predicted_class, threshold_bin, …): n_c, W_c = Σw,
C_c = Σw·s, O_c = Σw·y, X_c = Σw·s·y, Z_c = Σw·logit(s), Q_c = Σw·s² and S_c = Σw² (the family
is positive-class only, so the statistics' confidence c is s and their outcome is y). Only the
cells with W_c > 0 count, in score order (the cell ids order the cells by score); W = Σ_c W_c
and n = Σ_c n_c over them. All are sums, so the cells of a week are the sums of its days' cells.

- ``ks_calibration`` = max_c |Σ_{c' ≤ c} (C_{c'} − O_{c'})| / W: Gupta et al.'s (2021) KS
  calibration error, max over t of |Σ_{s ≤ t} w(s − y)| / W, evaluated at the cells' upper
  edges. ``error_bound`` = max_c Σ_{i∈c} w|s − y| / W = max_c (C_c − 2X_c + O_c) / W, the most
  the running sum can move inside one cell.
- ``hosmer_lemeshow`` = Σ_g (O_g − E_g)² / (E_g (1 − E_g/W_g)) over the non-empty groups of 10
  equal-mass groups: cell c goes to group g = min(9, ⌊10·(W_{<c} + W_c/2)/W⌋), W_{<c} the weight
  of the cells before it; O_g, E_g = C_g and W_g summed over its cells (with weights: calzone's
  form with n = Σw). A group whose denominator is 0 adds nothing; HL is null when every group's
  is 0. ``hosmer_lemeshow_p`` = P(χ²₈ ≥ HL) = e^{−x/2} Σ_{i<4} (x/2)^i / i! (exact for 8
  degrees of freedom).
- ``calibration_slope`` b and ``calibration_intercept`` a of logit P(y=1) = a + b·logit(s)
  (Cox 1958): the weighted maximum likelihood of the rows, fitted from the cells with a
  second-order correction for the spread of the logits inside each cell (below). Newton steps
  from (a, b) = (0, 1), (Δa, Δb) = H⁻¹g with the score g and information H below: at most
  ``COX_NEWTON_STEPS``, stopping after the first step with |Δa| + |Δb| ≤ ``COX_STEP_TOLERANCE``
  ·(1 + |a| + |b|), (a, b) before the step (Newton converges quadratically, so the next step
  would be of the order of its square); null when det H ≤ 0 at a step (one cell). With all
  labels equal the likelihood has no maximum and the fit returns the point after the last step.

Each metric row has n and weight_sum W of the key; ``error_bound`` is the point estimate's:
ks_calibration's above, the Cox fit's estimate below, none for Hosmer–Lemeshow; no metric has
an analytic standard error. A key without a cell of positive weight has no rows; under the
jackknife a replicate without one has no values.

**The Cox fit from the cells.** Row i has z_i = logit(s_i) (clipped to ±37) and
η_i = a + b·z_i; the row-level fit solves Σ_i w_i (y_i − σ(η_i))·(1, z_i) = 0. In cell c write
z_i = z̄_c + δ_i with z̄_c = Z_c/W_c (so Σ_{i∈c} w_i δ_i = 0), and let V_c = Σ_{i∈c} w_i δ_i²/W_c
and K_c = Σ_{i∈c} w_i y_i δ_i/W_c, the within-cell variance of z and its covariance with y.
With η̄_c = a + b·z̄_c and, at η̄_c, μ = σ, μ' = μ(1 − μ), μ'' = μ'(1 − 2μ), μ''' = μ'(1 − 6μ'),
Taylor's expansion of σ(η̄_c + b·δ) to second order in δ gives per cell (the first-order terms
vanish with Σ w δ; the remainder is smaller by a factor of order |b|·h, h ≤ 1/16 the cell's
width in z)

    Σ_{i∈c} w_i σ(η_i) ≈ W_c (μ_c + ½ b² μ''_c V_c),   Σ_{i∈c} w_i σ(η_i) δ_i ≈ b μ'_c W_c V_c,

while Σ_{i∈c} w_i y_i z_i = z̄_c O_c + W_c K_c exactly. The score equations become

    g_a = Σ_c r_c = 0,   g_b = Σ_c (z̄_c r_c + W_c K_c − b μ'_c W_c V_c) = 0,
    r_c = O_c − W_c μ_c − ½ b² μ''_c W_c V_c.

g is the gradient of the log-likelihood Σ_i w_i (y_i η_i − log(1 + e^{η_i})) expanded the same
way, Σ_c [a O_c + b (z̄_c O_c + W_c K_c) − W_c (log(1 + e^{η̄_c}) + ½ b² μ'_c V_c)], and H is
minus its Hessian; with u_c = μ'_c + ½ b² μ'''_c V_c:

    H_aa = Σ_c W_c u_c,   H_ab = Σ_c W_c (z̄_c u_c + b μ''_c V_c),
    H_bb = Σ_c W_c (z̄_c² u_c + 2 b z̄_c μ''_c V_c + μ'_c V_c).

With V = K = 0 this is the logistic fit of the pseudo-observations (z̄_c; O_c positives of W_c).
It misses mostly Σ w y δ, where the positives sit inside their cells, a noise that shrinks as
1/√n: about 10⁻³ in the intercept for 200,000 click-through-like rows near logit −4.5.

The statistics hold Σw·s² and Σw·s·y, not Σw·δ² or Σw·y·δ. With s̄_c = C_c/W_c,
ȳ_c = O_c/W_c, σ_c = σ(z̄_c), d_c = σ_c(1 − σ_c) (ds/dz at z̄_c) and t_c = 1 − 2σ_c,
s − s̄_c = d_c (δ + ½ t_c (δ² − V_c)) + O(δ³), so (the delta method)

    K̂_c = (X_c/W_c − s̄_c ȳ_c) / d_c,
    V̂_c = (Q_c/W_c − s̄_c²) / d_c²  when σ_c ≤ ¾,  else  2 (s̄_c − σ_c) / (d_c t_c),

the latter from Jensen's gap s̄_c − σ(z̄_c) = ½ d_c t_c V_c + O(h³): near s = 1, Q/W − s̄² is a
difference of two numbers close to 1 whose true value d²V sinks below their rounding from
z̄ ≈ 10 on, while the gap is first order in d. Both err by O(h²) relatively. V̂ is clipped to
[0, h²/4] (Popoviciu's bound for the widest cell, h = 1/16) and |K̂| to (h/2)·√(ȳ(1 − ȳ))
(Cauchy–Schwarz); the clips only catch rounding noise at scores within about 10⁻¹² of 1. The
two end cells hold one logit each (±37), so V = K = 0 there. A cell whose statistics lack Q or
X (null) gets V = K = 0: the uncorrected fit.

**The Cox fit's error_bound.** What the fit still misses is dominated by K̂: the Taylor
remainder and V̂'s error move (a, b) by about 10⁻⁷ at h = 1/16, whatever the number of rows,
while W_c (K_c − K̂_c) = Σ_{i∈c} w_i (y_i − ȳ_c) e_i, with e_i = δ_i − (s_i − s̄_c)/d_c
≈ −½ t_c (δ_i² − V_c), depends on where the positives sit inside the cell at second order, which
no sum records. For labels drawn independently given the score its mean is 0 (to O(h⁴)) and its
variance Σ_i w_i² p_i(1 − p_i) e_i² ≈ E_c = ⅕ t_c² V̂_c² S_c μ_c(1 − μ_c), taking p_i as the
fitted μ_c and ⅘ V_c² for the variance of δ² (logits spread evenly over the cell). It enters g_b
alone, so (a, b) move by H⁻¹(0, ε) for a score error ε of variance Σ_c E_c: ``error_bound`` =
``COX_BOUND_SDS``·√(Σ_c E_c)·|H_ab|/det H for the intercept and ·H_aa/det H for the slope, at
the fitted point. This is a statistical bound, four standard deviations of an error that is
close to normal (over 6,000 simulated logs of 50,000 rows with a 2 % base rate, logit-normal and
Beta(0.6, 25) scores, ε/√(Σ_c E_c) had rms 0.99–1.00 and none passed 4; over 8,000 logs of 5,000
rows one did), not a guarantee: labels placed against its assumption (the positives of many
cells at their edges and the negatives at their centres) can exceed it, and it leaves out the
deterministic remainder of about 10⁻⁷. It is NaN when a used cell lacks Q, X or S, and where
the fit is NaN.
"""

from __future__ import annotations

import math

import numpy as np

from spark_calib.kernels.arrow_batch import Rows, ints, is_null, select
from spark_calib.kernels.cell_grid import LOG_ODDS_CELLS, LOG_ODDS_STEP
from spark_calib.kernels.estimates import Estimates
from spark_calib.kernels.plan import FinishPlan
from spark_calib.kernels.replicates import replicated
from spark_calib.registry.metrics import CELL_CALIBRATION
from spark_calib.stats import schema as stats

HL_GROUPS = 10
HL_DEGREES_OF_FREEDOM = HL_GROUPS - 2
COX_NEWTON_STEPS = 30
COX_STEP_TOLERANCE = 1e-10
# Standard deviations in the Cox fit's error_bound: the error is close to normal (module
# docstring), so 4 leaves about 1 key in 10⁴ above it, where 3 would leave 1 in 370.
COX_BOUND_SDS = 4.0
# The widest cell in z (the log-odds half of the grid; the equal-width half only narrows it).
CELL_WIDTH = 1.0 / LOG_ODDS_STEP
# Above this σ(z̄) the within-cell variance comes from Jensen's gap, not from Q/W − s̄².
JENSEN_ABOVE = 0.75

# The cell sums the family reads, in the order the kernel unpacks them (W, C, O, X, Z, Q, S).
CELL_SUMS = (
    stats.SUM_WEIGHT,
    stats.SUM_WEIGHT_CONFIDENCE,
    stats.SUM_WEIGHT_OUTCOME,
    stats.SUM_WEIGHT_CONFIDENCE_OUTCOME,
    stats.SUM_WEIGHT_LOGIT,
    stats.SUM_WEIGHT_CONFIDENCE_SQ,
    stats.SUM_WEIGHT_SQ,
)


def cell_calibration_estimates(table: Rows, plan: FinishPlan) -> Estimates | None:
    """The cell-calibration metrics of one key's valid statistics rows (columns ``class``,
    ``cell``, ``bucket``, ``n`` and ``CELL_SUMS``); None when none is requested or the key has
    no cell of positive weight."""
    names = plan.names(CELL_CALIBRATION)
    if not names:
        return None
    n, sums, ids = fine_cells(table, plan)
    used = sums[stats.SUM_WEIGHT] > 0.0
    if not used[0].any():
        return None
    # Masked sums: a cell without weight is no cell at all (it has no row in Spark's cells).
    w, c, o, x, z, q, w2 = (np.where(used, sums[name], 0.0) for name in CELL_SUMS)
    running = np.cumsum(w, axis=1)
    # The sequential sum of the cells in score order, as the running sum's last entry.
    total = running[:, -1]
    before = running - w
    n_key = np.where(used, n, 0).sum(axis=1)
    ks, bound = _ks(used, c, o, x, total)
    hl = _hosmer_lemeshow(used, w, c, o, before, total)
    inner = used & ~end_cells(ids)[None, :]
    mean_z = np.where(used, _div(z, w), 0.0)
    var_z, cov_zy, complete = within_cell_moments(inner, w, c, o, x, mean_z, q)
    intercept, slope = cox_fit(used, mean_z, o, w, var_z, cov_zy)
    bound_a, bound_b = cox_error_bound(
        used, mean_z, o, w, var_z, cov_zy, w2, intercept, slope, complete
    )
    values_by_name = {
        "ks_calibration": ks,
        "hosmer_lemeshow": hl,
        "hosmer_lemeshow_p": chi2_sf_8(hl),
        "calibration_slope": slope,
        "calibration_intercept": intercept,
    }
    bounds_by_name = {
        "ks_calibration": bound[0],
        "calibration_slope": bound_b[0],
        "calibration_intercept": bound_a[0],
    }
    values = np.stack([values_by_name[name] for name in names], axis=1)
    rows = len(names)
    return Estimates(
        classes=[None] * rows,
        metrics=list(names),
        values=values,
        n=np.full(rows, n_key[0], dtype=np.int64),
        weight_sum=np.full(rows, total[0]),
        se=np.full(rows, np.nan),
        error_bound=np.array([bounds_by_name.get(name, np.nan) for name in names], dtype=float),
        noise=np.ones(rows, dtype=bool),
    )


def fine_cells(
    table: Rows, plan: FinishPlan
) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
    """n and ``CELL_SUMS`` per (replicate, cell) of the key's top-label rows with a cell, the
    cells in ascending id (score) order; shape (R, cells); and the cell ids, shape (cells,).
    A replicate's cell without rows has its sums set to exactly 0."""
    top = is_null(table, stats.CLASS)
    cells = ints(table, stats.CELL, -1)
    kept = top & (cells >= 0)
    distinct, index = np.unique(cells[kept], return_inverse=True)
    n, sums = replicated(select(table, kept), plan, (index.ravel(),), (distinct.size,), CELL_SUMS)
    return n, sums, distinct


def end_cells(ids: np.ndarray) -> np.ndarray:
    """Whether each cell id is one of the grid's two end cells (log-odds index 0 or 1185), which
    hold the clipped logit ∓37 alone."""
    j = np.mod(ids, LOG_ODDS_CELLS)
    return (j == 0) | (j == LOG_ODDS_CELLS - 1)


def _div(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator/denominator, NaN where the denominator is 0 (Spark's try_divide)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(
            denominator != 0.0, numerator / np.where(denominator != 0.0, denominator, 1.0), np.nan
        )


def _masked_max(used: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per replicate, the largest of ``values`` over the used cells (NaN when none; a NaN
    among them wins, as Spark orders NaN above every number)."""
    top = np.where(used, values, -np.inf).max(axis=1)
    return np.where(np.isneginf(top), np.nan, top)


def _ks(
    used: np.ndarray, c: np.ndarray, o: np.ndarray, x: np.ndarray, total: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """ks_calibration and its error bound per replicate."""
    run = np.cumsum(c - o, axis=1)
    ks = _masked_max(used, np.abs(run))
    within = _masked_max(used, c - 2.0 * x + o)
    return _div(ks, total), _div(within, total)


def _hosmer_lemeshow(
    used: np.ndarray,
    w: np.ndarray,
    c: np.ndarray,
    o: np.ndarray,
    before: np.ndarray,
    total: np.ndarray,
) -> np.ndarray:
    """HL per replicate over the cells' equal-mass groups."""
    with np.errstate(divide="ignore", invalid="ignore"):
        midpoint = (before + 0.5 * w) / total[:, None]
        group = np.minimum(np.floor(midpoint * float(HL_GROUPS)), HL_GROUPS - 1)
    group = np.where(used, np.nan_to_num(group), HL_GROUPS).astype(np.int64)
    replicate = np.broadcast_to(np.arange(w.shape[0])[:, None], w.shape)
    shape = (w.shape[0], HL_GROUPS + 1)
    sums = []
    for column in (w, c, o, used.astype(float)):
        grouped = np.zeros(shape)
        np.add.at(grouped, (replicate, group), column)
        sums.append(grouped[:, :HL_GROUPS])
    weight, expected, observed, cells = sums
    with np.errstate(divide="ignore", invalid="ignore"):
        denominator = expected * (1.0 - expected / weight)
    counted = (cells > 0.0) & (denominator != 0.0)
    terms = _div((observed - expected) ** 2, np.where(counted, denominator, 0.0))
    return np.where(counted.any(axis=1), np.where(counted, terms, 0.0).sum(axis=1), np.nan)


def chi2_sf_8(x: np.ndarray) -> np.ndarray:
    """P(χ²₈ ≥ x) = e^{−x/2} (1 + x/2 + (x/2)²/2 + (x/2)³/6), exact for even degrees of
    freedom; NaN stays NaN."""
    half = np.asarray(x, dtype=float) / 2.0
    series = np.zeros(half.shape)
    for i in range(HL_DEGREES_OF_FREEDOM // 2):
        series = series + half ** float(i) / float(math.factorial(i))
    with np.errstate(invalid="ignore"):
        return np.exp(-half) * series


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def _sigmoid_slope(x: np.ndarray) -> np.ndarray:
    """σ(x)(1 − σ(x)) as e^{−|x|}/(1 + e^{−|x|})², with full relative precision where σ(x) is
    within rounding of 1 (σ(x)·(1 − σ(x)) would lose it there)."""
    tail = np.exp(-np.abs(x))
    return tail / (1.0 + tail) ** 2


def within_cell_moments(
    inner: np.ndarray,
    weight: np.ndarray,
    confidence: np.ndarray,
    positives: np.ndarray,
    confidence_outcome: np.ndarray,
    mean_logit: np.ndarray,
    confidence_sq: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per (replicate, cell) the within-cell V̂ = var(z) and K̂ = cov(z, y) of the module
    docstring from the cell sums and z̄ (0 outside ``inner``, i.e. unused and end cells, and
    where Q or X is null), and per replicate whether every inner cell had them."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mean_score = _div(confidence, weight)
        mean_label = _div(positives, weight)
        at_mean = _sigmoid(mean_logit)
        slope = _sigmoid_slope(mean_logit)
        # 1 − 2σ(z̄) without cancelling when σ(z̄) is close to 1.
        tilt = -np.tanh(0.5 * mean_logit)
        from_moments = (_div(confidence_sq, weight) - mean_score**2) / slope**2
        from_gap = 2.0 * (mean_score - at_mean) / (slope * tilt)
        var_z = np.where(at_mean <= JENSEN_ABOVE, from_moments, from_gap)
        cov_zy = (_div(confidence_outcome, weight) - mean_score * mean_label) / slope
        reach = 0.5 * CELL_WIDTH * np.sqrt(np.maximum(mean_label * (1.0 - mean_label), 0.0))
    # Σw·s² and Σw·s·y both, even where Jensen's gap would not need the former: a cell is
    # corrected from its own complete statistics or not at all.
    present = np.isfinite(confidence_sq) & np.isfinite(var_z) & np.isfinite(cov_zy)
    keep = inner & present
    var_z = np.where(keep, np.clip(np.where(keep, var_z, 0.0), 0.0, 0.25 * CELL_WIDTH**2), 0.0)
    cov_zy = np.where(keep, np.clip(np.where(keep, cov_zy, 0.0), -reach, reach), 0.0)
    complete = ~(inner & ~present).any(axis=1)
    return var_z, cov_zy, complete


def _cox_terms(
    a: np.ndarray,
    b: np.ndarray,
    used: np.ndarray,
    z: np.ndarray,
    positives: np.ndarray,
    weight: np.ndarray,
    var_z: np.ndarray,
    cov_zy: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """The corrected score (g_a, g_b) and information (H_aa, H_ab, H_bb) at (a, b) per
    replicate, and μ'_c = μ_c(1 − μ_c) per (replicate, cell) (module docstring)."""
    a, b = a[:, None], b[:, None]
    eta = a + b * z
    mu = _sigmoid(eta)
    d1 = _sigmoid_slope(eta)
    d2 = d1 * (1.0 - 2.0 * mu)
    d3 = d1 * (1.0 - 6.0 * d1)
    spread = weight * var_z
    residual = np.where(used, positives - weight * mu - 0.5 * b * b * d2 * spread, 0.0)
    ga = residual.sum(axis=1)
    gb = np.where(used, z * residual + weight * cov_zy - b * d1 * spread, 0.0).sum(axis=1)
    u = np.where(used, weight * d1 + 0.5 * b * b * d3 * spread, 0.0)
    cross = np.where(used, b * d2 * spread, 0.0)
    haa = u.sum(axis=1)
    hab = (z * u + cross).sum(axis=1)
    hbb = (z * z * u + 2.0 * z * cross + np.where(used, d1 * spread, 0.0)).sum(axis=1)
    return ga, gb, haa, hab, hbb, d1


def cox_fit(
    used: np.ndarray,
    z: np.ndarray,
    positives: np.ndarray,
    weight: np.ndarray,
    var_z: np.ndarray | None = None,
    cov_zy: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) per replicate of the weighted logistic fit from the used cells (mean logit z̄_c,
    O_c positives out of W_c, within-cell var(z) and cov(z, y)), by the Newton steps of the
    module docstring; NaN when the information matrix is singular at a step. Without
    ``var_z`` and ``cov_zy`` (both 0) it is the fit of the pseudo-observations alone."""
    replicates = used.shape[0]
    zero = np.zeros(used.shape)
    var_z = zero if var_z is None else var_z
    cov_zy = zero if cov_zy is None else cov_zy
    a = np.zeros(replicates)
    b = np.ones(replicates)
    done = np.zeros(replicates, dtype=bool)
    z = np.where(used, z, 0.0)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        for _ in range(COX_NEWTON_STEPS):
            if done.all():
                break
            ga, gb, haa, hab, hbb, _ = _cox_terms(a, b, used, z, positives, weight, var_z, cov_zy)
            det = haa * hbb - hab * hab
            ok = det > 0.0
            da = (hbb * ga - hab * gb) / det
            db = (haa * gb - hab * ga) / det
            small = np.abs(da) + np.abs(db) <= COX_STEP_TOLERANCE * (1.0 + np.abs(a) + np.abs(b))
            a = np.where(done, a, np.where(ok, a + da, np.nan))
            b = np.where(done, b, np.where(ok, b + db, np.nan))
            done = done | ~ok | small
    return a, b


def cox_error_bound(
    used: np.ndarray,
    z: np.ndarray,
    positives: np.ndarray,
    weight: np.ndarray,
    var_z: np.ndarray,
    cov_zy: np.ndarray,
    weight_sq: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    complete: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The Cox fit's error_bound (intercept, slope) per replicate at the fitted (a, b): the
    module docstring's ``COX_BOUND_SDS`` standard deviations of the K̂ conversion's error."""
    z = np.where(used, z, 0.0)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        _, _, haa, hab, hbb, d1 = _cox_terms(a, b, used, z, positives, weight, var_z, cov_zy)
        tilt = -np.tanh(0.5 * z)
        variance = np.where(
            used & (var_z > 0.0), 0.2 * tilt**2 * var_z**2 * weight_sq * d1, 0.0
        ).sum(axis=1)
        det = haa * hbb - hab * hab
        scale = COX_BOUND_SDS * np.sqrt(variance) / det
        has_weight_sq = np.isfinite(np.where(used, weight_sq, 0.0)).all(axis=1)
        fine = complete & has_weight_sq & (det > 0.0) & np.isfinite(variance)
        return (
            np.where(fine, scale * np.abs(hab), np.nan),
            np.where(fine, scale * haa, np.nan),
        )
