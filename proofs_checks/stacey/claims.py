"""The paper's smaller claims, one record each (``lptheory check claims``).

* ``steepest.closed-form`` (Section 4.1): argmin_theta <eta g, theta - theta_t> + 1/2 ||theta - theta_t||_p^2
  has theta_{t+1}^(i) = theta_t^(i) - eta ||g||_{p*}^{(p-2)/(p-1)} g^(i) / |g^(i)|^{(p-2)/(p-1)}.
* ``lionk.first-step`` (Section 4.2): from theta_0 = z_0 = m_0 = 0, Lion-K (K = ||.||_{p*}) gives
  theta_1 = -eta grad K((1-beta1) g~_0) and Stacey(p,2) gives
  theta_1 = -(1-tau) eta s^eps((1-beta1) g~_0) - tau alpha (1-beta1) g~_0; "they coincide only when tau = 0".
* ``intro.norm-ratio`` (Section 1): ||x_0 - x*||_p^2 can be as small as d^{2/p - 1} ||x_0 - x*||_2^2.
* ``cor.batch-variance`` (Corollary 2): an n-sample mini-batch has E|g~_i - g_i|^2 <= sigma_i^2 / n.
* ``cor.bounded-gradient`` (Corollary 3): ||g||_{p*} <= E||g~||_{p*} <= G, and |g~_i|, |g_i| <= G.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
from scipy.optimize import minimize

from lptheory.geometry import dual_exponent, lp_norm
from lptheory.optimizers import StaceyP2

from ..api import Assumption, ClaimSpec, CoordSum, Expect, Expect1, Point, batch_outcomes, g, sigma, value_claim, x
from . import formulas as F

u_ = sp.Symbol("u", real=True)


_FD_STEP = float(np.sqrt(np.finfo(np.float64).eps))  # scipy's BFGS default ``eps``: the absolute 2-point step


def forward_difference(obj):
    """The gradient BFGS computes when it is given no ``jac`` (scipy's ``approx_derivative``, 2-point, absolute
    step ``eps`` = sqrt(machine epsilon), the value at x reused), written out: per coordinate i, h = eps
    (or eps sgn(x_i) max(1, |x_i|) where x_i + eps rounds back to x_i), x' = x with x'_i = x_i + h, and
    (obj(x') - obj(x)) / ((x_i + h) - x_i). The same float64 operations in the same order as scipy's, so the
    same bits (held by :func:`_forward_difference_ok` at run time and by the tests); without scipy's
    per-call machinery (the check's 450 BFGS runs: 1.88-1.99 -> 0.72-0.77 s of CPU, measured interleaved in one
    process on a loaded machine; 1.2-1.4 -> 0.6 s wall on a quieter one)."""

    def jac(x):
        f0 = obj(x)
        out = np.empty(x.shape[0])
        for i in range(x.shape[0]):
            xi = x[i]
            h = _FD_STEP
            if (xi + h) - xi == 0:  # scipy's fallback to a relative step
                h = _FD_STEP * (1.0 if xi >= 0 else -1.0) * max(1.0, abs(xi))
            x1 = x.copy()
            x1[i] = xi + h
            out[i] = (obj(x1) - f0) / ((xi + h) - xi)
        return out

    return jac


_FD_OK: list = []


def _forward_difference_ok() -> bool:
    """Once per process: whether BFGS given :func:`forward_difference` returns the bits of BFGS's own
    finite differences (``jac=None``) on a few steepest-step objectives (the check's own kind, one with a
    coordinate so large that the step falls back to scipy's relative one); where not (another scipy), the
    check runs scipy's own differences."""
    if not _FD_OK:
        from synthetic.smoothness import steepest_step_objective

        ok = True
        for p, gv, eta, x0 in (
            (3.0, np.array([0.7, -1.3, 0.2]), 0.1, np.array([0.3, 0.5, -0.2])),
            (6.5, np.array([-2.0, 0.4]), 0.9, np.array([-1.0, 2e9])),
            (2.05, np.array([1.1]), 0.02, np.array([-0.4])),
        ):
            obj = steepest_step_objective(gv, eta, p)
            a = minimize(obj, x0, method="BFGS", options={"gtol": 1e-12})
            b = minimize(obj, x0, method="BFGS", jac=forward_difference(obj), options={"gtol": 1e-12})
            ok = ok and a.x.tobytes() == b.x.tobytes() and np.float64(a.fun).tobytes() == np.float64(b.fun).tobytes()
        _FD_OK.append(ok)
    return _FD_OK[0]


def _steepest(rng, n_cases, *, jac=True):
    """The worst relative excess of the closed form's objective over BFGS's minimum (three starts) on
    ``n_cases`` random (p, g, eta). ``jac``: BFGS's finite differences through :func:`forward_difference`
    (the same bits, checked once per process; False: scipy's own)."""
    from synthetic.smoothness import steepest_step_objective

    fd = jac and _forward_difference_ok()
    worst, arg = 0.0, None
    for _ in range(n_cases):
        p = float(rng.uniform(2.05, 8.0))
        d = int(rng.integers(1, 5))
        gv = rng.standard_normal(d)
        eta = float(10 ** rng.uniform(-2, 0))
        paper = -eta * lp_norm(gv, dual_exponent(p)) ** ((p - 2) / (p - 1)) * gv / np.abs(gv) ** ((p - 2) / (p - 1))
        obj = steepest_step_objective(gv, eta, p)  # eta <g, u> + ||u||_p^2 / 2 (lp_norm's bits, compiled)
        grad = forward_difference(obj) if fd else None
        best = min(
            (
                minimize(obj, x0, method="BFGS", jac=grad, options={"gtol": 1e-12})
                for x0 in (paper * 0.5, -gv, paper * 2)
            ),
            key=lambda r: r.fun,
        )
        gap = (obj(paper) - best.fun) / (abs(best.fun) + 1e-300)
        if gap >= worst:
            worst, arg = gap, (p, gv, eta, paper, best.x)
    return worst, arg


def _objective(uname):
    """eta <g, u> + (1/2) ||u||_p^2 with u a per-coordinate constant named ``uname``."""
    uu = sp.Symbol(uname, real=True)
    return F.eta * CoordSum(g * uu) + CoordSum(sp.Abs(uu) ** F.p) ** (2 / F.p) / 2


theta1 = sp.Symbol("theta1", real=True)  # an iterate computed by Algorithm 1 (per coordinate)
xv = sp.Symbol("xv", real=True)  # a vector (per coordinate)
d_ = sp.Symbol("d", positive=True)
NORM_RATIO = CoordSum(sp.Abs(xv) ** F.p) ** (2 / F.p) / CoordSum(xv**2) / d_ ** (2 / F.p - 1)
UNBIASED = Assumption("g = E g~", g, "==", Expect1(x), per_coordinate=True)


def _first_step_identity(statement: str, assumption: str, gap) -> ClaimSpec:
    """The spec of an identity of the first iterate from theta_0 = z_0 = m_0 = 0 (Section 4.2): the
    coordinate sum of |gap| is 0 (claim id ``lionk.first-step``)."""
    return ClaimSpec(
        id="lionk.first-step",
        source="Section 4.2",
        statement=statement,
        assumptions=("theta_0 = z_0 = m_0 = 0", assumption),
        term=CoordSum(sp.Abs(gap)),
        bound=sp.Integer(0),
        relation="==",
        show=("p", "setting"),
    )


SPECS = {
    "steepest.closed-form": ClaimSpec(
        id="steepest.closed-form",
        source="Section 4.1",
        statement="argmin_theta <eta g, theta - theta_t> + 1/2 ||theta - theta_t||_p^2 = theta_t - eta ||g||_{p*}^{(p-2)/(p-1)} "
        "g/|g|^{(p-2)/(p-1)} (coordinate-wise)",
        assumptions=("p > 2", "g with nonzero coordinates"),
        term=_objective("uc"),  # the objective at the closed form (uc) ...
        bound=_objective("ub"),  # ... is at most the objective at a numerical minimizer (ub)
        show=("cases",),
    ),
    "lionk.formula": _first_step_identity(
        "Stacey(p,2): theta_1 = -(1-tau) eta s^eps((1-beta1) g~_0) - tau alpha (1-beta1) g~_0 from theta_0 = z_0 = m_0 = 0",
        "no weight decay",
        theta1 - F.stacey_p2_first_step(g),
    ),
    "lionk.coincide": _first_step_identity(
        "Lion-K (K = ||.||_{p*}) and Stacey(p,2) coincide (first iterate) only when tau = 0 (read: at tau = 0 they "
        "coincide, and only then)",
        "eps = 0",
        F.stacey_p2_first_step(g) - F.lionk_first_step(g),
    ),
    "intro.norm-ratio": ClaimSpec(
        id="intro.norm-ratio",
        source="Section 1",
        relation=">=",
        statement="||x_0 - x*||_p^2 can be as small as d^{2/p - 1} ||x_0 - x*||_2^2 (p >= 2)",
        assumptions=("p >= 2",),
        term=NORM_RATIO,  # (||x||_p^2 / ||x||_2^2) / d^{2/p-1} >= 1, with equality for constant vectors
        bound=sp.Integer(1),
        show=("cases",),
    ),
    "cor.batch-variance": ClaimSpec(
        id="cor.batch-variance",
        source="Corollary 2 (Section 4.1)",
        statement="If the stochastic gradient is an n-sample mini-batch estimate, then E|g~_i - g_i|^2 <= sigma_i^2 / n",
        assumptions=(
            "i.i.d. samples",
            UNBIASED,
            Assumption("Assumption 3 per sample", sigma, ">=", sp.sqrt(Expect1((x - g) ** 2)), per_coordinate=True),
        ),
        term=Expect((x - g) ** 2),
        bound=sigma**2 / F.n,
        show=("cases",),
    ),
    "cor.bounded-gradient": ClaimSpec(
        id="cor.bounded-gradient",
        source="Corollary 3 (Section 4.1)",
        statement="(a) ||g||_{p*} = ||E g~||_{p*} <= E||g~||_{p*} <= G (Jensen); (b) |g~_i| <= G and |g_i| <= G",
        assumptions=("Assumption 4", "Assumption 2", UNBIASED),
        term=CoordSum(sp.Abs(g) ** F.pstar) ** (1 / F.pstar),  # (a), its first inequality (Jensen)
        bound=Expect(CoordSum(sp.Abs(x) ** F.pstar) ** (1 / F.pstar)),
        show=("cases",),
    ),
}


def lionk_records(p: float, g0, *, label: str = "") -> list:
    """``lionk.first-step`` at one p and one first gradient ``g0`` (Section 4.2): Algorithm 1's first iterate
    against the paper's formula (``setting`` "Alg. 1 vs formula"), and at tau = 0 Stacey(p,2)'s first iterate
    against Lion-K's (K = ||.||_{p*}; "coincide only when tau = 0"). ``label`` is appended to the setting."""
    g0 = np.asarray(g0, dtype=np.float64)
    # lionk.first-step: Algorithm 1's first iterate against the paper's formula
    eta, alpha, tau, b1, eps = 0.1, 0.05, 0.3, 0.9, 1e-8
    out = []
    zero = np.zeros_like(g0)
    opt = StaceyP2(p=p, lr=eta, alpha=alpha, tau=tau, beta1=b1, beta2=0.99, eps=eps, weight_decay=0.0, z_init="zero")
    th1, _ = opt.step(zero, g0, opt.init(zero))
    sc = {"p": p, "eta": eta, "alpha": alpha, "tau": tau, "beta1": b1, "epsilon": eps}
    formula = F.stacey_p2_first_step(g)  # the paper's first iterate, per coordinate
    subs = {F.p: p, F.eta: eta, F.alpha: alpha, F.tau: tau, F.beta1: b1, F.eps: eps}
    paper = np.array([float(formula.subs({**subs, g: gi})) for gi in g0])
    err = float(np.max(np.abs(th1 - paper)))
    out.append(
        value_claim(
            SPECS["lionk.formula"],
            err,
            1e-15,
            {
                "p": p,
                "eta": eta,
                "alpha": alpha,
                "tau": tau,
                "beta1": b1,
                "eps": eps,
                "g0": g0.tolist(),
                "setting": "Alg. 1 vs formula" + label,
            },
            at=Point(sc, {"g": g0, "theta1": th1}, extra={"tolerance": 1e-12}),
            relation="<=",
            note="max |Algorithm 1 (lptheory.optimizers.StaceyP2) - the paper's formula| against rounding",
        )
    )
    # "coincide only when tau = 0": at tau = 0 Stacey's first step is -eta s(c); Lion-K's is -eta grad K(c)
    opt0 = StaceyP2(p=p, lr=eta, alpha=alpha, tau=0.0, beta1=b1, beta2=0.99, eps=0.0, weight_decay=0.0, z_init="zero")
    st1, _ = opt0.step(zero, g0, opt0.init(zero))
    ps = dual_exponent(p)
    c = (1 - b1) * g0
    lion1 = -eta * np.sign(c) * np.abs(c) ** (ps - 1) / lp_norm(c, ps) ** (ps - 1)
    gap = float(np.max(np.abs(st1 - lion1)))
    scale = float(lp_norm(c, ps) ** (1 / (p - 1)))
    extra = {"theta1_stacey": st1.tolist(), "theta1_lionK": lion1.tolist(), "ratio_of_steps": scale}
    out.append(
        value_claim(
            SPECS["lionk.coincide"],
            gap,
            0.0,
            {"p": p, "eta": eta, "tau": 0.0, "beta1": b1, "g0": g0.tolist(), "setting": "tau = 0" + label},
            at=Point({**sc, "tau": 0.0, "epsilon": 0.0}, {"g": g0}, extra=extra),
            relation="==",
            note=f"at tau = 0 the first iterates differ (value: the largest coordinate gap, {gap:.3g}; the witness "
            "re-checks the statement's own side, the sum of the coordinate gaps, which is 0 exactly when the iterates "
            f"coincide): Stacey's steepest step s(c) is "
            f"||c||_{{p*}}^(1/(p-1)) = {scale:.4g} times Lion-K's grad K(c) = s(c)/||c||_{{p*}}^(1/(p-1)) (same direction). They "
            "coincide only up to a g-dependent rescaling of eta (or when ||(1-beta1) g~_0||_{p*} = 1); for tau > 0 the "
            "directions differ too, as the paper says",
        )
    )
    return out


_STEEPEST_NOTE = "the closed form's objective (uc) against a numerical minimizer's (ub)"


def run_claims(ctx):
    """``lptheory check claims``: the smaller claims of Sections 1, 4.1, 4.2 and Corollaries 2 and 3."""
    seed, quick = ctx.seed, ctx.quick
    rng = np.random.default_rng(np.random.SeedSequence([seed, 606]))
    n_cases = 100 if quick else 400
    out = []
    # steepest.closed-form: the closed form's objective against BFGS's minimum
    cases = 40 if quick else 150
    worst, (p, gv, eta, paper, xb) = _steepest(rng, cases)
    out.append(
        value_claim(
            SPECS["steepest.closed-form"],
            worst,
            1e-9,
            {"cases": cases},
            at=Point({"p": p, "eta": eta}, {"g": gv, "uc": paper, "ub": xb}, extra={"note": _STEEPEST_NOTE}),
            note="largest relative excess of the closed form's objective over BFGS's minimum",
        )
    )
    # lionk.first-step: Algorithm 1's first iterate against the paper's formula; at tau = 0 against Lion-K
    out += lionk_records(3.0, np.array([0.3, -2.0, 0.7]))
    # intro.norm-ratio
    worst_min, arg = math.inf, None
    for _ in range(n_cases):
        p = float(rng.uniform(2.05, 10.0))
        d = int(rng.integers(1, 50))
        xv = rng.standard_normal(d) * rng.uniform(0, 1, d) ** 3
        r = (lp_norm(xv, p) ** 2 / lp_norm(xv, 2) ** 2) / d ** (2 / p - 1)
        if r < worst_min:
            worst_min, arg = float(r), (p, xv)
    attained = max(
        abs((lp_norm(np.ones(d), p) ** 2 / d) / d ** (2 / p - 1) - 1) for d in (1, 7, 100) for p in (2.5, 4.0, 9.0)
    )
    out.append(
        value_claim(
            SPECS["intro.norm-ratio"],
            worst_min,
            1.0 - 1e-12,
            {"cases": n_cases},
            at=Point({"p": arg[0], "d": arg[1].size}, {"xv": arg[1]}),
            note=f"min over random x of (||x||_p^2/||x||_2^2) / d^(2/p-1) (power-mean inequality: >= 1), and "
            f"constant vectors attain d^(2/p-1) (error {attained:.1e}): 'as small as' is exact",
        )
    )
    # corollaries, on exact finite distributions
    worst_var, worst_a, worst_b, arg_v, arg_a = 0.0, 0.0, 0.0, None, None
    for _ in range(n_cases):
        k, n, d = int(rng.integers(2, 5)), int(rng.integers(1, 6)), int(rng.integers(1, 4))
        p = float(rng.uniform(2.05, 8.0))
        v = rng.uniform(-1, 1, (d, k))
        wts = rng.dirichlet(np.ones(k), size=d)
        gm = np.sum(v * wts, axis=1)
        sig2 = np.sum(wts * (v - gm[:, None]) ** 2, axis=1)
        vals, probs = batch_outcomes(v, wts, n)
        var_b = np.sum(probs * (vals - gm[:, None]) ** 2, axis=1)
        ratios = var_b / np.maximum(sig2 / n, 1e-300)
        i = int(np.argmax(ratios))
        if ratios[i] >= worst_var:
            worst_var, arg_v = float(ratios[i]), (v[i], wts[i], n)
        ps = dual_exponent(p)
        grids = np.meshgrid(*[vals[i] for i in range(d)], indexing="ij")
        pgrid = np.prod(np.meshgrid(*[probs[i] for i in range(d)], indexing="ij"), axis=0)
        norms = lp_norm(np.stack([z.ravel() for z in grids], axis=1), ps)
        e_norm = float(np.sum(pgrid.ravel() * norms))
        G = float(norms.max())
        a_r = max(float(lp_norm(gm, ps)) / e_norm, e_norm / G)
        if a_r >= worst_a:
            worst_a, arg_a = a_r, (v, wts, n, p)
        worst_b = max(worst_b, float(np.max(np.abs(vals))) / G, float(np.max(np.abs(gm))) / G)
    v1, w1, n1 = arg_v
    g1 = float(np.dot(v1, w1))
    at_v = Point(
        {"n": n1},
        {"g": [g1], "sigma": [float(np.sqrt(np.dot(w1, (v1 - g1) ** 2)))]},
        dist={"values": [v1.tolist()], "weights": [w1.tolist()], "n": n1},
    )
    out.append(
        value_claim(
            SPECS["cor.batch-variance"],
            worst_var,
            1.0,
            {"cases": n_cases},
            at=at_v,
            tolerance=5e-10,
            note="exact batch-mean variances / (sigma^2/n), worst (equality for i.i.d. samples)",
        )
    )
    va, wa, na, pa = arg_a
    at_a = Point({"p": pa}, {"g": np.sum(va * wa, axis=1)}, dist={"values": va, "weights": wa, "n": na})
    out.append(
        value_claim(
            SPECS["cor.bounded-gradient"],
            max(worst_a, worst_b),
            1.0,
            {"cases": n_cases},
            at=at_a,
            tolerance=5e-13,
            note=f"worst ratios over exact finite distributions: (a) {worst_a:.6f}, (b) {worst_b:.6f} (both <= 1)",
        )
    )
    ctx.say(f"{len(out)} claims checked")
    return out
