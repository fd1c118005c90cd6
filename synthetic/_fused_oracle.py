"""The simulator's multi-step kernel for :class:`synthetic.oracle.GradientOracle` (registered with
:func:`lptheory.simulate.register_oracle_steps`): the separable problem's gradient plus Rademacher noise
(n = 1, PCG64 streams), then the optimizer's fused update, row by row and step after step in one kernel
call (:func:`synthetic._fast.separable_rademacher_steps`). It applies exactly where the oracle's own call
takes the one-pass gradient-and-noise kernel (:meth:`synthetic.problems.SeparableNonconvex.grad_noise_into`)
at every step: the same operations on the same values, the same words of each stream."""

from __future__ import annotations

import numpy as np

from lptheory.simulate import register_oracle_steps

from . import _fast
from .oracle import GradientOracle
from .problems import SeparableNonconvex

__all__: list = []


def _gradient_oracle_steps(oracle, theta, rngs, t0, state, seg, names, scalars):
    problem, noise = oracle.problem, oracle.noise
    if not isinstance(problem, SeparableNonconvex) or noise is None or not isinstance(rngs, list):
        return None
    if type(problem).grad_noise_into is not SeparableNonconvex.grad_noise_into:
        return None  # the oracle would call another method
    if not problem.fused_noise_applies(noise, 1, theta, None):
        return None
    done = 0
    for s in range(len(scalars)):  # the batch of every step: n = 1 (else the oracle's own path, from there)
        try:
            if oracle.batch_at(t0 + s) != 1:
                break
        except Exception:
            break
        done += 1
    if done == 0:
        return None
    got = _fast.separable_rademacher_steps(
        theta, problem.a, problem.b, rngs, noise.sigma, state, seg, names, np.ascontiguousarray(scalars[:done])
    )
    if got is None:
        return None
    return (done, *got)


register_oracle_steps(GradientOracle, _gradient_oracle_steps)
