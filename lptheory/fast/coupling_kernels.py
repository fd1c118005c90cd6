"""numba side of :mod:`lptheory.fast.coupling`: the step of linear coupling (:func:`lptheory.accelerated.
coupling_update`) over the rows of (n, d) arrays in one pass, element by element the operations of its numpy
calls (IEEE ``+ - *``, ``abs``, ``sqrt``, ``copysign``: compiled without fast-math or contraction, the same
bits), with a per-row a_k. Imported only where numba is installed (:func:`lptheory.fast.coupling.kernels`)."""

import math

import numba

from . import numba_cache

numba_cache.install(__file__)  # a stale disk-cache entry is recompiled, not a crash or old code

try:
    from .svml_kernels import pow_block
except ImportError:  # numpy exports no SVML power here: the "svml" route is never taken
    pow_block = None
try:
    from .svml_cbrt_kernels import cbrt_block
except ImportError:  # numpy exports no SVML cube root here: the "cbrt" route is never taken
    cbrt_block = None

IDENTITY, SQRT = 0, 1
"""``mode`` of :func:`step_closed`: s_p(z) = z (p = 2), or sgn(z) sqrt(|z|) (p = 3)."""


@numba.njit(inline="always")
def _z_step(z, grad, r, i, ar):
    """z[r, i] += grad[r, i] a_r (``np.multiply(grad, a_k)``, then ``np.add(z, .)``); returns the new z."""
    zi = z[r, i] + grad[r, i] * ar
    z[r, i] = zi
    return zi


@numba.njit(inline="always")
def _coupling_tail(theta, y, v, x0, r, i, si, omt, tau, omtn, taun):
    """v = x0 - s; y = omt y + tau v; theta = omtn y + taun v at element (r, i), ``s`` = s_p(z) given."""
    vi = x0[r, i] - si
    v[r, i] = vi
    yi = y[r, i] * omt + vi * tau
    y[r, i] = yi
    theta[r, i] = yi * omtn + vi * taun


@numba.njit(nogil=True, error_model="numpy", cache=True)
def step_closed(n, theta, grad, z, y, v, x0, a, mode, omt, tau, omtn, taun):
    """Rows ``[0, n)``: z += a_r grad; s = s_p(z) in closed form (``mode``); v = x0 - s;
    y = omt y + tau v; theta = omtn y + taun v (the operations of ``coupling_update``, in its order)."""
    d = theta.shape[1]
    for r in range(n):
        ar = a[r]
        for i in range(d):
            zi = _z_step(z, grad, r, i, ar)
            si = zi if mode == IDENTITY else math.copysign(math.sqrt(abs(zi)), zi)
            _coupling_tail(theta, y, v, x0, r, i, si, omt, tau, omtn, taun)


@numba.njit(nogil=True, error_model="numpy", cache=True)
def step_pre(n, grad, z, a, ax):
    """Rows ``[0, n)``: z += a_r grad; ax = |z| (the first half of :func:`step_post`'s step; the power of
    ``ax`` runs in numpy between the two)."""
    d = z.shape[1]
    for r in range(n):
        ar = a[r]
        for i in range(d):
            ax[r, i] = abs(_z_step(z, grad, r, i, ar))


@numba.njit(nogil=True, error_model="numpy", cache=True)
def step_post(n, theta, z, y, v, x0, pw, omt, tau, omtn, taun):
    """Rows ``[0, n)``: s = copysign(pw, z); v = x0 - s; y = omt y + tau v; theta = omtn y + taun v."""
    d = z.shape[1]
    for r in range(n):
        for i in range(d):
            _coupling_tail(theta, y, v, x0, r, i, math.copysign(pw[r, i], z[r, i]), omt, tau, omtn, taun)


if pow_block is not None:

    @numba.njit(nogil=True, error_model="numpy", cache=True)
    def step_svml(n, theta, grad, z, y, v, x0, a, e, omt, tau, omtn, taun, ax, pw, pad):
        """:func:`step_pre`, numpy's SVML power |z|^e (``pow_block``: numpy.power's bits where
        :func:`lptheory.fast.svml.agrees` holds at ``e``) and :func:`step_post`, row by row (a row's |z|
        and its power stay in ``ax`` and ``pw``, d values each, in cache)."""
        d = z.shape[1]
        for r in range(n):
            ar = a[r]
            for i in range(d):
                ax[i] = abs(_z_step(z, grad, r, i, ar))
            pow_block(ax, 0, e, pw, d, pad)
            for i in range(d):
                _coupling_tail(theta, y, v, x0, r, i, math.copysign(pw[i], z[r, i]), omt, tau, omtn, taun)

else:
    step_svml = None


if cbrt_block is not None:

    @numba.njit(nogil=True, error_model="numpy", cache=True)
    def step_cbrt(n, theta, grad, z, y, v, x0, a, omt, tau, omtn, taun, ax, pw, pad):
        """:func:`step_svml` with numpy's SVML cube root |z|^{1/3} (p = 4; ``cbrt_block``: numpy.cbrt's bits
        where :func:`lptheory.fast.svml_cbrt.available` holds) in place of the power."""
        d = z.shape[1]
        for r in range(n):
            ar = a[r]
            for i in range(d):
                ax[i] = abs(_z_step(z, grad, r, i, ar))
            cbrt_block(ax, 0, pw, d, pad)
            for i in range(d):
                _coupling_tail(theta, y, v, x0, r, i, math.copysign(pw[i], z[r, i]), omt, tau, omtn, taun)

else:
    step_cbrt = None
