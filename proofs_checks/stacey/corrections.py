"""What holds instead (``lptheory check corrections``): corrected statements for the paper's claims that the
other checks find violated, each found and re-checked by the toolkit.

* ``thm1.B2.corrected`` (Lemma 2): the best constant kappa(p) in
  E[B2] <= kappa(p) eta G^{1/(p-1)} ||sigma||_1 / ((p-1) sqrt(n_t)). The adversarial search's worst cases
  collapse to one coordinate taking the value -1 with probability q and a value just above 0 (same sign)
  otherwise; along that family the ratio tends, as the small value tends to 0 (a sympy limit), to
  R_p(q) = (p-1) [q^2 (1 - q^a) + (1-q) q^{1+a}] / sqrt(q (1-q)), a = 1/(p-1), and kappa(p) =
  max(1, sup_q R_p(q)). Evidence: the limit (sympy), witnesses of the family re-checked at 60 digits
  approaching kappa (tight), and the lemmas' adversarial search re-run against kappa * bound with wider
  spaces (joint supports across coordinates, batches up to 8, p up to 50).
* ``thm1.corrected`` (Theorem 1): the corrected lemma through the proof. Lemmas 1 + corrected 2 give the
  noise coefficient 2 + kappa(p)/(p-1) instead of (2p-1)/(p-1); the paper's coefficient itself still
  follows from the combined lemma E[B] <= (2p-1)/(p-1) eta G^{1/(p-1)} ||sigma||_1 / sqrt(n_t), which is
  re-checked here by the same search (it holds), so Theorem 1 stands with a different proof.
* ``asm1.corrected`` (Assumption 1): L_lip <= 2^{1-2/p} L_two-sided, tight at diag(1, -1) (d = 2, exact),
  searched for d = 2..8 (lower-bound estimates of both constants: no counterexample found).
* ``lionk.corrected`` (Section 4.2): Lion-K's first step equals Stacey(p,2)'s at tau = 0, eps = 0 exactly
  when Lion-K's step size is eta ||c||_{p*}^{1/(p-1)}, c = (1 - beta1) g~_0 (proved with sympy; checked in
  float64).
* ``sym.<proof>.<step>.corrected`` (Appendix A.1): the violated proof steps with a local repair
  (:func:`symbolic.corrected_steps`), checked by the symbolic audit's own step check.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import mpmath
import numpy as np
import sympy as sp

from ..api import (
    Claim,
    ClaimSpec,
    Distribution,
    DistributionSpace,
    SearchJob,
    adversarial_search_many,
    as_correction,
    cached_limit,
    certify,
    expression_witness,
    family_supremum,
    planted_scale_control,
    prove_identity,
    recheck,
    value_claim,
)
from . import formulas as F
from .combined_proof import b2_bound_proof, prove_records
from .lemmas import NONDEGENERATE, SEARCH_BUDGET, SEARCH_CONFIGS

DEFAULT_P = (3.0, 4.0, 8.0, 16.0, 50.0)
WIDER = {  # added to the lemmas' spaces for the re-check: coupled coordinates, larger batches
    "full": [
        (2, 2, 1, "joint"),
        (2, 3, 1, "joint"),
        (3, 3, 1, "joint"),
        (1, 2, 6, "independent"),
        (1, 2, 8, "independent"),
        (2, 2, 4, "joint"),
    ],
    "quick": [(2, 2, 1, "joint"), (1, 2, 6, "independent")],
}

q_, e_ = sp.symbols("q epsilon", positive=True)


r_ = sp.Symbol("r", positive=True)  # r = p - 1 > 0


@functools.lru_cache(maxsize=1)
def _b2_limit():
    """The B2 ratio along the worst-case family for symbolic p = 1 + r (one coordinate; -1 with
    probability q, -epsilon otherwise; eta = n = 1; G = 1, sigma the exact standard deviation), and its
    limit epsilon -> 0+, taken once by sympy for every p > 1: ``(ratio, limit, how)``."""
    a = 1 / r_
    ag = q_ + (1 - q_) * e_  # |g| for 0 < epsilon < 1 (g = -ag)

    def f(absx):  # |g| | |g|^a - |x|^a |, same sign (both outcomes negative like g)
        return ag * sp.Abs(ag**a - absx**a)

    term = q_ * f(sp.Integer(1)) + (1 - q_) * f(e_)
    sig = sp.sqrt(q_ * (1 - ag) ** 2 + (1 - q_) * (ag - e_) ** 2)
    ratio = term / (sig / r_)  # bound: G^a sigma / ((p - 1) sqrt(n)) with G = eta = n = 1
    at0 = r_ * (q_**2 * (1 - q_**a) + (1 - q_) * q_ ** (1 + a)) / sp.sqrt(q_ * (1 - q_))
    try:
        lim = cached_limit(ratio, e_, 0, "+")
        how = "sympy limit epsilon -> 0+, for every p > 1"
    except Exception:  # noqa: BLE001 (sympy raises several kinds): the closed form, by continuity
        lim, how = at0, "continuity (sympy's limit did not return)"
    return ratio, lim, at0, how


def b2_family(p: float):
    """``(ratio(q, epsilon), limit(q), how)`` at this p; the limit is checked against the closed form
    R_p(q) = (p-1) [q^2 (1 - q^a) + (1-q) q^{1+a}] / sqrt(q (1-q)) at several q (it must agree)."""
    ratio, lim, at0, how = _b2_limit()
    rv = sp.nsimplify(p) - 1
    lim_p, at0_p = lim.subs(r_, rv), at0.subs(r_, rv)
    for qv in (sp.Rational(1, 5), sp.Rational(1, 2), sp.Rational(4, 5)):
        a_, b_ = complex(sp.N(lim_p.subs(q_, qv), 30)), complex(sp.N(at0_p.subs(q_, qv), 30))
        if abs(a_ - b_) > 1e-20 * max(1.0, abs(b_)):
            raise AssertionError(f"Lemma 2 family: the limit {a_} and the closed form {b_} disagree at q = {qv}")
    return ratio.subs(r_, rv), at0_p, how


def kappa_b2(p: float) -> dict:
    _, at0, how = b2_family(p)
    f = sp.lambdify(q_, at0, "mpmath")
    with mpmath.workdps(30):  # local precision: the process-wide mpmath setting is left as it was
        sup, arg = family_supremum(lambda qv: float(f(mpmath.mpf(qv))), 1e-9, 1 - 1e-9)
    return {"kappa": max(1.0, sup), "sup": sup, "q": arg, "how": how, "formula": str(at0)}


def _family_witnesses(p: float, q: float, kappa: float) -> list[dict]:
    """Admissible two-point distributions with epsilon -> 0 at the maximizing q, each re-checked at 60
    digits by the import-free re-check: their ratios approach kappa (the constant is tight)."""
    spec = F.LEMMA_SPECS["thm1.B2"]
    out = []
    for eps in (1e-6, 1e-30, 1e-100, 1e-300):
        vals = np.array([[-1.0, -eps]])
        w = np.array([[q, 1 - q]])
        dist = Distribution(vals, w, 1)
        g = float((vals * w).sum())
        sig = math.sqrt(float((w * (vals - g) ** 2).sum()))
        wit = expression_witness(
            spec, scalars={"p": p, "eta": 1.0, "n": 1.0, "G": 1.0}, coords={"g": [g], "sigma": [sig]}, dist=dist
        )
        chk = recheck(wit)
        out.append(
            {"epsilon": eps, "ratio": chk["empirical"] / chk["bound"], "assumptions_ok": chk.get("assumptions_ok")}
        )
    return out


def _spaces(mode: str):
    base = [DistributionSpace(d, k, n) for d, k, n in SEARCH_CONFIGS[mode]]
    return base + [DistributionSpace(d, k, n, coupling=c) for d, k, n, c in WIDER[mode]]


def b2_records(p_list, *, seed: int, quick: bool, workers: int = 1, progress=None) -> list[Claim]:
    """thm1.B2.corrected per p where Lemma 2 fails, and thm1.corrected (the consequence for Theorem 1)."""
    mode = "quick" if quick else "full"
    spaces = _spaces(mode)
    spec_b2, spec_b = F.LEMMA_SPECS["thm1.B2"], F.LEMMA_SPECS["thm1.B"]
    out, consequences = [], []
    todo = []
    for p in p_list:
        k = kappa_b2(p)
        if k["kappa"] <= 1.0:
            continue  # Lemma 2 holds at this p along the family: no correction
        todo.append((p, k))
    # one search serves both jobs of a p: B2 against kappa * bound, and the combined lemma B at the paper's
    # constant; the searches of every p run in lockstep (p per row), each with the record it gets alone
    jobs, params = [], []
    for p, k in todo:
        jobs += [
            SearchJob(spec_b2, np.random.SeedSequence([seed, int(p * 1000), 21]), k["kappa"], NONDEGENERATE, {"p": p}),
            SearchJob(spec_b, np.random.SeedSequence([seed, int(p * 1000), 22]), 1.0, NONDEGENERATE, {"p": p}),
        ]
        params += [{"p": p, "lemma": "thm1.B2"}, {"p": p, "lemma": "thm1.B"}]
    recs = adversarial_search_many(
        jobs, spaces, params, scalars={"eta": 1.0, "L": 1.0}, budget=SEARCH_BUDGET[mode], workers=workers
    )
    for i, (p, k) in enumerate(todo):
        kappa = k["kappa"]
        a_txt = f"1/{p - 1:g}"
        wits = _family_witnesses(p, k["q"], kappa)
        rec_b2 = recs[2 * i]
        rec_b = prove_records([recs[2 * i + 1]])[0]  # the combined lemma: proved for every law (combined_proof)
        general = (
            "E[B2] <= kappa(p) eta G^(1/(p-1)) ||sigma||_1 / ((p-1) sqrt(n_t)) with kappa(p) = max(1, sup_q R_p(q)), "
            "R_p(q) = (p-1)[q^2 (1 - q^a) + (1-q) q^(1+a)] / sqrt(q(1-q)), a = 1/(p-1)"
        )
        corrected = f"{general}; at p = {p:g}: kappa = {kappa:.6g} (sup at q = {k['q']:.4f}, a = {a_txt})"
        evidence = [
            {
                "kind": "proved-symbolically",
                "detail": f"R_p(q) is the ratio's limit along the two-point family "
                f"(value -1 w.p. q, -epsilon otherwise) as epsilon -> 0+ ({k['how']}); its supremum over q is "
                "numerical (R_p evaluated with mpmath on a 400-point grid of q, then a bounded refinement)",
            },
            {
                "kind": "tight-by-witness",
                "detail": "admissible two-point distributions (Assumptions 2-4 met "
                "exactly), re-checked at 60 digits: ratio "
                + ", ".join(f"{w['ratio']:.8g} at epsilon = {w['epsilon']:g}" for w in wits)
                + f" -> kappa = {kappa:.8g}",
            },
        ]
        cons = (
            f"Theorem 1's noise coefficient: via Lemmas 1 + corrected 2, 2 + kappa/(p-1) = {2 + kappa / (p - 1):.6g}; the "
            f"paper's (2p-1)/(p-1) = {(2 * p - 1) / (p - 1):.6g} (ratio {(2 + kappa / (p - 1)) / ((2 * p - 1) / (p - 1)):.4g}). "
            f"The paper's coefficient still follows from the combined lemma thm1.B, which holds in the same search "
            f"(worst ratio {float(rec_b.empirical) / float(rec_b.bound):.4g})"
        )
        up = b2_bound_proof(p)  # a proved upper bound kappa(p) <= p/2; the attained kappa must lie below it
        up_ok = up["proved"] and kappa <= up["K"]
        evidence.append(
            {
                "kind": "proved" if up_ok else "inconclusive",
                "detail": f"kappa(p) <= p/2 = {up['K']:g} (the attained kappa = {kappa:.6g} lies below it"
                + ("" if kappa <= up["K"] else ": NOT, the proof is refuted")
                + f"): {up['detail']}",
            }
        )
        rec = as_correction(
            rec_b2, spec_b2, kappa, corrected_statement=corrected, evidence=evidence, tight=True, consequence=cons
        )
        rec.data["correction"]["kappa_upper_proved"] = up["K"] if up_ok else None
        rec.statement = general  # the same claim at every p (the table groups by it); kappa(p) is a parameter
        rec.show = [*(rec.show or []), "kappa"]
        rec.data["correction"]["family_curve"] = _curve(p)
        # power: a planted 25% violation (kappa / 1.25) through the same search; kappa is attained along the
        # two-point family (tight-by-witness above)
        out += planted_scale_control(rec, attained="kappa is attained along the two-point family (tight by witness)")
        consequences.append((p, kappa, rec_b))
        if progress:
            progress(f"corrections B2 p={p:g}: kappa {kappa:.4g}, re-check {rec.status}")
    if consequences:
        out.append(_theorem_record(consequences, seed=seed, quick=quick))
    return out


def _curve(p: float) -> dict:
    _, at0, _ = b2_family(p)
    f = sp.lambdify(q_, at0, "numpy")
    qs = np.linspace(0.01, 0.99, 99)
    return {"q": qs.tolist(), "ratio": [float(v) for v in f(qs)]}


THM_SPEC = ClaimSpec(
    id="thm1.corrected",
    statement="Theorem 1's noise term keeps its coefficient (2p-1)/(p-1) through the combined lemma E[B] <= "
    "(2p-1)/(p-1) eta G^(1/(p-1)) ||sigma||_1 / sqrt(n_t) (not through Lemmas 1 and 2, which would give "
    "2 + kappa(p)/(p-1)); the theorem's other steps (the descent step under Assumption 1, terms A and C, the "
    "telescoping) are checked by their own records (thm1.A, thm1.C, sym.thm1.*), not by this one",
    source="consequence of thm1.B2.corrected for Theorem 1 (Appendix A.1)",
    assumptions=F.THEOREM_ASSUMPTIONS[1:],  # the noise term uses Assumptions 2-4 (Assumption 1: the other steps)
    term=sp.Symbol("worst_ratio_B"),
    bound=sp.Integer(1),
    show=("p",),
)


def alg3_margins(p: float, kappa: float, *, seed: int, quick: bool) -> dict:
    """Runs of Alg. 3 (Theorem 1's step size, Rademacher noise, n_t = 1, the separable nonconvex problem of
    ``thm1.bound``) against the paper's right-hand side and the right-hand side with the noise coefficient
    of Lemmas 1 + corrected 2 (2 + kappa/(p-1)): the mean of (1/T) sum_t ||g_t||_{p*}^{p*} over replicates,
    its one-sided 95% Student-t upper limit, and each bound's margin (bound / upper limit)."""
    from synthetic.oracle import GradientOracle

    from ..api import t_ppf
    from .theorem1 import grad_term_run, make_setting, theorem_eta, theorem_rhs

    T, R = (64, 32) if quick else (256, 64)
    problem, noise = make_setting("rademacher", 0.5, 20, 0)
    oracle = GradientOracle(problem, noise, batch=1)
    L, G = problem.certificate("L")(p), oracle.certified_G(p)
    eta = theorem_eta(L, G, T, p)
    tr = grad_term_run(problem, oracle, p=p, eta=eta, T=T, replicates=R, seed=seed, L=L)  # (the gp of trajectory)
    f_gap = float(problem.f(problem.x0(1))[0] - problem.certificate("f_star")())
    rhs = theorem_rhs(f_gap=f_gap, eta=eta, T=T, L=L, G=G, p=p, sigma_l1=float(noise.sigma.sum()), batches=[1] * T)
    lhs = tr["gp"].mean(axis=0)
    mean, se = float(lhs.mean()), float(lhs.std(ddof=1) / math.sqrt(R))
    upper = mean + t_ppf(0.95, R - 1) * se
    noise_key = next(k for k in rhs if k.startswith("noise"))
    paper = rhs["total"]
    corrected = paper + rhs[noise_key] * ((2 + kappa / (p - 1)) / ((2 * p - 1) / (p - 1)) - 1)
    return {
        "T": T,
        "R": R,
        "alg3_mean": mean,
        "alg3_upper95": upper,
        "paper_rhs": paper,
        "corrected_rhs": corrected,
        "paper_margin": paper / upper,
        "corrected_margin": corrected / upper,
        "holds_empirically": bool(upper <= paper),
    }


def _theorem_record(cons, *, seed: int = 0, quick: bool = True) -> Claim:
    worst = max(float(r.empirical) / float(r.bound) for _, _, r in cons)
    rows = [
        {
            "p": p,
            "kappa": kappa,
            "paper_coefficient": (2 * p - 1) / (p - 1),
            "lemmas_1_2_corrected": 2 + kappa / (p - 1),
            "ratio": (2 + kappa / (p - 1)) / ((2 * p - 1) / (p - 1)),
            "combined_lemma_worst_ratio": float(r.empirical) / float(r.bound),
            "combined_lemma_status": r.status,
            **alg3_margins(p, kappa, seed=seed, quick=quick),
        }
        for p, kappa, r in cons
    ]
    ok = all(r.status == "holds" for _, _, r in cons)
    text = "; ".join(
        f"p = {r['p']:g}: paper {r['paper_coefficient']:.4g}, via corrected Lemma 2 {r['lemmas_1_2_corrected']:.4g} "
        f"(x{r['ratio']:.3g}), combined lemma worst ratio {r['combined_lemma_worst_ratio']:.3g}, "
        f"Alg. 3 (T = {r['T']}, {r['R']} runs) {r['alg3_mean']:.3g} (95% upper {r['alg3_upper95']:.3g}) against "
        f"the paper's bound {r['paper_rhs']:.3g} (margin x{r['paper_margin']:.3g})"
        for r in rows
    )
    rec = value_claim(
        THM_SPEC,
        worst,
        1.0,
        {"p": [r["p"] for r in rows], "setting": "the lemmas' search spaces plus coupled coordinates and batches"},
        method="adversarial-search",
        note=(
            "the combined lemma holds at every p, so Theorem 1's bound stands as stated; "
            if ok
            else "the combined lemma fails somewhere: Theorem 1's bound needs the corrected constant; "
        )
        + text,
        witness=None,
    )
    proved = ok and all(r.evidence == "proved" for _, _, r in cons)
    certs = []  # the combined lemma's certificates, one per p (combined_proof): the theorem's coefficient rests on them
    for _, _, r in cons:
        c = (r.data or {}).get("certificate")
        certs += [u for u in (c if isinstance(c, list) else [c]) if u]
    if proved:  # the combined lemma is proved at every p (combined_proof): so is the theorem's coefficient
        K = {p: r.data["proof"]["K"] for p, _, r in cons}
        rec = dataclasses.replace(
            rec,
            evidence="proved",
            data={**(rec.data or {}), "certificate": certs},
            scope=(
                f"the noise term only: proved for every law meeting Assumptions 2-4 at p = "
                f"{', '.join(f'{p:g}' for p in K)} (every d, n_t, G, sigma) by the combined lemma's proof "
                "(proofs_checks/stacey/combined_proof.py); the adversarial search is a cross-check; Theorem 1's "
                "other steps are not covered by this record"
            ),
            reason=(
                "proved (the noise term): the combined lemma holds with the coefficient K(p) = M_a/2 < 1 <= "
                "(2p-1)/(p-1) ("
                + ", ".join(f"p = {p:g}: K = {k:.4g}" for p, k in K.items())
                + f"; proofs_checks/stacey/combined_proof.py), so the noise coefficient of Theorem 1 stands; the "
                f"theorem's other steps are checked by their own records; the search: {rec.reason}"
            ),
        )
    bad = [f"{r['p']:g}" for r in rows if not r["holds_empirically"]]
    alg3_text = (
        (
            "Runs of Alg. 3 exceed the paper's bound at p = " + ", ".join(bad)
            if bad
            else "Runs of Alg. 3 (Rademacher noise, n_t = 1, Theorem 1's step size) stay below the paper's bound at every p"
        )
        + "; margins (bound / 95% upper limit of the measured average): "
        + ", ".join(f"p = {r['p']:g}: x{r['paper_margin']:.3g}" for r in rows)
        + " (more settings: lptheory check theorem1)"
    )
    rec.data = {
        "correction": {
            "claimed": F.THEOREM_STATEMENT,
            "corrected": THM_SPEC.statement,
            "rows": rows,
            "evidence": [{"kind": "holds-in-search" if ok else "violated-in-search", "detail": text}]
            + (
                [{"kind": "proved", "detail": "the combined lemma, proved with K(p) = M_a/2 < 1 (combined_proof)"}]
                if proved
                else []
            ),
            "consequence": alg3_text,
        },
        **({"certificate": certs} if proved else {}),
    }
    return rec


# ---------------------------------------------------------------------------------------------------
# Assumption 1

ASM_SPEC = ClaimSpec(
    id="asm1.corrected",
    statement="sup_{u,v} u^T H v / (||u||_p ||v||_p) <= 2^(1-2/p) sup_w |w^T H w| / ||w||_p^2 for symmetric H "
    "(the Lipschitz constant of the gradient of a quadratic against its two-sided constant)",
    source="correction of asm1.equivalence (Assumption 1, Section 3)",
    assumptions=("symmetric H", "p >= 2"),
    term=sp.Symbol("ratio"),
    bound=sp.Symbol("c"),
    show=("p", "d"),
)


_T = sp.Symbol("t", real=True)


def _nonneg_on_unit_interval(expr) -> bool:
    """Whether the polynomial ``expr`` in ``_T`` (rational coefficients) is >= 0 on [0, 1], decided exactly:
    no factor of odd multiplicity of its square-free decomposition has a root inside (0, 1) (sympy's exact
    real-root count), so its sign is constant there, and that sign is read at a rational point where it does
    not vanish: one of the deg + 1 points k / (deg + 2), k = 1..deg + 1 (a nonzero polynomial of degree deg
    has at most deg roots)."""
    P = sp.Poly(sp.expand(expr), _T)
    if not (P.domain.is_ZZ or P.domain.is_QQ):  # floats or symbols: no exact decision
        raise ValueError(f"expr must be a polynomial in t with rational coefficients, got domain {P.domain}")
    if P.is_zero:
        return True
    for f, m in sp.sqf_list(P)[1]:
        if m % 2 == 1 and f.count_roots(0, 1) - int(f.eval(0) == 0) - int(f.eval(1) == 0) > 0:
            return False
    n = P.degree() + 2
    for k in range(1, n):
        v = P.eval(sp.Rational(k, n))
        if v != 0:
            return bool(v > 0)
    raise AssertionError(
        "unreachable: a nonzero polynomial of degree deg vanishes at deg + 1 points"
    )  # pragma: no cover


def asm1_proof(p) -> dict:
    """An exact proof, at integer p >= 2, of ``asm1.corrected`` for every symmetric H in every dimension d:
    sup_{u,v} u^T H v / (||u||_p ||v||_p) <= 2^(1-2/p) sup_w |w^T H w| / ||w||_p^2 (Assumption 1's Lipschitz
    constant of a quadratic against its two-sided constant). The argument; sympy decides its algebraic facts
    (the identity of step 1, the one-variable polynomial inequalities of steps 3 and 4, the arithmetic of step
    5), while the glue is argued here: the triangle inequality and the definition of L_2s (step 2), homogeneity
    (the reductions to [0, 1]), summing over coordinates and the monotonicity of x -> x^(2/p):

    1. polarization: 4 u^T H v = (u+v)^T H (u+v) - (u-v)^T H (u-v) for symmetric H. The difference of the two
       sides is sum_{i,j} h_ij f(i, j); f(i, i) = 0 and f(i, j) + f(j, i) = 0 as polynomials in
       u_i, u_j, v_i, v_j, so it vanishes in every d;
    2. hence for ||u||_p = ||v||_p = 1: 4 |u^T H v| <= L_2s (||u+v||_p^2 + ||u-v||_p^2);
    3. power mean (p >= 2): a^2 + b^2 <= 2 ((a^p + b^p) / 2)^(2/p) for a, b >= 0; homogeneous and symmetric, so
       with s = min/max in [0, 1]: ((1+s^2)/2)^(p/2) <= (1+s^p)/2 (squared at odd p): a polynomial
       inequality on [0, 1], decided exactly;
    4. Clarkson's scalar inequality: |a+b|^p + |a-b|^p <= 2^(p-1) (|a|^p + |b|^p); symmetric in a, b and their
       signs, so with t = min(|a|, |b|)/max in [0, 1]: (1+t)^p + (1-t)^p <= 2^(p-1) (1 + t^p), decided exactly;
       summed over the coordinates: ||u+v||^p + ||u-v||^p <= 2^(p-1) (||u||^p + ||v||^p) = 2^p;
    5. so ||u+v||^2 + ||u-v||^2 <= 2 (2^(p-1))^(2/p) = 2^(3-2/p), and |u^T H v| <= 2^(1-2/p) L_2s.

    Negative controls, through the same decision: Clarkson's inequality with 2^(p-2) in place of 2^(p-1) and
    (p >= 3; an equality at p = 2) the power mean reversed must be found false. Returns {"proved": bool, "steps":
    [(name, ok)], "controls": [(name, found false)], "detail": text}; at a non-integer p (the polynomials
    are not polynomials), {"proved": False, ...} with the reason."""
    if not float(p).is_integer() or p < 2:
        return {
            "proved": False,
            "steps": [],
            "controls": [],
            "detail": f"p = {p:g}: the exact proof needs an integer p >= 2",
        }
    n = int(p)
    t = _T
    ui, uj, vi, vj = sp.symbols("u_i u_j v_i v_j", real=True)

    def f(a_i, a_j, b_i, b_j):  # the (i, j) coefficient's bracket of polarization's difference
        return (a_i + b_i) * (a_j + b_j) - (a_i - b_i) * (a_j - b_j) - 4 * a_i * b_j

    polar = sp.expand(f(ui, uj, vi, vj) + f(uj, ui, vj, vi)) == 0 and sp.expand(f(ui, ui, vi, vi)) == 0
    half = sp.Rational(1, 2)
    power_mean = (
        (1 + t**n) * half - ((1 + t**2) * half) ** (n // 2)
        if n % 2 == 0
        else ((1 + t**n) * half) ** 2 - ((1 + t**2) * half) ** n
    )

    def clarkson(k):  # (1+t)^p + (1-t)^p <= k (1 + t^p): Clarkson's constant is k = 2^(p-1)
        return k * (1 + t**n) - (1 + t) ** n - (1 - t) ** n

    K = sp.Integer(2) ** (n - 1)  # the one constant of step 4, the arithmetic and the control
    q = sp.Rational(2, n)
    arith = sp.simplify(2 * K**q - 2 ** (3 - q)) == 0 and sp.simplify(2 ** (3 - q) / 4 - 2 ** (1 - q)) == 0
    steps = [
        ("polarization, every d", polar),
        ("power mean on [0, 1]", _nonneg_on_unit_interval(power_mean)),
        ("Clarkson's scalar inequality on [0, 1]", _nonneg_on_unit_interval(clarkson(K))),
        ("2 (2^(p-1))^(2/p) / 4 = 2^(1-2/p)", arith),
    ]
    controls = [("Clarkson with 2^(p-2)", not _nonneg_on_unit_interval(clarkson(K / 2)))]
    if n >= 3:  # at p = 2 the power mean is an equality: its reverse is true too
        controls.append(("power mean reversed", not _nonneg_on_unit_interval(-power_mean)))
    proved = all(ok for _, ok in steps) and all(ok for _, ok in controls)
    detail = (
        f"every d, symmetric H, p = {n}: polarization 4 u^T H v = (u+v)^T H (u+v) - (u-v)^T H (u-v) (sympy, per "
        "coefficient pair), the power mean ((1+s^2)/2)^(p/2) <= (1+s^p)/2 and Clarkson's (1+t)^p + (1-t)^p <= "
        "2^(p-1)(1+t^p) on [0, 1] (exact polynomial inequalities: sympy's real-root count), so ||u+v||^2 + "
        "||u-v||^2 <= 2^(3-2/p) for unit u, v and u^T H v <= 2^(1-2/p) L_2s: "
        + ", ".join(f"{name}: {'holds' if ok else 'NOT shown'}" for name, ok in steps)
        + "; negative controls through the same decision: "
        + ", ".join(f"{name}: {'found false' if ok else 'NOT found false'}" for name, ok in controls)
    )
    return {"proved": proved, "steps": steps, "controls": controls, "detail": detail}


def asm1_records(p_list, *, seed: int, quick: bool) -> list[Claim]:
    from lptheory.geometry import lp_norm
    from synthetic.smoothness import quad_forms

    from .smoothness import lipschitz_constant, two_sided_constant, two_sided_lower

    dims = (2, 3, 4) if quick else (2, 3, 4, 6, 8)
    n_rand = 8 if quick else 30
    out = []
    for p in p_list:
        c = 2 ** (1 - 2 / p)
        # d = 2, exact: diag(1, -1) attains c (two-sided constant on a dense angular grid)
        H2 = np.diag([1.0, -1.0])
        tight = lipschitz_constant(H2, p, starts=16, iters=100)[0] / two_sided_constant(H2, p)
        rng = np.random.default_rng([seed, 909, int(p * 1000)])
        worst, worst_d = 0.0, 2
        per_d = {}
        for d in dims:
            half = np.diag([1.0] * (d // 2) + [-1.0] * (d - d // 2))  # the d = 2 worst case, spread over d
            cands = [half] + [np.diag(rng.choice([-1.0, 1.0], d)) for _ in range(2)]
            cands += [(lambda A: (A + A.T) / 2)(rng.standard_normal((d, d))) for _ in range(n_rand)]
            cands += [(lambda A: (A + A.T) / 2)(rng.choice([-1.0, 1.0], (d, d))) for _ in range(n_rand)]
            best = 0.0
            U = rng.standard_normal((4000, d))
            nU = lp_norm(U, p)  # the random directions' norms, once per d (a row's norm is its own: same bits)
            r = p / (p - 2)
            for H in cands:
                if np.count_nonzero(H - np.diag(np.diag(H))) == 0:  # diagonal: both constants exactly
                    h = np.diag(H)
                    two = max(float(lp_norm(np.maximum(h, 0), r)), float(lp_norm(np.maximum(-h, 0), r)))
                    lip = float(lp_norm(h, r))
                else:
                    lip = lipschitz_constant(H, p, starts=8, iters=60, seed=int(rng.integers(1 << 30)))[0]
                    eig = np.ascontiguousarray(np.linalg.eigh(H)[1].T)
                    dirs = np.vstack([U, eig])
                    den = np.concatenate([nU, lp_norm(eig, p)]) ** 2
                    two = float(np.max(np.abs(quad_forms(dirs, H)) / den))  # einsum("ni,ij,nj->n")'s bits
                    if lip / two > 0.97 * c:  # close to the bound: refine the two-sided estimate (Nelder-Mead)
                        two = max(two, two_sided_lower(H, p, np.random.default_rng(int(rng.integers(1 << 30)))))
                best = max(best, lip / max(two, 1e-300))
            per_d[d] = best
            if best > worst:
                worst, worst_d = best, d
        rec = value_claim(
            ASM_SPEC,
            worst,
            c * (1 + 1e-6),
            {"p": p, "d": worst_d, "dims": list(dims), "candidates per d": 3 + 2 * n_rand},
            method="adversarial-search",
            budget=f"{3 + 2 * n_rand} matrices per d, d in {list(dims)}",
            note=f"tight at d = 2: diag(1, -1) gives {tight:.6f} = 2^(1-2/p) = {c:.6f} (and diag(1, .., -1, ..) in every even d; "
            f"diagonal matrices are evaluated exactly: ||h||_r against max(||h+||_r, ||h-||_r), r = p/(p-2)); searched d in {list(dims)} "
            "(off the diagonal both constants are lower bounds, so their ratio bounds the true ratio in neither "
            "direction: a value above the bound would be inconclusive, not a witness); worst per d: "
            + ", ".join(f"d={d}: {v:.4f}" for d, v in per_d.items()),
        )
        proof = asm1_proof(p)
        cert = None
        if proof["proved"] and rec.status == "holds":  # the search's holds, now for every d
            cert = certify("exact-polynomial", f"Assumption 1's two forms at p = {p:g}, every d: {proof['detail']}")
            rec = dataclasses.replace(
                rec,
                evidence="proved",
                reason=f"proved, {proof['detail']}; the search: {rec.reason}",
                data={**(rec.data or {}), "certificate": cert},
                scope=(
                    f"proved for every d and every symmetric H at p = {p:g} (exact polynomial inequalities, sympy); "
                    f"the search ({rec.scope}) is a cross-check"
                ),
            )
        rec.data = {
            "correction": {
                "claimed": "Assumption 1's two forms are equivalent (the same L)",
                "corrected": ASM_SPEC.statement + f"; at p = {p:g}: 2^(1-2/p) = {c:.6g}",
                "kappa": c,
                "evidence": [
                    {"kind": "tight-by-witness", "detail": f"H = diag(1, -1) (d = 2): ratio {tight:.8g} = 2^(1-2/p)"},
                    *(  # the exact proof for every d (integer p only)
                        [
                            {
                                "kind": "proved-symbolically" if proof["proved"] else "inconclusive",
                                "detail": proof["detail"],
                            }
                        ]
                        if proof["steps"]
                        else []
                    ),
                    {
                        "kind": "holds-in-search" if worst <= c * (1 + 1e-6) else "inconclusive",
                        "detail": f"d in {list(dims)}, {3 + 2 * n_rand} matrices per d: worst estimated ratio {worst:.6g} "
                        f"(at d = {worst_d})"
                        + ("; no d > 2 exceeded d = 2's constant" if worst <= c * (1 + 1e-6) else ""),
                    },
                ],
                "per_d": per_d,
                "consequence": "Theorem 1 only uses the upper quadratic bound, which either form implies: unaffected",
            },
            **({"certificate": cert} if cert else {}),
        }
        out.append(rec)
    return out


# ---------------------------------------------------------------------------------------------------
# Lion-K and Stacey(p,2)

LION_SPEC = ClaimSpec(
    id="lionk.corrected",
    statement="Lion-K (K = ||.||_{p*}) with step size eta ||c||_{p*}^{1/(p-1)}, c = (1 - beta1) g~_0, and "
    "Stacey(p,2) with step size eta at tau = 0, eps = 0 take the same first step, for every g~_0 and p > 1",
    source="correction of lionk.first-step (Section 4.2)",
    assumptions=("theta_0 = z_0 = m_0 = 0", "tau = 0", "eps = 0"),
    term=sp.Symbol("max_abs_difference"),
    bound=sp.Float(1e-12),
    show=("p",),
)


def lionk_records(p_list, *, seed: int) -> list[Claim]:
    from lptheory.geometry import dual_exponent, lp_norm
    from lptheory.optimizers import StaceyP2

    # symbolic: per coordinate, Lion-K = -eta_K sgn(c_i)|c_i|^(p*-1)/N^(p*-1) with N = ||c||_{p*}; Stacey =
    # -eta sgn(c_i)|c_i|^(1/(p-1)); with eta_K = eta N^(1/(p-1)) the difference is 0 because p* - 1 = 1/(p-1)
    pp, ci, N, eta = sp.symbols("p c_i N eta", positive=True)
    ps = pp / (pp - 1)
    lion = -(eta * N ** (1 / (pp - 1))) * ci ** (ps - 1) / N ** (ps - 1)
    stacey = -eta * ci ** (1 / (pp - 1))
    identity = prove_identity(lion, stacey, how="positive symbols, powers combined")  # the toolkit decides it
    proved = identity["proved"]
    rng = np.random.default_rng([seed, 404])
    out = []
    for p in p_list:
        worst = 0.0
        for _ in range(20):
            g0 = rng.standard_normal(5) * np.exp(rng.uniform(-3, 3, 5))
            b1, e = 0.9, 0.1
            c = (1 - b1) * g0
            q = dual_exponent(p)
            eta_k = e * float(lp_norm(c, q)) ** (1 / (p - 1))
            lion1 = -eta_k * np.sign(c) * np.abs(c) ** (q - 1) / float(lp_norm(c, q)) ** (q - 1)
            opt = StaceyP2(
                p=p, lr=e, alpha=0.05, tau=0.0, beta1=b1, beta2=0.99, eps=0.0, weight_decay=0.0, z_init="zero"
            )
            z = np.zeros_like(g0)
            st1, _ = opt.step(z, g0, opt.init(z))
            worst = max(worst, float(np.max(np.abs(st1 - lion1) / np.maximum(np.abs(st1), 1e-300))))
        rec = value_claim(
            LION_SPEC,
            worst,
            1e-12,
            {"p": p, "cases": 20},
            method="exact" if proved else "simulation",
            note=(
                "proved with sympy (the difference simplifies to 0 since p* - 1 = 1/(p-1)); "
                if proved
                else "sympy did not close the identity; "
            )
            + f"float64: max relative difference {worst:.3g} over 20 random g~_0 (Algorithm 1 as implemented)",
        )
        if proved and rec.status == "holds":  # the identity is symbolic: for every g~_0 (and every p > 1)
            rec = dataclasses.replace(
                rec,
                evidence="proved",
                data={**(rec.data or {}), "certificate": identity["certificate"]},
                scope=(
                    f"proved with sympy for every g~_0 at p = {p:g} (Algorithm 1's first step at tau = 0, eps = 0 "
                    "is -eta sgn(c)|c|^(1/(p-1)), c = (1 - beta1) g~_0; the difference from the rescaled Lion-K "
                    "step simplifies to 0); Algorithm 1 as implemented, run in float64 on 20 random g~_0, is a "
                    "spot check"
                ),
            )
        rec.data = {
            "correction": {
                "claimed": "Lion-K and Stacey(p,2) coincide when tau = 0 (Section 4.2)",
                "corrected": LION_SPEC.statement,
                "kappa": None,
                "evidence": [
                    {
                        "kind": "proved-symbolically" if proved else "holds-in-search",
                        "detail": "Lion-K_i = -eta_K sgn(c_i)|c_i|^(p*-1)/||c||_{p*}^(p*-1) and p* - 1 = 1/(p-1)",
                    },
                    {"kind": "holds-in-search", "detail": f"Algorithm 1 vs rescaled Lion-K in float64: {worst:.3g}"},
                ],
                "consequence": "the two first steps differ by the g-dependent factor ||c||_{p*}^{1/(p-1)}",
            },
            **({"certificate": identity["certificate"]} if identity["certificate"] else {}),
        }
        out.append(rec)
    return out


# ---------------------------------------------------------------------------------------------------
# proof steps (Appendix A.1) with a local repair


def sym_records(*, seed: int, quick: bool) -> list[Claim]:
    """``sym.<proof>.<step>.corrected`` for the violated proof steps that have a local repair
    (:func:`symbolic.corrected_steps`), each checked by the symbolic audit's own step check (the rule's
    precondition with sympy, spot checks on random admissible environments), same samples as the audit."""
    from .symbolic import STEPS, check_step, corrected_steps

    samples = 400 if quick else 3000
    out = []
    for step, orig_id, change in corrected_steps():
        rec = check_step(step, samples=samples, seed=seed)
        orig = next(s for s in STEPS if f"sym.{s.proof}.{s.label}" == orig_id)
        evidence = []
        if step.pre is not None:
            ok, txt = step.pre()
            evidence.append({"kind": "proved-symbolically" if ok else "inconclusive", "detail": f"the rule: {txt}"})
        evidence.append(
            {
                "kind": "holds-in-search" if rec.status == "holds" else "violated-in-search",
                "detail": f"{samples} random admissible environments ({step.kind}), worst case re-checked at 60 "
                f"digits when it fails: {rec.status}",
            }
        )
        rec.id = f"{orig_id}.corrected"
        rec.source = f"correction of {orig_id} ({rec.source})"
        rec.data = {
            **(rec.data or {}),
            "correction": {
                "claimed": f"{orig.text}   [{orig.relation}; {orig.rule}]",
                "corrected": f"{step.text}   [{step.relation}; {step.rule}]",
                "kappa": None,
                "evidence": evidence,
                "change": change,
                "consequence": change,
            },
        }
        out += _with_planted_step(rec, step, samples=samples, seed=seed)
    return out


def _with_planted_step(rec, step, *, samples: int, seed: int) -> list[Claim]:
    """[rec, its power control]: the corrected step with its right side moved by 25% (divided by 1.25 for
    '<=', where equality is reached on the checked cases; times 1.25 for '='), spot-checked by the same check
    on the same random cases (same seed), must be found violated (:func:`proofs_checks.planted.
    planted_record_control`); [rec] for a step without explicit sides."""
    import dataclasses

    from ..api import PLANTED_SIZE, planted_record_control
    from .symbolic import check_step

    if not isinstance(step.sides, tuple) or step.relation not in ("<=", "="):
        return [rec]
    lhs, rhs = step.sides
    f = 1.0 + PLANTED_SIZE
    planted = dataclasses.replace(step, sides=(lhs, rhs / f if step.relation == "<=" else rhs * f), pre=None)
    what = f"the right side {'divided' if step.relation == '<=' else 'multiplied'} by {f:g}, the same spot checks"
    prec = check_step(planted, samples=samples, seed=seed)
    return list(planted_record_control(rec, prec, size=PLANTED_SIZE, what=what))


def run_corrections(ctx):
    """``lptheory check corrections``: corrected statements for the violated claims (Lemma 2 and its
    consequence for Theorem 1, Assumption 1, the Lion-K reading)."""
    p_list = [float(p) for p in ctx.get("p") or DEFAULT_P]
    for p in p_list:
        if not (2.0 < p < math.inf):
            raise ValueError(f"--p must be in (2, inf) for the corrections, got {p:g}")
    recs = b2_records(p_list, seed=ctx.seed, quick=ctx.quick, workers=ctx.jobs, progress=ctx.say)
    ctx.say("B2 and Theorem 1 done")
    recs += asm1_records([p for p in p_list if p <= 16] or p_list[:1], seed=ctx.seed, quick=ctx.quick)
    ctx.say("Assumption 1 done")
    recs += lionk_records(p_list, seed=ctx.seed)
    recs += sym_records(seed=ctx.seed, quick=ctx.quick)
    return recs
