"""The one-pass row norms (lptheory.fast.rownorm, numba) give the bits of lp_norm's numpy path, whatever the row
length (numpy's pairwise summation: blocks of 128, splits above; the kernels' explicit stack)."""

from __future__ import annotations

import numpy as np
import pytest

from lptheory.fast import rownorm as _rownorm
from lptheory.geometry import lp_norm


def _numpy_path(x, p):
    ax = np.abs(x)
    m = np.maximum.reduce(ax, axis=-1, keepdims=True)
    ax /= np.where(m > 0, m, 1.0)
    if p == 2.0:
        ax *= ax
    elif p == 1.5:
        ax *= np.sqrt(ax)
    else:
        ax *= ax * ax
    s = np.add.reduce(ax, axis=-1)
    return (np.sqrt(s) if p == 2.0 else s ** (1.0 / p)) * m[:, 0]


@pytest.mark.parametrize("p", [1.5, 2.0, 3.0])
def test_row_sums_kernel_has_the_numpy_paths_bits(p):
    rng = np.random.default_rng(int(p * 10))
    for n in (1, 7, 8, 9, 127, 128, 129, 255, 300, 1024, 1031, 5000):
        R = max(2, -(-_rownorm.MIN_SIZE // n))
        x = rng.standard_normal((R, n)) * 10.0 ** rng.integers(-8, 8, (R, 1))
        x[0] = 0.0
        assert _rownorm.available(x, p)
        got = lp_norm(x, p)
        assert np.array_equal(got, _numpy_path(x, p)), n
