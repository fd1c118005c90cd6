"""The routes of one element-wise optimizer step, chosen here so that the rules need not know them.

:meth:`lptheory.optimizers.ElementwiseOptimizer.step` validates its inputs and calls :func:`apply` (numpy or
torch, the checked route); before the checks it offers numpy inputs to :func:`short_step`, which takes them
when they are the shape and dtype of the last checked step (the usual loop) and runs, in this order of
preference:

1. the kernel bound to the very arrays of the previous donated steps (a simulator's loop: :func:`bind`);
2. the fused kernel called directly (:func:`lptheory.fast.fused.run_direct`: one thread, no guards);
3. the engine (:func:`lptheory.fast.engine.run`: fused kernels on ranges and threads, or the reference).

Every route gives the bits of the reference numpy engine. What a route remembers about an optimizer object
lives in its :class:`lptheory.fast.cache.Slot`.
"""

from __future__ import annotations

import numpy as np

from .. import config
from . import engine as _engine
from . import fused as _fused
from .cache import SLOTS, slot
from .nonfinite import count_nonfinite, note_nonfinite

__all__ = ["BIND_LIMIT", "apply", "short_step", "new_names", "bound_steps", "rows_step"]

BIND_LIMIT = 32
"""Kernels bound to arrays (:func:`bind`) per optimizer: past it (steps alternating between array sets,
e.g. threads sharing one optimizer) the unbound short path runs."""


def new_names(opt) -> tuple[str, ...]:
    """``("new_<buffer>", ...)`` of ``opt`` (cached per object)."""
    s = slot(opt)
    got = s.new
    if got is None:
        got = s.new = tuple("new_" + k for k in opt.buffers)
    return got


def apply(opt, xp, h, theta, grad, old: list, donate: bool) -> list:
    """The checked route: ``opt``'s rule on validated inputs (numpy or torch), the non-finite gradient
    counted on ``opt``; returns the outputs ``[new_theta, *new_buffers]``."""
    if xp is np:
        theta_in = np.ascontiguousarray(theta)
        grad = np.ascontiguousarray(grad)
        old = [np.ascontiguousarray(a) for a in old]
        outs = [
            a if donate and a.flags.c_contiguous and a.flags.writeable else np.empty(a.shape, a.dtype)
            for a in [theta, *old]
        ]
        if _engine.run(opt, h, opt.named(theta_in, grad, old, outs), count_nonfinite=True):
            count_nonfinite(opt, 1)
        slot(opt).sig = (theta.shape, theta.dtype)
        return outs
    note_nonfinite(opt, xp, grad)
    with xp.no_grad():
        outs = [a if donate else xp.empty_like(a) for a in [theta, *old]]
        _engine.run(opt, h, opt.named(theta, grad, old, outs))
    return outs


def short_step(opt, theta, grad, state, donate):
    """:meth:`~lptheory.optimizers.ElementwiseOptimizer.step` for numpy arrays of the last validated shape
    and dtype, C-contiguous (None: take the checked path). Same results, same bits."""
    s = SLOTS.get(id(opt)) or slot(opt)  # (slot() inlined: this runs at every step)
    if s.checked_only:
        return None
    bound = s.bound
    if bound is not None and donate and theta is bound[0] and grad is bound[1]:
        got = _step_bound(opt, bound, theta, state)
        if got is not None:
            return got
    sig = s.sig
    if sig is None:
        return None
    shape, dtype = sig
    if theta.shape != shape or theta.dtype is not dtype or grad.shape != shape or grad.dtype is not dtype:
        return None
    t = state.get("step")
    if type(t) is not int or t < 0:
        return None
    buffers = opt.buffers
    old = []
    for k in buffers:
        a = state.get(k)
        if type(a) is not np.ndarray or a.shape != shape or a.dtype is not dtype:
            return None
        old.append(a)
    fl = theta.flags
    if not (fl.c_contiguous and grad.flags.c_contiguous and all(a.flags.c_contiguous for a in old)):
        return None
    if donate:
        if not (fl.writeable and all(a.flags.writeable for a in old)):
            return None
        outs = [theta, *old]
        alias = s.alias
        if alias is None:
            alias = s.alias = (("new_theta", "theta"), *(("new_" + k, k) for k in buffers))
        # an output that is also the gradient or another buffer (the same array passed twice): the
        # general in-place analysis
        if grad is theta or any(a is grad or a is theta for a in old) or len({id(a) for a in old}) < len(old):
            alias = None
    else:
        outs = [np.empty(shape, dtype) for _ in range(1 + len(buffers))]
        alias = ()
    h = opt.scalars(t)
    arrays = {"theta": theta, "grad": grad}
    arrays.update(zip(buffers, old))
    arrays["new_theta"] = outs[0]
    arrays.update(zip(s.new or new_names(opt), outs[1:]))
    nf = _fused.run_direct(opt, h, arrays, alias) if alias is not None else None
    if nf is None:
        nf = _engine.run(opt, h, arrays, count_nonfinite=True, alias=alias)
    elif donate:  # the same array objects as the previous step (a simulator's loop): bind the kernel to them
        key = (id(theta), id(grad))
        if s.bind_try == key:
            bind(opt, theta, grad, old, h, arrays, alias)
        else:
            s.bind_try = key
    if nf:
        count_nonfinite(opt, 1)
    new_state = {"step": t + 1}
    new_state.update(zip(buffers, outs[1:]))
    return outs[0], new_state


def bind(opt, theta, grad, old, h, arrays, alias) -> None:
    """After a donated step on the short path of :func:`lptheory.fast.fused.run_direct`: the kernel bound to
    these arrays (:func:`lptheory.fast.fused.bind_direct`) for the next steps on the same array objects
    (a simulator's loop), with the per-step scalars resolved once where only ``t`` changes between
    steps (no schedule, no ``derived``)."""
    s = slot(opt)
    binds = s.binds
    s.binds = binds + 1
    got = _fused.bind_direct(opt, h, arrays, alias) if binds < BIND_LIMIT else None
    if got is None:
        s.bound = None
        return
    bound, dyn = got
    template = None
    split = s.split  # (fixed values, scheduled names), set by hyper_at
    if getattr(type(opt), "plain_scalars", False) and split is not None and not split[1]:
        if all(x == "t" or x in split[0] for x in dyn):
            template = tuple(None if x == "t" else float(split[0][x]) for x in dyn)
    outs = (theta, *old)
    sig = (theta.shape, theta.dtype)
    s.bound = (theta, grad, tuple(old), outs, bound, dyn, template, sig)


def _step_bound(opt, bound, theta, state):
    """A donated step through the kernel bound by :func:`bind`: the same arrays, the same kernel and scalars,
    the same bits; None where the general short path must run (a buffer that is not the bound one, a
    changed shape or flag, the fused engine switched off)."""
    t = state.get("step")
    if type(t) is not int or t < 0:
        return None
    _, grad, old, outs, kernel, dyn, template, (shape, dtype) = bound
    for k, a in zip(opt.buffers, old):
        if state.get(k) is not a:
            return None
    for a in outs:
        if a.shape != shape or a.dtype is not dtype or not a.flags.writeable:
            return None
    if grad.shape != shape or grad.dtype is not dtype:
        return None
    if template is not None:
        scalars = [float(t) if v is None else v for v in template]
    else:
        h = opt.scalars(t)
        scalars = [float(h[x]) for x in dyn]
    nf = _fused.run_bound(kernel, scalars)
    if nf is None:
        return None
    if nf:
        count_nonfinite(opt, 1)
    new_state = {"step": t + 1}
    new_state.update(zip(opt.buffers, old))
    return theta, new_state


def bound_steps(opts, thetas, grads, states) -> list:
    """Donated steps of several optimizers, optimizer i on its own arrays ``thetas[i]``, ``grads[i]`` with
    ``states[i]``, each through the kernel :func:`bind` bound to those arrays: ``[(new state, non-finite
    gradient entries) or None per optimizer]``, None where that optimizer's step must take
    :meth:`~lptheory.optimizers.ElementwiseOptimizer.step` (no kernel bound to these arrays, a buffer that
    is not the bound one, a changed shape, dtype or flag, a scalar that is not a plain field). Each step is
    the one :func:`_step_bound` makes (the same kernel, arrays and scalars: the same bits, the parameters
    and buffers updated in place), without counting the non-finite gradients on the optimizer (the caller
    counts or drops them: a caller that steps parts of one logical step, as inside
    :func:`~lptheory.fast.nonfinite.deferred_nonfinite`). For a caller that steps many configurations side
    by side every step (the acceleration check's tuning runs, 4 configurations of 2 rows of 4096): the
    per-step Python of :meth:`~lptheory.optimizers.ElementwiseOptimizer.step` and the engine switch's
    environment read are paid once per call, not per optimizer (measured, process time, 2 interleaved
    pairs, a simulator step of 4 Stacey(p,2) configurations with their gradient: 56-59 -> 45-46 us at p = 2,
    167-171 -> 151-158 us at p = 6: ~3 us less per configuration and step)."""
    if config.numpy_engine():
        return [None] * len(opts)
    svml = _fused.USE_SVML
    out = []
    for opt, theta, grad, state in zip(opts, thetas, grads, states):
        s = SLOTS.get(id(opt))
        bound = s.bound if s is not None and not s.checked_only else None
        if bound is None or bound[0] is not theta or bound[1] is not grad or bound[6] is None:
            out.append(None)
            continue
        t = state.get("step")
        _, _, old, outs, kernel, _, template, (shape, dtype) = bound
        ok = type(t) is int and t >= 0 and grad.shape == shape and grad.dtype is dtype
        if ok:
            buffers = opt.buffers
            for k, a in zip(buffers, old):
                if state.get(k) is not a:
                    ok = False
            for a in outs:
                if a.shape != shape or a.dtype is not dtype or not a.flags.writeable:
                    ok = False
        fn = kernel[0]
        if not ok or fn is None or (kernel[2] is not None and not svml):
            out.append(None)  # (a plan of several parts: the general route runs it)
            continue
        scalars = [float(t) if v is None else v for v in template]
        nf = fn(*kernel[1], *scalars, *kernel[2]) if kernel[2] is not None else fn(*kernel[1], *scalars)
        new_state = {"step": t + 1}
        new_state.update(zip(buffers, old))
        out.append((new_state, nf))
    return out


def _rows_plan(opts, bounds, stacks):
    """The plan of :func:`rows_step` for these bound kernels, or None: one kernel function with a rows driver
    (:func:`lptheory.fast.fused.rows_driver`) for every optimizer, the same exponents and element count, plain
    scalars (a template with the same step-count columns), and optimizer i's arrays row i of ``stacks`` (in
    the kernel's order, the same stack at each position for every optimizer)."""
    k0 = bounds[0][4]
    fn, expos, tmpl0 = k0[0], k0[2], bounds[0][6]
    if fn is None or tmpl0 is None:
        return None
    driver = _fused.rows_driver(fn)
    if driver is None:
        return None
    n = k0[1][0]
    if any(a.ndim != 2 or a.shape[0] != len(bounds) for a in stacks):
        return None
    ptrs = [[a.__array_interface__["data"][0] + i * a.strides[0] for i in range(a.shape[0])] for a in stacks]
    order = None
    for i, b in enumerate(bounds):
        kern = b[4]
        if kern[0] is not fn or kern[2] != expos or kern[1][0] != n or b[6] is None:
            return None
        if [v is None for v in b[6]] != [v is None for v in tmpl0]:
            return None
        pos = []
        for flat in kern[1][1:]:
            if flat.ndim != 1 or flat.size != n or not flat.flags.c_contiguous:
                return None
            at = flat.__array_interface__["data"][0]
            j = next(
                (j for j, st in enumerate(stacks) if st.shape[1] == n and st.dtype == flat.dtype and ptrs[j][i] == at),
                None,
            )
            if j is None:
                return None
            pos.append(j)
        if order is None:
            order = pos
        elif pos != order:
            return None
    arrays = tuple(stacks[j] for j in order)
    S = np.array([[0.0 if v is None else v for v in b[6]] for b in bounds], dtype=np.float64)
    tcols = [j for j, v in enumerate(tmpl0) if v is None]
    E = np.asarray(expos if expos is not None else (), dtype=np.float64)
    return {
        "bounds": bounds,
        "driver": driver,
        "arrays": arrays,
        "S": S,
        "tcols": tcols,
        "E": E,
        "n": n,
        "svml": expos is not None,
    }


def rows_step(opts, stacks, states, memo: dict):
    """Donated steps of several optimizers of one class and configuration shape, optimizer i on row i of
    each 2-D array of ``stacks`` (its parameters, gradient and buffers, as its kernel was bound to them by
    :func:`bind`), in ONE compiled call (the kernel's rows driver, :func:`lptheory.fast.fused.rows_driver`):
    ``(new states, non-finite gradient entries of all)``, or None where :func:`bound_steps` must run (an
    optimizer without a bound kernel, a kernel without a driver, arrays that are not the stacks' rows, a
    buffer that is not the bound one, steps that differ). ``memo``: the caller's dict, holding the plan
    checked for the current bound kernels (checked again whenever one is rebound). The calls are those
    :func:`bound_steps` makes (the same kernel on the same arrays with the same scalars, in the same order:
    the same bits); the non-finite counts are not counted on the optimizers. For the acceleration check's
    tuning runs (4 configurations of 2 rows of 4096 per simulator step; measured, process time, a simulator
    step of 4 Stacey(p,2) configurations with their gradient at p = 2: 45-46 us through :func:`bound_steps`,
    37.6-38.4 us through the rows driver)."""
    if config.numpy_engine():
        return None
    bounds = []
    for opt in opts:
        s = SLOTS.get(id(opt))
        if s is None or s.checked_only or s.bound is None:
            return None
        bounds.append(s.bound)
    plan = memo.get("plan")
    if (
        plan is None
        or len(plan["bounds"]) != len(bounds)
        or any(a is not b for a, b in zip(plan["bounds"], bounds))
        or len(plan["stacks"]) != len(stacks)
        or any(a is not b for a, b in zip(plan["stacks"], stacks))
    ):
        # checked once per set of bound kernels and stacks (a set that has no plan is remembered too)
        plan = _rows_plan(opts, bounds, stacks) or {"bounds": bounds, "driver": None}
        plan["stacks"] = tuple(stacks)
        memo["plan"] = plan
    if plan["driver"] is None:
        return None
    if plan["svml"] and not _fused.USE_SVML:
        return None
    t = states[0].get("step")
    if type(t) is not int or t < 0:
        return None
    for opt, b, state in zip(opts, bounds, states):
        if state.get("step") != t:
            return None
        for k, a in zip(opt.buffers, b[2]):
            if state.get(k) is not a:
                return None
    for a in plan["arrays"]:
        if not a.flags.writeable:
            return None
    S = plan["S"]
    for j in plan["tcols"]:
        S[:, j] = float(t)
    nf = plan["driver"](len(bounds), plan["n"], *plan["arrays"], S, plan["E"])
    news = []
    for opt, b in zip(opts, bounds):
        st = {"step": t + 1}
        st.update(zip(opt.buffers, b[2]))
        news.append(st)
    return news, nf
