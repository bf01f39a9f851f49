"""Per-row terms of multiclass temperature scaling at β = 1/T, as Column expressions.

With the logits z (K classes), d_j = z_j − max_k z_k (≤ 0, and 0 at the arg max),
e_j(β) = exp(β·d_j) and s(β) = Σ_j e_j(β) (≥ 1, so nothing overflows):

- NLL(β) = log s(β) − β·d_y  (= logsumexp(β·z) − β·z_y);
- g(β) = dNLL/dβ = Σ_j d_j e_j / s − d_y  (= E_p[z] − z_y);
- h(β) = d²NLL/dβ² = Σ_j d_j² e_j / s − (Σ_j d_j e_j / s)²  (= Var_p(z) ≥ 0);
- with the moments μ_m = Σ_j d_j^m e_j / s, the next two derivatives are the third and fourth
  cumulants of d under p: dh/dβ = κ₃ = μ₃ − 3μ₁μ₂ + 2μ₁³ and d²h/dβ² = κ₄ = μ₄ − 4μ₁μ₃ − 3μ₂²
  + 12μ₁²μ₂ − 6μ₁⁴ (since dμ_m/dβ = μ_{m+1} − μ_m·μ₁);
- the top-label confidence max_k p_k = 1/s(β) (the arg max has d = 0);
- the Brier term Σ_j (p_j − [j = y])² = Σ_j e_j² / s² − 2·e_y / s + 1.

The sums over classes are written out as K scalar terms up to ``UNROLL_MAX_CLASSES`` classes
(plain generated code); beyond that they are higher-order array functions (one lambda call per
class, each sum recomputing the exponentials; at K = 100 the written-out form fits 2.6× faster,
docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column
from pyspark.sql import functions as F

from spark_calib.rows.arrays import array_sum

UNROLL_MAX_CLASSES = 128


@dataclass(frozen=True)
class ShiftedLogits:
    """d = z − max z as K columns (``unrolled``) or one array column (``array``), and d_y."""

    unrolled: tuple[Column, ...] | None
    array: Column | None
    true: Column

    def total(self, term: Callable[[Column], Column]) -> Column:
        """Σ_j term(d_j)."""
        if self.unrolled is not None:
            return _added([term(d) for d in self.unrolled])
        assert self.array is not None
        return array_sum(F.transform(self.array, term))


def _added(terms: list[Column]) -> Column:
    """The sum of ``terms`` as one expression."""
    return reduce(lambda left, right: left + right, terms)


def shift_columns(num_classes: int) -> list[str]:
    """Names of the unrolled d_j columns (empty when the classes are not unrolled)."""
    if num_classes > UNROLL_MAX_CLASSES:
        return []
    return [f"_d{j}" for j in range(num_classes)]


SHIFTED_ARRAY = "_d"
SHIFTED_TRUE = "_d_true"


def shifted_logits(logits: Column, label: Column, num_classes: int) -> dict[str, Column]:
    """Name → expression of d (unrolled columns, or ``_d``) and ``_d_true`` = d_y."""
    top = F.array_max(logits)
    names = shift_columns(num_classes)
    found = {name: F.get(logits, j) - top for j, name in enumerate(names)}
    if not names:
        found[SHIFTED_ARRAY] = F.transform(logits, lambda z: z - top)
    found[SHIFTED_TRUE] = F.get(logits, label) - top
    return found


def shifted_names(num_classes: int) -> list[str]:
    """The columns ``shifted_logits`` projects, in order."""
    return [*(shift_columns(num_classes) or [SHIFTED_ARRAY]), SHIFTED_TRUE]


def shifted(num_classes: int) -> ShiftedLogits:
    """The columns ``shifted_logits`` projected, read back."""
    names = shift_columns(num_classes)
    return ShiftedLogits(
        unrolled=tuple(F.col(name) for name in names) if names else None,
        array=None if names else F.col(SHIFTED_ARRAY),
        true=F.col(SHIFTED_TRUE),
    )


@dataclass(frozen=True)
class Moments:
    """s(β), Σ_j d_j e_j and Σ_j d_j² e_j of one row at one β."""

    total: Column
    first: Column
    second: Column


def moments(d: ShiftedLogits, beta: Column) -> Moments:
    """The three class sums of ``d`` at ``beta``."""
    return Moments(
        total=d.total(lambda x: F.exp(beta * x)),
        first=d.total(lambda x: x * F.exp(beta * x)),
        second=d.total(lambda x: x * x * F.exp(beta * x)),
    )


EXPONENTIAL_PREFIX = "_e"


def exponential_columns(d: ShiftedLogits, beta: Column) -> dict[str, Column]:
    """Name → e_j(β) = exp(β·d_j), for unrolled classes: projected once, then read by
    ``projected_moments`` (empty for the array form, whose lambdas compute them in place).

    Written inside the class sums instead, each exponential appears five times in the
    projection (s, s1, s2 and twice in Σe²); the generated code then outgrows what the JVM
    compiles. Spark keeps a projection of non-trivial columns that the next one reads more
    than once as its own operator, so these are computed once per row."""
    if d.unrolled is None:
        return {}
    return {f"{EXPONENTIAL_PREFIX}{j}": F.exp(beta * x) for j, x in enumerate(d.unrolled)}


def projected_moments(d: ShiftedLogits, beta: Column) -> tuple[Moments, Column]:
    """``moments`` and ``squared_total`` at ``beta``, reading the columns of
    ``exponential_columns`` when the classes are unrolled."""
    if d.unrolled is None:
        return moments(d, beta), squared_total(d, beta)
    e = [F.col(f"{EXPONENTIAL_PREFIX}{j}") for j in range(len(d.unrolled))]
    pairs = list(zip(d.unrolled, e, strict=True))

    found = Moments(
        total=_added(e),
        first=_added([x * e_j for x, e_j in pairs]),
        second=_added([x * x * e_j for x, e_j in pairs]),
    )
    return found, _added([e_j * e_j for e_j in e])


def higher_sums(d: ShiftedLogits, beta: Column) -> tuple[Column, Column]:
    """Σ_j d_j³ e_j and Σ_j d_j⁴ e_j at ``beta``, reading the columns of
    ``exponential_columns`` when the classes are unrolled."""
    if d.unrolled is None:
        return (
            d.total(lambda x: x * x * x * F.exp(beta * x)),
            d.total(lambda x: x * x * x * x * F.exp(beta * x)),
        )
    cubes = [x * x * x for x in d.unrolled]
    e = [F.col(f"{EXPONENTIAL_PREFIX}{j}") for j in range(len(d.unrolled))]

    return (
        _added([c * e_j for c, e_j in zip(cubes, e, strict=True)]),
        _added([c * x * e_j for c, x, e_j in zip(cubes, d.unrolled, e, strict=True)]),
    )


def cumulants(
    total: Column, first: Column, second: Column, third: Column, fourth: Column
) -> dict[str, Column]:
    """κ₃ (``t``) and κ₄ (``q``) of d under p from the projected class sums: the third and
    fourth derivatives of the row's NLL in β."""
    m1, m2, m3, m4 = first / total, second / total, third / total, fourth / total
    return {
        "t": m3 - 3.0 * m1 * m2 + 2.0 * m1 * m1 * m1,
        "q": m4 - 4.0 * m1 * m3 - 3.0 * m2 * m2 + 12.0 * m1 * m1 * m2 - 6.0 * m1 * m1 * m1 * m1,
    }


def derivatives(total: Column, first: Column, second: Column, true: Column) -> dict[str, Column]:
    """g and h from the projected moments (columns, so each sum is computed once)."""
    mean = first / total
    return {"g": mean - true, "h": second / total - mean * mean}


def squared_total(d: ShiftedLogits, beta: Column) -> Column:
    """Σ_j e_j(β)², for the Brier term (e_j·e_j: the same exponentials as ``moments``, which
    the projection computes once)."""
    return d.total(lambda x: F.exp(beta * x) * F.exp(beta * x))


def scaled_outputs(
    beta: Column, true: Column, s: Column, s1: Column, s2: Column, s_sq: Column
) -> dict[str, Column]:
    """From the projected class sums s = ``Moments.total``, s1 = ``first``, s2 = ``second``
    and s_sq = ``squared_total``: confidence 1/s, NLL log s − β·d_y, Brier
    Σe²/s² − 2e_y/s + 1, and g, h."""
    return {
        "confidence": 1.0 / s,
        "nll": F.log(s) - beta * true,
        "brier": s_sq / (s * s) - 2.0 * F.exp(beta * true) / s + 1.0,
        **derivatives(s, s1, s2, true),
    }
