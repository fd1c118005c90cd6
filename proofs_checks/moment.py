r"""A moment engine: the sharp constant of a one-coordinate moment bound, certified on both sides (issue 44).

The problem. For a function ``phi(x; g)`` (``x`` the random value, ``g`` its mean) and a bounded support
[lo, hi], the worst case of E[phi(X; g)] over the laws of X with

    E X = g,    E (X - g)^2 <= tau^2,    lo <= X <= hi,

is ``V(g, tau)``; the *inner* problem fixes (g, tau), the *outer* one asks for the sharp constant

    sharp = sup_{g, tau} V(g, tau) / tau

over a box of (g, tau) (the normaliser tau: a bound "E phi <= C tau", e.g. Theorem 1's terms
E[...] <= C G^{1/(p-1)} sigma / sqrt(n_t) after the homogeneity reduction G = 1).

**Lower side: an explicit law.** By the Richter-Rogosinski theorem the inner supremum is reached (or
approached) on laws with at most 3 atoms (two moment constraints plus one); for the outer problem 2 atoms suffice
(below). A law is found numerically (a linear program on a grid of x, then a polish and, where the supremum is
only approached, a snap of atoms towards the piece ends, x = e + 10^-k) and **re-checked at 50 digits** (mpmath):
its mean, its variance and E phi are recomputed from its atoms and weights, so the lower bound is the value of an
admissible law, whatever the search did.

**Upper side: a dual certificate.** Any quadratic q(x) = c0 + c1 (x - g) + c2 (x - g)^2 with c2 >= 0 and
q >= phi on the support bounds E phi(X) <= E q(X) = c0 + c2 E(X - g)^2 <= c0 + c2 tau^2 (weak duality; the
first moment term vanishes by E X = g). The certificate comes from the dual linear program on a grid and is
**checked on the whole support by interval branch and bound in arb** (:func:`proofs_checks.bnb.branch_and_bound`,
python-flint's ball arithmetic, outward rounded), piece by piece.

**The outer supremum** (over g in [g_lo, g_hi], tau in (0, tau_hi]). Write the certificate at (g, tau) as
q = A tau + c1 (x - g) + (B / tau) (x - g)^2, so that c0 + c2 tau^2 = (A + B) tau: the constant it proves is
A + B. One certificate (A, B, c1) serves a whole box [g0, g1] x [t0, t1] when

    A t0 + c1 (x - g) + (B / t1) (x - g)^2 >= phi(x; g)   for every g in [g0, g1], x in the support

(the left side is below q at every tau of the box, as A, B >= 0; and E phi <= A t0 + B tau^2 / t1 <= (A + B) tau):
a two-variable claim in (g, x), decided by branch and bound in arb. A box touching tau = 0 uses the lower envelope
over tau in (0, t1] of q: with A = B = U/2, min_tau q = c1 y + U |y| for |y| <= t1 and c1 y + U t1/2 + U y^2/(2 t1)
beyond (y = x - g). The boxes are split (g halved, tau split geometrically) until each is certified or a budget
runs out: the upper end is then the constant U tried for every box, and nothing is claimed where a box was left
(the result says so). In practice a box touching tau = 0 is decided only where phi is flat at g: elsewhere the
claim is tight along y = 0 (both sides vanish there) and interval enclosures cannot separate them, so such a range
stays unresolved and no upper end is given; each box costs a two-variable branch and bound, so the whole range
of (g, tau) takes minutes (give ``constraints["sd"]`` a range (tau_lo, tau_hi) with tau_lo > 0 to certify the
supremum over it). For a phi homogeneous in (x, g) the whole range is certified another way, by the reduction
below to two-point laws with an atom at an end of the support, each face's ratio enclosed by
:func:`proofs_checks.bnb.enclose_max` (the Stacey pack's ``two_point_faces``, ``two_point_upper`` and, for a
supremum approached but not attained, ``b2_at_most_a`` in ``proofs_checks/stacey/sharp.py``). **Monotonicity**
bounds the tau range: a law on [lo, hi] with mean g has variance at most
(hi - g)(g - lo) (Bhatia-Davis), so V(g, tau) is constant for tau beyond it and V/tau decreasing: tau in
(0, max over the g box of sqrt((hi - g)(g - lo))] is the whole problem.

**Two points suffice for the outer supremum** (so the lower search is over two-point laws): sharp <= U iff
E phi - U sd(X) <= 0 for every admissible law; as U sd = min_{lam > 0} U (lam + Var/lam)/2, this is iff for every
lam > 0, sup over laws with mean g of E[phi(X) - U (X - g)^2/(2 lam)] <= U lam/2, a supremum over laws with one
moment constraint, i.e. the concave envelope of a function of one variable at g, reached by two points
(Caratheodory). So the outer supremum over all laws equals that over two-point laws.

**Evidence.** ``proved`` when both sides are certified (the law re-checked, every box's certificate decided
by branch and bound) and they agree to ``rtol`` (1e-6 relative); otherwise ``searched``, with the bracket
[lower, upper] (the upper end certified when ``upper_certified``).

**Reductions to one coordinate** (how a claim over vectors becomes this problem): for independent coordinates (or
any joint law), a term that is a sum over coordinates sum_i E phi(X_i; g_i) with per-coordinate constraints
E X_i = g_i, E (X_i - g_i)^2 <= sigma_i^2 is bounded coordinate by coordinate, each by C tau_i, so by
C sum_i tau_i = C ||sigma||_1 (and the bound is reached by a product of the one-coordinate worst laws: the
constant is sharp for the sum too). A batch mean of n_t independent draws, each with variance <= sigma^2, has
variance <= sigma^2 / n_t (Corollary 2 of the Stacey paper): take tau = sigma / sqrt(n_t); its support stays in
[-G, G] (the mean of values in [-G, G]). Homogeneity: when phi(lam x; lam g) = lam^{1+a} phi(x; g) and the
support is [-G, G], the ratio E phi / (G^a tau) is unchanged by scaling, so G = 1 is no loss (the normaliser
G^a tau).

Sources: W. W. Rogosinski, "Moments of non-negative mass", Proc. R. Soc. A 245 (1958); H. Richter (1957); the
dual certificate as in PEPit (Taylor, Hendrickx & Glineur), there an SDP, here a quadratic majorant; Cantelli's
inequality (the example ``examples/claim_signsgd_cantelli.py``); F. Johansson, Arb (IEEE Trans. Comput. 2017).
"""

from __future__ import annotations

import functools
import heapq
import math
import time
import warnings
from dataclasses import dataclass, field

import mpmath
import numpy as np
import sympy as sp

from .bnb import branch_and_bound

__all__ = [
    "X",
    "MEAN",
    "Piece",
    "MomentResult",
    "pieces_of",
    "law_value",
    "check_certificate",
    "inner_bound",
    "sharp_bound",
    "RTOL",
    "kept_decision",
    "kept_counts",
]

X, MEAN = sp.symbols("x g", real=True)  # the random value and its mean, in phi's expressions
RTOL = 1e-6  # both sides certified and within this (relative): evidence "proved"
DIGITS = 50  # the law's re-check precision
_SNAP = (6, 10, 16, 24, 40, 64, 100, 160, 260, 420, 700, 1100, 1800, 3000)  # x = e + 10^-k, k in _SNAP


@dataclass(frozen=True)
class Piece:
    """phi on the closed interval [lo, hi] of the support: ``expr`` (a sympy expression of :data:`X` and
    :data:`MEAN`). Pieces are closed: at a shared end the larger of the two values counts (the upper
    semicontinuous envelope), which is what a certificate must dominate."""

    lo: float
    hi: float
    expr: sp.Expr


def pieces_of(phi, support) -> tuple[Piece, ...]:
    """``phi`` as pieces: a sympy expression (one piece on the whole support) or a list of
    ``((lo, hi), expr)`` covering ``support`` = (lo, hi) without gaps, in order."""
    lo, hi = _support(support)
    if isinstance(phi, (sp.Basic, int, float)):
        phi = [((lo, hi), phi)]
    try:
        out = tuple(Piece(float(a), float(b), sp.sympify(e)) for (a, b), e in phi)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"phi must be a sympy expression or a list of ((lo, hi), expr), got {phi!r}") from exc
    if not out or out[0].lo != lo or out[-1].hi != hi or any(p.hi != q.lo for p, q in zip(out, out[1:])):
        raise ValueError(f"phi's pieces must cover the support {support!r} in order, without gaps")
    for pc in out:
        if not pc.lo < pc.hi:
            raise ValueError(f"phi's piece [{pc.lo}, {pc.hi}] is empty")
        extra = {s.name for s in pc.expr.free_symbols} - {"x", "g"}
        if extra:
            raise ValueError(f"phi may depend on x and g only; it has {sorted(extra)}")
    return out


def _support(support) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in support)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"support must be a pair (lo, hi), got {support!r}") from exc
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"support must be a finite interval lo < hi, got {support!r}")
    return lo, hi


def _xsym(e):
    """``e`` with its symbols named x, g replaced by :data:`X`, :data:`MEAN` (a user's Symbol('x', positive=True)
    is the same variable)."""
    return e.xreplace({s: {"x": X, "g": MEAN}[s.name] for s in e.free_symbols if s.name in ("x", "g")})


class _Numeric:
    """phi evaluated in float64 (numpy, vectorised) and at 50 digits (mpmath), piece by piece (the larger value
    at a shared end)."""

    def __init__(self, pieces):
        self.pieces = pieces
        self.np = [sp.lambdify((MEAN, X), _xsym(pc.expr), "numpy") for pc in pieces]
        self.mp = [sp.lambdify((MEAN, X), _xsym(pc.expr), "mpmath") for pc in pieces]

    def __call__(self, g, xs):
        xs = np.asarray(xs, dtype=float)
        out = np.full(np.broadcast(g, xs).shape, -np.inf)
        with np.errstate(all="ignore"):
            for pc, f in zip(self.pieces, self.np):
                inside = (xs >= pc.lo) & (xs <= pc.hi)
                v = np.broadcast_to(np.asarray(f(g, xs), dtype=float), out.shape)
                out = np.where(inside & np.isfinite(v), np.maximum(out, v), out)
        return out

    def exact(self, g, x):
        best = None
        for pc, f in zip(self.pieces, self.mp):
            if pc.lo <= x <= pc.hi:
                v = f(g, x)
                if isinstance(v, mpmath.mpc):
                    v = v.real
                best = v if best is None else max(best, v)
        if best is None:
            raise ValueError(f"x = {x} lies outside the support")
        return best


def law_value(phi, support, atoms, weights, *, value=None) -> dict:
    """A law re-checked at 50 digits: ``{"mean", "var", "sd", "value", "atoms", "weights"}`` (strings of 50
    digits; ``value`` = E phi(X; mean)), computed anew from the atoms and weights (strings or numbers). ``value``:
    an independent evaluator ``value(g, x) -> mpf`` of phi (default: phi's pieces). Raises ValueError for an
    inadmissible law (a negative weight, weights not summing to 1 within 1e-40, an atom outside the support)."""
    return _law_value(_Numeric(pieces_of(phi, support)), support, atoms, weights, value)


def _law_value(num, support, atoms, weights, value=None) -> dict:
    lo, hi = _support(support)
    with mpmath.workdps(DIGITS + 10):
        xs = [mpmath.mpf(v) for v in atoms]
        ws = [mpmath.mpf(v) for v in weights]
        if len(xs) != len(ws) or not xs:
            raise ValueError("atoms and weights must be non-empty and of the same length")
        if any(w < 0 for w in ws) or abs(sum(ws) - 1) > mpmath.mpf(10) ** -40:
            raise ValueError(f"weights must be >= 0 and sum to 1, got {weights!r}")
        if any(not (lo <= v <= hi) for v in xs):
            raise ValueError(f"atoms must lie in the support [{lo}, {hi}], got {atoms!r}")
        g = sum(w * v for w, v in zip(ws, xs))
        var = sum(w * (v - g) ** 2 for w, v in zip(ws, xs))
        f = value or num.exact
        ev = sum(w * f(g, v) for w, v in zip(ws, xs))
        sd = mpmath.sqrt(var)
        s = lambda v: mpmath.nstr(v, DIGITS)  # noqa: E731
        return {
            "mean": s(g),
            "var": s(var),
            "sd": s(sd),
            "value": s(ev),
            "atoms": [s(v) for v in xs],
            "weights": [s(w) for w in ws],
        }


# ---------------------------------------------------------------------------------------------------
# the inner problem: fixed (g, tau)


def _grid(pieces, g, n=1500):
    """x points for the linear programs: uniform on each piece, geometric towards each piece end, and around g."""
    pts = []
    for pc in pieces:
        w = pc.hi - pc.lo
        pts.append(np.linspace(pc.lo, pc.hi, max(8, int(n * w / (pieces[-1].hi - pieces[0].lo)))))
        geo = w * np.logspace(-12, -1, 24)
        pts += [pc.lo + geo, pc.hi - geo]
    lo, hi = pieces[0].lo, pieces[-1].hi
    near = g + np.concatenate([-np.logspace(-8, 0, 40), np.logspace(-8, 0, 40), [0.0]])
    pts.append(near[(near >= lo) & (near <= hi)])
    return np.unique(np.concatenate(pts))


def _dual_lp(num, pieces, g, tau, *, rounds=8):
    """min c0 + c2 tau^2 over q = c0 + c1 y + c2 y^2 >= phi at the grid points (y = x - g), c2 >= 0, refined by
    exchange (the points where phi - q is largest, located by a bounded scalar search on each piece, join the
    grid, ``rounds`` times): the certificate (c0, c1, c2) with c0 raised by the largest violation left on a
    fine grid, the LP's value, the primal law (the multipliers: atoms and weights) and the refined points where q
    meets phi (candidate atoms)."""
    from scipy.optimize import linprog, minimize_scalar

    xs = _grid(pieces, g)
    fine = np.unique(np.concatenate([np.linspace(pc.lo, pc.hi, 4001) for pc in pieces]))
    for _ in range(rounds):
        f = num(g, xs)
        ok = np.isfinite(f)
        xs, f = xs[ok], f[ok]
        y = xs - g
        A = -np.stack([np.ones_like(y), y, y * y], axis=1)
        res = linprog(
            [1.0, 0.0, tau * tau], A_ub=A, b_ub=-f, bounds=[(None, None), (None, None), (0, None)], method="highs"
        )
        if res.status != 0:
            raise RuntimeError(f"the dual linear program failed at g = {g}, tau = {tau}: {res.message}")
        c0, c1, c2 = (float(v) for v in res.x)
        xs_solved = xs

        def viol(xv, c0=c0, c1=c1, c2=c2):
            yv = np.asarray(xv, dtype=float) - g
            return num(g, xv) - (c0 + c1 * yv + c2 * yv * yv)

        vf = viol(fine)
        top = np.argsort(-np.where(np.isfinite(vf), vf, -np.inf))[:6]
        new = []
        for i in top:
            a, b = fine[max(i - 1, 0)], fine[min(i + 1, len(fine) - 1)]
            for pc in pieces:  # stay inside one piece (phi may jump at its ends)
                lo_, hi_ = max(a, pc.lo), min(b, pc.hi)
                if lo_ < hi_:
                    r = minimize_scalar(
                        lambda t: -float(viol(np.array([t]))[0]),
                        bounds=(lo_, hi_),
                        method="bounded",
                        options={"xatol": 1e-14},
                    )
                    new += [r.x, lo_, hi_]
        worst = max(float(np.nanmax(vf)), float(np.nanmax(viol(np.array(new)))) if new else -np.inf)
        if worst <= 1e-14 * max(1.0, abs(res.fun)):
            break
        xs = np.unique(np.concatenate([xs, np.array(new)]))
    worst = max(0.0, worst)
    w = -np.asarray(res.ineqlin.marginals)
    keep = w > 1e-9
    touch = np.array(new) if new else np.array([])
    if len(touch):
        vt = viol(touch)
        touch = touch[np.isfinite(vt) & (vt >= worst - 1e-9 * max(1.0, abs(res.fun)))]
    xa, wa = xs_solved[keep], w[keep] / w[keep].sum()
    return (c0 + worst, c1, c2), float(res.fun) + worst, xa, wa, touch


def check_certificate(phi, support, g, certificate, *, slack=0.0, max_boxes=4000) -> dict:
    """Decide q(x) = c0 + slack + c1 (x - g) + c2 (x - g)^2 >= phi(x; g) on the whole support by interval branch
    and bound in arb, piece by piece: ``{"status": "proved" | "violated" | "inconclusive", "pieces": [...],
    "reason"}``. ``certificate`` = (c0, c1, c2) with c2 >= 0 (ValueError otherwise); a ``violated`` carries the
    point where the enclosures separate (the certificate is wrong there)."""
    c0, c1, c2 = (float(v) for v in certificate)
    if not all(math.isfinite(v) for v in (c0, c1, c2, g, slack)) or c2 < 0:
        raise ValueError(f"certificate must be finite (c0, c1, c2) with c2 >= 0, got {certificate!r}")
    pieces = pieces_of(phi, support)
    # g stays a symbol, given to the branch and bound as an exact scalar (a ball of the float g): substituting the
    # float's exact rational into powers with rational exponents makes sympy search for exact roots (very slowly)
    gs = sp.Symbol("g")
    q = sp.Rational(c0) + sp.Rational(slack) + sp.Rational(c1) * (X - gs) + sp.Rational(c2) * (X - gs) ** 2
    out = []
    for pc in pieces:
        lhs, rhs, bx = _nonneg_var(_xsym(pc.expr).subs(MEAN, gs), q, pc, {})
        r = branch_and_bound(lhs, rhs, bx, max_boxes=max_boxes, scalars={"g": float(g)})
        out.append({"piece": [pc.lo, pc.hi], "status": r.status, "reason": r.reason, "witness": r.witness})
    st = (
        "violated"
        if any(o["status"] == "violated" for o in out)
        else ("proved" if all(o["status"] == "proved" for o in out) else "inconclusive")
    )
    return {
        "status": st,
        "pieces": out,
        "reason": "; ".join(f"[{o['piece'][0]:g}, {o['piece'][1]:g}]: {o['reason']}" for o in out),
    }


@dataclass
class MomentResult:
    """A sharp bound's bracket: ``lower`` (the value of ``law``, re-checked at 50 digits), ``upper`` (certified when
    ``upper_certified``), ``evidence`` ("proved": both certified and within ``rtol``; else "searched"),
    ``certificate`` (the quadratic(s) of the upper side), ``reason``."""

    lower: float
    upper: float
    law: dict
    certificate: dict
    evidence: str
    upper_certified: bool
    reason: str
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def gap(self) -> float:
        return (self.upper - self.lower) / max(abs(self.lower), 1e-300)

    def to_dict(self) -> dict:
        return {
            "lower": self.lower,
            "upper": self.upper,
            "gap": self.gap,
            "law": self.law,
            "certificate": self.certificate,
            "evidence": self.evidence,
            "upper_certified": self.upper_certified,
            "reason": self.reason,
            "seconds": self.seconds,
            **self.extra,
        }


def _evidence(lower, upper, certified, rtol):
    return "proved" if certified and upper >= lower and (upper - lower) <= rtol * abs(lower) else "searched"


def inner_bound(phi, support, g: float, tau: float, *, rtol: float = RTOL, value=None) -> MomentResult:
    """The inner problem: sup E phi(X; g) over laws on ``support`` with E X = g, E (X - g)^2 <= tau^2.

    Lower side: the dual LP's primal law (its multipliers, at most 3 atoms after merging), re-checked at 50 digits
    (:func:`law_value`, its variance must be <= tau^2). Upper side: the LP's certificate, its c0 raised by
    rtol/4 of the value (slack for the enclosures), checked by :func:`check_certificate`."""
    lo, hi = _support(support)
    if not (lo < g < hi):
        raise ValueError(f"the mean g (constraints['mean']) must lie inside the support ({lo}, {hi}), got {g!r}")
    if not (isinstance(tau, (int, float)) and tau > 0 and math.isfinite(tau)):
        raise ValueError(f"tau must be a positive number, got {tau!r}")
    t_start = time.perf_counter()
    pieces = pieces_of(phi, support)
    num = _Numeric(pieces)
    (c0, c1, c2), val, xs, ws, touch = _dual_lp(num, pieces, g, tau)
    law = _inner_law(num, pieces, g, tau, xs, ws, value, touch)
    lower = float(law["value"])
    slack = max(abs(val), 1e-300) * rtol / 4
    chk = check_certificate(pieces_as_list(pieces), support, g, (c0, c1, c2), slack=slack)
    upper = c0 + slack + c2 * tau * tau
    upper = math.nextafter(upper, math.inf)
    certified = chk["status"] == "proved"
    ev = _evidence(lower, upper, certified, rtol)
    reason = (
        f"sup E phi at g = {g:g}, tau = {tau:g} in [{lower:.10g}, {upper:.10g}] (relative width "
        f"{(upper - lower) / max(abs(lower), 1e-300):.2g}); lower: a {len(law['atoms'])}-atom law re-checked at "
        f"{DIGITS} digits; upper: q = c0 + c1 (x-g) + c2 (x-g)^2 >= phi on the support "
        + ("proved by branch and bound in arb" if certified else f"NOT certified ({chk['status']}: {chk['reason']})")
    )
    cert = {"c0": c0 + slack, "c1": c1, "c2": c2, "g": g, "tau": tau, "check": chk["status"]}
    return MomentResult(lower, upper, law, cert, ev, certified, reason, time.perf_counter() - t_start)


def pieces_as_list(pieces):
    return [((pc.lo, pc.hi), pc.expr) for pc in pieces]


def _inner_law(num, pieces, g, tau, xs, ws, value, touch=()):
    """The LP's law as at most 3 atoms (nearby multipliers merged into their weighted mean), re-weighted to mean g
    (and variance tau^2 with 3 atoms) in mpmath, shrunk towards g where its variance exceeds tau^2, re-checked at
    50 digits; the best of the candidates."""
    order = np.argsort(xs)
    xs, ws = xs[order], ws[order]
    clusters = []
    for xv, wv in zip(xs, ws):
        if clusters and xv - clusters[-1][2] < 1e-3:
            c = clusters[-1]
            clusters[-1] = (c[0] + xv * wv, c[1] + wv, xv)
        else:
            clusters.append((xv * wv, wv, xv))
    cen = sorted(((s_ / w_, w_) for s_, w_, _ in clusters), key=lambda t: -t[1])[:3]
    atoms = [c for c, _ in cen]
    for t in sorted(set(np.round(np.asarray(touch, dtype=float), 12).tolist())):
        if all(abs(t - a) > 1e-12 for a in atoms) and len(atoms) < 8:
            atoms.append(t)
    cands = []
    import itertools

    for k in (3, 2):
        for a in itertools.combinations(sorted(atoms), k):
            sol = _weights_for(list(a), g, tau)
            if sol is not None:
                cands.append((list(a), sol))
    support = (pieces[0].lo, pieces[-1].hi)
    best = None
    for a, w in cands:
        with mpmath.workdps(DIGITS + 10):
            gm, t2 = mpmath.mpf(g), mpmath.mpf(tau) ** 2
            am = [mpmath.mpf(v) for v in a]
            wm = [mpmath.mpf(v) for v in w]
            var = sum(wv * (av - gm) ** 2 for av, wv in zip(am, wm))
            if var > t2:  # shrink towards g: mean kept, variance tau^2, atoms inside the hull
                s_ = mpmath.sqrt(t2 / var) * (1 - mpmath.mpf(10) ** -40)
                am = [gm + s_ * (av - gm) for av in am]
            try:
                rec = _law_value(num, support, am, wm, value)
            except ValueError:
                continue
            if mpmath.mpf(rec["var"]) > t2 or abs(mpmath.mpf(rec["mean"]) - gm) > mpmath.mpf(10) ** -40:
                continue
        if best is None or float(rec["value"]) > float(best["value"]):
            best = rec
    if best is None:
        best = _law_value(num, support, [g], [1], value)
    return best


def _weights_for(atoms, g, tau):
    """Weights (as 60-digit strings) on 2 or 3 atoms with mean g and variance tau^2 (3 atoms) or mean g (2 atoms,
    variance then checked by the caller), all >= 0; None if none."""
    with mpmath.workdps(DIGITS + 10):
        a = [mpmath.mpf(v) for v in atoms]
        gg, t2 = mpmath.mpf(g), mpmath.mpf(tau) ** 2
        if len(a) == 2:
            if a[0] == a[1] or not (a[0] <= gg <= a[1]):
                return None
            w0 = (a[1] - gg) / (a[1] - a[0])
            return [mpmath.nstr(w0, DIGITS + 5), mpmath.nstr(1 - w0, DIGITS + 5)]
        M = mpmath.matrix([[1, 1, 1], a, [(v - gg) ** 2 for v in a]])
        try:
            w = mpmath.lu_solve(M, mpmath.matrix([1, gg, t2]))
        except ZeroDivisionError:
            return None
        if any(v < 0 for v in w):
            return None
        return [mpmath.nstr(v, DIGITS + 5) for v in w]


# ---------------------------------------------------------------------------------------------------
# the outer problem: sup over (g, tau) of V(g, tau) / tau


def _two_point_search(num, pieces, gbox, tmax, seed=0, starts=40, tmin=0.0):  # noqa: C901
    """The best two-point law (float64, Nelder-Mead from ``starts`` points): (ratio, x_l, x_r, w), with
    ratio = E phi / sd, the mean g = w x_l + (1 - w) x_r in ``gbox`` and sd <= ``tmax``."""
    from scipy.optimize import minimize

    lo, hi = pieces[0].lo, pieces[-1].hi
    rng = np.random.default_rng(seed)

    def unpack(z):
        xl = lo + (hi - lo) / (1 + np.exp(-z[0]))
        xr = lo + (hi - lo) / (1 + np.exp(-z[1]))
        w = 1 / (1 + np.exp(-z[2]))
        return min(xl, xr), max(xl, xr), w

    def ratio(xl, xr, w):
        g = w * xl + (1 - w) * xr
        if not (gbox[0] <= g <= gbox[1]) or xr - xl < 1e-300:
            return -np.inf
        sd = math.sqrt(w * (1 - w)) * (xr - xl)
        if sd <= 1e-7 * (hi - lo) or sd > tmax:  # float64 cannot resolve a thinner law (the snap does)
            return -np.inf
        f = num(g, np.array([xl, xr]))
        return float((w * f[0] + (1 - w) * f[1]) / max(sd, tmin))

    def logit(v):
        v = min(max(v, 1e-12), 1 - 1e-12)
        return math.log(v / (1 - v))

    ends = sorted({pc.lo for pc in pieces} | {pc.hi for pc in pieces})
    inits = [rng.normal(size=3) * 2 for _ in range(starts)]
    # a vectorised grid over (x_l, x_r, w) first (geometric towards the piece ends), its best points refined
    geo = np.concatenate([np.linspace(0, 1, 41)[1:-1], np.logspace(-9, -1, 9), 1 - np.logspace(-9, -1, 9)])
    xg = np.unique(np.concatenate([e + (hi - lo) * np.concatenate([geo, -geo]) for e in ends]))
    xg = np.unique(np.concatenate([xg[(xg >= lo) & (xg <= hi)], ends]))
    wg = np.concatenate([np.linspace(0.02, 0.98, 33), np.logspace(-6, -2, 3), 1 - np.logspace(-6, -2, 3)])
    XL, XR, W = np.meshgrid(xg, xg, wg, indexing="ij")
    m = XL < XR
    XL, XR, W = XL[m], XR[m], W[m]
    G = W * XL + (1 - W) * XR
    SD = np.sqrt(W * (1 - W)) * (XR - XL)
    with np.errstate(all="ignore"):
        R = (W * num(G, XL) + (1 - W) * num(G, XR)) / np.maximum(SD, tmin)
    R[~((G >= gbox[0]) & (G <= gbox[1]) & (SD > 1e-7 * (hi - lo)) & (SD <= tmax)) | ~np.isfinite(R)] = -np.inf
    top = np.argsort(-R)[:5]
    inits = inits[: max(2, starts // 20)] + [
        np.array([logit((XL[i] - lo) / (hi - lo)), logit((XR[i] - lo) / (hi - lo)), logit(W[i])]) for i in top
    ]
    best = (-np.inf, None)
    for i in top[:1]:
        best = (float(R[i]), (float(XL[i]), float(XR[i]), float(W[i])))
    for z0 in inits:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # Nelder-Mead's simplex test on -inf values
            r = minimize(
                lambda z: -ratio(*unpack(z)),
                z0,
                method="Nelder-Mead",
                options={"maxiter": 1500, "xatol": 1e-10, "fatol": 1e-13},
            )
        v = -r.fun
        if np.isfinite(v) and v > best[0]:
            best = (v, unpack(r.x))
    return best


def _snap_candidates(pieces, xl, xr, w):
    """Two-point laws near (x_l, x_r, w) whose atoms are pushed to the piece ends they approach (x = e +- 10^-k),
    and the degenerate limit (x_r - x_l -> 0) approached geometrically: the supremum is often only approached."""
    ends = sorted({pc.lo for pc in pieces} | {pc.hi for pc in pieces})
    lo, hi = ends[0], ends[-1]

    def near(v):
        out = [mpmath.mpf(v)]
        for e in ends:
            if abs(v - e) < 1e-3:
                for k in _SNAP:
                    d = mpmath.mpf(10) ** -k
                    for c in (e + d, e - d, mpmath.mpf(e)):
                        if lo <= c <= hi:
                            out.append(c)
        return out

    nl, nr = near(xl), near(xr)
    cands = [(a, mpmath.mpf(xr), mpmath.mpf(w)) for a in nl] + [(mpmath.mpf(xl), b, mpmath.mpf(w)) for b in nr]
    if xr - xl < 1e-3:  # a degenerate law: shrink it towards its upper atom
        for k in _SNAP[:8]:
            cands.append((mpmath.mpf(xr) - mpmath.mpf(10) ** -k, mpmath.mpf(xr), mpmath.mpf(w)))
            cands.append((mpmath.mpf(xr) - mpmath.mpf(10) ** -k, mpmath.mpf(xr), mpmath.mpf("0.5")))
    return cands


def _outer_law(num, pieces, gbox, tmax, value, seed, tmin=0.0):
    ratio, (xl, xr, w) = _two_point_search(num, pieces, gbox, tmax, seed=seed, tmin=tmin)
    support = (pieces[0].lo, pieces[-1].hi)

    def score(a, b, ww):
        if not (0 < ww < 1) or not a < b:
            return None, -mpmath.inf
        try:
            rec = _law_value(num, support, [a, b], [ww, 1 - ww], value)
        except ValueError:
            return None, -mpmath.inf
        m, sd = mpmath.mpf(rec["mean"]), mpmath.mpf(rec["sd"])
        if not (gbox[0] <= m <= gbox[1]) or sd <= 0 or sd > tmax:
            return None, -mpmath.inf
        return rec, mpmath.mpf(rec["value"]) / max(sd, mpmath.mpf(tmin))

    with mpmath.workdps(DIGITS + 10):
        cands = _snap_candidates(pieces, xl, xr, w)
        best, best_r = score(mpmath.mpf(xl), mpmath.mpf(xr), mpmath.mpf(w))
        cur = (mpmath.mpf(xl), mpmath.mpf(xr), mpmath.mpf(w))
        for slot in (1, 0, 2):  # coordinate-wise: the upper atom, the lower atom, then the joint candidates
            pool = {c[slot] for c in cands} if slot < 2 else set()
            for v in pool:
                trial = list(cur)
                trial[slot] = v
                rec, r = score(*trial)
                if r > best_r:
                    best, best_r, cur = rec, r, tuple(trial)
        for a, b, ww in cands:
            if b - a < 1e-3:
                rec, r = score(a, b, ww)
                if r > best_r:
                    best, best_r, cur = rec, r, (a, b, ww)
        # the weight re-optimised for the snapped atoms (golden section at 50 digits on a bracket around it)
        a, b, ww = cur
        lo_w, hi_w = (
            max(ww - mpmath.mpf("0.05"), mpmath.mpf(10) ** -30),
            min(ww + mpmath.mpf("0.05"), 1 - mpmath.mpf(10) ** -30),
        )
        phi_ = (mpmath.sqrt(5) - 1) / 2
        for _ in range(90):
            m1, m2 = hi_w - phi_ * (hi_w - lo_w), lo_w + phi_ * (hi_w - lo_w)
            if score(a, b, m1)[1] < score(a, b, m2)[1]:
                lo_w = m1
            else:
                hi_w = m2
        rec, r = score(a, b, (lo_w + hi_w) / 2)
        if r > best_r:
            best, best_r = rec, r
    if best is not None:
        best["ratio"] = mpmath.nstr(best_r, DIGITS)
    return best, float(best_r), ratio


@dataclass
class _Box:
    g0: float
    g1: float
    t0: float
    t1: float


_Y = sp.Symbol("y", real=True)


def _box_claims(pieces, box, A, B, c1):
    """The claims phi <= rhs that certify the (g, tau) box with (A, B, c1), one per piece, in the variables
    (g, y = x - g): the quadratic depends on y alone and the claim's structure (of the scale tau) lies along
    y = 0, which (g, x) boxes would have to follow diagonally. On a box that crosses a piece's end, phi is taken
    at x clamped into the piece where x lies inside, and -10^30 outside (a Piecewise: where the box straddles
    the end, the hull of both, whose upper end is phi's)."""
    A_, B_, c1_ = sp.Rational(A), sp.Rational(B), sp.Rational(c1)
    t1 = sp.Rational(box.t1)
    if box.t0 > 0:
        rhs = A_ * sp.Rational(box.t0) + c1_ * _Y + (B_ / t1) * _Y**2
    else:  # the lower envelope over tau in (0, t1] of A tau + c1 y + B y^2/tau with A = B
        rhs = c1_ * _Y + sp.Piecewise((2 * A_ * sp.Abs(_Y), sp.Abs(_Y) <= t1), (A_ * t1 + B_ * _Y**2 / t1, True))
    out = []
    # outside its piece a claim is void: lhs is a number below rhs everywhere (rhs >= -|c1| |y|, |y| <= hi - lo)
    below = -(abs(c1_) * sp.Rational(pieces[-1].hi - pieces[0].lo) + 1)
    for pc in pieces:
        lo, hi = sp.Rational(pc.lo), sp.Rational(pc.hi)
        xe = MEAN + _Y
        inside = sp.And(xe >= lo, xe <= hi)
        # clamped so that a power's base stays of one sign: Max(., 0) is enclosed >= 0 (pieces in (-inf, 0] as
        # x = -Max(Min(-x, -lo), -hi))
        clamped = -sp.Max(sp.Min(-xe, -lo), -hi) if pc.hi <= 0 else sp.Max(sp.Min(xe, hi), lo)
        plain = _xsym(pc.expr).subs(X, xe)
        lhs = sp.Piecewise((_xsym(pc.expr).subs(X, clamped), inside), (below, True))
        gb = (box.g0, box.g1)
        d = 1e-9 * (pieces[-1].hi - pieces[0].lo)  # the core stays off the piece's ends (powers of 0 there)
        core = (pc.lo - box.g0 + d, pc.hi - box.g1 - d)  # every (g, y) of this strip has x inside the piece
        if core[0] < core[1]:  # the plain expression there (mean-value forms apply); the Piecewise on the edges
            out.append((plain, rhs, {"g": gb, "y": core}))
            out.append((lhs, rhs, {"g": gb, "y": (pc.lo - box.g1, core[0])}))
            out.append((lhs, rhs, {"g": gb, "y": (core[1], pc.hi - box.g0)}))
        else:
            out.append((lhs, rhs, {"g": gb, "y": (pc.lo - box.g1, pc.hi - box.g0)}))
    return out


_U = sp.Symbol("u", real=True)


def _nonneg_var(lhs, rhs, pc, box):
    """The claim lhs <= rhs on the piece, in x (pieces in [0, inf)) or in u = -x (pieces in (-inf, 0]), so that the
    box variable is >= 0 and its powers are enclosed (arb keeps a box in [0, inf) nonnegative)."""
    if pc.hi <= 0:
        return lhs.subs(X, -_U), rhs.subs(X, -_U), {**box, "u": (-pc.hi, -pc.lo)}
    return lhs, rhs, {**box, "x": (pc.lo, pc.hi)}


def _rhs_numeric(box, A, B, c1, g, x):
    y = x - g
    if box.t0 > 0:
        return A * box.t0 + c1 * y + (B / box.t1) * y * y
    return c1 * y + np.where(np.abs(y) <= box.t1, 2 * A * np.abs(y), A * box.t1 + B * y * y / box.t1)


def _certify_box(num, pieces, box, U, max_boxes):
    """(certified, certificate): one (A, B, c1) with A + B <= U for the whole (g, tau) box, from the dual LP at
    the box's centre, screened on a float grid of (g, x) and then decided by branch and bound in arb."""
    gc = 0.5 * (box.g0 + box.g1)
    tc = math.sqrt(box.t0 * box.t1) if box.t0 > 0 else box.t1 / 2
    lo, hi = pieces[0].lo, pieces[-1].hi
    if not (lo < gc < hi):
        gc = min(max(gc, lo + 1e-12), hi - 1e-12)
    (c0, c1, c2), val, _, _, _ = _dual_lp(num, pieces, gc, tc, rounds=2)

    if box.t0 > 0:
        A, B = max(c0, 0.0) / tc, max(c2, 0.0) * tc
        if A + B > U:
            return False, None
        extra = U - (A + B)
        A, B = A + extra / 2, B + extra / 2
    else:
        A = B = U / 2
    gs = np.linspace(box.g0, box.g1, 9)[:, None]
    xs = np.concatenate([np.linspace(pc.lo, pc.hi, 200) for pc in pieces])[None, :]
    with np.errstate(all="ignore"):
        if np.any(num(gs, xs) > _rhs_numeric(box, A, B, c1, gs, xs) + 1e-15):
            return False, None
    for lhs, rhs, bx in _box_claims(pieces, box, A, B, c1):
        r = branch_and_bound(lhs, rhs, bx, max_boxes=max_boxes, min_width=1e-12)
        if r.status != "proved":
            return False, None
    return True, {"g": [box.g0, box.g1], "tau": [box.t0, box.t1], "A": A, "B": B, "c1": c1}


def _split(box: _Box):
    tw = math.log(box.t1 / box.t0) if box.t0 > 0 else 2.0
    gw = 4 * (box.g1 - box.g0)
    if gw >= tw:
        m = 0.5 * (box.g0 + box.g1)
        return [_Box(box.g0, m, box.t0, box.t1), _Box(m, box.g1, box.t0, box.t1)]
    m = math.sqrt(box.t0 * box.t1) if box.t0 > 0 else box.t1 / 16
    return [_Box(box.g0, box.g1, box.t0, m), _Box(box.g0, box.g1, m, box.t1)]


def _outer_upper(num, pieces, gbox, tmin, tmax, U, *, budget_s, max_boxes, check_boxes):
    """Certify sup V/tau <= U on gbox x (0, tmax]: ``(done, certificates, boxes_tried, left)``."""
    deadline = time.perf_counter() + budget_s
    heap = [(0, 0, _Box(gbox[0], gbox[1], tmin, tmax))]
    certs, tried, tie = [], 0, 0
    while heap:
        if time.perf_counter() > deadline or tried >= max_boxes:
            return False, certs, tried, len(heap)
        _, _, box = heapq.heappop(heap)
        tried += 1
        try:
            ok, cert = _certify_box(num, pieces, box, U, check_boxes)
        except (RuntimeError, ValueError):
            ok, cert = False, None
        if ok:
            certs.append(cert)
            continue
        if box.g1 - box.g0 < 1e-9 and (box.t0 > 0 and box.t1 / box.t0 < 1 + 1e-9):
            return False, certs, tried, len(heap) + 1
        for child in _split(box):
            tie += 1
            heapq.heappush(heap, (tried, tie, child))
    return True, certs, tried, 0


def _sharp_bound(
    phi,
    normaliser="tau",
    support=(-1.0, 1.0),
    constraints=None,
    *,
    rtol: float = RTOL,
    value=None,
    budget_s: float = 20.0,
    gaps=(3e-2, 1e-2, 3e-3, 1e-3, 1e-4, 1e-6),
    max_boxes: int = 4000,
    check_boxes: int = 3000,
    seed: int = 0,
) -> MomentResult:
    """The sharp constant of E phi(X; g) <= C * normaliser over laws on ``support`` with E X = g and
    E (X - g)^2 <= tau^2 (module docstring), certified on both sides.

    ``phi``: a sympy expression of ``x`` (the value) and ``g`` (the mean), or pieces ``[((lo, hi), expr), ...]``
    (closed; the larger value at a shared end). ``constraints``: ``{"mean": g or (g_lo, g_hi), "sd": tau or
    (0, tau_hi)}``. With a number for both, the inner problem at that (g, tau) (``normaliser`` a number: the
    bound's scale, default 1); with ranges, the outer supremum of V(g, tau)/tau over the box (``normaliser``
    "tau": only the scale normaliser is supported there; ValueError otherwise). ``value``: an independent
    50-digit evaluator ``value(g, x)`` of phi for the law's re-check. ``budget_s``: the time for the upper side,
    shared by the ``gaps`` tried (loosest first: a certified upper end lower * (1 + gap); the tightest one
    certified is kept); ``rtol``: the agreement that makes the evidence ``proved``.

    Returns a :class:`MomentResult` (``lower`` from an explicit law re-checked at 50 digits, ``upper`` certified
    when ``upper_certified``; ``certificate``: the boxes' quadratics, the number of boxes and the one at the
    lower law's (g, tau))."""
    constraints = dict(constraints or {})
    unknown = set(constraints) - {"mean", "sd"}
    if unknown:
        raise ValueError(f"constraints may name 'mean' and 'sd' only, got {sorted(unknown)}")
    mean, sd = constraints.get("mean"), constraints.get("sd")
    lo, hi = _support(support)
    if isinstance(mean, (int, float)) and isinstance(sd, (int, float)):
        scale = float(sd) if normaliser == "tau" else normaliser
        if not isinstance(scale, (int, float)) or not scale > 0:
            raise ValueError(
                f"normaliser must be a positive number (or 'tau') for fixed constraints, got {normaliser!r}"
            )
        r = inner_bound(phi, support, float(mean), float(sd), rtol=rtol, value=value)
        if scale != 1.0:
            r.lower, r.upper = r.lower / scale, math.nextafter(r.upper / scale, math.inf)
            r.evidence = _evidence(r.lower, r.upper, r.upper_certified, rtol)
        return r
    if normaliser != "tau":
        raise ValueError(f"normaliser must be 'tau' for the outer supremum, got {normaliser!r}")
    gbox = _range(mean, "mean", (lo, hi))
    sbox = _range(sd, "sd", (0.0, hi - lo))
    if sbox[0] < 0.0:
        raise ValueError(f"constraints['sd'] must be a range (tau_lo, tau_hi) with tau_lo >= 0, got {sd!r}")
    if not (lo <= gbox[0] < gbox[1] <= hi):
        raise ValueError(f"constraints['mean'] must be a range inside the support, got {mean!r}")
    t_start = time.perf_counter()
    pieces = pieces_of(phi, support)
    num = _Numeric(pieces)
    sd_max = max(math.sqrt(max((hi - gv) * (gv - lo), 0.0)) for gv in np.linspace(gbox[0], gbox[1], 201))
    if gbox[0] <= (lo + hi) / 2 <= gbox[1]:
        sd_max = (hi - lo) / 2
    tmax = min(sbox[1], math.nextafter(sd_max, math.inf) * (1 + 1e-12))
    law, lower, float_ratio = _outer_law(num, pieces, gbox, tmax, value, seed, sbox[0])
    if law is None:
        raise RuntimeError("no admissible two-point law found (is the box of (g, tau) empty?)")
    best = None
    spent = 0.0
    tried_total = 0
    for gap in sorted(gaps, reverse=True):
        left = budget_s - spent
        if left <= 0:
            break
        U = lower * (1 + gap)
        t0 = time.perf_counter()
        done, certs, tried, remaining = _outer_upper(
            num, pieces, gbox, sbox[0], tmax, U, budget_s=left, max_boxes=max_boxes, check_boxes=check_boxes
        )
        spent += time.perf_counter() - t0
        tried_total += tried
        if not done:
            break
        best = (U, certs, tried)
    seconds = time.perf_counter() - t_start
    g_law, sd_law = float(law["mean"]), float(law["sd"])
    at_law = None
    if lo < g_law < hi and sd_law > 0:
        try:
            inner = inner_bound(phi, support, g_law, sd_law, rtol=rtol, value=value)
            at_law = inner.certificate | {"lower": inner.lower, "upper": inner.upper}
        except (RuntimeError, ValueError):
            at_law = None
    if best is None:
        upper, certified = math.inf, False
        certificate = {"boxes": 0, "at_law": at_law, "tried": tried_total}
        ev = "searched"
        reason = f"lower {lower:.10g} (a two-point law re-checked at {DIGITS} digits); " + (
            f"no upper end certified within {budget_s:g} s ({tried_total} boxes of (g, tau) tried at the loosest gap "
            f"{max(gaps):g})"
            if gaps
            else "the outer upper side not attempted (no gaps given)"
        )
    else:
        U, certs, tried = best
        upper, certified = math.nextafter(U, math.inf), True
        ev = _evidence(lower, upper, True, rtol)
        certificate = {
            "form": "q = A tau + c1 (x - g) + (B / tau) (x - g)^2 >= phi, per box of (g, tau); bound (A + B) tau",
            "boxes": len(certs),
            "boxes_listed": certs[:40],
            "at_law": at_law,
            "U": U,
        }
        reason = (
            f"sup V(g, tau)/tau over g in [{gbox[0]:g}, {gbox[1]:g}], tau in ({sbox[0]:g}, {tmax:.6g}] lies in "
            f"[{lower:.10g}, {upper:.10g}] (relative width {(upper - lower) / lower:.2g}): lower, a two-point law "
            f"re-checked at {DIGITS} digits; upper, {len(certs)} boxes of (g, tau) each with a quadratic majorant "
            f"decided by branch and bound in arb ({tried} boxes tried)"
        )
    return MomentResult(
        lower,
        upper,
        law,
        certificate,
        ev,
        certified,
        reason,
        seconds,
        {"float_search": float_ratio, "tau_range": [sbox[0], tmax], "mean_range": list(gbox)},
    )


def sharp_bound(phi, normaliser="tau", support=(-1.0, 1.0), constraints=None, *, cache: str | None = None, **kw):
    """See :func:`_sharp_bound` (the engine; its docstring) for the arguments. ``cache``: a label of the problem
    (it must name ``value`` when one is given, e.g. "lemma 3 at p = 3, the paper's definition"): the result is kept
    on disk (``$LPTHEORY_SHARP_CACHE``, ``~/.cache/lptheory/sharp-constants``; signed entries,
    :func:`proofs_checks.disk_cache.signed_read`) under the label, phi's pieces, the support, the constraints, the
    options, the library versions and the hash of the sources (:func:`_code_hash`), and read back on the next call.
    None (default): always computed."""
    if cache is None:
        return _sharp_bound(phi, normaliser, support, constraints, **kw)
    import json

    from .disk_cache import signed_read, signed_write

    pieces = pieces_of(phi, support)
    opts = {k: (v if not callable(v) else "callable") for k, v in sorted(kw.items())}
    key = json.dumps(
        [
            _VERSION,
            str(cache),
            [[p.lo, p.hi, sp.srepr(p.expr)] for p in pieces],
            list(map(float, support)),
            str(normaliser),
            str(sorted((constraints or {}).items())),
            str(opts),
            mpmath.__version__,
            sp.__version__,
            _code_hash(),  # the kept decisions built on this result are keyed by it too (kept_decision)
        ]
    )
    root, path = _entry_path("", key)
    if path is not None:
        text = signed_read(path)
        if text is not None:
            try:
                d = json.loads(text)
                extra = {k: d[k] for k in d if k not in _FIELDS}
                return MomentResult(**{k: d[k] for k in _FIELDS}, extra=extra)
            except (ValueError, KeyError, TypeError):
                pass
    r = _sharp_bound(phi, normaliser, support, constraints, **kw)
    if path is not None:
        d = r.to_dict()
        d.pop("gap", None)
        signed_write(path, json.dumps(d, default=float))
    return r


def _entry_path(prefix: str, key: str):
    """``(directory, path)`` of the entry keyed by ``key`` under ``$LPTHEORY_SHARP_CACHE`` (default
    ``~/.cache/lptheory/sharp-constants``; file ``prefix`` + sha256(key) + ``.json``), ``(None, None)`` when the
    switch is ``0``: where :func:`sharp_bound` and :func:`kept_decision` keep their results."""
    import hashlib
    import os

    from lptheory import config

    env = config.raw("LPTHEORY_SHARP_CACHE")
    if env == "0":
        return None, None
    root = env or os.path.join(os.path.expanduser("~"), ".cache", "lptheory", "sharp-constants")
    return root, os.path.join(root, prefix + hashlib.sha256(key.encode()).hexdigest() + ".json")


_KEPT_VERSION = "kept-1"


@functools.lru_cache(maxsize=1)
def _code_hash() -> str:
    """SHA-256 of every Python source of the claim layer (``proofs_checks``, sub-packages included) and of the
    ``lptheory`` core: a decision kept on disk (:func:`kept_decision`) is read back only by the code that made it."""
    import hashlib
    import os

    import lptheory

    h = hashlib.sha256()
    roots = [os.path.dirname(os.path.abspath(__file__)), os.path.dirname(lptheory.__file__)]
    for root in roots:
        for d, dirs, files in sorted(os.walk(root)):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(d, name)
                    with open(path, "rb") as fh:
                        body = fh.read()
                    name_b = os.path.relpath(path, root).encode()
                    # lengths first: no two (name, content) sequences give the same bytes
                    h.update(b"%d:%d:" % (len(name_b), len(body)) + name_b + body)
    return h.hexdigest()


def _flint_version() -> str:
    try:
        import flint
    except ImportError:
        return "no flint (mpmath.iv)"
    return f"python-flint {flint.__version__}"


def _readmit_all(doc) -> int:
    """Re-admit every certificate of ``doc`` (a decision read back by :func:`kept_decision`) as issued in this process
    (:func:`proofs_checks.certificates.readmit`); returns how many were admitted (one altered since it was issued
    is not, and the gate then refuses the record that carries it). :func:`kept_decision`'s only (ValueError from any
    other caller: readmit sees this decider file as its caller, so the check that it serves a kept entry is here)."""
    import sys

    from .certificates import certificates_in, readmit

    if sys._getframe(1).f_code is not kept_decision.__code__:
        raise ValueError("_readmit_all: only kept_decision re-admits certificates, those of an entry it read back")

    return sum(readmit(c) for c in certificates_in(doc))


def _called_by_decider() -> bool:
    """Whether the caller of :func:`kept_decision` is a file of the toolkit's deciders."""
    from .certificates import caller_is_decider

    return caller_is_decider(2)  # 1: kept_decision, 2: its caller


def _users_code_loaded() -> bool:
    """Whether a user's file runs in this process: a claim file (:func:`proofs_checks.packs.load`) or a plug-in
    (:func:`lptheory.plugins.load`), imported as a module ``lptheory_user_*``, or a plug-in module."""
    import sys

    from lptheory import plugins

    return bool(plugins.loaded()) or any(name.startswith("lptheory_user_") for name in list(sys.modules))


def kept_decision(kind: str, args: tuple, compute):
    """``compute()``'s result (a JSON document: dicts, lists, strings, finite or infinite floats, bools, None), a
    decision of the toolkit's deciders (the sharp constants, the combined proofs), kept on disk between runs as the
    engine's own results are (:func:`sharp_bound`: signed entries under this user's key, ``$LPTHEORY_SHARP_CACHE``,
    ``0`` for none) under ``kind``, ``args``, the hash of the claim layer's and the core's sources
    (:func:`_code_hash`), the versions of Python and of the libraries the decisions use, and mpmath's backend. A
    fresh result goes through JSON as well, so that a run that computes and a run that reads back return the same
    document (tuples become lists). A damaged, edited or foreign entry is a miss with a warning naming it
    (:func:`proofs_checks.disk_cache.load_signed`). The certificates of an entry read back are re-admitted as issued
    in this process (:func:`proofs_checks.certificates.readmit`): the same decision, by the same code. A decider
    patched at run time (a planted bug in a test) is not seen by the sources' hash: run it with the cache off
    (``LPTHEORY_SHARP_CACHE=0``; the test suite keeps its entries in a directory of its own). In a process where a
    user's claim file or plug-in is loaded (it may patch a decider) nothing is read or kept: computed every time.

    Callers: files of :data:`proofs_checks.certificates.DECIDER_FILES` only (the re-admission is theirs); ``args``
    plain str, int, float, bool or None (TypeError otherwise), the values ``compute`` decides with."""
    import json
    import platform

    import numpy
    import scipy

    if not _called_by_decider():
        raise ValueError(
            f"kept_decision({kind!r}): only the toolkit's deciders keep decisions (the files of "
            "proofs_checks.certificates.DECIDER_FILES); a claim file calls them instead"
        )

    if any(type(a) not in (str, int, float, bool, type(None)) for a in args):
        # the key is the arguments' repr: a subclass (its own repr, arithmetic or __float__) could make one
        # decision under another decision's key; the caller computes with exactly these values
        raise TypeError(f"kept_decision({kind!r}): args must be plain str, int, float, bool or None, got {args!r}")

    from .disk_cache import load_signed, signed_write

    def parse(text):
        d = json.loads(text)
        if not isinstance(d, dict) or d.get("kind") != kind or "result" not in d:
            raise ValueError("not an entry of this kind")
        return d["result"]

    key = json.dumps(
        [_KEPT_VERSION, kind, [repr(a) for a in args], _code_hash()]
        + [m.__version__ for m in (mpmath, sp, numpy, scipy)]
        + [_flint_version(), platform.python_version(), mpmath.libmp.BACKEND]
    )
    root, path = (None, None) if _users_code_loaded() else _entry_path("kept-", key)
    if path is not None:
        got = load_signed(path, parse, what=f"sharp-constants cache entry ({kind})")
        if got is not None:
            # the same decision by the same code in an earlier run (signed, keyed by the sources' hash): its
            # certificates count as issued here; one that does not match its own digest is not admitted, and the
            # record that carries it is refused by the gate
            _readmit_all(got)
            _KEPT_COUNTS["read"] += 1
            _KEPT_COUNTS["directory"] = root
            return got
    text = json.dumps({"kind": kind, "result": compute()})
    _KEPT_COUNTS["computed"] += 1
    if path is not None:
        signed_write(path, text)
    return parse(text)


_KEPT_COUNTS: dict = {"read": 0, "computed": 0, "directory": None}


def kept_counts() -> dict:
    """How many decisions :func:`kept_decision` read back from disk (``read``, and the ``directory`` of the last
    one) and computed (``computed``) in this process so far: the provenance a report states (a decision read back
    is one an earlier run made)."""
    return dict(_KEPT_COUNTS)


_VERSION = "moment-1"
_FIELDS = ("lower", "upper", "law", "certificate", "evidence", "upper_certified", "reason", "seconds")


def _range(v, name, default):
    if v is None:
        return default
    if isinstance(v, (int, float)):
        raise ValueError(f"constraints[{name!r}] must be a range (lo, hi) when the other is one, got {v!r}")
    try:
        a, b = (float(t) for t in v)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"constraints[{name!r}] must be a number or a pair (lo, hi), got {v!r}") from exc
    if not (math.isfinite(a) and math.isfinite(b) and a < b):
        raise ValueError(f"constraints[{name!r}] must be a finite range lo < hi, got {v!r}")
    return a, b
