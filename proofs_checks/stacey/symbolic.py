"""Symbolic audit of the proofs: Theorem 1 (Appendix A.1), Lemma B1, Lemma B2 (both cases) and the
l2-majorization derivation of Appendix B, step by step.

Each :class:`Step` records the two sides (sympy expressions in the vocabulary of
:mod:`proofs_checks.expressions`, written once and used by the spot checks, the witnesses and their
re-check), the relation (``=`` or ``<=``), the rule the paper invokes and its conditions, and is
checked by

* equalities of symbols: sympy simplification of ``lhs - rhs`` with the symbols' assumptions (p > 2
  written as p = 2 + q with q > 0), plus a numerical spot check at random points. sympy failing to
  simplify a true identity gives ``inconclusive``, never ``holds`` on a guess;
* steps about random quantities: the rule's precondition (Jensen: the curvature on the domain and
  the direction written; monotonicity: the sign of the derivative; Hoelder / Cauchy-Schwarz:
  conjugate exponents), checked with sympy, and the step itself spot-checked on random admissible
  environments: one coordinate's finite distribution (``dist``: unbiased by construction, sigma its
  exact standard deviation, G the smallest admissible), vectors (``vec``), a sequence (``seq``) or an
  l2-majorized quadratic (``maj``).

Verdicts (:func:`proofs_checks.verdict.decide_step`, :func:`~proofs_checks.verdict.decide_identity`):
``violated`` when a spot check finds a counterexample that re-checks at 60 digits (its environment is
the witness); ``inconclusive`` when a rule is misapplied but no counterexample was found, or sympy
cannot decide an identity; ``holds`` otherwise. Ids: ``sym.<proof>.<step>``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import sympy as sp

from .. import expressions as X
from ..engines import Point, claim_record
from ..expressions import CoordSum, Expect1, Sup1, g, sigma, x
from ..records import Claim
from ..spec import Assumption, ClaimSpec
from ..verdict import Verdict, decide_identity, decide_step
from . import formulas as F

# symbols: p = 2 + q with q > 0 (the paper's p > 2); a = 1/(p-1) in (0, 1)
q = sp.Symbol("q", positive=True)
P = 2 + q
A_ = 1 / (P - 1)
xs, ys, zs, ts, ss, ns, Gs, Ls, etas, Ts, gaps, S1s = sp.symbols("x y z t sigma n G L eta T gap S1", positive=True)

p, G = F.p, F.G
a = 1 / (p - 1)
n = F.n
gt = sp.Symbol("gt", real=True)
fd = sp.Symbol("fd", real=True)
f0, fstar, rho = sp.symbols("f0 fstar rho", real=True)


@dataclass
class Step:
    """One step of a proof. ``sides``: (lhs, rhs) expressions, or a function of the environment's
    shape returning them (``maj``); ``sym``: (lhs, rhs) in symbols for identities (``kind="sym"``);
    ``pre``: a callable returning (ok, explanation) for the rule's precondition."""

    proof: str
    label: str
    text: str
    relation: str
    rule: str
    conditions: str
    sides: tuple | Callable | None = None
    kind: str = "dist"  # dist | vec | seq | maj | sym | dep
    sym: tuple | None = None
    pre: Callable | None = None
    note: str = ""
    premise: bool = False


# ---------------------------------------------------------------------------------------------------
# preconditions (sympy)


def _sign(expr) -> int | None:
    e = sp.simplify(expr)
    if e.is_positive:
        return 1
    if e.is_negative:
        return -1
    return None


def _jensen(phi, var, claimed: str):
    """Jensen as the paper uses it: ``"E phi <= phi(E)"`` needs phi concave, ``"E phi >= phi(E)"`` convex."""
    d2 = sp.diff(phi, var, 2)
    sg = _sign(d2)
    shape = {1: "convex", -1: "concave", None: "of undetermined curvature"}[sg]
    need = "concave" if claimed == "E phi <= phi(E)" else "convex"
    ok = None if sg is None else (shape == need)
    return ok, f"phi({var}) = {phi} is {shape} for p > 2 (phi'' = {sp.simplify(d2)}); the step needs {need}"


def _monotone(expr, var, claimed: str):
    d1 = sp.diff(expr, var)
    sg = _sign(d1)
    shape = {1: "increasing", -1: "decreasing", None: "of undetermined monotonicity"}[sg]
    ok = None if sg is None else (shape == claimed)
    return ok, f"{expr} is {shape} in {var} for p > 2 (derivative {sp.simplify(d1)}); the step needs {claimed}"


def _conjugate(e1, e2):
    v = sp.simplify(1 / e1 + 1 / e2 - 1)
    return v == 0, f"conjugate exponents: 1/({e1}) + 1/({e2}) - 1 simplifies to {v}"


# ---------------------------------------------------------------------------------------------------
# the proof steps, in the vocabulary of the claims

ag, aX, dev = sp.Abs(g), sp.Abs(x), sp.Abs(g - x)
SAME = sp.Eq(sp.sign(x), sp.sign(g))
DIFF = sp.Not(SAME)
C1 = sp.And(SAME, aX >= ag)  # case (1): |g| <= |zeta| <= |g~|
C2 = sp.And(SAME, aX <= ag)  # case (2): |g| >= |zeta| >= |g~|
# the mean value point of t -> |t|^a between g and g~ (same sign), |g| when they coincide
ZETA = sp.Piecewise((ag, sp.Eq(aX, ag)), (((ag**a - aX**a) / (a * (ag - aX))) ** (1 / (a - 1)), True))
W = ag * aX ** (a - 1) * dev


def on(cond, e):
    """e where cond holds, 0 elsewhere (the other branch is never evaluated)."""
    return sp.Piecewise((e, cond), (0, True))


def E(e):
    return Expect1(e)


def _lp(vs, r):
    return sp.Add(*[sp.Abs(v) ** r for v in vs]) ** (1 / r)


def _maj_syms(d):
    H = [[sp.Symbol(f"H_{i}_{j}", real=True) for j in range(d)] for i in range(d)]
    Lv = [sp.Symbol(f"L_{i}", positive=True) for i in range(d)]
    u = [sp.Symbol(f"u_{i}", real=True) for i in range(d)]
    Hu = [sp.Add(*[H[i][j] * u[j] for j in range(d)]) for i in range(d)]
    return H, Lv, u, Hu


# Appendix B's chain, explicit in the dimension d (symbols H_i_j, L_i, u_i, rho): (lhs, rhs) per link
def _rh_sides(d):
    _, Lv, u, Hu = _maj_syms(d)
    return (
        _lp(Hu, 2 * rho / (2 * rho - 1)) / _lp(Lv, rho / (rho - 1)) ** sp.Rational(1, 2),
        sp.sqrt(sp.Add(*[Hu[i] ** 2 / Lv[i] for i in range(d)])),
    )


def _rhi_sides(d):
    _, Lv, u, _ = _maj_syms(d)
    qq = (2 * rho - 1) / rho
    uu = [sp.Abs(v) + sp.Rational(1, 1000) for v in u]
    r1, r2 = 1 / qq, -1 / (qq - 1)
    return (
        sp.Add(*[v**r1 for v in uu]) ** (1 / r1) * sp.Add(*[v**r2 for v in Lv]) ** (1 / r2),
        sp.Add(*[uu[i] * Lv[i] for i in range(d)]),
    )


def _sm_sides(d):
    _, Lv, u, Hu = _maj_syms(d)
    return (
        sp.sqrt(sp.Add(*[Hu[i] ** 2 / Lv[i] for i in range(d)])),
        sp.sqrt(sp.Add(*[Lv[i] * u[i] ** 2 for i in range(d)])),
    )


def _ho_sides(d):
    _, Lv, u, _ = _maj_syms(d)
    return (
        sp.sqrt(sp.Add(*[Lv[i] * u[i] ** 2 for i in range(d)])),
        _lp(Lv, rho / (rho - 1)) ** sp.Rational(1, 2) * _lp(u, 2 * rho),
    )


def _re_sides(d):
    _, Lv, u, Hu = _maj_syms(d)
    return (_lp(Hu, 2 * rho / (2 * rho - 1)), _lp(Lv, rho / (rho - 1)) * _lp(u, 2 * rho))


MAJ_SIDES = {
    "reverse-hoelder": _rh_sides,
    "reverse-hoelder-inequality": _rhi_sides,
    "smoothness": _sm_sides,
    "hoelder": _ho_sides,
    "rearrange": _re_sides,
}


def _steps() -> list[Step]:
    st = []
    add = st.append

    # ---------------- Lemma B1 (Appendix A.1)
    add(
        Step(
            "lemma-B1",
            "step1",
            "E[|g|(|g|^a + |g~|^a) 1[!=]] <= 2 G^a E[|g| 1[!=]]",
            "<=",
            "assumption",
            "Corollary 3(b): |g|, |g~| <= G",
            (E(on(DIFF, ag * (ag**a + aX**a))), 2 * G**a * E(on(DIFF, ag))),
        )
    )
    add(
        Step(
            "lemma-B1",
            "step2",
            "E[|g| 1[!=]] = |g| P[sgn g != sgn g~]",
            "=",
            "algebra",
            "g is deterministic",
            (E(on(DIFF, ag)), ag * E(on(DIFF, 1))),
        )
    )
    add(
        Step(
            "lemma-B1",
            "step3",
            "P[sgn g != sgn g~] <= P[|g~ - g| >= |g|]",
            "<=",
            "event inclusion",
            "a sign change (or g~ = 0) moves g~ by at least |g|",
            (E(on(DIFF, 1)), E(on(dev >= ag, 1))),
        )
    )
    add(
        Step(
            "lemma-B1",
            "step4",
            "P[|g~ - g| >= |g|] <= E|g~ - g| / |g|",
            "<=",
            "Markov",
            "|g~ - g| >= 0 and |g| > 0",
            (E(on(dev >= ag, 1)), E(dev) / ag),
            pre=lambda: (
                True,
                "Markov's inequality needs a nonnegative variable (|g~ - g|) and a positive threshold (|g|)",
            ),
        )
    )

    def jensen_then_variance(proof, jensen_label, var_label, text_dev, var_cond):
        """E|g~ - g| <= sqrt(E|g~ - g|^2) <= sigma / sqrt(n_t): the pair of steps both lemmas use."""
        add(
            Step(
                proof,
                jensen_label,
                f"E{text_dev} <= sqrt(E{text_dev}^2)",
                "<=",
                "Jensen",
                "phi = sqrt on [0, inf)",
                (E(dev), sp.sqrt(E(dev**2))),
                pre=lambda: _jensen(sp.sqrt(ts), ts, "E phi <= phi(E)"),
            )
        )
        add(
            Step(
                proof,
                var_label,
                f"sqrt(E{text_dev}^2) <= sigma / sqrt(n_t)",
                "<=",
                "assumption",
                var_cond,
                (sp.sqrt(E(dev**2)), sigma / sp.sqrt(n)),
            )
        )

    jensen_then_variance("lemma-B1", "step5", "step6", "|g~ - g|", "Assumption 3 (Corollary 2)")

    # ---------------- Lemma B2 (Appendix A.1)
    b2 = E(on(SAME, ag * sp.Abs(ag**a - aX**a)))
    psame = E(on(SAME, 1))
    add(
        Step(
            "lemma-B2",
            "step1",
            "E[|g| ||g|^a - |g~|^a| 1[=]] = E_{|=}[|g| ||g|^a - |g~|^a|] P[=]",
            "=",
            "conditioning",
            "definition of E_{|=}; needs P[=] > 0",
            (b2, (b2 / psame) * psame),
        )
    )
    add(
        Step(
            "lemma-B2",
            "step2",
            "||g|^a - |g~|^a| = a |zeta|^{a-1} |g - g~|, zeta between g and g~ (Lagrange remainder)",
            "=",
            "mean value theorem",
            "sgn g = sgn g~: t -> |t|^a is differentiable on the segment (it avoids 0)",
            (E(on(SAME, sp.Abs(ag**a - aX**a))), E(on(SAME, a * ZETA ** (a - 1) * dev))),
        )
    )
    add(
        Step(
            "lemma-B2",
            "case1.step1",
            "a E[|g| |zeta|^{a-1} |g - g~|] <= a E[|zeta| |zeta|^{a-1} |g - g~|]",
            "<=",
            "monotonicity",
            "case (1): |g| <= |zeta|; the other factors are >= 0",
            (a * E(on(C1, ag * ZETA ** (a - 1) * dev)), a * E(on(C1, ZETA**a * dev))),
        )
    )
    add(
        Step(
            "lemma-B2",
            "case1.step2",
            "|zeta| |zeta|^{(2-p)/(p-1)} = |zeta|^{1/(p-1)}",
            "=",
            "algebra",
            "zeta != 0",
            kind="sym",
            sym=(zs * zs ** ((2 - P) / (P - 1)), zs ** (1 / (P - 1))),
        )
    )
    add(
        Step(
            "lemma-B2",
            "case1.step3",
            "|zeta|^{1/(p-1)} <= |g~|^{1/(p-1)}",
            "<=",
            "monotonicity",
            "case (1): |zeta| <= |g~|; t -> t^{1/(p-1)} increasing",
            (a * E(on(C1, ZETA**a * dev)), a * E(on(C1, aX**a * dev))),
            pre=lambda: _monotone(xs**A_, xs, "increasing"),
        )
    )
    add(
        Step(
            "lemma-B2",
            "case1.step4",
            "|g~|^{1/(p-1)} <= G^{1/(p-1)}",
            "<=",
            "assumption",
            "Assumption 4 (Corollary 3(b))",
            (a * E(on(C1, aX**a * dev)), a * G**a * E(on(C1, dev))),
        )
    )
    add(
        Step(
            "lemma-B2",
            "case1.step5",
            "E_{|=}[|g - g~|] P[=] = (E[|g - g~|] / P[=]) P[=]",
            "=",
            "algebra",
            "as written: the conditional expectation replaced by E[.]/P[=]",
            (E(on(SAME, dev)), E(dev)),
            note="E_{|=}[Y] P[=] = E[Y 1[=]] <= E[Y]: the equality is false, but it holds as <=, the direction the chain needs",
        )
    )
    jensen_then_variance("lemma-B2", "case1.step6", "case1.step7", "|g - g~|", "Assumption 3")
    add(
        Step(
            "lemma-B2",
            "case2.step1",
            "E[|g| |zeta|^{(2-p)/(p-1)} |g - g~|] <= E[|g| |g~|^{(2-p)/(p-1)} |g - g~|]",
            "<=",
            "monotonicity",
            "case (2): |zeta| >= |g~|; t -> t^{(2-p)/(p-1)} decreasing",
            (E(on(C2, ag * ZETA ** (a - 1) * dev)), E(on(C2, W))),
            pre=lambda: _monotone(xs ** ((2 - P) / (P - 1)), xs, "decreasing"),
        )
    )
    add(
        Step(
            "lemma-B2",
            "case2.step2",
            "E_{|=}[Y] P[=] <= (1/P[=]) E[Y] P[=]",
            "<=",
            "algebra",
            "Y >= 0: E[Y 1[=]] <= E[Y]",
            (E(on(C2, W)), E(W)),
        )
    )
    rhs3 = sp.sqrt(E(ag**2 * aX ** (2 * (a - 1))) * E(dev**2))
    add(
        Step(
            "lemma-B2",
            "case2.step3",
            "E[|g| |g~|^{(2-p)/(p-1)} |g - g~|] <= sqrt(E[|g|^2 |g~|^{2(2-p)/(p-1)}] E|g - g~|^2)",
            "<=",
            "Cauchy-Schwarz",
            "exponents 2 and 2",
            (E(W), rhs3),
            pre=lambda: _conjugate(sp.Integer(2), sp.Integer(2)),
        )
    )
    rhs4 = sp.sqrt(ag**2 * E(aX ** (2 * (a - 1))) * sigma**2 / n)
    add(
        Step(
            "lemma-B2",
            "case2.step4",
            "... E|g - g~|^2 <= ... sigma^2 / n_t",
            "<=",
            "assumption",
            "Assumption 3",
            (rhs3, rhs4),
        )
    )
    add(
        Step(
            "lemma-B2",
            "case2.step5",
            "E[|g~|^{2(2-p)/(p-1)}] <= (E[|g~|^2])^{(2-p)/(p-1)}",
            "<=",
            "Jensen",
            "phi(t) = t^{(2-p)/(p-1)} applied to t = |g~|^2 > 0",
            (rhs4, sp.sqrt(ag**2 * E(aX**2) ** (a - 1) * sigma**2 / n)),
            pre=lambda: _jensen(ts ** ((2 - P) / (P - 1)), ts, "E phi <= phi(E)"),
        )
    )
    add(
        Step(
            "lemma-B2",
            "case2.step6",
            "E[|g~|^2] = Var[g~] + (E g~)^2",
            "=",
            "variance definition",
            "",
            (E(aX**2), E((x - E(x)) ** 2) + E(x) ** 2),
        )
    )
    add(
        Step(
            "lemma-B2",
            "case2.step7",
            "(Var[g~] + (E g~)^2)^{(2-p)/(p-1)} <= ((E g~)^2)^{(2-p)/(p-1)}",
            "<=",
            "monotonicity",
            "Var >= 0; t -> t^{(2-p)/(p-1)} decreasing",
            (E(aX**2) ** (a - 1), (E(x) ** 2) ** (a - 1)),
            pre=lambda: _monotone(xs ** ((2 - P) / (P - 1)), xs, "decreasing"),
        )
    )
    add(
        Step(
            "lemma-B2",
            "case2.step8",
            "sqrt(|g|^2 (E g~)^{2(2-p)/(p-1)} sigma^2/n_t) = |g|^{1/(p-1)} sigma / sqrt(n_t)",
            "=",
            "assumption",
            "Assumption 2: E g~ = g",
            kind="sym",
            sym=(sp.sqrt(xs**2 * (xs**2) ** ((2 - P) / (P - 1)) * ss**2 / ns), xs ** (1 / (P - 1)) * ss / sp.sqrt(ns)),
        )
    )
    add(
        Step(
            "lemma-B2",
            "case2.step9",
            "|g|^{1/(p-1)} <= G^{1/(p-1)}",
            "<=",
            "assumption",
            "Assumption 4 (Corollary 3(b))",
            (ag**a * sigma, G**a * sigma),
        )
    )
    add(
        Step(
            "lemma-B2",
            "combine",
            "E[B2] <= eta G^{1/(p-1)} ||sigma||_1 / ((p-1) sqrt(n_t)) (cases combined)",
            "<=",
            "law of total expectation",
            "each case is bounded by the whole bound, so their sum is only bounded by twice it",
            (b2, a * G**a * sigma / sp.sqrt(n)),
            pre=lambda: (
                False,
                "the two cases split one expectation; bounding each part by the full bound gives 2x the "
                "bound, not the bound",
            ),
        )
    )

    # ---------------- Theorem 1 (Appendix A.1): vectors g (true) and gt (stochastic)
    sg, sgt = F.s(g), F.s(gt)
    inner = -F.eta * CoordSum(g * sgt)
    norm2 = lambda v: CoordSum(sp.Abs(v) ** p) ** (2 / p)  # noqa: E731  ||v||_p^2
    add(
        Step(
            "thm1",
            "step1",
            "f(theta_{t+1}) <= f(theta_t) + <g_t, theta_{t+1} - theta_t> + L/2 ||theta_{t+1} - theta_t||_p^2",
            "<=",
            "assumption",
            "Assumption 1",
            premise=True,
        )
    )
    add(
        Step(
            "thm1",
            "step2",
            "<g_t, theta_{t+1} - theta_t> + L/2 ||theta_{t+1} - theta_t||_p^2 = eta <g_t, -s(g~_t)> + L/2 ||s(g~_t)||_p^2",
            "=",
            "algebra",
            "theta_{t+1} - theta_t = -eta s(g~_t) (Alg. 3 line 3)",
            (inner + F.L / 2 * norm2(F.eta * sgt), inner + F.L / 2 * norm2(sgt)),
            kind="vec",
            note="a typo: the factor eta^2 is missing from the last term; the next line restores it",
        )
    )
    add(
        Step(
            "thm1",
            "step3",
            "eta <g, -s(g~)> + L eta^2/2 ||s(g~)||_p^2 = -A + B + C",
            "=",
            "algebra",
            "definitions of A, B, C",
            (
                inner + F.L * F.eta**2 / 2 * norm2(sgt),
                -F.eta * CoordSum(g * sg) + F.eta * CoordSum(g * (sg - sgt)) + F.L * F.eta**2 / 2 * norm2(sgt),
            ),
            kind="vec",
        )
    )
    add(
        Step(
            "thm1",
            "A",
            "sum_i g_i g_i / |g_i|^{(p-2)/(p-1)} = sum_i |g_i|^{p/(p-1)}",
            "=",
            "algebra",
            "g_i != 0",
            kind="sym",
            sym=(xs * xs / xs ** ((P - 2) / (P - 1)), xs ** (P / (P - 1))),
            note="the appendix writes A = sum_i ... without the factor eta of A = eta <g, s(g)> (a typo; the sketch has it)",
        )
    )
    add(
        Step(
            "thm1",
            "B.step1",
            "x / |x|^{(p-2)/(p-1)} = sgn(x) |x|^{1/(p-1)}",
            "=",
            "algebra",
            "x != 0 (checked for x > 0; odd in x)",
            kind="sym",
            sym=(xs / xs ** ((P - 2) / (P - 1)), xs ** (1 / (P - 1))),
        )
    )
    add(
        Step(
            "thm1",
            "B.step2",
            "eta sum_i g_i (s(g)_i - s(g~)_i) <= eta sum_i |g_i| |s(g)_i - s(g~)_i|",
            "<=",
            "algebra",
            "x <= |x|",
            (CoordSum(g * (sg - sgt)), CoordSum(sp.Abs(g) * sp.Abs(sg - sgt))),
            kind="vec",
        )
    )
    same_v = sp.Eq(sp.sign(g), sp.sign(gt))
    add(
        Step(
            "thm1",
            "B.step3",
            "sum_i |g_i| |s(g)_i - s(g~)_i| = B1 + B2 (split on sgn g_i = sgn g~_i)",
            "=",
            "case split",
            "",
            (
                CoordSum(sp.Abs(g) * sp.Abs(sg - sgt)),
                CoordSum(
                    sp.Abs(g)
                    * sp.Piecewise(
                        (sp.Abs(sp.Abs(g) ** a - sp.Abs(gt) ** a), same_v), (sp.Abs(g) ** a + sp.Abs(gt) ** a, True)
                    )
                ),
            ),
            kind="vec",
        )
    )
    add(
        Step(
            "thm1",
            "C.step1",
            "(L eta^2/2) ||s(g~_t)||_p^2 = (L eta^2/2) (sum_i |g_t^(i) / |g_t^(i)|^{(p-2)/(p-1)}|^p)^{2/p}",
            "=",
            "algebra",
            "as written, with g_t in place of g~_t",
            (norm2(sgt), norm2(sg)),
            kind="vec",
            note="a typo: C involves s(g~_t), the appendix writes g_t; with g~_t the identity holds and Assumption 4 bounds it",
        )
    )
    add(
        Step(
            "thm1",
            "C.step2",
            "(sum_i |x_i|^{p/(p-1)})^{2/p} = ||x||_{p*}^{2/(p-1)}",
            "=",
            "algebra",
            "x_i > 0",
            kind="sym",
            sym=((xs ** (P / (P - 1))) ** (2 / P), ((xs ** (P / (P - 1))) ** ((P - 1) / P)) ** (2 / (P - 1))),
        )
    )
    add(
        Step(
            "thm1",
            "C.step3",
            "||g~||_{p*}^{2/(p-1)} <= G^{2/(p-1)}",
            "<=",
            "assumption",
            "Assumption 4",
            (CoordSum(sp.Abs(gt) ** F.pstar) ** (2 * a / F.pstar), G ** (2 * a)),
            kind="vec",
        )
    )
    add(
        Step(
            "thm1",
            "therefore",
            "eta E||g_t||_{p*}^{p*} <= f(theta_t) - f(theta_{t+1}) + eta (2p-1) G^a ||sigma||_1/((p-1) sqrt(n_t)) + L eta^2 G^{2a}/2",
            "<=",
            "lemmas",
            "E[B] <= E[B1] + E[B2] and Lemmas B1, B2",
            kind="dep",
            note="rests on Lemma B2, which is violated (sym.lemma-B2.combine, thm1.B2); the combined bound on E[B] "
            "itself is not contradicted by the adversarial search (thm1.B)",
        )
    )
    add(
        Step(
            "thm1",
            "telescope",
            "sum_{t<T} (f(theta_t) - f(theta_{t+1})) = f(theta_0) - f(theta_T) <= f_0 - f*",
            "<=",
            "telescoping",
            "f(theta_T) >= f* (f* = inf f)",
            (CoordSum(fd), f0 - fstar),
            kind="seq",
        )
    )
    # the final display: Theorem 1's right-hand side (formulas.THEOREM_RHS) with eta = ETA_THEOREM and
    # n_t = T equals the N^{-1/4} bound (formulas.RATE_BOUND)
    subs = {F.eta: F.ETA_THEOREM, F.m_inv: 1 / sp.sqrt(F.T), F.p: P}
    add(
        Step(
            "thm1",
            "final",
            "with eta = 1/(L^{1/2} G^{1/(p-1)} T^{1/2}), n_t = T, N = T^2: the bound = N^{-1/4}[L^{1/2} G^{1/(p-1)}(f_0 - f* + 1/2) + (2p-1)/(p-1) G^{1/(p-1)} ||sigma||_1]",
            "=",
            "algebra",
            "T, L, G > 0",
            kind="sym",
            sym=(F.THEOREM_RHS.subs(subs), F.RATE_BOUND.subs({F.p: P})),
        )
    )

    # ---------------- Appendix B: explicit in the dimension d of the majorized quadratic
    rs = sp.Symbol("r", positive=True)  # rho = 1 + r > 1
    Rho = 1 + rs
    Rho_s = Rho / (Rho - 1)
    rh_sides, rhi_sides, sm_sides, ho_sides, re_sides = (
        MAJ_SIDES[k] for k in ("reverse-hoelder", "reverse-hoelder-inequality", "smoothness", "hoelder", "rearrange")
    )

    add(
        Step(
            "appendix-B",
            "equivalence",
            "l2 majorization <=> ||grad f(y) - grad f(x)||_{L^-1} <= ||y - x||_L",
            "=",
            "definition",
            "weighted l2 geometry; checked on majorized quadratics: sup |u'Hu|/||u||_L^2 = sup ||Hu||_{L^-1}/||u||_L",
            kind="maj-eig",
        )
    )
    add(
        Step(
            "appendix-B",
            "reverse-hoelder",
            "||v||_{2rho/(2rho-1)} / ||L||_{rho*}^{1/2} <= ||v||_{L^-1}",
            "<=",
            "reverse Hoelder",
            "q = (2rho-1)/rho: exponents 1/q in (0, 1) and -1/(q-1) < 0 conjugate",
            rh_sides,
            kind="maj",
            pre=lambda: _conjugate(Rho / (2 * Rho - 1), -1 / ((2 * Rho - 1) / Rho - 1)),
        )
    )
    add(
        Step(
            "appendix-B",
            "reverse-hoelder-inequality",
            "sum_i |u_i v_i| >= ||u||_{1/q} ||v||_{-1/(q-1)}, q = (2rho-1)/rho",
            "<=",
            "reverse Hoelder",
            "u, v with positive entries; 0 < 1/q < 1",
            rhi_sides,
            kind="maj",
        )
    )
    add(
        Step(
            "appendix-B",
            "smoothness",
            "||grad f(y) - grad f(x)||_{L^-1} <= ||y - x||_L",
            "<=",
            "assumption",
            "l2 majorization (1-smoothness w.r.t. ||.||_L)",
            sm_sides,
            kind="maj",
        )
    )
    add(
        Step(
            "appendix-B",
            "hoelder",
            "||y - x||_L <= ||L||_{rho*}^{1/2} ||y - x||_{2rho}",
            "<=",
            "Hoelder",
            "exponents rho and rho* conjugate",
            ho_sides,
            kind="maj",
            pre=lambda: _conjugate(Rho, Rho_s),
        )
    )
    add(
        Step(
            "appendix-B",
            "rearrange",
            "||grad f(y) - grad f(x)||_{2rho/(2rho-1)} <= ||L||_{rho*} ||y - x||_{2rho}",
            "<=",
            "algebra",
            "multiply the chain by ||L||_{rho*}^{1/2}",
            re_sides,
            kind="maj",
        )
    )
    pp = 2 + q
    add(
        Step(
            "appendix-B",
            "exponents",
            "p = 2 rho: rho* = p/(p-2) and 2rho/(2rho-1) = p/(p-1) = p*",
            "=",
            "algebra",
            "p > 2",
            kind="sym",
            sym=(
                sp.Matrix([(pp / 2) / (pp / 2 - 1), 2 * (pp / 2) / (2 * (pp / 2) - 1)]),
                sp.Matrix([pp / (pp - 2), pp / (pp - 1)]),
            ),
        )
    )
    return st


STEPS = _steps()


def corrected_steps() -> list[tuple[Step, str, str]]:
    """The violated proof steps with a local repair, each as ``(corrected step, id of the step it repairs,
    what changed)``, checked by :func:`check_step` exactly as the originals are:

    * ``lemma-B2.case1.step5``: the equality E_{|=}[Y] P[=] = E[Y] holds as <= (E[Y 1[=]] <= E[Y], Y >= 0),
      the direction the chain needs;
    * ``thm1.step2``: with the factor eta^2 on the last term (the next line of the proof has it);
    * ``thm1.C.step1``: with g~_t in place of g_t (the term C of the proof involves s(g~_t));
    * ``lemma-B2.case2.step5``: Jensen for the convex phi(t) = t^{(2-p)/(p-1)} gives >=, the reverse of what
      the chain needs: the step holds reversed, and case (2) cannot be closed this way (Lemma 2 holds only
      with the constant kappa(p): ``thm1.B2.corrected``).

    ``lemma-B2.combine`` has no local repair: its corrected statement is ``thm1.B2.corrected`` itself."""
    by = {f"{st.proof}.{st.label}": st for st in STEPS}
    out = []
    c1 = by["lemma-B2.case1.step5"]
    out.append(
        (
            Step(
                c1.proof,
                c1.label,
                "E_{|=}[|g - g~|] P[=] <= E[|g - g~|]",
                "<=",
                "monotonicity",
                "|g - g~| >= 0",
                c1.sides,
            ),
            "sym.lemma-B2.case1.step5",
            "'=' replaced by '<=' (E[Y 1[=]] <= E[Y] for Y >= 0)",
        )
    )
    s2, s3 = by["thm1.step2"], by["thm1.step3"]
    out.append(
        (
            Step(
                s2.proof,
                s2.label,
                "<g_t, theta_{t+1} - theta_t> + L/2 ||theta_{t+1} - theta_t||_p^2 = eta <g_t, -s(g~_t)> + "
                "L eta^2/2 ||s(g~_t)||_p^2",
                "=",
                "algebra",
                s2.conditions,
                (s2.sides[0], s3.sides[0]),
                kind="vec",
            ),
            "sym.thm1.step2",
            "the factor eta^2 restored on the last term",
        )
    )
    cs = by["thm1.C.step1"]
    sgt = F.s(gt)
    out.append(
        (
            Step(
                cs.proof,
                cs.label,
                "(L eta^2/2) ||s(g~_t)||_p^2 = (L eta^2/2) (sum_i |g~_t^(i) / |g~_t^(i)|^{(p-2)/(p-1)}|^p)^{2/p}",
                "=",
                "algebra",
                "s of Alg. 3 line 3",
                (
                    CoordSum(sp.Abs(sgt) ** p) ** (2 / p),
                    CoordSum(sp.Abs(gt / sp.Abs(gt) ** ((p - 2) / (p - 1))) ** p) ** (2 / p),
                ),
                kind="vec",
            ),
            "sym.thm1.C.step1",
            "g~_t in place of g_t",
        )
    )
    j = by["lemma-B2.case2.step5"]
    out.append(
        (
            Step(
                j.proof,
                j.label,
                "(E[|g~|^2])^{(2-p)/(p-1)} <= E[|g~|^{2(2-p)/(p-1)}]",
                "<=",
                "Jensen",
                "phi(t) = t^{(2-p)/(p-1)} is convex on t > 0 for p > 2",
                (j.sides[1], j.sides[0]),
                pre=lambda: _jensen(ts ** ((2 - P) / (P - 1)), ts, "E phi >= phi(E)"),
            ),
            "sym.lemma-B2.case2.step5",
            "the inequality reversed (Jensen for a convex function); the chain of case (2) then breaks: Lemma 2 "
            "needs the constant kappa(p) (thm1.B2.corrected)",
        )
    )
    return out


# ---------------------------------------------------------------------------------------------------
# random admissible environments (drawn one by one from the step's stream, evaluated by shape groups)


def _dist_env(rng):
    """One coordinate: k support points (some tiny), weights, p in (2, 10); g the mean (Assumption 2),
    sigma the exact std (Assumption 3, n = 1), G = max |X| (Assumption 4)."""
    while True:
        pv = float(rng.uniform(2.05, 10.0))
        k = int(rng.integers(2, 5))
        v = rng.uniform(-1, 1, k)
        tiny = rng.random(k) < 0.3
        v[tiny] = np.sign(v[tiny]) * 10.0 ** rng.uniform(-8, -1, int(tiny.sum()))
        w = rng.dirichlet(np.ones(k))
        gv = float(np.dot(w, v))
        if abs(gv) > 1e-6 and np.all(v != 0):
            break
    return {
        "shape": k,
        "p": pv,
        "values": v,
        "weights": w,
        "g": gv,
        "sigma": math.sqrt(float(np.dot(w, (v - gv) ** 2))),
        "G": float(np.abs(v).max()),
    }


def _lpn(v, r):
    v = np.abs(np.asarray(v, dtype=float))
    return float(v.max()) if math.isinf(r) else float(np.sum(v**r) ** (1 / r))


def _vec_env(rng):
    pv = float(rng.uniform(2.05, 10.0))
    d = int(rng.integers(1, 6))
    gv = rng.standard_normal(d) * 10.0 ** rng.uniform(-3, 1, d)
    gtv = gv + rng.standard_normal(d)
    Gv = _lpn(gtv, pv / (pv - 1)) * float(rng.uniform(1.0, 2.0))  # any G meeting Assumption 4
    fs = np.cumsum(rng.standard_normal(int(rng.integers(2, 20))))
    return {
        "shape": d,
        "p": pv,
        "g": gv,
        "gt": gtv,
        "G": Gv,
        "f": fs,
        "f_star": float(fs.min() - rng.random()),
        "eta": float(10.0 ** rng.uniform(-3, 0)),
        "L": float(rng.uniform(0.1, 10)),
    }


def _maj_env(rng):
    """A majorized quadratic: H = D^{1/2} M D^{1/2}, ||M||_2 <= 1, D = diag(L) (so -diag(L) <= H <= diag(L)),
    rho in (1, 6], and a random displacement u."""
    d = int(rng.integers(1, 6))
    Lv = 10.0 ** rng.uniform(-1, 1, d)
    M = rng.standard_normal((d, d))
    M = (M + M.T) / 2
    M /= max(1.0, np.abs(np.linalg.eigvalsh(M)).max())
    H = np.sqrt(Lv)[:, None] * M * np.sqrt(Lv)[None, :]
    return {"shape": d, "L": Lv, "H": H, "u": rng.standard_normal(d), "rho": float(rng.uniform(1.05, 6.0))}


def _seq_env(rng):
    e = _vec_env(rng)
    f = e["f"]
    return {"shape": f.size - 1, "fd": f[:-1] - f[1:], "f0": float(f[0]), "fstar": e["f_star"]}


_SAMPLERS = {"dist": _dist_env, "vec": _vec_env, "maj": _maj_env, "seq": _seq_env, "maj-eig": _maj_env}


def _env_arrays(kind, envs):
    """The numpy Env of a group of environments with the same shape."""
    if kind == "dist":
        vals = np.stack([e["values"] for e in envs])[:, None, :]
        wts = np.stack([e["weights"] for e in envs])[:, None, :]
        dist = X.Distribution(vals, wts, 1)
        return X.Env(
            scalars={"p": [e["p"] for e in envs], "G": [e["G"] for e in envs], "n": 1.0},
            coords={"g": np.array([[e["g"]] for e in envs]), "sigma": np.array([[e["sigma"]] for e in envs])},
            dist=dist,
        )
    if kind == "vec":
        return X.Env(
            scalars={k: [e[k] for e in envs] for k in ("p", "G", "eta", "L")},
            coords={"g": np.stack([e["g"] for e in envs]), "gt": np.stack([e["gt"] for e in envs])},
            S=len(envs),
        )
    if kind == "seq":
        return X.Env(
            scalars={"f0": [e["f0"] for e in envs], "fstar": [e["fstar"] for e in envs]},
            coords={"fd": np.stack([e["fd"] for e in envs])},
            S=len(envs),
        )
    if kind == "maj":
        d = envs[0]["shape"]
        sc = {"rho": [e["rho"] for e in envs]}
        for i in range(d):
            sc[f"L_{i}"] = [e["L"][i] for e in envs]
            sc[f"u_{i}"] = [e["u"][i] for e in envs]
            for j in range(d):
                sc[f"H_{i}_{j}"] = [e["H"][i, j] for e in envs]
        return X.Env(scalars=sc, S=len(envs))
    raise ValueError(kind)


# the assumptions a spot check's environment meets, carried by its witness (re-derived by the re-check)
DIST_CONDITIONS = (
    Assumption("Assumption 2: g = E g~", g, "==", Expect1(x), per_coordinate=True),
    Assumption("sigma = the exact std", sigma, "==", sp.sqrt(Expect1((x - g) ** 2)), per_coordinate=True),
    Assumption("G = max |g~| (Assumption 4, tightest)", G, "==", Sup1(sp.Abs(x))),
)
VEC_CONDITIONS = (("Assumption 4: ||g~||_{p*} <= G", G, ">=", CoordSum(sp.Abs(gt) ** F.pstar) ** (1 / F.pstar)),)


def _maj_conditions(d):
    Hm = sp.Matrix(d, d, lambda i, j: sp.Symbol(f"H_{i}_{j}", real=True))
    Lm = sp.diag(*[sp.Symbol(f"L_{i}", positive=True) for i in range(d)])
    min_eig = sp.Function("MinEig")
    return (
        ("l2 majorization: diag(L) - H >= 0", min_eig(sp.ImmutableMatrix(Lm - Hm)), ">=", sp.Integer(0)),
        ("l2 majorization: diag(L) + H >= 0", min_eig(sp.ImmutableMatrix(Lm + Hm)), ">=", sp.Integer(0)),
    )


def _point(kind, env, lhs, rhs) -> Point:
    """The environment of a counterexample, where the step's sides are re-checked (its witness)."""
    if kind == "dist":
        return Point(
            {"p": env["p"], "G": env["G"], "n": 1.0},
            {"g": [env["g"]], "sigma": [env["sigma"]]},
            dist={"values": [env["values"].tolist()], "weights": [env["weights"].tolist()], "n": 1},
            lhs=lhs,
            rhs=rhs,
            conditions=DIST_CONDITIONS,
        )
    if kind == "vec":
        return Point(
            {k: env[k] for k in ("p", "G", "eta", "L")},
            {"g": env["g"], "gt": env["gt"]},
            lhs=lhs,
            rhs=rhs,
            conditions=VEC_CONDITIONS,
        )
    if kind == "seq":
        return Point({"f0": env["f0"], "fstar": env["fstar"]}, {"fd": env["fd"]}, lhs=lhs, rhs=rhs)
    d = env["shape"]  # maj
    sc = {"rho": env["rho"]}
    for i in range(d):
        sc[f"L_{i}"] = float(env["L"][i])
        sc[f"u_{i}"] = float(env["u"][i])
        for j in range(d):
            sc[f"H_{i}_{j}"] = float(env["H"][i, j])
    return Point(sc, lhs=lhs, rhs=rhs, conditions=_maj_conditions(d))


def step_spec(step: Step) -> ClaimSpec:
    """The claim a proof step makes (id ``sym.<proof>.<step>``), its sides when they are expressions."""
    sides = step.sym if step.kind == "sym" else step.sides
    lhs, rhs = sides if isinstance(sides, tuple) else (None, None)
    return ClaimSpec(
        id=f"sym.{step.proof}.{step.label}",
        statement=f"{step.text}   [{step.relation}; {step.rule}]",
        source="Appendix A.1" if step.proof != "appendix-B" else "Appendix B",
        assumptions=(step.conditions,) if step.conditions else (),
        term=lhs if isinstance(lhs, sp.Basic) else None,
        bound=rhs if isinstance(rhs, sp.Basic) else None,
        relation="==" if step.relation == "=" else "<=",
        show=("proof", "step", "rule"),
    )


def _spot(step: Step, rng, samples: int):
    """The largest relative excess of lhs over rhs (for <=) or relative gap (for =) over random
    environments; returns (worst, env, lhs, rhs, sides)."""
    sampler = _SAMPLERS[step.kind]
    envs = [sampler(rng) for _ in range(samples)]
    if step.kind == "maj-eig":  # spectral radius = operator norm for symmetric matrices (numpy only)
        worst, arg = -math.inf, None
        for e in envs:
            Ms = e["H"] / np.sqrt(np.outer(e["L"], e["L"]))
            lv, rv = float(np.abs(np.linalg.eigvalsh(Ms)).max()), float(np.linalg.norm(Ms, 2))
            gap_ = abs(lv - rv) / (abs(lv) + abs(rv) + 1e-300)
            if gap_ > worst:
                worst, arg = gap_, (e, lv, rv)
        return worst, arg[0], arg[1], arg[2], None
    groups: dict = {}
    for i, e in enumerate(envs):
        groups.setdefault(e["shape"], []).append(i)
    worst, best = -math.inf, None
    for shape, idx in groups.items():
        sub = [envs[i] for i in idx]
        lhs_e, rhs_e = step.sides(shape) if callable(step.sides) else step.sides
        env = _env_arrays("maj" if step.kind == "maj" else step.kind, sub)
        with np.errstate(all="ignore"):
            lv = X.evaluate(lhs_e, env)
            rv = X.evaluate(rhs_e, env)
            scale = np.abs(lv) + np.abs(rv) + 1e-300
            gap_ = (lv - rv) / scale if step.relation == "<=" else np.abs(lv - rv) / scale
        ok = np.isfinite(lv) & np.isfinite(rv)
        gap_ = np.where(ok, gap_, -np.inf)
        j = int(np.argmax(gap_))
        if gap_[j] > worst or (best is None and np.isfinite(gap_[j])):
            worst, best = float(gap_[j]), (sub[j], float(lv[j]), float(rv[j]), (lhs_e, rhs_e))
    if best is None:
        return -math.inf, None, None, None, None
    return worst, *best


def _sym_identity(lhs, rhs, nums: int = 50, seed: int = 0):
    """(simplifies_to_zero, numeric_max_rel_gap, worst_point) for an identity in positive symbols."""
    import mpmath

    diff = sp.simplify(sp.powsimp(sp.expand_power_base(lhs - rhs, force=True), force=True))
    zero = diff == 0 or (isinstance(diff, sp.MatrixBase) and all(sp.simplify(v) == 0 for v in diff))
    syms = sorted((lhs - rhs).free_symbols, key=lambda v: v.name)
    f_l, f_r = sp.lambdify(syms, lhs, "mpmath"), sp.lambdify(syms, rhs, "mpmath")
    rng = np.random.default_rng(seed)
    worst, point = 0.0, None
    with mpmath.workdps(30):
        for _ in range(nums):
            raw = [float(rng.uniform(0.1, 5.0)) for _ in syms]
            vals = [mpmath.mpf(v) for v in raw]
            lv, rv = f_l(*vals), f_r(*vals)
            if isinstance(lv, mpmath.matrix) or hasattr(lv, "tolist"):
                lv, rv = list(lv), list(rv)
            else:
                lv, rv = [lv], [rv]
            for a_, b_ in zip(lv, rv):
                gap_ = float(abs(a_ - b_) / (abs(a_) + abs(b_) + mpmath.mpf(10) ** -30))
                if gap_ > worst or point is None:
                    worst, point = max(worst, gap_), dict(zip([s.name for s in syms], raw))
    return zero, worst, point


def check_step(step: Step, *, samples: int = 1000, seed: int = 0) -> Claim:
    """The verdict on one proof step (module docstring)."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, sum(map(ord, step.proof + step.label))]))
    spec = step_spec(step)
    params = {
        "proof": step.proof,
        "step": step.label,
        "relation": step.relation,
        "rule": step.rule,
        "conditions": step.conditions,
    }
    note = f" Note: {step.note}" if step.note else ""
    empirical = bound = None
    if step.premise:
        v = Verdict("holds", "the step is the assumption itself (" + step.conditions + ")")
    elif step.kind == "dep":
        v = Verdict("inconclusive", "depends on earlier results: " + step.note)
        note = ""
    elif step.kind == "sym":
        zero, num, point = _sym_identity(*step.sym, seed=seed)
        params["numeric_max_rel_gap"] = num
        w = None
        if point is not None and not isinstance(step.sym[0], sp.MatrixBase):
            at = Point(point, lhs=step.sym[0], rhs=step.sym[1], relation="==", extra={"note": "p = 2 + q"})
            w = at.witness(spec)
        v = decide_identity(bool(zero), num, witness=w, how="positive symbols, p = 2 + q, q > 0")
        empirical, bound = num, 0.0
    else:
        pre_ok, pre_txt = step.pre() if step.pre else (None, "")
        worst, env, lv, rv, sides = _spot(step, rng, samples)
        params["samples"] = samples
        w = _point(step.kind, env, *sides).witness(spec) if sides is not None and env is not None else None
        v = decide_step(
            "==" if step.relation == "=" else "<=",
            worst,
            samples=samples,
            rule_ok=pre_ok,
            rule_text=pre_txt,
            witness=w,
            lhs=lv,
            rhs=rv,
        )
        if worst > 1e-9:
            empirical, bound = lv, rv
    v.reason += note
    return claim_record(spec, v, params=params, method="symbolic", empirical=empirical, bound=bound)


def run_symbolic(ctx):
    """``lptheory check symbolic``: every step of the proofs of Theorem 1, Lemmas B1 and B2 and Appendix B
    (for all p > 2 symbolically and on random p in (2, 10))."""
    samples = 400 if ctx.quick else 3000
    out = [check_step(stp, samples=samples, seed=ctx.seed) for stp in STEPS]
    ctx.say(f"{len(out)} proof steps checked")
    return out


def format_proof(claims) -> str:
    """The symbolic records as an annotated proof: step, rule, verdict, reason (the proof, step and rule
    are the records' parameters)."""
    lines = []
    cur = None
    for c in claims:
        d = c.to_dict() if hasattr(c, "to_dict") else c
        pr = d["params"]
        if pr.get("proof") != cur:
            cur = pr.get("proof")
            lines.append(f"\n== proof: {cur} ==")
        verdict = d["status"].upper() if d["status"] == "violated" else d["status"]
        lines.append(f"  [{pr['step']}] ({pr['rule']}) {verdict}")
        lines.append(f"      {d['statement']}")
        if d.get("reason"):
            lines.append(f"      -> {d['reason']}")
    return "\n".join(lines)
