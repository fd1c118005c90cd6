"""The declared spaces of finite distributions an adversarial search runs over (:class:`DistributionSpace`):
families ``any``, ``symmetric``, ``unimodal-symmetric``, each candidate meeting the assumptions exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import expressions as X
from .spec import ClaimError

__all__ = ["FAMILIES", "DistributionSpace"]


# ---------------------------------------------------------------------------------------------------
# the adversarial search


FAMILIES = ("any", "symmetric", "unimodal-symmetric")


@dataclass(frozen=True)
class DistributionSpace:
    """Finite distributions of a d-dimensional random vector: ``k`` support points per coordinate
    (``coupling="independent"``) or ``k`` support points in R^d (``"joint"``), and the mean of ``n``
    samples. Support values are ``u**power`` with u in [-1, 1] (the claims searched here are
    scale-invariant; ``power`` > 1 also explores magnitudes down to ~1e-6), weights free.

    Families (independent coordinates; every decoded candidate is a member, by construction):

    * ``family="any"``: the above;
    * ``"symmetric"``: each coordinate symmetric about its mean m: pairs m +- s_j with equal weights
      (and m itself when k is odd), support in [-1, 1];
    * ``"unimodal-symmetric"`` (k odd): mixtures of discrete uniform laws on the symmetric lattices
      {m + j s : |j| <= i}, i = 0..(k-1)/2 (the discrete form of Khinchine's characterization of
      symmetric unimodal laws as mixtures of uniforms; Dharmadhikari & Joag-Dev, *Unimodality,
      Convexity, and Applications* (1988), Thm. 1.3): weights symmetric and non-increasing away from m;
    * ``support_bound=B``: every support value scaled into [-B, B];
    * ``variance=v``: every coordinate's one-sample variance rescaled to v (k >= 2; not with
      ``support_bound``).

    ``where``: optional candidate filter ``where(setting) -> bool`` on :meth:`setting` (the engines use it
    for setting-form assumptions); a candidate outside it is never the worst case of a search.
    """

    d: int = 1
    k: int = 2
    n: int = 1
    coupling: str = "independent"
    power: int = 3
    family: str = "any"
    support_bound: float | None = None
    variance: float | None = None
    where: object = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        for name in ("d", "k", "n"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ClaimError(f"DistributionSpace.{name} must be an integer >= 1, got {getattr(self, name)!r}")
        if self.coupling not in ("independent", "joint"):
            raise ClaimError(f"DistributionSpace.coupling must be 'independent' or 'joint', got {self.coupling!r}")
        if self.family not in FAMILIES:
            raise ClaimError(f"DistributionSpace.family must be one of {FAMILIES}, got {self.family!r}")
        if self.coupling == "joint" and (self.family != "any" or self.variance is not None):
            raise ClaimError("DistributionSpace: families and a fixed variance need coupling='independent'")
        if self.family == "unimodal-symmetric" and self.k % 2 == 0:
            raise ClaimError(f"DistributionSpace.k must be odd for the unimodal-symmetric family, got {self.k}")
        for name in ("support_bound", "variance"):
            v = getattr(self, name)
            if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ClaimError(f"DistributionSpace.{name} must be a finite number > 0, got {v!r}")
        if self.variance is not None and (self.k < 2 or self.support_bound is not None):
            raise ClaimError("DistributionSpace.variance needs k >= 2 and no support_bound")
        if self.where is not None and not callable(self.where):
            raise ClaimError("DistributionSpace.where must be callable (setting -> bool)")

    @property
    def _per_coord(self) -> int:
        if self.family == "symmetric":
            return self.k + 1  # m, k//2 spreads, k//2 pair weights (+ the center's weight when k is odd)
        if self.family == "unimodal-symmetric":
            return 2 + (self.k - 1) // 2 + 1  # m, the lattice step, one weight per uniform component
        return 2 * self.k

    @property
    def dim(self) -> int:
        return self.d * self._per_coord if self.coupling == "independent" else self.d * self.k + self.k

    def bounds(self):
        if self.coupling == "joint":
            nv = self.d * self.k
            return [(-1.0, 1.0)] * nv + [(0.0, 1.0)] * (self.dim - nv)
        if self.family == "any":
            nv = self.d * self.k
            return [(-1.0, 1.0)] * nv + [(0.0, 1.0)] * (self.dim - nv)
        h = self.k // 2 if self.family == "symmetric" else 1  # location-like parameters per coordinate
        per = [(-1.0, 1.0)] * (1 + h) + [(0.0, 1.0)] * (self._per_coord - 1 - h)
        return per * self.d

    def decode(self, xs) -> X.Distribution:
        xs = np.atleast_2d(np.asarray(xs, dtype=np.float64))
        d, k = self.d, self.k
        if self.coupling == "joint":
            nv = d * k
            u = xs[:, :nv].reshape(-1, k, d)
            w = _weights(xs, nv, 1, k).reshape(-1, k)
            vals = u**self.power
            if self.support_bound is not None:
                vals = vals * self.support_bound
            return self._filtered(X.Distribution(vals, w, self.n, self.coupling))
        if self.family == "any":
            nv = d * k
            vals = xs[:, :nv].reshape(-1, d, k) ** self.power
            w = _weights(xs, nv, d, k)
            if self.support_bound is not None:
                vals = vals * self.support_bound
            if self.variance is not None:
                mu = np.sum(w * vals, axis=-1, keepdims=True)
                vals, w = self._rescale(mu, vals - mu, w)
                vals = mu + vals
            return self._filtered(X.Distribution(vals, w, self.n, self.coupling))
        z = xs.reshape(-1, d, self._per_coord)
        m = z[..., :1]
        room = 1.0 - np.abs(m)
        if self.family == "symmetric":
            h = k // 2
            spread = np.abs(z[..., 1 : 1 + h]) ** self.power * room
            wp = np.abs(z[..., 1 + h : 1 + 2 * h])
            sign = np.concatenate([np.ones(h), -np.ones(h)] + ([np.zeros(1)] if k % 2 else []))
            om = np.concatenate([wp / 2, wp / 2] + ([np.abs(z[..., -1:])] if k % 2 else []), axis=-1)
            unit = np.concatenate([spread, spread] + ([np.zeros_like(m)] if k % 2 else []), axis=-1)
        else:
            h = (k - 1) // 2
            step = np.abs(z[..., 1:2]) ** self.power * room / max(h, 1)
            j = np.arange(-h, h + 1, dtype=np.float64)
            sign, unit = np.sign(j), np.abs(j) * step
            comp = np.abs(z[..., 2:])  # weight of the uniform component on {|j| <= i}, i = 0..h
            per_pt = comp / (2 * np.arange(h + 1) + 1)
            tail = np.cumsum(per_pt[..., ::-1], axis=-1)[..., ::-1]  # sum over i >= |j|
            om = tail[..., np.abs(j).astype(int)]
        tot = om.sum(axis=-1, keepdims=True)
        w = np.where(tot > 0, om / np.where(tot > 0, tot, 1.0), 1.0 / k)
        if self.support_bound is not None:
            m, unit = m * self.support_bound, unit * self.support_bound
        if self.variance is not None:
            unit, w = self._rescale(m, unit, w, sign)
        # exact symmetry in floating point: m on a coarse dyadic grid, deviations on the grid of the row's
        # magnitude (both truncated toward 0, so a support bound still holds): m + dev is exact
        top = np.max(np.abs(m) + np.abs(unit), axis=-1, keepdims=True)
        e = np.ceil(np.log2(np.maximum(top, 1e-300)))
        qm, qs = np.exp2(e - 20), np.exp2(e - 52)
        m = np.trunc(m / qm) * qm
        dev = np.trunc(unit / qs) * qs * sign
        return self._filtered(X.Distribution(m + dev, w, self.n, self.coupling))

    def _rescale(self, mu, dev, w, sign=None):
        """Deviations (signed; or magnitudes with the family's ``sign`` pattern) rescaled to the one-sample
        variance ``self.variance``; a row with no spread becomes a member of the family with that variance
        (uniform on a symmetric lattice; +-sqrt(v) for the symmetric family)."""
        v, k = self.variance, dev.shape[-1]
        sg = 1.0 if sign is None else sign
        var = np.sum(w * (dev * sg) ** 2, axis=-1, keepdims=True)
        flat = var <= 1e-300
        scaled = dev * np.sqrt(v / np.where(flat, 1.0, var))
        if sign is None:
            lattice = np.linspace(-1.0, 1.0, k)
            fb_dev, fb_w = math.sqrt(v) * lattice / np.sqrt(np.mean(lattice**2)), np.full(k, 1.0 / k)
        elif self.family == "symmetric":
            live = np.abs(sign)
            fb_dev, fb_w = math.sqrt(v) * live, live / live.sum()
        else:
            h = (k - 1) // 2
            fb_dev, fb_w = np.abs(np.arange(-h, h + 1)) * math.sqrt(3.0 * v / (h * (h + 1))), np.full(k, 1.0 / k)
        return np.where(flat, fb_dev, scaled), np.where(flat, fb_w, w)

    def _filtered(self, dist):
        if self.where is None:
            return dist
        ok = np.array([bool(self.where(self.setting(dist, r))) for r in range(dist.S)])
        if not ok.all():  # a candidate outside the filter evaluates to NaN: never the worst case
            vals = dist.values.copy()
            vals[~ok] = np.nan
            dist = X.Distribution(vals, dist.weights, dist.n, dist.coupling)
        return dist

    def setting(self, dist, row: int = 0) -> dict:
        """The setting of candidate ``row`` for setting-form assumptions: the family, whether the law is
        symmetric (each coordinate about its mean; computed) and unimodal (members of the unimodal
        family only; a point mass too), the largest |support value|, per-coordinate means and variances,
        and the distribution itself."""
        vals, w = np.asarray(dist.values[row]), np.asarray(dist.weights[row])
        if dist.coupling == "joint":
            per = [(vals[:, i], w) for i in range(vals.shape[1])]  # marginals
        else:
            per = [(vals[i], w[i]) for i in range(vals.shape[0])]
        means, variances, symmetric = [], [], True
        for v, ww in per:
            mu = float(np.sum(ww * v))
            means.append(mu)
            variances.append(float(np.sum(ww * (v - mu) ** 2)))
            symmetric = symmetric and _symmetric_about(v, ww, mu)
        live = [float(np.max(np.abs(v[ww > 0]))) if np.any(ww > 0) else 0.0 for v, ww in per]
        point = all(np.count_nonzero(ww > 0) <= 1 for _, ww in per)
        return {
            "candidate": True,
            "family": self.family,
            "symmetric": bool(symmetric),
            "unimodal": self.family == "unimodal-symmetric" or point,
            "support": max(live) if live else 0.0,
            "mean": means,
            "variance": variances,
            "space": self.describe(),
            "distribution": {"coupling": dist.coupling, "n": dist.n, "values": vals.tolist(), "weights": w.tolist()},
        }

    def describe(self) -> list:
        out = [self.d, self.k, self.n] if self.coupling == "independent" else [self.d, self.k, self.n, "joint"]
        if self.family != "any":
            out.append(self.family)
        if self.support_bound is not None:
            out.append(f"|x| <= {self.support_bound:g}")
        if self.variance is not None:
            out.append(f"variance {self.variance:g}")
        return out


_WEIGHTS: dict = {}


def _weights(xs, start, groups, k):
    """The normalized weights of :meth:`DistributionSpace.decode` (families "any" and joint): columns
    ``start:start + groups * k`` of ``xs`` in groups of ``k``, ``|x| / sum |x|`` per group (``1 / k`` each
    where the sum is not > 0), shape (rows, groups, k), C order. Computed by the numba kernel
    :func:`~proofs_checks._search_kernels.normalized_weights` (the same bits: numpy adds fewer than 8 terms
    of a contiguous axis in order) when numba is installed and k < 8, else by numpy."""
    if "kernel" not in _WEIGHTS:
        try:
            from ._search_kernels import normalized_weights
        except ImportError:
            normalized_weights = None
        _WEIGHTS["kernel"] = normalized_weights
    kern = _WEIGHTS["kernel"]
    if kern is not None and k < 8 and xs.flags.c_contiguous:
        return kern(xs, start, groups, k)
    om = np.abs(xs[:, start : start + groups * k]).reshape(-1, groups, k)
    tot = om.sum(axis=-1, keepdims=True)
    return np.where(tot > 0, om / np.where(tot > 0, tot, 1.0), 1.0 / k)


def _symmetric_about(v, w, mu, tol=1e-9) -> bool:
    """Whether the finite law sum_j w_j delta_{v_j} is symmetric about mu (weights merged per point)."""
    live = w > 0
    v, w = np.asarray(v)[live], np.asarray(w)[live]
    if v.size == 0 or not np.all(np.isfinite(v)):
        return False
    scale = tol * (1.0 + float(np.max(np.abs(v - mu))))
    a = np.sort(v - mu)
    if not np.allclose(a, -a[::-1], atol=scale, rtol=0):
        return False
    o = np.argsort(v - mu)
    return bool(np.allclose(w[o], w[o][::-1], atol=tol, rtol=0))
