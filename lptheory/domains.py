"""Feasible sets with Euclidean projections: a box and an l_p ball.

Used by :class:`lptheory.optimizers.Projected` (projected methods) and by problems that declare a
domain (:class:`lptheory.problem.Problem`). Arrays have shape ``(..., d)``; each row is projected
independently. numpy arrays and torch tensors are accepted and returned as given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import _validate
from ._xp import namespace

__all__ = ["Box", "LpBall"]


def _rowsum(xp, a):
    return a.sum(axis=-1, keepdims=True) if xp is np else a.sum(dim=-1, keepdim=True)


@dataclass(frozen=True)
class Box:
    """{x : lo <= x_i <= hi}. ``lo``/``hi`` scalars (or (d,) arrays); projection = clipping (exact)."""

    lo: float = -1.0
    hi: float = 1.0

    def __post_init__(self):
        lo = np.asarray(self.lo, dtype=np.float64)
        hi = np.asarray(self.hi, dtype=np.float64)
        if np.any(np.isnan(lo)) or np.any(np.isnan(hi)) or np.any(lo > hi):
            raise ValueError(f"Box needs lo <= hi (no NaN), got lo={self.lo!r}, hi={self.hi!r}")

    def project(self, x):
        xp = namespace(x)
        if xp is np:
            return np.clip(x, self.lo, self.hi)
        lo = xp.as_tensor(np.asarray(self.lo, dtype=np.float64), dtype=x.dtype, device=x.device)
        hi = xp.as_tensor(np.asarray(self.hi, dtype=np.float64), dtype=x.dtype, device=x.device)
        return xp.minimum(xp.maximum(x, lo), hi)

    def contains(self, x, tol: float = 0.0) -> np.ndarray:
        x = np.asarray(x)
        return np.all((x >= np.asarray(self.lo) - tol) & (x <= np.asarray(self.hi) + tol), axis=-1)

    def describe(self) -> dict:
        return {"domain": "box", "lo": np.asarray(self.lo).tolist(), "hi": np.asarray(self.hi).tolist()}


@dataclass(frozen=True)
class LpBall:
    """{x : ||x - center||_p <= radius}, p in [1, inf], with the exact Euclidean projection.

    Closed forms for p = 2 (radial scaling) and p = inf (clipping); p = 1 by the sort-based
    projection onto the simplex (Duchi et al., 2008); other p by the KKT conditions
    x_i = sgn(y_i) u_i, u_i + mu p u_i^{p-1} = |y_i|, with mu found by bisection (nested, vectorized
    over rows; numpy, torch tensors are converted and converted back).
    """

    radius: float = 1.0
    p: float = 2.0
    center: float = 0.0

    def __post_init__(self):
        _validate.real("radius", self.radius, lo=0.0, lo_open=True)
        object.__setattr__(self, "p", _validate.exponent("p", self.p, lo=1.0, lo_open=False))

    def project(self, x):
        xp = namespace(x)
        if xp is not np and not (self.p == 2.0 or math.isinf(self.p)):
            import torch

            return torch.as_tensor(self.project(x.detach().cpu().numpy()), dtype=x.dtype, device=x.device)
        y = x - self.center
        if math.isinf(self.p):
            r = self.radius
            return (np.clip(y, -r, r) if xp is np else xp.clamp(y, -r, r)) + self.center
        if self.p == 2.0:
            n = _rowsum(xp, y * y) ** 0.5
            scale = xp.where(n > self.radius, self.radius / xp.where(n > 0, n, 1.0 + 0 * n), 1.0 + 0 * n)
            return y * scale + self.center
        y = np.asarray(y, dtype=np.float64)
        out = y.copy()
        flat = out.reshape(-1, y.shape[-1])
        for i, row in enumerate(y.reshape(-1, y.shape[-1])):
            flat[i] = self._project_row(row)
        return out + self.center

    def _project_row(self, y: np.ndarray) -> np.ndarray:
        r, p = self.radius, self.p
        a = np.abs(y)
        if np.sum(a**p) ** (1.0 / p) <= r:
            return y.copy()
        if p == 1.0:
            u = np.sort(a)[::-1]
            css = np.cumsum(u) - r
            k = np.nonzero(u - css / np.arange(1, u.size + 1) > 0)[0][-1]
            theta = css[k] / (k + 1.0)
            return np.sign(y) * np.maximum(a - theta, 0.0)

        def u_of(mu):  # solve u + mu p u^{p-1} = a for u in [0, a] (increasing in u), per coordinate
            lo, hi = np.zeros_like(a), a.copy()
            for _ in range(200):
                mid = 0.5 * (lo + hi)
                big = mid + mu * p * mid ** (p - 1.0) > a
                hi = np.where(big, mid, hi)
                lo = np.where(big, lo, mid)
                if np.all(hi - lo <= 1e-15 * np.maximum(a, 1e-300)):
                    break
            return lo

        mu_lo, mu_hi = 0.0, 1.0
        while np.sum(u_of(mu_hi) ** p) > r**p:
            mu_hi *= 2.0
        for _ in range(200):
            mu = 0.5 * (mu_lo + mu_hi)
            if np.sum(u_of(mu) ** p) > r**p:
                mu_lo = mu
            else:
                mu_hi = mu
            if mu_hi - mu_lo <= 1e-15 * mu_hi:
                break
        return np.sign(y) * u_of(mu_hi)

    def contains(self, x, tol: float = 0.0) -> np.ndarray:
        from .geometry import lp_norm

        return np.asarray(lp_norm(np.asarray(x) - self.center, self.p)) <= self.radius * (1 + tol)

    def describe(self) -> dict:
        return {"domain": "lp-ball", "p": self.p, "radius": self.radius, "center": self.center}
