"""The geometry probe: Theorem 1's constants measured along a training run.

At each probe point x_t of a run, from per-sample gradients g_j(x_t) (j = 1..m, the probe's fixed samples;
``torch.func.vmap(grad)``) of the empirical loss f on those samples:

* the per-coordinate noise sigma_i = std_j g_j^(i) (Assumption 2: the per-sample standard deviation; a
  batch of n has sigma_i / sqrt(n), Corollary after Assumption 2);
* ||grad f(x_t)||_{p*} for each p (grad f = the mean of the g_j);
* G_p = max over disjoint mini-batches of size n of ||mean of the batch||_{p*} (Assumption 3 bounds the
  stochastic gradient the optimizer sees, a batch mean); a measured maximum, so a lower estimate of the
  supremum the assumption needs;
* the local l_p smoothness L_p = max over pairs of probe points of ||grad f(x_t) - grad f(x_s)||_{p*} /
  ||x_t - x_s||_p (secant ratios along the iterates; each is a lower bound of the global L_p of
  Assumption 1 in its gradient-Lipschitz form).

:func:`theorem1_rhs` evaluates Theorem 1's right-hand side with these constants. The numpy functions
(everything but :func:`per_sample_grads` and :func:`probe_run`) take arrays and are validated on a synthetic
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
    "probe_run",
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


def probe_run(config: dict) -> dict:
    """A training run of ``config`` (:func:`proofs_checks.practice.train.train`) probed at its evaluation
    points: per point, f on the probe set, ||grad f||_{p*}, G_p (batch n of the run), ||sigma||_1,
    ||sigma||_2 and the sorted sigma profile's quantiles; over the run, the secant L_p; and the probe's time
    against the training time. ``config["ps"]``: the exponents."""
    from .train import task_for, train

    task = task_for(config)
    ps = [float(p) for p in config["ps"]]
    xs_probe, ys_probe = task.probe_set()
    pts: list = []
    xs, grads = [], []
    sig_max = None

    def probe(model, t):
        nonlocal sig_max
        g, flat = per_sample_grads(model, loss_of, xs_probe, ys_probe)
        full = g.mean(axis=0)
        sig = noise_profile(g)
        sig_max = sig if sig_max is None else np.maximum(sig_max, sig)
        xs.append(flat)
        grads.append(full)
        q = np.quantile(np.sort(sig), [0.5, 0.9, 0.99, 1.0])
        pts.append(
            {
                "step": t,
                "f": _f(model, xs_probe, ys_probe),
                "grad_dual": {str(p): float(lp_norm(full, dual(p))) for p in ps},
                "G": {str(p): v for p, v in batch_grad_bound(g, min(task.scale.batch, len(g)), ps, seed=t).items()},
                "sigma_l1": float(sig.sum()),
                "sigma_l2": float(np.sqrt((sig**2).sum())),
                "sigma_quantiles": [float(v) for v in q],
                "top_share": float(np.sort(sig)[-max(1, sig.size // 100) :].sum() / max(sig.sum(), 1e-300)),
            }
        )

    res = train(config, probe=probe)
    L = secant_ratios(np.stack(xs), np.stack(grads), ps)
    hist, edges = np.histogram(np.log10(np.maximum(sig_max, 1e-12)), bins=30)
    return {
        **res,
        "points": pts,
        "L": {str(p): v for p, v in L.items()},
        "d": int(xs[0].size),
        "sigma_hist": {"counts": hist.tolist(), "log10_edges": edges.tolist()},
        "probe_fraction": res["probe_wall"] / max(res["wall"], 1e-12),  # probe time / training-step time
    }


def _f(model, x, y) -> float:
    import torch

    with torch.no_grad():
        return float(loss_of(model, x, y))
