"""Maximizing a vectorized objective over a box: scipy's differential evolution (vectorized, a whole
generation per call) followed by Nelder-Mead polishes run in lockstep.

:func:`nelder_mead` is Nelder and Mead's method exactly as ``scipy.optimize.minimize(method=
"Nelder-Mead")`` runs it (same initial simplex, coefficients, order of operations, termination and
count of evaluations), but for several independent problems at once and with the candidate points
of an iteration (reflection, expansion, both contractions) evaluated in one vectorized call. The
iterates and results are those of scipy's; only the number of objective calls drops.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import differential_evolution

__all__ = ["nelder_mead", "maximize"]


def nelder_mead(fun, x0s, *, maxfev=None, xatol=1e-4, fatol=1e-4):
    """Minimize ``fun`` from each row of ``x0s`` (B, N); ``fun`` maps (M, N) points to (M,) values.

    Returns a list of ``(x, fval, nfev)`` per row, as scipy's Nelder-Mead with ``maxfev``,
    ``xatol``, ``fatol`` (``maxiter`` unlimited; default ``maxfev`` 200 N) would.
    """
    x0s = np.atleast_2d(np.asarray(x0s, dtype=np.float64))
    B, N = x0s.shape
    maxfev = 200 * N if maxfev is None else maxfev
    rho, chi, psi, sig = 1.0, 2.0, 0.5, 0.5
    sims = np.empty((B, N + 1, N))
    for b in range(B):
        sims[b, 0] = x0s[b]
        for k in range(N):
            y = np.array(x0s[b], copy=True)
            y[k] = (1 + 0.05) * y[k] if y[k] != 0 else 0.00025
            sims[b, k + 1] = y
    # initial evaluations: N + 1 per problem (all within maxfev for maxfev >= N + 1)
    n0 = min(N + 1, maxfev)
    fs = np.full((B, N + 1), np.inf)
    vals = np.asarray(fun(sims[:, :n0].reshape(-1, N)), dtype=np.float64).reshape(B, n0)
    fs[:, :n0] = vals
    ncalls = np.full(B, n0)
    for b in range(B):
        ind = np.argsort(fs[b])
        sims[b], fs[b] = sims[b][ind], fs[b][ind]
    active = np.ones(B, dtype=bool)
    active &= ncalls < maxfev
    while active.any():
        idx = np.flatnonzero(active)
        # termination test, per problem
        for b in idx:
            if (
                np.max(np.ravel(np.abs(sims[b, 1:] - sims[b, 0]))) <= xatol
                and np.max(np.abs(fs[b, 0] - fs[b, 1:])) <= fatol
            ):
                active[b] = False
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        xbar = np.add.reduce(sims[idx, :-1], 1) / N
        worst = sims[idx, -1]
        xr = (1 + rho) * xbar - rho * worst
        xe = (1 + rho * chi) * xbar - rho * chi * worst
        xc = (1 + psi * rho) * xbar - psi * rho * worst
        xcc = (1 - psi) * xbar + psi * worst
        cand = np.stack([xr, xe, xc, xcc], axis=1)  # (b, 4, N)
        fc = np.asarray(fun(cand.reshape(-1, N)), dtype=np.float64).reshape(-1, 4)
        shrink = []
        for j, b in enumerate(idx):
            fxr, fxe, fxc, fxcc = fc[j]
            budget = maxfev - ncalls[b]
            ncalls[b] += 1  # xr
            done = False
            if fxr < fs[b, 0]:
                if budget >= 2:
                    ncalls[b] += 1
                    if fxe < fxr:
                        sims[b, -1], fs[b, -1] = xe[j], fxe
                    else:
                        sims[b, -1], fs[b, -1] = xr[j], fxr
                done = True
            elif fxr < fs[b, -2]:
                sims[b, -1], fs[b, -1] = xr[j], fxr
                done = True
            elif budget >= 2:
                ncalls[b] += 1
                if fxr < fs[b, -1]:
                    if fxc <= fxr:
                        sims[b, -1], fs[b, -1] = xc[j], fxc
                        done = True
                elif fxcc < fs[b, -1]:
                    sims[b, -1], fs[b, -1] = xcc[j], fxcc
                    done = True
                if not done:
                    shrink.append(b)
            else:
                done = True  # the contraction's call would exceed maxfev: scipy stops here
        if shrink:
            pts, owners = [], []
            for b in shrink:
                avail = maxfev - ncalls[b]
                m = min(N, avail)
                # scipy moves vertex j, then evaluates it; past maxfev the move of the next vertex happens
                # but its evaluation raises, which ends the run
                for jj in range(1, min(N, m + 1) + 1):
                    sims[b, jj] = sims[b, 0] + sig * (sims[b, jj] - sims[b, 0])
                pts.append(sims[b, 1 : 1 + m])
                owners.append((b, m))
            allpts = np.concatenate(pts, axis=0)
            vals = np.asarray(fun(allpts), dtype=np.float64) if allpts.shape[0] else np.empty(0)
            pos = 0
            for b, m in owners:
                fs[b, 1 : 1 + m] = vals[pos : pos + m]
                pos += m
                ncalls[b] += m
        for b in idx:
            ind = np.argsort(fs[b])
            sims[b], fs[b] = sims[b][ind], fs[b][ind]
            if ncalls[b] >= maxfev:
                active[b] = False
    return [(sims[b, 0].copy(), float(np.min(fs[b])), int(ncalls[b])) for b in range(B)]


def maximize(objective, bounds, *, seed, maxiter: int, popsize: int, polish_maxfev: int | None = None):
    """Maximize a vectorized ``objective`` ((M, dim) -> (M,)) over the box ``bounds``: differential
    evolution, then a Nelder-Mead polish from its best point (the objective clips to the box).
    Returns ``(x, value, nfev)``."""
    lo = np.array([b[0] for b in bounds], dtype=np.float64)
    hi = np.array([b[1] for b in bounds], dtype=np.float64)

    def neg(xT):
        return -np.asarray(objective(np.asarray(xT).T), dtype=np.float64)

    res = differential_evolution(
        neg,
        bounds,
        maxiter=maxiter,
        popsize=popsize,
        seed=seed,
        vectorized=True,
        updating="deferred",
        polish=False,
        tol=1e-12,
    )
    dim = lo.size
    (xl, fl, nl) = nelder_mead(
        lambda X: -np.asarray(objective(np.clip(X, lo, hi)), dtype=np.float64),
        res.x[None],
        maxfev=polish_maxfev or 200 * dim,
        xatol=1e-12,
        fatol=1e-14,
    )[0]
    x = np.clip(xl, lo, hi) if fl < res.fun else res.x
    return x, float(objective(x[None])[0]), int(res.nfev + nl)
