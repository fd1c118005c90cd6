"""Steps whose gradient has a NaN or inf entry: counted per optimizer object (in its
:class:`lptheory.fast.cache.Slot`), warned about once. Re-exported by :mod:`lptheory.optimizers`, the public
place of these names."""

from __future__ import annotations

import contextlib
import contextvars
import math
import warnings

import numpy as np

from .cache import peek, slot

__all__ = [
    "NonFiniteGradientWarning",
    "threaded_sum",
    "note_nonfinite",
    "deferred_nonfinite",
    "count_nonfinite",
    "nonfinite_steps",
]


class NonFiniteGradientWarning(RuntimeWarning):
    """A gradient with NaN or inf entries reached an optimizer (the update carries them into the
    parameters). Issued once per optimizer; :func:`nonfinite_steps` counts every such step."""


def threaded_sum(a: np.ndarray) -> float:
    """sum(a) over the engines' worker threads for a large contiguous array (numpy releases the GIL in
    its reductions), so the check reads the gradient at the speed of the threaded step, not of one core."""
    from .pool import get_pool, threads

    nt = threads(fused=True)
    if nt <= 1 or a.size < (1 << 18) or not a.flags.c_contiguous:
        return float(np.add.reduce(a, axis=None))
    flat = a.reshape(-1)
    per = -(-flat.size // nt)
    parts = [flat[lo : lo + per] for lo in range(0, flat.size, per)]
    return float(sum(get_pool(nt).map(lambda x: np.add.reduce(x, axis=None), parts)))


def note_nonfinite(opt, xp, grad) -> None:
    """Count (on ``opt``) a step whose gradient has a NaN or inf entry and warn at the first. numpy: one
    summing pass (a non-finite sum is confirmed entry-wise, so a finite gradient whose sum overflows is
    not counted); torch on the cpu the same; on other devices the flag is accumulated on the device (no
    host synchronization in ``step``) and read by :func:`nonfinite_steps`."""
    if xp is np:
        with np.errstate(over="ignore", invalid="ignore"):
            total = threaded_sum(grad)
        if math.isfinite(total) or np.isfinite(grad).all():
            return
    elif grad.device.type != "cpu":
        bad = (~xp.isfinite(grad.sum())).to(xp.int64)
        s = slot(opt)
        s.nonfinite_device = bad if s.nonfinite_device is None else s.nonfinite_device + bad
        return
    elif bool(xp.isfinite(grad.sum())) or bool(xp.isfinite(grad).all()):
        return
    count_nonfinite(opt, 1)


# (optimizer, [tally]) while a caller defers the non-finite count of that optimizer's steps in this context
_DEFERRED: contextvars.ContextVar = contextvars.ContextVar("lptheory_deferred_nonfinite", default=None)


@contextlib.contextmanager
def deferred_nonfinite(opt):
    """Within the block (in the current context: this thread, or the context a task runs in), the steps of
    ``opt`` that receive a gradient with NaN or inf entries are not counted on ``opt`` nor warned about:
    their number is added to the yielded one-element list instead. For a caller that splits one logical
    step into several ``step`` calls on parts of the arrays (the simulator's replicate rows, each in its
    thread): it then counts the logical step once with :func:`count_nonfinite` (``nonfinite_steps`` stays
    one per step, as for one call on the whole array), and needs no pass of its own over the gradient:
    the fused kernels count non-finite entries while they read it."""
    tally = [0]
    token = _DEFERRED.set((opt, tally))
    try:
        yield tally
    finally:
        _DEFERRED.reset(token)


def count_nonfinite(opt, n: int) -> None:
    """Add ``n`` non-finite steps to the count of ``opt`` (read by :func:`nonfinite_steps`) and issue the
    optimizer's one :class:`NonFiniteGradientWarning` at the first; for optimizer implementations that
    detect non-finite gradients themselves (``lptheory.torch``). Inside :func:`deferred_nonfinite` for
    ``opt``, ``n`` goes to that block's tally instead."""
    deferred = _DEFERRED.get()
    if deferred is not None and deferred[0] is opt:
        deferred[1][0] += n
        return
    s = slot(opt)
    before = s.nonfinite_steps
    s.nonfinite_steps = before + n
    if before == 0 and n > 0:
        warnings.warn(
            f"{type(opt).__name__}: a gradient with NaN or inf entries (the update carries them into the "
            "parameters; further ones are counted, not repeated: lptheory.optimizers.nonfinite_steps)",
            NonFiniteGradientWarning,
            stacklevel=4,
        )


def nonfinite_steps(opt) -> int:
    """How many steps of ``opt`` (an optimizer object: an :class:`ElementwiseOptimizer` or a
    ``lptheory.torch`` optimizer) received a gradient with NaN or inf entries (reads the device-side
    count of a GPU run, warning then if it is the first news of one)."""
    s = peek(opt)
    if s is None:
        return 0
    acc = s.nonfinite_device
    if acc is not None:
        s.nonfinite_device = None
        count_nonfinite(opt, int(acc.item()))
    return s.nonfinite_steps
