"""Independent definitions for the audit of proofs_checks/stacey/sharp.py (no import from the toolkit).

The paper (stacey-icml2025.tex, Appendix A, proof of Theorem 1, Lemmas 1-2), one coordinate, eta = 1, a = 1/(p-1),
s(v) = sgn(v)|v|^a with sgn(0) = 0 (the paper's sgn):

* B  (combined, the line before the "<="):  g (s(g) - s(x))
* B1 (Lemma 1): |g| (|g|^a + |x|^a) 1[sgn(g) != sgn(x)]
* B2 (Lemma 2): |g| | |g|^a - |x|^a | 1[sgn(g) = sgn(x)]

The ratio of a law (atoms xs, weights ws, G = 1 bound |x| <= 1) is E phi(X; g) / sd(X), g = E X; with an
explicit tau >= sd it is E phi / tau (never larger when E phi >= 0).
"""

import mpmath
import numpy as np

TERMS = ("B", "B1", "B2")


def phi_np(term, x, g, p):
    """Vectorised float64 phi (broadcasting x, g)."""
    a = 1.0 / (p - 1.0)
    sx, sg = np.sign(x), np.sign(g)
    ax, ag = np.abs(x) ** a, np.abs(g) ** a
    if term == "B":
        return g * (sg * ag - sx * ax)
    if term == "B1":
        return np.abs(g) * (ag + ax) * (sx != sg)
    if term == "B2":
        return np.abs(g) * np.abs(ag - ax) * (sx == sg)
    raise ValueError(term)


def ratio_np(term, xs, ws, p):
    """E phi / sd for laws given as rows (xs, ws: (..., k)); -inf where sd = 0."""
    ws = ws / ws.sum(axis=-1, keepdims=True)
    g = (ws * xs).sum(axis=-1, keepdims=True)
    var = (ws * (xs - g) ** 2).sum(axis=-1)
    e = (ws * phi_np(term, xs, g, p)).sum(axis=-1)
    sd = np.sqrt(np.maximum(var, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(sd > 1e-300, e / sd, -np.inf)
    return r


def phi_mp(term, x, g, p):
    a = 1 / (mpmath.mpf(p) - 1)
    sx, sg = mpmath.sign(x), mpmath.sign(g)
    ax, ag = abs(x) ** a, abs(g) ** a
    if term == "B":
        return g * (sg * ag - sx * ax)
    if term == "B1":
        return abs(g) * (ag + ax) if sx != sg else mpmath.mpf(0)
    if term == "B2":
        return abs(g) * abs(ag - ax) if sx == sg else mpmath.mpf(0)
    raise ValueError(term)


def ratio_mp(term, xs, ws, p, dps=50):
    """The law's ratio at ``dps`` digits from its atoms and weights (weights renormalised); also checks |x| <= 1."""
    with mpmath.workdps(dps):
        xs = [mpmath.mpf(v) for v in xs]
        ws = [mpmath.mpf(v) for v in ws]
        assert all(abs(v) <= 1 for v in xs) and all(w >= 0 for w in ws)
        s = sum(ws)
        ws = [w / s for w in ws]
        # g = x0 + E(X - x0) and var = sum_{i<j} w_i w_j (x_i - x_j)^2: exact (g = x0, var = 0) when every atom
        # is the same float, where renormalised weights would leave a 1e-50 rounding "variance"
        g = xs[0] + sum(w * (v - xs[0]) for w, v in zip(ws, xs))
        var = sum(ws[i] * ws[j] * (xs[i] - xs[j]) ** 2 for i in range(len(xs)) for j in range(i + 1, len(xs)))
        e = sum(w * phi_mp(term, v, g, p) for w, v in zip(ws, xs))
        if var == 0:  # a point mass: no ratio
            return mpmath.mpf("-inf"), g, mpmath.mpf(0)
        return e / mpmath.sqrt(var), g, mpmath.sqrt(var)
