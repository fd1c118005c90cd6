"""Every formula of the Stacey paper that the checks use, written once as sympy expressions and cited.

The engines evaluate them fast (numpy, over populations) and the witness re-check evaluates the same
expressions at high precision (mpmath); the symbolic audit manipulates them. Notation: p > 2 (a
symbol; numbers are substituted by the engines), a = 1/(p-1), p* = p/(p-1); per coordinate i:
``x`` = g~_t^(i) (the stochastic gradient, the random quantity), ``g`` = g_t^(i) (the true gradient),
``sigma`` = sigma_i (Assumption 3).
"""

from __future__ import annotations

import sympy as sp

from ..api import Assumption, ClaimSpec, CoordSum, Expect, Expect1, Sup1, g, indicator, sigma, x

p, eta, L, G, n, T, gap, S1, m_inv = sp.symbols("p eta L G n T gap S1 m_inv", positive=True)
a = 1 / (p - 1)  # the exponent of s_p
pstar = p / (p - 1)  # p* (Section 3, "Preliminaries")

# ---------------------------------------------------------------------------------------------------
# Algorithm 3 and the steepest map


def s(v):
    """s_p(v) = sgn(v) |v|^{1/(p-1)}: Alg. 3 line 2, in the form of the proof sketch of Section 4.1."""
    return sp.sign(v) * sp.Abs(v) ** a


def s_alg3(v):
    """Alg. 3 line 2 as printed: v / |v|^{(p-2)/(p-1)}."""
    return v / sp.Abs(v) ** ((p - 2) / (p - 1))


# ---------------------------------------------------------------------------------------------------
# Theorem 1's per-step terms (Appendix A.1) and the lemmas' bounds

SAME = sp.Eq(sp.sign(x), sp.sign(g))
A_term = eta * CoordSum(sp.Abs(g) ** pstar)  # A = eta <g, s(g)> = eta ||g||_{p*}^{p*}
B_path = eta * CoordSum(g * (s(g) - s(x)))  # B = eta <g, s(g) - s(g~)>
B1_path = eta * CoordSum(sp.Abs(g) * (sp.Abs(g) ** a + sp.Abs(x) ** a) * indicator(sp.Not(SAME)))
B2_path = eta * CoordSum(sp.Abs(g) * sp.Abs(sp.Abs(g) ** a - sp.Abs(x) ** a) * indicator(SAME))
C_path = (
    L * eta**2 / 2 * CoordSum(sp.Abs(x) ** pstar) ** (2 / p)
)  # (L eta^2/2)||s(g~)||_p^2 = ... ||g~||_{p*}^{2/(p-1)}

B1_bound = 2 * eta * G**a * CoordSum(sigma) / sp.sqrt(n)  # Lemma 1 (lem:B1)
B2_bound = eta * G**a * CoordSum(sigma) / ((p - 1) * sp.sqrt(n))  # Lemma 2 (lem:B2)
B_bound = (2 * p - 1) / (p - 1) * eta * G**a * CoordSum(sigma) / sp.sqrt(n)  # the 'Therefore' line
C_bound = L * eta**2 * G ** (2 * a) / 2  # term C with Assumption 4

# the assumptions of the lemmas, in distribution form (exactly checkable on finite distributions)
A2 = Assumption("Assumption 2 (unbiased: E[g~] = g)", g, "==", Expect1(x), per_coordinate=True)
A3 = Assumption(
    "Assumption 3 (bounded variance: E|g~_i - g_i|^2 <= sigma_i^2 per sample; sigma_i^2/n_t for a batch, Corollary 2)",
    sigma,
    ">=",
    sp.sqrt(Expect1((x - g) ** 2)),
    per_coordinate=True,
)
A4 = Assumption(
    "Assumption 4 (bounded gradient: ||g~||_{p*} <= G; hence |g~_i|, |g_i| <= G, Corollary 3(b))",
    G,
    ">=",
    Sup1(CoordSum(sp.Abs(x) ** pstar) ** (1 / pstar)),
)
A1 = "Assumption 1 (L-smoothness w.r.t. ||.||_p, for the constant L)"

LEMMA_STATEMENTS = {
    "thm1.B1": (
        "E[eta sum_i |g_t^(i)| (|g_t^(i)|^{1/(p-1)} + |g~_t^(i)|^{1/(p-1)}) 1[sgn(g_t^(i)) != sgn(g~_t^(i))]] "
        "<= 2 eta G^{1/(p-1)} ||sigma||_1 / sqrt(n_t)",
        "Appendix A.1, Lemma 1 (lem:B1)",
    ),
    "thm1.B2": (
        "E[eta sum_i |g_t^(i)| | |g_t^(i)|^{1/(p-1)} - |g~_t^(i)|^{1/(p-1)} | 1[sgn(g_t^(i)) = sgn(g~_t^(i))]] "
        "<= eta G^{1/(p-1)} ||sigma||_1 / ((p-1) sqrt(n_t))",
        "Appendix A.1, Lemma 2 (lem:B2), both cases",
    ),
    "thm1.B": (
        "E[B] = E[eta <g_t, s(g_t) - s(g~_t)>] <= eta (2p-1) G^{1/(p-1)} ||sigma||_1 / ((p-1) sqrt(n_t)) "
        "(the 'Therefore' line; the paper reaches it through B <= B1 + B2 and Lemmas 1 and 2, a route that breaks for "
        "p > 2.7518 where Lemma 2 fails; the records' proof goes through the combined lemma instead)",
        "Appendix A.1, proof of Theorem 1 (the 'Therefore' line); Section 4.1",
    ),
    "thm1.C": (
        "C = (L eta^2/2) ||s(g~_t)||_p^2 = (L eta^2/2) ||g_t||_{p*}^{2/(p-1)} <= L eta^2 G^{2/(p-1)} / 2",
        "Appendix A.1, term C; Section 4.1",
    ),
}

_TERMS = {
    "thm1.B1": (B1_path, B1_bound),
    "thm1.B2": (B2_path, B2_bound),
    "thm1.B": (B_path, B_bound),
    "thm1.C": (C_path, C_bound),
}
LEMMAS = tuple(_TERMS)


def lemma_spec(lemma: str) -> ClaimSpec:
    """E[term] <= bound for one of Theorem 1's terms (Lemmas 1 and 2, the combined bound, term C)."""
    path, bound = _TERMS[lemma]
    stmt, src = LEMMA_STATEMENTS[lemma]
    asm = (A2, A3, A4) + ((A1,) if lemma == "thm1.C" else ())
    return ClaimSpec(
        id=lemma,
        statement=stmt,
        source=src,
        assumptions=asm,
        term=Expect(path),
        bound=bound,
        relation="<=",
        show=("p", "d", "n", "noise", "problem"),
    )


LEMMA_SPECS = {k: lemma_spec(k) for k in LEMMAS}

# ---------------------------------------------------------------------------------------------------
# Theorem 1

THEOREM_ASSUMPTIONS = (
    "Assumption 1 (L-smoothness w.r.t. ||.||_p)",
    "Assumption 2 (unbiased: E[g~] = g)",
    "Assumption 3 (bounded variance: E|g~_i - g_i|^2 <= sigma_i^2 per sample)",
    "Assumption 4 (bounded gradient: ||g~||_{p*} <= G)",
)
# the right-hand side, with m_inv = (1/T) sum_t 1/sqrt(n_t) and S1 = ||sigma||_1, gap = f_0 - f*
THEOREM_TERMS = {
    "(f0-f*)/(eta T)": gap / (eta * T),
    "L eta G^(2/(p-1))/2": L * eta * G ** (2 * a) / 2,
    "noise (2p-1)/(p-1) G^(1/(p-1)) ||sigma||_1 mean(1/sqrt(n_t))": (2 * p - 1) / (p - 1) * G**a * S1 * m_inv,
}
THEOREM_RHS = sum(THEOREM_TERMS.values())
ETA_THEOREM = 1 / (sp.sqrt(L) * G**a * sp.sqrt(T))  # Theorem 1, second display
N_calls = T**2  # n_t = T: N = T^2 gradient calls
RATE_BOUND = N_calls ** sp.Rational(-1, 4) * (
    sp.sqrt(L) * G**a * (gap + sp.Rational(1, 2)) + (2 * p - 1) / (p - 1) * G**a * S1
)
# the expected one-step inequality of the proof ('Therefore' line), per step
STEP_RHS = eta * (2 * p - 1) / (p - 1) * G**a * S1 / sp.sqrt(n) + L * eta**2 * G ** (2 * a) / 2

THEOREM_STATEMENT = (
    "E[(1/T) sum_{t=0}^{T-1} ||g_t||_{p*}^{p*}] <= (f_0 - f*)/(eta T) + L eta G^{2/(p-1)}/2 "
    "+ (1/T) sum_{t=0}^{T-1} (2p-1)/(p-1) G^{1/(p-1)} ||sigma||_1 / sqrt(n_t)"
)
RATE_STATEMENT = (
    "With n_t = T, N = T^2 and eta = 1/(L^{1/2} G^{1/(p-1)} T^{1/2}): E[(1/T) sum_t ||g_t||_{p*}^{p*}] <= "
    "N^{-1/4} [L^{1/2} G^{1/(p-1)} (f_0 - f* + 1/2) + (2p-1)/(p-1) G^{1/(p-1)} ||sigma||_1], i.e. "
    "N in O(eps^{-4}) gradient queries reach an eps-approximate stationary point"
)
STEP_STATEMENT = (
    "f(theta_{t+1}) <= f(theta_t) - A + B + C (pathwise, from Assumption 1) and "
    "eta E||g_t||_{p*}^{p*} <= f(theta_t) - f(theta_{t+1}) + eta (2p-1) G^{1/(p-1)} ||sigma||_1/((p-1) sqrt(n_t)) "
    "+ L eta^2 G^{2/(p-1)}/2 (in expectation)"
)
THEOREM_SOURCE = "Theorem 1 (Section 4.1); proof in Appendix A.1"


def numeric(expr, **values) -> float:
    """``expr`` at the given numbers (float64), for the scalar formulas (theorem bounds, step sizes)."""
    from ..api import Env, evaluate

    return float(evaluate(expr, Env(scalars=values))[0])


# ---------------------------------------------------------------------------------------------------
# Section 4.2: the first step of Lion-K and Stacey(p,2)

beta1, tau, alpha, eps = sp.symbols("beta1 tau alpha epsilon", nonnegative=True)


def s_eps(v):
    """s^eps (Alg. 1/2 line 4): v / (|v|^{(p-2)/(p-1)} + eps)."""
    return v / (sp.Abs(v) ** ((p - 2) / (p - 1)) + eps)


def stacey_p2_first_step(gv):
    """Section 4.2: theta_1 = -(1-tau) eta s^eps((1-beta1) g~_0) - tau alpha (1-beta1) g~_0 (per coordinate)."""
    c = (1 - beta1) * gv
    return -(1 - tau) * eta * s_eps(c) - tau * alpha * c


def lionk_first_step(gv):
    """Section 4.2: theta_1 = -eta grad K((1-beta1) g~_0), K = ||.||_{p*} (per coordinate; the norm is a
    CoordSum over the coordinates)."""
    c = (1 - beta1) * gv
    norm = CoordSum(sp.Abs((1 - beta1) * g) ** pstar) ** (1 / pstar)
    return -eta * sp.sign(c) * sp.Abs(c) ** (pstar - 1) / norm ** (pstar - 1)
