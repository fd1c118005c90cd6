"""numba side of the symbolic check's spot environments (imported only where numba is installed): the
random draws of :func:`proofs_checks.stacey.symbolic._dist_env`, ``_vec_env`` and ``_maj_env`` for a
whole step in one call, from the step's own generator (numba's ``numpy.random.Generator`` methods draw
numpy's numbers from the same bit generator, so the stream and its final state are numpy's; only scalar
draws, one after the other as numpy fills its arrays, and uniforms from ``random()`` as numpy computes them,
which keeps the compilation short). The
arithmetic on the draws that numpy does with routines numba does not share (``numpy.power``'s SVML
routine, LAPACK) is done afterwards by numpy, batched, in :mod:`proofs_checks.stacey.symbolic`, which
checks at first use that the whole route gives the environments of the one-by-one samplers bit for bit
and keeps those samplers otherwise."""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from lptheory.fast import numba_cache

numba_cache.install(__file__)  # a stale disk-cache entry is recompiled, not a crash or old code


@intrinsic
def _fma(typingctx, a, b, c):
    """``a * b + c`` rounded once (LLVM's fma: the instruction where the processor has one)."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        dbl = ir.DoubleType()
        fn = builder.module.declare_intrinsic("llvm.fma", [dbl], ir.FunctionType(dbl, [dbl, dbl, dbl]))
        return builder.call(fn, args)

    return sig, codegen


@numba.njit(cache=True)
def fma_dot(w, v, k):
    """``numpy.dot(w[:k], v[:k])`` for k <= 4 as numpy's BLAS computes it on this machine: products
    accumulated in order by fused multiply-adds from 0 (checked against ``numpy.dot`` at first use)."""
    acc = 0.0
    for j in range(k):
        acc = _fma(w[j], v[j], acc)
    return acc


@numba.njit(cache=True)
def fma_dots(W, V, K):
    """:func:`fma_dot` of each row (for the first-use check)."""
    out = np.empty(K.size)
    for i in range(K.size):
        out[i] = fma_dot(W[i], V[i], K[i])
    return out


@numba.njit(cache=True)
def _uniform(rng, low, high):
    """``rng.uniform(low, high)``: numpy's ``low + (high - low) * next_double`` (arrays of uniforms are
    drawn one after the other, so n of these are ``rng.uniform(low, high, n)``)."""
    return low + (high - low) * rng.random()


@numba.njit(cache=True)
def _dist_buffers(cap):
    """:func:`dist_draws`' per-attempt arrays for ``cap`` attempts: p, k, values, tiny flags, exponents,
    weights, accepted."""
    return (
        np.empty(cap),
        np.zeros(cap, np.int64),
        np.zeros((cap, 4)),
        np.zeros((cap, 4), np.bool_),
        np.zeros((cap, 4)),
        np.zeros((cap, 4)),
        np.zeros(cap, np.bool_),
    )


@numba.njit(cache=True)
def dist_draws(rng, n, cap=0):
    """The draws of ``n`` accepted ``_dist_env`` environments, every attempt recorded (rejected ones
    too): p, k, the values before the tiny ones are made, which are tiny and their exponents, the
    weights, and whether the attempt was accepted with ``10.0 ** e`` from libm (numpy's own power is
    applied afterwards, and acceptance re-decided with it: :func:`dist_finish`)."""
    cap = n + n // 8 + 16 if cap < 1 else cap  # ``cap``: the first buffers' size (tests start small to grow them)
    P, K, V, T, EX, W, A = _dist_buffers(cap)
    a = 0
    got = 0
    vv = np.zeros(4)
    while got < n:
        if a == cap:
            cap2 = 2 * cap
            P2, K2, V2, T2, EX2, W2, A2 = _dist_buffers(cap2)
            for i in range(cap):  # element loops: slice assignment compiles a shape-error path (~1 s)
                P2[i] = P[i]
                K2[i] = K[i]
                A2[i] = A[i]
                for j in range(4):
                    V2[i, j] = V[i, j]
                    T2[i, j] = T[i, j]
                    EX2[i, j] = EX[i, j]
                    W2[i, j] = W[i, j]
            P, K, V, T, EX, W, A, cap = P2, K2, V2, T2, EX2, W2, A2, cap2
        P[a] = _uniform(rng, 2.05, 10.0)
        k = rng.integers(2, 5)
        K[a] = k
        for j in range(k):
            x = _uniform(rng, -1.0, 1.0)
            V[a, j] = x
            vv[j] = x
        for j in range(k):
            T[a, j] = rng.random() < 0.3
        for j in range(k):
            if T[a, j]:
                ex = _uniform(rng, -8.0, -1.0)
                EX[a, j] = ex
                x = V[a, j]
                sg = 1.0 if x > 0 else (-1.0 if x < 0 else 0.0)
                vv[j] = sg * 10.0**ex
        acc = 0.0
        for j in range(k):
            e = rng.standard_exponential()
            W[a, j] = e
            acc += e
        inv = 1.0 / acc
        nz = True
        for j in range(k):
            W[a, j] = W[a, j] * inv
            if vv[j] == 0.0:
                nz = False
        gv = fma_dot(W[a], vv, k)
        if abs(gv) > 1e-6 and nz:
            A[a] = True
            got += 1
        a += 1
    return P[:a], K[:a], V[:a], T[:a], EX[:a], W[:a], A[:a]


@numba.njit(cache=True)
def dist_finish(K, V, W):
    """With the final values (numpy's power applied): per attempt g = w . v, sigma = sqrt(w . (v - g)^2)
    (numpy.dot's bits: :func:`fma_dot`), G = max |v|, and the acceptance ``|g| > 1e-6 and no v is 0``."""
    n = K.size
    g = np.empty(n)
    sig = np.empty(n)
    G = np.empty(n)
    ok = np.zeros(n, np.bool_)
    d2 = np.zeros(4)
    for i in range(n):
        k = K[i]
        gv = fma_dot(W[i], V[i], k)
        nz = True
        mx = 0.0
        for j in range(k):
            x = V[i, j]
            if x == 0.0:
                nz = False
            ax = abs(x)
            if j == 0 or ax > mx:
                mx = ax
            dd = x - gv
            d2[j] = dd * dd
        g[i] = gv
        sig[i] = np.sqrt(fma_dot(W[i], d2, k))
        G[i] = mx
        ok[i] = abs(gv) > 1e-6 and nz
    return g, sig, G, ok


@numba.njit(cache=True)
def vec_draws(rng, n):
    """The draws of ``n`` ``_vec_env`` environments, in its order: p, d, normals and exponents of g, the
    normals added for g~, the factor of G, the length and steps of f, the gap below min f, eta's exponent, L."""
    P = np.empty(n)
    D = np.zeros(n, np.int64)
    A = np.zeros((n, 5))
    B = np.zeros((n, 5))
    N2 = np.zeros((n, 5))
    C = np.empty(n)
    M = np.zeros(n, np.int64)
    F = np.zeros((n, 20))
    RR = np.empty(n)
    UE = np.empty(n)
    UL = np.empty(n)
    for i in range(n):
        P[i] = _uniform(rng, 2.05, 10.0)
        d = rng.integers(1, 6)
        D[i] = d
        for j in range(d):
            A[i, j] = rng.standard_normal()
        for j in range(d):
            B[i, j] = _uniform(rng, -3.0, 1.0)
        for j in range(d):
            N2[i, j] = rng.standard_normal()
        C[i] = _uniform(rng, 1.0, 2.0)
        m = rng.integers(2, 20)
        M[i] = m
        acc = 0.0
        for j in range(m):  # numpy.cumsum: in order
            acc += rng.standard_normal()
            F[i, j] = acc
        RR[i] = rng.random()
        UE[i] = _uniform(rng, -3.0, 0.0)
        UL[i] = _uniform(rng, 0.1, 10.0)
    return P, D, A, B, N2, C, M, F, RR, UE, UL


@numba.njit(cache=True)
def row_sums(X, D):
    """Per row, ``X[i, :D[i]]`` summed in order (numpy's ``sum`` of fewer than 8 values)."""
    out = np.empty(D.size)
    for i in range(D.size):
        acc = X[i, 0]
        for j in range(1, D[i]):
            acc += X[i, j]
        out[i] = acc
    return out


@numba.njit(cache=True)
def maj_draws(rng, n):
    """The draws of ``n`` ``_maj_env`` environments, in its order: d, the exponents of L, the normals of
    M (row-major), the normals of u, rho."""
    D = np.zeros(n, np.int64)
    LE = np.zeros((n, 5))
    M = np.zeros((n, 5, 5))
    U = np.zeros((n, 5))
    R = np.empty(n)
    for i in range(n):
        d = rng.integers(1, 6)
        D[i] = d
        for j in range(d):
            LE[i, j] = _uniform(rng, -1.0, 1.0)
        for j in range(d):  # standard_normal((d, d)): row-major
            for q in range(d):
                M[i, j, q] = rng.standard_normal()
        for j in range(d):
            U[i, j] = rng.standard_normal()
        R[i] = _uniform(rng, 1.05, 6.0)
    return D, LE, M, U, R
