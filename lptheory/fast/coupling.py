"""The step of linear coupling (:func:`lptheory.accelerated.coupling_update`, Nemirovskii & Nesterov 1985;
Diakonikolas & Guzman 2024) compiled: one numba pass over the running rows instead of its twelve numpy calls,
with numpy's bits.

The numpy update is z += a_k grad; v = x_0 - s_p(z) (s_p(z) = sgn(z)|z|^{1/(p-1)}, Alg. 3 line 2 of the
paper as :func:`lptheory._kernels.steepest` computes it); y = (1 - tau_k) y + tau_k v;
theta = (1 - tau_{k+1}) y + tau_{k+1} v. The kernels (:mod:`lptheory.fast.coupling_kernels`) make the same
IEEE operations in the same order on each element (``+ - *``, ``abs``, ``copysign``, ``sqrt``: correctly
rounded, numba without fast-math or contraction). The power |z|^{1/(p-1)} takes the route of
:func:`lptheory._xp.pow_abs` (:func:`route`):

* p = 2: s_2 is the identity (``"identity"``: one kernel);
* 1/(p-1) = 1/2 (p = 3): ``numpy.sqrt`` is correctly rounded, as is the kernel's (``"sqrt"``: one kernel);
* 1/(p-1) = 1/3 (p = 4): ``pow_abs`` takes ``numpy.cbrt``; where numpy's SVML cube root is available with
  its bits (:func:`lptheory.fast.svml_cbrt.available`), ``"cbrt"``: one kernel calling it row by row;
* an exponent where ``pow_abs`` takes another closed form (the cube root, squared, of p = 5/2; the cube root
  of p = 4 without SVML's), or where numpy's SVML power does not give ``numpy.power``'s
  bits (:func:`lptheory.fast.svml.agrees` says no, or no SVML here): ``"numpy"``, two kernels with
  ``pow_abs`` itself between them (the same numpy call on the same values);
* otherwise (p = 6, ...): ``"svml"``, one kernel calling numpy's own SVML power row by row.

The work arrays ``s`` and ``buf`` are scratch for both paths (their contents afterwards differ; nothing
reads them). Non-finite values propagate as in numpy (no warnings are issued by the kernels). Off with
``LPTHEORY_ENGINE=numpy`` or where numba is missing: the numpy calls run.

Measured (py-spy, one serial ``report --only acceleration``, 2 shared cores): the horizon rows of the
acceleration check's fixed instances (``proofs_checks.stacey.acceleration._horizon_run``, 2-10 rows of
d = 4096) spent 1.9 s in the numpy update (``coupling_update`` with its power) and 0.7 s in the kernels;
``_horizon_run`` as a whole 3.0 s before, 1.7 s after (with the compiled gradient of the rows).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .. import config

__all__ = ["route", "update"]

_ROUTES: dict = {}
_CHECKED: list = [None]  # the last arrays found fit for the kernels (the simulator passes the same ones each step)


@functools.lru_cache(maxsize=1)
def kernels():
    """:mod:`lptheory.fast.coupling_kernels`, or None (numba missing)."""
    try:
        from . import coupling_kernels
    except ImportError:
        return None
    return coupling_kernels


def route(p: float) -> str | None:
    """How :func:`update` computes s_p at ``p``: ``"identity"``, ``"sqrt"``, ``"svml"``, ``"numpy"`` (see the
    module docstring), or None (no compiled route: numba missing, p infinite)."""
    got = _ROUTES.get(p)
    if got is None and p not in _ROUTES:
        from .._xp import pow_is_closed_form
        from . import svml, svml_cbrt

        K = kernels()
        if K is None or not math.isfinite(p) or p < 2.0:
            got = None
        elif p == 2.0:
            got = "identity"
        else:
            e = 1.0 / (p - 1.0)
            if e == 0.5:
                got = "sqrt"
            elif e == 1.0 / 3.0 and K.step_cbrt is not None and svml_cbrt.available():
                got = "cbrt"  # pow_abs's numpy.cbrt at this exponent
            elif not pow_is_closed_form(np, e) and K.step_svml is not None and svml.agrees(e):
                got = "svml"
            else:
                got = "numpy"
        if len(_ROUTES) > 256:
            _ROUTES.clear()
        _ROUTES[p] = got
    return got


def _fit(arrays) -> bool:
    """The arrays are float64, 2-D, C-contiguous, of one shape, the updated ones writeable and none of them
    overlapping another (as the numpy calls' in-place pattern needs); remembered for the last set checked."""
    last = _CHECKED[0]
    if last is not None and len(last) == len(arrays) and all(a is b for a, b in zip(last, arrays)):
        return True
    shape = arrays[0].shape
    for a in arrays:
        if type(a) is not np.ndarray or a.dtype != np.float64 or a.ndim != 2 or a.shape != shape:
            return False
        if not a.flags.c_contiguous:
            return False
    if not all(a.flags.writeable for a in arrays[:6]):
        return False
    for i, a in enumerate(arrays):
        for b in arrays[i + 1 :]:
            if np.may_share_memory(a, b):
                return False
    _CHECKED[0] = tuple(arrays)
    return True


def update(theta, grad, z, y, v, x0, s, buf, a_k, k: int, p: float, n: int | None = None) -> bool:
    """Step ``k`` of :func:`lptheory.accelerated.coupling_update` on rows ``[0, n)`` (default: every row) of the
    (R, d) arrays, compiled; ``a_k`` a float or one per row (shape (R,), (R, 1) or at least n values).
    False (nothing done) where the kernels do not apply: the caller runs the numpy calls."""
    if config.numpy_engine():
        return False
    mode = route(p)
    if mode is None:
        return False
    # theta, z, y, v, s, buf are written (s and buf as scratch); grad and x0 read
    if not _fit((theta, z, y, v, s, buf, grad, x0)):
        return False
    n = theta.shape[0] if n is None else n
    if isinstance(a_k, np.ndarray):
        a = a_k.reshape(-1)
        if a.dtype != np.float64 or a.size < n:
            return False
    else:
        a = np.full(n, float(a_k))
    K = kernels()
    tau, tau_next = 2.0 / (k + 1), 2.0 / (k + 2)
    omt, omtn = 1.0 - tau, 1.0 - tau_next
    if mode == "identity" or mode == "sqrt":
        closed = K.IDENTITY if mode == "identity" else K.SQRT
        K.step_closed(n, theta, grad, z, y, v, x0, a, closed, omt, tau, omtn, tau_next)
    elif mode == "svml":
        pad = np.empty(16)  # per call: kernels may run in several threads
        K.step_svml(n, theta, grad, z, y, v, x0, a, 1.0 / (p - 1.0), omt, tau, omtn, tau_next, s[0], buf[0], pad)
    elif mode == "cbrt":
        pad = np.empty(16)
        K.step_cbrt(n, theta, grad, z, y, v, x0, a, omt, tau, omtn, tau_next, s[0], buf[0], pad)
    else:
        from .._xp import pow_abs

        K.step_pre(n, grad, z, a, s)
        with np.errstate(divide="ignore"):
            pow_abs(np, s[:n], 1.0 / (p - 1.0), s[:n])  # into s (e = 1 is the identity route)
        K.step_post(n, theta, z, y, v, x0, s, omt, tau, omtn, tau_next)
    return True
