"""Hypothesis strategies for claims about l_p stochastic optimization.

* :func:`exponents`: p in (1, inf], with the special values a test must not miss (2, inf, near 1, large);
* :func:`finite_distributions`: finite-support distributions of a d-dimensional stochastic gradient that
  meet the paper's assumptions exactly by construction: mean ``g`` (Assumption 2, unbiased), per-coordinate
  standard deviations ``sigma`` (Assumption 3, met with equality up to rounding), and every support point's
  dual norm at most ``G`` (Assumption 4);
* :func:`smooth_quadratics`: diagonal quadratics whose l_p smoothness constant is exact
  (``synthetic.problems.QuadraticDiagonal``: ||diag(h)||_{p -> p*} = ||h||_{p/(p-2)});
* :func:`noise_models`: the noise families of ``synthetic.noise`` with per-coordinate sigma.

Requires hypothesis (the ``test`` extra). Problems and noise models load ``synthetic`` lazily.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

_D4, _K4, _D8 = st.integers(1, 4), st.integers(2, 4), st.integers(1, 8)
_FAMILIES = ("gaussian", "uniform", "rademacher", "student-t", "two-point")

__all__ = ["exponents", "finite_distributions", "FiniteDistribution", "smooth_quadratics", "noise_models"]


def exponents(*, min_value: float = 1.0, allow_inf: bool = True, max_finite: float = 1e3) -> st.SearchStrategy:
    """p in (min_value, inf]: the special values 2, inf, 1 + 1e-6, 1 + 1e-3, 3, 4 and large ones (50,
    1000) first, then any float in between."""
    special = [2.0, 3.0, 4.0, 1.0 + 1e-6, 1.0 + 1e-3, 50.0, max_finite]
    if allow_inf:
        special.append(math.inf)
    special = [p for p in special if p > min_value and (p <= max_finite or math.isinf(p))]
    lo = max(min_value, 1.0)
    general = st.floats(min_value=lo, max_value=max_finite, exclude_min=True, allow_nan=False)
    return st.one_of(st.sampled_from(special), general)


@dataclass(frozen=True)
class FiniteDistribution:
    """``values`` (d, k) support per coordinate (coordinates independent) with ``weights`` (d, k) (rows sum
    to 1): mean ``g`` (d,), standard deviations ``sigma`` (d,), and ``G`` >= every outcome's dual norm for
    the exponent ``p`` it was built for (``None`` when no bound was asked)."""

    values: np.ndarray
    weights: np.ndarray
    g: np.ndarray
    sigma: np.ndarray
    p: float | None
    G: float | None

    def sample(self, rng, n: int = 1) -> np.ndarray:
        """n samples (n, d), each coordinate drawn independently."""
        d, k = self.values.shape
        idx = np.stack([rng.choice(k, size=n, p=self.weights[i]) for i in range(d)], axis=1)
        return self.values[np.arange(d), idx]


@st.composite
def finite_distributions(
    draw,
    d=_D4,
    k=_K4,
    *,
    sigma: float | None = None,
    p: float | None = None,
    G: float | None = None,
) -> FiniteDistribution:
    """Distributions that meet Assumptions 2-4 exactly: each coordinate has mean g_i (drawn), standard
    deviation sigma_i (``sigma`` if given, else drawn) and, with ``p`` and ``G``, every outcome's dual norm
    ||x||_{p*} <= G (the whole distribution is scaled down when needed, and sigma with it)."""
    d = draw(d) if isinstance(d, st.SearchStrategy) else int(d)
    k = draw(k) if isinstance(k, st.SearchStrategy) else int(k)
    unit = st.floats(-1.0, 1.0, allow_nan=False)
    vals = np.array([[draw(unit) for _ in range(k)] for _ in range(d)])
    w = np.array([[draw(st.floats(0.05, 1.0)) for _ in range(k)] for _ in range(d)])
    w = w / w.sum(axis=1, keepdims=True)
    mean = (w * vals).sum(axis=1, keepdims=True)
    cen = vals - mean  # mean 0 per coordinate (to rounding)
    sd = np.sqrt((w * cen * cen).sum(axis=1))
    flat = sd < 1e-9  # a degenerate draw: make it a symmetric two-point row
    if flat.any():
        cen[flat] = 0.0
        cen[flat, 0], cen[flat, 1] = 1.0, -1.0
        w[flat] = 0.0
        w[flat, 0] = w[flat, 1] = 0.5
        sd = np.sqrt((w * cen * cen).sum(axis=1))
    target = np.full(d, float(sigma)) if sigma is not None else np.array([draw(st.floats(0.01, 1.0)) for _ in range(d)])
    cen = cen * (target / sd)[:, None]
    g = np.array([draw(st.floats(-1.0, 1.0, allow_nan=False)) for _ in range(d)])
    values = g[:, None] + cen
    bound = None
    if p is not None and G is not None:
        q = math.inf if p == 1.0 else (1.0 if math.isinf(p) else p / (p - 1.0))
        worst = np.abs(values).max(axis=1)  # the largest outcome norm takes the largest |x_i| per coordinate
        norm = float(worst.max()) if math.isinf(q) else float((worst**q).sum() ** (1.0 / q))
        if norm > G:
            s = G / norm * (1 - 1e-12)
            values, g, target = values * s, g * s, target * s
        bound = float(G)
    sig = np.sqrt((w * (values - g[:, None]) ** 2).sum(axis=1))
    return FiniteDistribution(values, w, g, sig, p, bound)


@st.composite
def smooth_quadratics(draw, d=_D8, p=None):
    """``(problem, L)``: a ``QuadraticDiagonal`` and its exact l_p smoothness constant for ``p`` (drawn
    from :func:`exponents` in [2, inf] when not given)."""
    from synthetic.problems import QuadraticDiagonal

    d = draw(d) if isinstance(d, st.SearchStrategy) else int(d)
    p = draw(exponents(min_value=2.0)) if p is None else (draw(p) if isinstance(p, st.SearchStrategy) else p)
    if p < 2.0:
        p = 2.0
    seed = draw(st.integers(0, 2**16))
    profile = draw(st.sampled_from(["flat", "power", "spiked"]))
    prob = QuadraticDiagonal(d=d, profile=profile, seed=seed)
    return prob, prob.smoothness(p)


@st.composite
def noise_models(draw, d=_D8, families=_FAMILIES):
    """A noise model of ``synthetic.noise`` with per-coordinate sigma drawn in [0.01, 1]."""
    from synthetic.noise import make_noise

    d = draw(d) if isinstance(d, st.SearchStrategy) else int(d)
    fam = draw(st.sampled_from(list(families)))
    sigma = np.array([draw(st.floats(0.01, 1.0)) for _ in range(d)])
    return make_noise(fam, sigma)
