"""(b) Newton-Schulz orthogonalization after k iterations, against what its sources state.

Quintic (Muon; Jordan et al. 2024, kellerjordan.github.io/posts/muon): X_0 = G / ||G||_F, X <- a X +
b (X X^T) X + c (X X^T)^2 X with (a, b, c) = (3.4445, -4.7750, 2.0315). The source states no error
bound: it says the coefficients are chosen to maximize the slope at zero, that the iteration "no longer
converges all the way to one", and describes the output as U S' V^T "where S'_ii ~ Uniform(0.5, 1.5)"
(as quoted in ``torch.optim.Muon``'s docstring). What can be stated and is checked here:

1. ``ns.scalar-polynomial`` (exact identity): the singular values of NS_k(G) are phi^k(s_i), s_i the
   singular values of G / ||G||_F, phi(x) = a x + b x^3 + c x^5 (a matrix polynomial in X X^T X acts on
   the singular values); so ||NS_k(G) - U V^T||_2 = max_i |phi^k(s_i) - 1| exactly.
2. ``ns.interval`` (the description read as a bound): "every singular value of NS_5(G) lies in
   [0.5, 1.5]". It fails for ill-conditioned G (phi^5(s) ~ a^5 s -> 0 as s -> 0); the record is the
   worst case over s in (0, 1] with a re-checkable witness (a 2 x 2 matrix), and
   ``ns.interval.scoped`` the largest range [s*, 1] on which it holds, proved by interval arithmetic
   (mpmath.iv on a subdivision), i.e. for every G with sigma_min(G) >= s* ||G||_F.
3. ``ns.no-convergence``: the error does not vanish as k grows (phi(1) = a + b + c = 0.701 != 1, so 1 is
   not a fixed point): measured max_i |phi^k(s_i) - 1| for k = 1..10 on Gaussian matrices.
4. ``ns.cubic-bound`` (a stated bound): the classical cubic Newton-Schulz iteration X <- X (3 I - X^T X)/2
   (Higham 2008, "Functions of Matrices", Sec. 8.3; Kovarik 1970; Bjorck & Bowie 1971) converges
   quadratically for ||X_0||_2 < sqrt(3): with e = 1 - s^2, e' = e^2 (3 + e) / 4 <= e^2 (derived in the
   docstring of :func:`cubic_bound`), hence ||NS3_k(G) - U V^T||_2 <= (1 - s_min^2)^(2^k), checked.
5. ``ns.measured-error``: the measured spectral error of the quintic against the exact SVD path on
   Gaussian matrices of transformer shapes (float64 and float32), reported as numbers.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np

from lptheory import norms as N
from proofs_checks.api import ClaimSpec, value_claim

COEF = N.MUON_COEFFICIENTS
JORDAN = (
    "Jordan et al. 2024, 'Muon: An optimizer for hidden layers in neural networks' (kellerjordan.github.io/posts/muon)"
)
LO, HI = 0.5, 1.5


def _phi_range(lo, hi):
    """An enclosure of phi([lo, hi]) (mpmath.iv, outward rounding): phi at the two ends and on enclosures
    of its interior critical points, x^2 = (-3b +- sqrt(9 b^2 - 20 a c)) / (10 c) (phi' = a + 3 b x^2 + 5 c x^4),
    so the enclosure is the exact range up to rounding (a continuous function attains its extremes at
    the ends or at critical points)."""
    iv = mpmath.iv
    a, b, c = (iv.mpf(str(v)) for v in COEF)

    def phi(x):
        return x * (a + x * x * (b + c * x * x))

    disc = iv.sqrt(9 * b * b - 20 * a * c)
    crit = [iv.sqrt((-3 * b + sgn * disc) / (10 * c)) for sgn in (1, -1)]
    vals = [phi(iv.mpf(lo)), phi(iv.mpf(hi))]
    for x in crit:
        if x.b >= lo and x.a <= hi:  # may lie inside [lo, hi]: add phi on its enclosure
            vals.append(phi(x))
    return min(v.a for v in vals), max(v.b for v in vals)


def _phi_iv(lo, hi, k):
    for _ in range(k):
        lo, hi = _phi_range(lo, hi)
    return lo, hi


def _phi_mp(s, k):
    a, b, c = (mpmath.mpf(str(v)) for v in COEF)
    for _ in range(k):
        s = s * (a + s * s * (b + c * s * s))
    return s


def threshold(k=5):
    """s*: the largest s in (0, 1) with phi^k(s) <= LO, by bisection at 40 digits (phi^k increases on
    [0, s*] since phi' > 0 near 0, a = 3.4445 > 0)."""
    with mpmath.workdps(40):
        lo, hi = mpmath.mpf("1e-12"), mpmath.mpf("0.5")
        for _ in range(200):
            mid = (lo + hi) / 2
            if _phi_mp(mid, k) <= LO:
                lo = mid
            else:
                hi = mid
        return float(hi)


def prove_range(s0: float, k=5, pieces=400, depth=20):
    """Whether phi^k([s0, 1]) is inside [LO, HI], proved by interval arithmetic (mpmath.iv, outward
    rounding) on a log-spaced subdivision, each piece bisected (up to ``depth`` times) while its
    enclosure straddles a bound. Returns (proved, lowest lower end, highest upper end, pieces used)."""
    edges = np.geomspace(s0, 1.0, pieces + 1)
    stack = [(float(edges[i]), float(edges[i + 1]), 0) for i in range(pieces)]
    lo_all, hi_all, used = math.inf, -math.inf, 0
    old = mpmath.iv.dps
    mpmath.iv.dps = 30
    try:
        while stack:
            a, b, dd = stack.pop()
            used += 1
            ylo, yhi = (float(v) for v in _phi_iv(mpmath.mpf(a), mpmath.mpf(b), k))
            if ylo >= LO and yhi <= HI:
                lo_all, hi_all = min(lo_all, ylo), max(hi_all, yhi)
                continue
            if dd >= depth:
                return False, ylo, yhi, used
            m = 0.5 * (a + b)
            stack += [(a, m, dd + 1), (m, b, dd + 1)]
    finally:
        mpmath.iv.dps = old
    return True, lo_all, hi_all, used


def cubic_bound(s_min, k):
    """(1 - s_min^2)^(2^k): the classical bound on max_i |1 - s_i^(k)| for the cubic iteration
    s <- s (3 - s^2)/2 started at s in (0, 1]. Derivation: with e = 1 - s^2, s' = s (2 + e)/2, so
    s'^2 = (1 - e)(2 + e)^2 / 4 = 1 - (3 e^2 + e^3)/4, i.e. e' = e^2 (3 + e)/4 <= e^2 for e in [0, 1];
    hence e_k <= e_0^(2^k), and |1 - s_k| = e_k / (1 + s_k) <= e_k."""
    return (1.0 - s_min**2) ** (2.0**k)


def _cubic(x, k):
    xp = np
    X = x / np.linalg.norm(x, axis=(-2, -1), keepdims=True)
    for _ in range(k):
        X = 1.5 * X - 0.5 * X @ (X.swapaxes(-1, -2) @ X)
    return xp.asarray(X)


def run_newton_schulz(ctx):
    rng = np.random.default_rng(np.random.SeedSequence([ctx.seed, 2602]))
    out = []
    shapes = [(8, 8), (16, 32), (64, 16)] if ctx.quick else [(8, 8), (16, 32), (64, 16), (96, 96), (64, 256)]
    reps = 4
    mats = [rng.standard_normal((reps, *s)) for s in shapes]
    exact = [N.polar(G) for G in mats]  # the SVD path, once per batch
    spec_inf = N.Schatten(math.inf)

    # 1. the scalar polynomial identity
    worst = 0.0
    for G in mats:
        for k in (1, 3, 5):
            sv = np.linalg.svd(N.newton_schulz(G, k), compute_uv=False)
            s0 = np.linalg.svd(G, compute_uv=False) / np.linalg.norm(G, axis=(-2, -1))[..., None]
            pred = np.sort(N.ns_scalar(s0, k), axis=-1)[..., ::-1]
            worst = max(worst, float(np.max(np.abs(np.sort(sv, axis=-1)[..., ::-1] - pred))))
    spec = ClaimSpec(
        id="ns.scalar-polynomial",
        statement="the singular values of NS_k(G) are phi^k(s_i), s_i those of G / ||G||_F, "
        "phi(x) = a x + b x^3 + c x^5; so ||NS_k(G) - U V^T||_2 = max_i |phi^k(s_i) - 1|",
        source=f"{JORDAN} (the iteration); the identity: polynomial functional calculus on singular values",
        show=("k",),
    )
    out.append(value_claim(spec, worst, 1e-10, {"k": [1, 3, 5], "shapes": [list(s) for s in shapes]}))

    # 2. the description read as a bound: worst case and the scoped range
    s_star = threshold(5)
    s_w = s_star / 4.0  # a normalized singular value below the threshold
    # a 2 x 2 matrix whose normalized singular values are (t, s_w): diag(t, s_w) with t^2 + s_w^2 = 1
    t = math.sqrt(1.0 - s_w**2)
    witness = {
        "kind": "ns-polynomial",
        "coefficients": list(COEF),
        "steps": 5,
        "s": s_w,
        "interval": [LO, HI],
        "matrix": [[t, 0.0], [0.0, s_w]],
    }
    with mpmath.workdps(30):
        val = float(_phi_mp(mpmath.mpf(s_w), 5))
    spec = ClaimSpec(
        id="ns.interval",
        statement="after 5 quintic steps every singular value of NS_5(G) lies in [0.5, 1.5], for every G "
        "(the source's 'S'_ii ~ Uniform(0.5, 1.5)' read as a bound; the source itself states no bound)",
        source=JORDAN,
        show=("s",),
    )
    out.append(
        value_claim(
            spec,
            val,
            LO,
            {"s": s_w, "k": 5},
            relation=">=",
            witness=witness,
            note=f"phi^5(s) < 0.5 for every normalized singular value s < s* = {s_star:.6g} "
            f"(G with sigma_min / ||G||_F < s*, e.g. condition number above 1/(sqrt(rank) s*))",
        )
    )
    s_safe = s_star * (1.0 + 1e-6)
    proved, lo_all, hi_all, used = prove_range(s_safe, 5)
    spec = ClaimSpec(
        id="ns.interval.scoped",
        statement=f"for every G with sigma_min(G) >= s* ||G||_F (s* = {s_star:.6g}), every singular value "
        "of NS_5(G) lies in [0.5, 1.5]",
        source=f"{JORDAN}; scoped by this pack (interval arithmetic, mpmath.iv)",
        show=("s_star",),
    )
    rec = value_claim(
        spec,
        lo_all if proved else 0.0,
        LO,
        {"s_star": s_star, "k": 5},
        relation=">=",
        note=f"phi^5([s*, 1]) is enclosed in [{lo_all:.4f}, {hi_all:.4f}] by interval arithmetic over {used} pieces"
        if proved
        else "the interval enclosure did not close",
    )
    out.append(rec)

    # 3. no convergence with k
    errs = []
    for k in range(1, 11):
        e = 0.0
        for G, P in zip(mats, exact):
            e = max(e, float(np.max(N.ns_error(G, k, exact=P))))
        errs.append(e)
    spec = ClaimSpec(
        id="ns.no-convergence",
        statement="the quintic Newton-Schulz error ||NS_k(G) - U V^T||_2 does not vanish as k grows: "
        "phi(1) = a + b + c = 0.701, so 1 is not a fixed point (the source: 'no longer converges all the way "
        "to one')",
        source=JORDAN,
        show=("k",),
    )
    # measured: the error at k = 10 stays above |phi(1) - 1| / 2 (a lower bound on the limit cycle's error)
    out.append(
        value_claim(
            spec,
            errs[-1],
            abs(sum(COEF) - 1.0) / 2.0,
            {"k": list(range(1, 11)), "errors": [round(v, 6) for v in errs]},
            relation=">=",
            method="exact",
            data={"k": list(range(1, 11)), "error": errs},
        )
    )

    # 4. the cubic iteration's stated bound
    worst_ratio = 0.0
    for G, P in zip(mats, exact):
        s = np.linalg.svd(G, compute_uv=False) / np.linalg.norm(G, axis=(-2, -1))[..., None]
        for k in (1, 2, 4, 6, 8):
            err = spec_inf.norm(_cubic(G, k) - P)
            bnd = cubic_bound(s[..., -1], k)
            worst_ratio = max(worst_ratio, float(np.max((err - 1e-12) / bnd)))
    spec = ClaimSpec(
        id="ns.cubic-bound",
        statement="cubic Newton-Schulz from X_0 = G / ||G||_F: ||X_k - U V^T||_2 <= (1 - s_min^2)^(2^k)",
        source="Higham 2008, 'Functions of Matrices', Sec. 8.3 (Newton-Schulz iteration, quadratic convergence); "
        "the explicit form derived in proofs_checks.spectral.newton_schulz.cubic_bound",
        show=("k",),
    )
    out.append(value_claim(spec, worst_ratio, 1.0, {"k": [1, 2, 4, 6, 8]}, note="ratio error / bound (1e-12 slack)"))

    # 5. measured error of the quintic against the SVD path (float64 and float32)
    rows = {}
    for G, P in zip(mats, exact):
        for dt in (np.float64, np.float32):
            e = N.ns_error(G.astype(dt), 5, exact=P.astype(dt))
            rows[f"{G.shape[-2]}x{G.shape[-1]} {np.dtype(dt).name}"] = float(np.max(e))
    spec = ClaimSpec(
        id="ns.measured-error",
        statement="measured ||NS_5(G) - U V^T||_2 on Gaussian G (no bound stated by the source); reported, "
        "checked against the trivial bound max(|phi^5| on [0, 1]) + 1",
        source=JORDAN,
        show=("k",),
    )
    grid = np.linspace(0.0, 1.0, 100001)
    triv = float(np.max(np.abs(N.ns_scalar(grid, 5) - 1.0))) + 1e-6
    out.append(value_claim(spec, max(rows.values()), triv, {"k": 5, "errors": rows}, data=rows))
    return out
