"""Independent re-checks of the spectral pack's witnesses (standard library and mpmath only).

Like :mod:`proofs_checks.recheck`, this file imports nothing from the toolkit but that standalone module
(for its precision, :data:`proofs_checks.recheck.DPS`, the Stacey pack's: 60 digits): a witness is a JSON
object, and the functions below recompute the claim from its raw data at high precision. They are
registered under their kinds with :func:`proofs_checks.api.register_recheck` by the pack.

Kinds:

``spectral-identity``
    ``identity`` (a name below), ``G`` (a matrix as nested lists), ``claimed`` (the toolkit's output, a
    matrix), ``tolerance`` (relative, Frobenius). The reference side is recomputed from ``G`` with
    mpmath's SVD at ``dps`` digits; violated when ||claimed - reference||_F > tolerance ||reference||_F.
    Identities: ``spectral-direction`` (U V^T), ``frobenius-direction`` (G / ||G||_F), ``sign`` (sign(G)
    entry-wise).

``ns-polynomial``
    ``coefficients`` (a, b, c), ``steps`` k, ``s`` (a normalized singular value in (0, 1]) and the claimed
    interval ``[lo, hi]`` for phi^k(s), phi(x) = a x + b x^3 + c x^5; violated when phi^k(s), computed at
    ``dps`` digits, lies outside. With ``matrix`` (nested lists) the Newton-Schulz iteration is also run on
    that matrix at ``dps`` digits and its singular values compared with the interval.
"""

from __future__ import annotations

import mpmath

from proofs_checks.recheck import DPS

__all__ = ["recheck_identity", "recheck_ns_polynomial", "KINDS"]


def _num(v):
    return mpmath.mpf(v) if isinstance(v, str) else mpmath.mpf(float(v))  # a float's exact binary value


def _m(rows):
    """A matrix from nested lists (a vector becomes one row)."""
    if rows and not isinstance(rows[0], (list, tuple)):
        rows = [rows]
    return mpmath.matrix([[_num(v) for v in r] for r in rows])


def _fro(A):
    return mpmath.sqrt(mpmath.fsum(A[i, j] ** 2 for i in range(A.rows) for j in range(A.cols)))


def _polar(G):
    U, S, V = mpmath.svd_r(G, full_matrices=False)  # G = U diag(S) V
    k = len(S)
    smax = max(S[i] for i in range(k)) if k else mpmath.mpf(0)
    tol = smax * mpmath.mpf(10) ** (-(mpmath.mp.dps - 5))
    out = mpmath.zeros(G.rows, G.cols)
    for i in range(k):
        if S[i] > tol:
            for r in range(G.rows):
                for c in range(G.cols):
                    out[r, c] += U[r, i] * V[i, c]
    return out


def _reference(identity, G):
    if identity == "spectral-direction":
        return _polar(G)
    if identity == "frobenius-direction":
        n = _fro(G)
        return G / n if n > 0 else G * 0
    if identity == "sign":
        return G.apply(mpmath.sign)
    raise ValueError(f"unknown identity {identity!r}")


def recheck_identity(w: dict, dps: int = DPS) -> dict:
    with mpmath.workdps(dps):
        G = _m(w["G"])
        claimed = _m(w["claimed"])
        ref = _reference(w["identity"], G)
        gap = _fro(claimed - ref)
        scale = _fro(ref)
        tol = mpmath.mpf(str(w.get("tolerance", 1e-9)))
        violated = bool(gap > tol * max(scale, mpmath.mpf(1e-300)))
        return {
            "violated": violated,
            "assumptions_ok": True,
            "empirical": float(gap / scale) if scale > 0 else float(gap),
            "bound": float(tol),
            "ratio": float(gap / (tol * scale)) if scale > 0 else None,
            "checks": {"identity": w["identity"], "reference": "mpmath svd_r"},
            "dps": dps,
        }


def _phi_k(s, coeffs, k):
    a, b, c = (mpmath.mpf(str(v)) for v in coeffs)
    for _ in range(k):
        s = s * (a + s * s * (b + c * s * s))
    return s


def _ns_matrix(X, coeffs, k):
    a, b, c = (mpmath.mpf(str(v)) for v in coeffs)
    if X.rows > X.cols:
        X = X.T
    X = X / _fro(X)
    for _ in range(k):
        A = X * X.T
        B = b * A + c * A * A
        X = a * X + B * X
    return X


def recheck_ns_polynomial(w: dict, dps: int = DPS) -> dict:
    with mpmath.workdps(dps):
        lo, hi = (mpmath.mpf(str(v)) for v in w["interval"])
        k = int(w["steps"])
        s = mpmath.mpf(str(w["s"]))
        val = _phi_k(s, w["coefficients"], k)
        out_scalar = bool(val < lo or val > hi)
        checks = {"phi^k(s)": float(val)}
        violated = out_scalar
        if "matrix" in w:
            X = _ns_matrix(_m(w["matrix"]), w["coefficients"], k)
            sv = mpmath.svd_r(X, compute_uv=False)
            svs = [sv[i] for i in range(len(sv))]
            checks["singular values"] = [float(v) for v in svs]
            violated = violated and any(v < lo or v > hi for v in svs)
        return {
            "violated": violated,
            "assumptions_ok": 0 < s <= 1,
            "empirical": float(val),
            "bound": float(lo if val < lo else hi),
            "ratio": None,
            "checks": checks,
            "dps": dps,
        }


KINDS = {"spectral-identity": recheck_identity, "ns-polynomial": recheck_ns_polynomial}
