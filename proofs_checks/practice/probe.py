"""The geometry probe's estimators: Theorem 1's constants measured from per-sample gradients.

A diagnostic, not a verdict: Theorem 1 bounds Algorithm 3 (stochastic l_p descent), not Stacey, its left side
itself depends on p, and measured constants are lower estimates of the suprema the theorem needs, so ranking its
right side across p predicts nothing the paper claims. The practice checks on real tasks issue no probe record;
the estimators below are validated on a synthetic problem whose constants are known (check ``probe-controls``).

At each probe point x_t of a run, from per-sample gradients g_j(x_t) (j = 1..m, the probe's fixed samples;
``torch.func.vmap(grad)``) of the empirical loss f on those samples:

* the per-coordinate noise sigma_i = std_j g_j^(i) (Assumption 2: the per-sample standard deviation; a
  batch of n has sigma_i / sqrt(n), Corollary after Assumption 2);
* ||grad f(x_t)||_{p*} for each p (grad f = the mean of the g_j);
* G_p = max over disjoint mini-batches of size n of ||mean of the batch||_{p*} (Assumption 3 bounds the
  stochastic gradient the optimizer sees, a batch mean); a measured maximum, so a lower estimate of the
  supremum the assumption needs;
* the largest secant slope S_p = max over pairs of probe points of ||grad f(x_t) - grad f(x_s)||_{p*} /
  ||x_t - x_s||_p (each ratio is a lower bound of the global L_p of Assumption 1 in its gradient-Lipschitz
  form; it is not a local constant: the points are tens of steps apart).

:func:`theorem1_rhs` evaluates Theorem 1's right-hand side with these constants. The numpy functions
(everything but :func:`per_sample_grads`) take arrays and are validated on a synthetic
problem with certified constants (check ``probe-controls``).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "dual",
    "lp_norm",
    "noise_profile",
    "batch_grad_bound",
    "secant_ratios",
    "theorem1_rhs",
    "top_coordinates",
    "per_sample_grads",
]


def dual(p: float) -> float:
    """p* = p / (p - 1) (1 at p = inf)."""
    return 1.0 if math.isinf(p) else p / (p - 1.0)


def lp_norm(x, q: float, axis: int = -1):
    """||x||_q along ``axis`` (max-abs at q = inf), scaled by the largest entry to avoid overflow."""
    a = np.abs(np.asarray(x, dtype=np.float64))
    if math.isinf(q):
        return a.max(axis=axis)
    s = a.max(axis=axis, keepdims=True)
    s = np.where(s > 0, s, 1.0)
    return (s.squeeze(axis) * np.sum((a / s) ** q, axis=axis) ** (1.0 / q)) if a.size else np.zeros(())


def noise_profile(per_sample) -> np.ndarray:
    """sigma_i, the per-coordinate standard deviation (ddof = 1) of per-sample gradients ``(m, d)``
    (Assumption 2)."""
    g = np.asarray(per_sample, dtype=np.float64)
    if g.ndim != 2 or g.shape[0] < 2:
        raise ValueError(f"per_sample must be (m, d) with m >= 2 samples, got shape {g.shape}")
    return g.std(axis=0, ddof=1)


def batch_grad_bound(per_sample, n: int, ps, seed: int = 0) -> dict:
    """{p: max over the disjoint batches of size ``n`` (a seeded shuffle of the m samples, m // n batches) of
    ||batch mean||_{p*}}: a measured value of Assumption 3's G (never above the supremum it estimates)."""
    g = np.asarray(per_sample, dtype=np.float64)
    m = g.shape[0]
    if not 1 <= n <= m:
        raise ValueError(f"n (batch) must be in [1, {m}], got {n}")
    order = np.random.default_rng(np.random.SeedSequence([seed, 31])).permutation(m)
    k = m // n
    means = g[order[: k * n]].reshape(k, n, -1).mean(axis=1)
    return {float(p): float(lp_norm(means, dual(p)).max()) for p in ps}


def secant_ratios(xs, grads, ps) -> dict:
    """{p: max over pairs s < t of ||grads[t] - grads[s]||_{p*} / ||xs[t] - xs[s]||_p}: the local l_p
    smoothness along the points ``xs`` (each ratio a lower bound of Assumption 1's L in its
    gradient-Lipschitz form); pairs at the same point are skipped; 0 when no pair is left."""
    X, Gr = np.asarray(xs, dtype=np.float64), np.asarray(grads, dtype=np.float64)
    out = {}
    for p in ps:
        best = 0.0
        for t in range(1, len(X)):
            dx = lp_norm(X[t] - X[:t], p)
            dg = lp_norm(Gr[t] - Gr[:t], dual(p))
            ok = dx > 0
            if ok.any():
                best = max(best, float((dg[ok] / dx[ok]).max()))
        out[float(p)] = best
    return out


def theorem1_rhs(gap: float, T: int, eta: float, n: int, L: float, G: float, sigma_l1: float, p: float) -> dict:
    """Theorem 1's right-hand side (Section 3, Theorem 1, first display)::

        (f_0 - f*) / (eta T) + L eta G^{2/(p-1)} / 2 + (2p-1)/(p-1) G^{1/(p-1)} ||sigma||_1 / sqrt(n)

    with constant batch size n_t = n. Returns the three terms and their sum ``rhs``."""
    a = gap / (eta * T)
    b = L * eta * G ** (2.0 / (p - 1.0)) / 2.0
    c = (2.0 * p - 1.0) / (p - 1.0) * G ** (1.0 / (p - 1.0)) * sigma_l1 / math.sqrt(n)
    return {"descent": a, "smoothness": b, "noise": c, "rhs": a + b + c}


def top_coordinates(sigma, k: int) -> list[int]:
    """The indices of the k largest sigma_i (a planted noise profile is found when they are the planted ones)."""
    s = np.asarray(sigma, dtype=np.float64)
    return sorted(int(i) for i in np.argsort(-s, kind="stable")[:k])


def per_sample_grads(model, loss_fn, x, y, chunk: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """(per-sample gradients ``(m, d)``, the flat parameters ``(d,)``), float64 numpy, by
    ``torch.func.vmap(torch.func.grad(...))`` over the samples of (x, y) in chunks."""
    import torch
    from torch.func import functional_call, grad, vmap

    names = [k for k, _ in model.named_parameters()]
    params = {k: v.detach() for k, v in model.named_parameters()}

    def one(prm, xi, yi):
        return loss_fn(lambda inp: functional_call(model, prm, (inp,)), xi.unsqueeze(0), yi.unsqueeze(0))

    g1 = vmap(grad(one), in_dims=(None, 0, 0))
    parts = []
    for i in range(0, x.shape[0], chunk):
        gs = g1(params, x[i : i + chunk], y[i : i + chunk])
        parts.append(torch.cat([gs[k].reshape(gs[k].shape[0], -1) for k in names], dim=1).double().cpu())
    flat = torch.cat([params[k].reshape(-1) for k in names]).double().cpu()
    return torch.cat(parts).numpy(), flat.numpy()


def loss_of(fn, x, y):
    from torch.nn import functional as F

    out = fn(x)
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
