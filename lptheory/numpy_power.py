"""``numpy.power``'s own float64 power for numba code elsewhere in the toolkit (the public face of the
private :mod:`lptheory.fast.svml`, which the fused optimizer kernels use).

* :func:`agrees` (``y``): numba code calling :func:`pow_block_jit` at exponent ``y`` gets numpy.power's
  bits on this machine (numpy exports its SVML power, it compiles, and it was checked at ``y`` over every
  binade, subnormals and special values);
* :func:`pow_block_jit`: the numba function ``pow_block(x, xo, y, out, m, pad)``, ``out[:m] = x[xo:xo + m] ** y``
  (``pad``: 16 float64 of scratch), callable from ``numba.njit`` code; None where :func:`agrees` cannot hold;
* :func:`add_reduce_jit`: the numba function ``add_reduce(a, lo, n)``, numpy's ``add.reduce`` of the
  contiguous float64 ``a[lo:lo + n]`` bit for bit (its pairwise summation: the one ``lp_norm``'s kernels use).
"""

from __future__ import annotations

from .fast import numba_cache
from .fast import svml as _svml

numba_cache.register(__file__)  # numba code resolves its callees here: an edit here recompiles the callers

__all__ = ["agrees", "pow_block_jit", "add_reduce_jit"]


def agrees(y: float) -> bool:
    """numba code calling :func:`pow_block_jit` at float64 exponent ``y`` gets numpy.power's bits here."""
    return _svml.agrees(float(y), "float64")


def pow_block_jit():
    """The numba float64 block power with numpy.power's bits (None without numba or numpy's SVML symbols)."""
    if not _svml.available("float64"):
        return None
    return _svml.pow_block_jit


def add_reduce_jit():
    """The numba function ``add_reduce(a, lo, n)`` with numpy.add.reduce's bits (None without numba)."""
    try:
        from .fast import rownorm_kernels as _rownorm_kernels
    except ImportError:
        return None
    return _rownorm_kernels.add_reduce
