"""Stochastic gradient oracle: g~ = grad f(theta) + mean of n_t noise draws, one random stream per
replicate."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from lptheory import validate
from lptheory.geometry import dual_exponent, lp_norm
from lptheory.problem import Problem, certified

from .noise import Noise

__all__ = ["GradientOracle"]


class GradientOracle:
    """g~_t = grad f(theta_t) + xi_t, xi_t the mean of ``batch(t)`` independent draws of ``noise``.

    Parameters
    ----------
    problem : a :class:`lptheory.problem.Problem` (its certified constants are read through its
        certificates: ``grad_sup`` for Assumption 4, ``inf`` when it has none)
    noise : a :class:`synthetic.noise.Noise` with ``noise.d == problem.d``, or None (exact gradients)
    batch : int >= 1 or a callable ``t -> n_t`` (e.g. ``lambda t: T`` for Theorem 1's n_t = T)
    """

    accepts_out = True  # the simulator may pass its reused gradient buffer

    def __init__(self, problem: Problem, noise: Noise | None = None, batch: int | Callable[[int], int] = 1):
        if noise is not None and noise.d != problem.d:
            raise ValueError(f"noise has d={noise.d} but the problem has d={problem.d}")
        if not callable(batch):
            validate.integer("batch", batch, lo=1)
        self.problem, self.noise, self.batch = problem, noise, batch

    @property
    def rows_independent(self) -> bool:
        """Row r of the answer depends only on row r of theta and on ``rngs[r]`` (bit for bit): true when
        the problem and the noise say so; the simulator then splits a step by rows over its threads."""
        prob = getattr(self.problem, "rows_independent", False)
        return bool(prob) and (self.noise is None or bool(getattr(self.noise, "rows_independent", False)))

    def batch_at(self, t: int) -> int:
        n = self.batch(t) if callable(self.batch) else self.batch
        return validate.integer(f"batch size at step {t}", n, lo=1)

    def __call__(self, theta, t: int, rngs, out=None):
        """Stochastic gradients for theta of shape (R, d), written into ``out`` when given (the
        simulator's reused buffer: no fresh (R, d) arrays per step).

        ``rngs``: a list of ``numpy.random.Generator``, replicate r drawing from ``rngs[r]`` (numpy
        arrays); or one batched device source (``lptheory._random.TorchRandom``, torch tensors), from
        which all replicates' noise is drawn at once, on the device.
        """
        n = None if self.noise is None else self.batch_at(t)
        if out is not None and isinstance(theta, np.ndarray) and hasattr(self.problem, "grad_into"):
            fused = getattr(self.problem, "grad_noise_into", None)
            if fused is not None and n is not None and isinstance(rngs, list) and len(rngs) == len(theta):
                # gradient and noise in one pass where the problem has a kernel for this noise (same bits)
                if fused(theta, t, self.noise, rngs, n, out):
                    return out
            g = self.problem.grad_into(theta, t, out)
        else:
            g = self.problem.grad(theta, t)
        if self.noise is None:
            return g
        if not isinstance(rngs, (list, tuple)):
            return g + self.noise.sample_mean(rngs, n, size=tuple(theta.shape[:-1]))
        if len(rngs) != theta.shape[0]:
            raise ValueError(f"need one generator per replicate: {theta.shape[0]} replicates, {len(rngs)} generators")
        self.noise.add_means_into(rngs, n, g)
        return g

    def assumptions(self) -> dict:
        """The paper's assumptions this oracle satisfies (Section 4.1): A2 unbiased, A3 bounded variance
        (with the sigma_i of the noise), A4 bounded stochastic gradient (needs bounded noise and a
        bounded true gradient)."""
        if self.noise is None:
            return {"unbiased": True, "bounded_variance": True, "bounded_gradient": True}
        a = self.noise.assumptions()
        return {
            "unbiased": a["unbiased"],
            "bounded_variance": a["bounded_variance"],
            "bounded_gradient": bool(a["bounded"]) and math.isfinite(self.grad_sup(2.0)),
        }

    def certified_G(self, p: float) -> float:
        """A certified G >= sup ||g~||_{p*} (Assumption 4): sup ||grad f||_{p*} + ||b||_{p*}, b_i the
        per-coordinate bound of the noise (a batch mean obeys the same bound; triangle inequality).
        ``inf`` when the noise or the gradient is unbounded."""
        gs = self.grad_sup(p)
        if self.noise is None:
            return gs
        b = self.noise.bound()
        if b is None or not math.isfinite(gs):
            return math.inf
        return gs + float(lp_norm(b, dual_exponent(p)))

    def grad_sup(self, p: float) -> float:
        """The problem's certified sup_x ||grad f(x)||_{p*} (its ``grad_sup`` certificate; ``inf`` when it
        has none: nothing certifies a bounded gradient)."""
        return float(certified(self.problem, "grad_sup", p, default=math.inf))

    def describe(self) -> dict:
        out = {"batch": self.batch if not callable(self.batch) else repr(self.batch)}
        if self.noise is not None:
            out.update(self.noise.describe())
        else:
            out["noise"] = "none"
        return out
