"""Several simulator steps of one row block in one kernel call: the oracle and the optimizer's fused update
per row, step after step, with no Python between steps (used by :class:`lptheory.simulate._RowSplit`).

The simulator knows only the protocols, so the oracle side comes from a registry: a higher layer registers,
for an exact oracle type, a *planner* (:func:`register`) that runs the oracle's part of the work with the
optimizer's step kernel passed to it (``synthetic`` registers one for its ``GradientOracle`` on the
separable problem with Rademacher noise: :mod:`synthetic._fused_oracle`). This module gives the planner the
optimizer's side: the one-loop fused kernel that :meth:`lptheory.optimizers.ElementwiseOptimizer.step` runs
on these arrays (:func:`lptheory.fast.fused.kernel`), the argument names it takes and its scalars at each
step. Same kernel, same elements, same order: the bits of the step-by-step loop (tested against it in
tests/test_simulate_fused.py).
"""

from __future__ import annotations

import numpy as np

__all__ = ["register", "has_planner", "run_steps"]

_PLANNERS: dict = {}


def register(oracle_type: type, planner) -> None:
    """``planner(oracle, theta, rngs, t0, state, seg, names, scalars)`` runs steps t0, t0 + 1, ... of oracle
    objects of exactly ``oracle_type`` on the rows ``theta`` (in place), calling ``seg`` (the optimizer's
    kernel, arguments ``n``, the arrays named by ``names``, then one row of ``scalars`` per step; it returns
    the number of non-finite gradient entries it read) on each row after writing the oracle's answer for
    that row into the array it passes as "grad". It returns (steps done, (done,) non-finite gradient entries
    per step, (done, rows) rows whose new parameters are not all finite) for the first ``done`` >= 1 steps,
    or None (nothing drawn or written)."""
    _PLANNERS[oracle_type] = planner


def has_planner(oracle) -> bool:
    """Whether a planner is registered for ``oracle``'s exact type."""
    return type(oracle) in _PLANNERS


def _step_kernel(opt, theta, state, t0: int, t1: int):
    """(kernel, argument names, (n, k) scalars of steps t0..t0+n-1) of ``opt``'s in-place fused step on
    ``theta`` and ``state`` (the kernel ``opt.step(theta, grad, state, donate=True)`` runs on them), for the
    steps whose scalars select the same one-loop kernel; None where the step would not run such a kernel."""
    from . import fused as _fused

    # an element-wise optimizer whose step is the one of its base class (routed by lptheory.fast.step)
    if not getattr(type(opt), "fast_route", False) or not _fused.available():
        return None
    if type(theta) is not np.ndarray or theta.dtype != np.float64 or not theta.flags.c_contiguous:
        return None
    if not theta.flags.writeable or theta.size >= (1 << 31) or type(state) is not dict:
        return None
    buffers = opt.buffers
    if set(state) != {"step", *buffers} or type(state["step"]) is not int or state["step"] != t0:
        return None
    seen = {id(theta)}
    for k in buffers:
        a = state[k]
        if type(a) is not np.ndarray or a.shape != theta.shape or a.dtype != np.float64 or id(a) in seen:
            return None
        if not (a.flags.c_contiguous and a.flags.writeable) or np.may_share_memory(a, theta):
            return None
        seen.add(id(a))
    # the names and in-place pattern of lptheory.fast.step.short_step with donate=True
    arrays = {"theta": theta, "grad": theta}
    arrays.update((k, state[k]) for k in buffers)
    arrays["new_theta"] = theta
    arrays.update(("new_" + k, state[k]) for k in buffers)
    alias = (("new_theta", "theta"), *(("new_" + k, k) for k in buffers))
    kern, rows = None, []
    for t in range(t0, t1):
        try:
            h = opt.scalars(t)
            # a kernel traced without guards (no comparison on the step's scalars) is the rule's only one for
            # this configuration: the later steps need no lookup
            k = kern if kern is not None and not kern.guards else _fused.kernel(opt, h, arrays, theta.dtype, alias)
        except Exception:  # a schedule out of range, a rule the engine does not fuse: the step itself decides
            break
        if kern is None:
            if k.blocked is not None or len(k.plan) != 1 or k.plan[0][0] != "kernel" or any(k.plan[0][3:]):
                return None  # powers between loops, scratch slots or separate outputs
            kern = k
        elif k is not kern:  # another branch of the rule (a guard): later steps take the general path
            break
        rows.append([float(h[x]) for x in k.dyn_names])
    if kern is None:
        return None
    return getattr(kern.module, kern.plan[0][1]), tuple(kern.plan[0][2]), np.array(rows, dtype=np.float64)


def run_steps(opt, oracle, theta, state, rngs, t0: int, t1: int):
    """Run steps t0, t0 + 1, ... (before t1) of the simulator on the rows ``theta`` and ``state`` in place,
    in one kernel call, where a planner is registered for ``oracle``'s type and the optimizer's step is one
    fused loop. Returns (steps done, new state dict, the steps whose gradient had a NaN or inf, {step: rows
    whose new parameters are not all finite}), or None (nothing done)."""
    planner = _PLANNERS.get(type(oracle))
    if planner is None:
        return None
    try:
        got = _step_kernel(opt, theta, state, t0, t1)
    except (AttributeError, IndexError, TypeError):  # a kernel object of another layout: the general path
        got = None
    if got is None:
        return None
    seg, names, scalars = got
    done = planner(oracle, theta, rngs, t0, state, seg, names, scalars)
    if done is None:
        return None
    n, nf, bad = done
    if not 1 <= n <= len(scalars):
        raise RuntimeError(f"oracle planner for {type(oracle).__name__} reported {n} steps of {len(scalars)}")
    new_state = {"step": t0 + n}
    new_state.update((k, state[k]) for k in opt.buffers)
    nonfinite = {t0 + s for s in range(n) if nf[s]}
    flagged = {t0 + s: bad[s].copy() for s in range(n) if bad[s].any()}
    return n, new_state, nonfinite, flagged
