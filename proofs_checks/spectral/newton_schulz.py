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
   [0.5, 1.5]". No source states it as a bound (the source describes a distribution), so the record is
   ``not-applicable`` with that reason, not a finding; read as a bound it fails for ill-conditioned G
   (phi^5(s) ~ a^5 s -> 0 as s -> 0), shown by a re-checkable witness (a 2 x 2 matrix) kept in the record.
   ``ns.interval.scoped``: the largest range [s*, 1] on which it holds, s* the smallest double with
   phi^5(s*) >= 0.5 (outward-rounded: proved there, and proved false at the double below; :func:`endpoint`),
   proved by interval arithmetic (mpmath.iv on a subdivision, enclosures compared exactly and their ends
   rounded outward), i.e. for every G with sigma_min(G) >= s* ||G||_F; evidence ``proved``.
3. ``ns.no-convergence``: the error does not vanish as k grows (phi(1) = a + b + c = 0.701 != 1, so 1 is
   not a fixed point): measured max_i |phi^k(s_i) - 1| for k = 1..10 on Gaussian matrices.
4. ``ns.cubic-bound`` (a stated bound): the classical cubic Newton-Schulz iteration X <- X (3 I - X^T X)/2
   (Higham 2008, "Functions of Matrices", Sec. 8.3; Kovarik 1970; Bjorck & Bowie 1971) converges
   quadratically for ||X_0||_2 < sqrt(3): with e = 1 - s^2, e' = e^2 (3 + e) / 4 <= e^2 (derived in the
   docstring of :func:`cubic_bound`), hence ||NS3_k(G) - U V^T||_2 <= (1 - s_min^2)^(2^k), checked.
5. ``ns.measured-error``: the measured spectral error of the quintic against the exact SVD path on
   Gaussian matrices of transformer shapes (float64 and float32) in the scope of ``ns.interval.scoped``,
   against the bound that record proves, max(1 - lo, hi - 1) = 0.5 ([lo, hi] its enclosure of
   phi^5([s*, 1])). (It was checked against max |phi^5 - 1| on [0, 1] + 1e-6, a bound no error of
   ||X||_2 <= 1.21 against an orthogonal U V^T can exceed: no check.)
"""

from __future__ import annotations

import dataclasses
import math

import mpmath
import numpy as np

from lptheory import norms as N
from proofs_checks.api import ClaimSpec, Verdict, certify, claim_record, value_claim

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


def _iv_at(s: float, k: int = 5):
    """An enclosure [lower, upper] of phi^k(s) at the double ``s`` (mpmath.iv at 30 digits, outward rounding)."""
    old = mpmath.iv.dps
    mpmath.iv.dps = 30
    try:
        return _phi_iv(mpmath.mpf(s), mpmath.mpf(s), k)
    finally:
        mpmath.iv.dps = old


def endpoint(k: int = 5) -> tuple[float, object, object]:
    """The outward-rounded endpoint of the scoped statement: the smallest double s* with phi^k(s*) >= LO,
    proved by interval arithmetic, with the double just below it proved to give phi^k < LO. Returns
    (s*, the lower end of the enclosure of phi^k(s*), the upper end of the enclosure of phi^k at the
    double below). :func:`threshold` (the nearest double to the root) may lie below the root: at k = 5 it
    is 0.0010670273968605504, where phi^5 = 0.5 - 4.05e-17; s* is the next double up."""
    s = threshold(k)
    for _ in range(1 << 10):  # upward until proved (a few ulps at most)
        if _iv_at(s, k)[0] >= LO:
            break
        s = math.nextafter(s, 1.0)
    else:
        raise RuntimeError("no double near the root proved phi^k >= LO")
    while _iv_at(math.nextafter(s, 0.0), k)[0] >= LO:  # downward while the double below is proved too
        s = math.nextafter(s, 0.0)
    below = _iv_at(math.nextafter(s, 0.0), k)[1]
    if not below < LO:
        raise RuntimeError(f"phi^{k} at the double below s* = {s!r} is not proved below {LO}")
    return s, _iv_at(s, k)[0], below


def _float_toward(v, direction: float) -> float:
    """The double next to the exact end ``v`` of an enclosure (a point ``mpmath.iv`` value) on the side of
    ``direction`` (-inf: a double <= v, for a lower end; +inf: >= v, for an upper end): outward rounding, so
    that a reported end still encloses."""
    f = float(v)
    while ((f <= v) if direction < 0 else (f >= v)) is not True:
        f = math.nextafter(f, direction)
    return f


def prove_range(s0: float, k=5, pieces=400, depth=20):
    """Whether phi^k([s0, 1]) is inside [LO, HI], proved by interval arithmetic (mpmath.iv, outward
    rounding) on a log-spaced subdivision, each piece bisected (up to ``depth`` times) while its
    enclosure straddles a bound. The enclosures are compared with the bounds exactly and their ends reported
    rounded outward. Returns (proved, lowest lower end, highest upper end, pieces used)."""
    edges = np.geomspace(s0, 1.0, pieces + 1)
    stack = [(float(edges[i]), float(edges[i + 1]), 0) for i in range(pieces)]
    lo_all, hi_all, used = math.inf, -math.inf, 0
    old = mpmath.iv.dps
    mpmath.iv.dps = 30
    try:
        while stack:
            a, b, dd = stack.pop()
            used += 1
            lo_iv, hi_iv = _phi_iv(mpmath.mpf(a), mpmath.mpf(b), k)
            ylo, yhi = _float_toward(lo_iv, -math.inf), _float_toward(hi_iv, math.inf)
            if (lo_iv >= LO) is True and (hi_iv <= HI) is True:  # decided on the enclosure, not on a rounded float
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


def _gaussian_batches(ctx):
    """The seeded Gaussian test matrices: ``reps`` matrices per shape, with their exact polar factors.

    Returns
    -------
    shapes : list of tuple of int
        The matrix shapes (fewer with ``ctx.quick``).
    mats : list of ndarray
        One batch ``(reps, m, n)`` per shape.
    exact : list of ndarray
        ``U V^T`` of each batch by the SVD path (:func:`lptheory.norms.polar`), computed once.
    """
    rng = np.random.default_rng(np.random.SeedSequence([ctx.seed, 2602]))
    shapes = [(8, 8), (16, 32), (64, 16)] if ctx.quick else [(8, 8), (16, 32), (64, 16), (96, 96), (64, 256)]
    reps = 4
    mats = [rng.standard_normal((reps, *s)) for s in shapes]
    exact = [N.polar(G) for G in mats]  # the SVD path, once per batch
    return shapes, mats, exact


def _normalized_singular_values(G):
    """The singular values of each matrix of the batch ``G`` divided by its Frobenius norm (descending)."""
    return np.linalg.svd(G, compute_uv=False) / np.linalg.norm(G, axis=(-2, -1))[..., None]


def _scalar_polynomial_record(mats, shapes):
    """Claim 1, ``ns.scalar-polynomial``: the singular values of NS_k(G) against phi^k of those of G / ||G||_F."""
    worst = 0.0
    for G in mats:
        for k in (1, 3, 5):
            sv = np.linalg.svd(N.newton_schulz(G, k), compute_uv=False)
            s0 = _normalized_singular_values(G)
            pred = np.sort(N.ns_scalar(s0, k), axis=-1)[..., ::-1]
            worst = max(worst, float(np.max(np.abs(np.sort(sv, axis=-1)[..., ::-1] - pred))))
    spec = ClaimSpec(
        id="ns.scalar-polynomial",
        statement="the singular values of NS_k(G) are phi^k(s_i), s_i those of G / ||G||_F, "
        "phi(x) = a x + b x^3 + c x^5; so ||NS_k(G) - U V^T||_2 = max_i |phi^k(s_i) - 1|",
        source=f"{JORDAN} (the iteration); the identity: polynomial functional calculus on singular values",
        show=("k",),
    )
    return value_claim(spec, worst, 1e-10, {"k": [1, 3, 5], "shapes": [list(s) for s in shapes]})


def _interval_record(s_star):
    """Claim 2, ``ns.interval``: the description read as a bound, failed by a 2 x 2 witness below ``s_star``.

    The record is ``not-applicable`` (no source states the bound), with the re-checkable witness kept.
    """
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
    rec = value_claim(
        spec,
        val,
        LO,
        {"s": s_w, "k": 5},
        relation=">=",
        witness=witness,
        note=f"phi^5(s) < 0.5 for every normalized singular value s below the root of phi^5(s) = 0.5, "
        f"{s_star:.8g} to 8 digits (G with sigma_min / ||G||_F below it, e.g. condition number above "
        f"1/(sqrt(rank) s*))",
    )
    # no source states a bound: the reading is this pack's, so its failure is no finding about a source (kept
    # with its re-checked witness, which shows what the reading as a bound would meet)
    return dataclasses.replace(
        rec,
        status="not-applicable",
        reason="a description that no source states as a bound (Jordan et al. describe the singular values "
        "as '~ Uniform(0.5, 1.5)', a distribution, and state no bound): not a claim of the source, so its "
        f"failure is no finding; read as a bound by this pack it fails ({rec.status}: {rec.reason})",
    )


def _scoped_record(s_star, at_star, below, proof):
    """Claim 2, ``ns.interval.scoped``: [0.5, 1.5] proved on [s*, 1] by interval arithmetic.

    ``s_star, at_star, below`` are :func:`endpoint`'s, ``proof`` is :func:`prove_range`'s result on ``s_star``.
    """
    proved, lo_all, hi_all, used = proof
    spec = ClaimSpec(
        id="ns.interval.scoped",
        statement=f"for every G with sigma_min(G) >= s* ||G||_F (s* = {s_star!r}, the smallest double with "
        "phi^5(s*) >= 0.5), every singular value of NS_5(G) lies in [0.5, 1.5]",
        source=f"{JORDAN}; scoped by this pack (interval arithmetic, mpmath.iv)",
        show=("s_star",),
    )
    if proved:
        verdict = Verdict(
            "holds",
            f"proved: phi^5([s*, 1]) is enclosed in [{lo_all!r}, {hi_all!r}] (ends rounded outward) by interval "
            f"arithmetic (mpmath.iv, 30 digits, outward rounding) over {used} pieces, so phi^5 >= 0.5 on [s*, 1] "
            f"including the endpoint (phi^5(s*) >= {mpmath.nstr(at_star.a, 20)}); at the double below s*, "
            f"phi^5 <= {mpmath.nstr(below.b, 20)} < 0.5, so no larger double range starts lower",
            evidence="proved",
            certificate=certify(
                "interval-enclosure",
                f"phi^5([{s_star!r}, 1]) lies in [{lo_all!r}, {hi_all!r}] (mpmath.iv, {used} pieces)",
            ),
        )
    else:
        verdict = Verdict("inconclusive", "the interval enclosure did not close")
    return claim_record(
        spec,
        verdict,
        params={"s_star": s_star, "k": 5},
        method="exact",
        empirical=lo_all if proved else 0.0,
        bound=LO,
        relation=">=",
    )


def _no_convergence_record(mats, exact):
    """Claim 3, ``ns.no-convergence``: the measured error at k = 1..10 stays above |phi(1) - 1| / 2."""
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
    return value_claim(
        spec,
        errs[-1],
        abs(sum(COEF) - 1.0) / 2.0,
        {"k": list(range(1, 11)), "errors": [round(v, 6) for v in errs]},
        relation=">=",
        method="exact",
        data={"k": list(range(1, 11)), "error": errs},
    )


def _cubic_bound_record(mats, exact):
    """Claim 4, ``ns.cubic-bound``: the cubic iteration's error against :func:`cubic_bound` (ratio, 1e-12 slack)."""
    spec_inf = N.Schatten(math.inf)
    worst_ratio = 0.0
    for G, P in zip(mats, exact):
        s = _normalized_singular_values(G)
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
    return value_claim(spec, worst_ratio, 1.0, {"k": [1, 2, 4, 6, 8]}, note="ratio error / bound (1e-12 slack)")


def _measured_error_records(mats, exact, s_star, proof):
    """Claim 5, ``ns.measured-error``: the quintic's measured error in the scope of ``ns.interval.scoped``.

    The bound is the one that record proves for every G in its scope: phi^5 in [lo, hi] on [s*, 1] gives an
    error of at most max(1 - lo, hi - 1) (``ns.scalar-polynomial``: the error is max_i |phi^5(s_i) - 1|),
    measured in float64 and float32. A matrix outside the scope (sigma_min < s* ||G||_F) is left out and
    counted. Returns a list: empty when the range was not proved or no matrix is in the scope.
    """
    proved, lo_all, hi_all, _ = proof
    scoped_bound = max(1.0 - lo_all, hi_all - 1.0) if proved else None
    rows, outside = {}, 0
    for G, P in zip(mats, exact):
        s_n = _normalized_singular_values(G)
        inside = s_n[..., -1] >= s_star
        outside += int(np.count_nonzero(~inside))
        if not inside.any():
            continue
        for dt in (np.float64, np.float32):
            e = N.ns_error(G[inside].astype(dt), 5, exact=P[inside].astype(dt))
            rows[f"{G.shape[-2]}x{G.shape[-1]} {np.dtype(dt).name}"] = float(np.max(e))
    spec = ClaimSpec(
        id="ns.measured-error",
        statement="measured ||NS_5(G) - U V^T||_2 on Gaussian G with sigma_min(G) >= s* ||G||_F (float64 and "
        "float32) is at most max(1 - lo, hi - 1), [lo, hi] the enclosure of phi^5([s*, 1]) that ns.interval.scoped "
        "proves (the source states no bound; this is that record's consequence, checked on the implementation)",
        source=f"{JORDAN}; the bound: ns.interval.scoped with ns.scalar-polynomial",
        show=("k",),
    )
    if scoped_bound is None or not rows:
        return []
    return [
        value_claim(
            spec,
            max(rows.values()),
            scoped_bound,
            {"k": 5, "errors": rows, "outside_scope": outside},
            data=rows,
            note=f"{outside} matrices outside the scope left out" if outside else "",
        )
    ]


def run_newton_schulz(ctx):
    """The records of the five claims of the module docstring, in order, on seeded Gaussian matrices.

    Parameters
    ----------
    ctx : Context
        ``ctx.seed`` seeds the matrices, ``ctx.quick`` takes fewer shapes.

    Returns
    -------
    list of ClaimRecord
    """
    shapes, mats, exact = _gaussian_batches(ctx)
    s_star, at_star, below = endpoint(5)  # outward-rounded: phi^5(s*) >= 0.5 proved, and < 0.5 one double below
    out = [_scalar_polynomial_record(mats, shapes), _interval_record(s_star)]
    proof = prove_range(s_star, 5)
    out.append(_scoped_record(s_star, at_star, below, proof))
    out.append(_no_convergence_record(mats, exact))
    out.append(_cubic_bound_record(mats, exact))
    out += _measured_error_records(mats, exact, s_star, proof)
    return out
