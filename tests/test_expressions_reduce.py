"""The expression evaluator's short-axis sums (evaluator.add_reduce) give numpy.add.reduce's bits."""

import numpy as np
import pytest

from proofs_checks.evaluator import add_reduce as _add_reduce


def _data(rng, shape):
    a = rng.standard_normal(shape) * 10.0 ** rng.integers(-8, 8, shape)
    a[rng.random(shape) < 0.1] = -0.0  # numpy adds from +0.0: a sum of -0.0 alone is +0.0
    a[rng.random(shape) < 0.05] = 0.0
    return a


@pytest.mark.parametrize("layout", ["C", "swapped", "broadcast"])
@pytest.mark.parametrize("axis", [1, -1])
def test_add_reduce_is_numpys(layout, axis):
    """Bit for bit numpy.add.reduce(a, axis, keepdims=True), for the layouts the evaluator produces (C
    order, the marginal layout's swapped axes, broadcast views), short and long axes, small and large
    arrays (the slices path and numpy's)."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        S = int(rng.choice([3, 64, 700, 2304]))
        M, d = int(rng.integers(1, 11)), int(rng.integers(1, 6))
        if layout == "C":
            a = _data(rng, (S, M, d))
        elif layout == "swapped":
            a = np.swapaxes(_data(rng, (S, d, M)), 1, 2)
        else:
            a = np.broadcast_to(_data(rng, (S, M, 1)), (S, M, d))
        ref = np.add.reduce(a, axis=axis, keepdims=True)
        got = _add_reduce(a, axis)
        assert got.shape == ref.shape
        np.testing.assert_array_equal(got.view(np.int64), ref.view(np.int64))


def test_add_reduce_takes_the_slices_path_on_large_short_axes():
    """The case it exists for (a large array, a short axis): numpy's bits, in a C-ordered array."""
    a = _data(np.random.default_rng(1), (2304, 3, 2))
    got = _add_reduce(a, 1)
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got.view(np.int64), np.add.reduce(a, axis=1, keepdims=True).view(np.int64))
