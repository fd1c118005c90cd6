"""fit_slope's bootstrap (proofs_checks/rate_fits.py, ``_boot_log_means``): the batched path (one integers call,
one gather, means along the last axis) gives the loop's numbers bit for bit and leaves the generator in the
loop's state; samples of unequal sizes take the loop."""

from __future__ import annotations

import numpy as np
import pytest

from proofs_checks.rate_fits import _boot_log_means, fit_slope


def _loop_fit_slope(x, samples, *, seed, n_boot=1000):
    """fit_slope as it was written before the batched path (one resample per round and sample)."""
    lx = np.log(np.asarray(x, dtype=float))
    means = [float(np.mean(s)) for s in samples]
    slope = float(np.polyfit(lx, np.log(means), 1)[0])
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    boots = []
    for _ in range(n_boot):
        ys = [np.log(s[rng.integers(0, s.size, s.size)].mean()) for s in samples]
        boots.append(np.polyfit(lx, ys, 1)[0])
    lo, hi = (float(v) for v in np.quantile(boots, [0.025, 0.975]))
    return slope, lo, hi


@pytest.mark.parametrize("n", [1, 2, 3, 7, 32, 63, 64, 100])
@pytest.mark.parametrize("k", [1, 4])
def test_batched_resampling_is_the_loop_s(n, k):
    data = np.random.default_rng([n, k])
    samples = [np.exp(data.standard_normal(n)) * 10.0 ** data.uniform(-3, 3) for _ in range(k)]
    a, b = np.random.default_rng(7), np.random.default_rng(7)
    fast = _boot_log_means(samples, a, 300)
    slow = _boot_log_means(samples, b, 300, batched=False)
    assert fast.shape == (300, k) and np.array_equal(fast, slow)
    assert a.bit_generator.state == b.bit_generator.state
    assert a.random() == b.random()


def test_fit_slope_is_the_loop_s_and_unequal_sizes_take_the_loop():
    data = np.random.default_rng(3)
    x = [2.0**k for k in range(8, 16, 2)]
    same = [np.exp(data.standard_normal(64) - 0.25 * np.log(v)) for v in x]
    assert fit_slope(x, same, seed=[0, 404]) == _loop_fit_slope(x, same, seed=[0, 404])
    mixed = [np.exp(data.standard_normal(n)) for n in (16, 64, 32, 64)]
    assert fit_slope(x, mixed, seed=[1, 404], n_boot=200) == _loop_fit_slope(x, mixed, seed=[1, 404], n_boot=200)
    # a planted change of the resampling (another draw order) is seen
    a, b = np.random.default_rng(7), np.random.default_rng(7)
    fast = _boot_log_means(same, a, 50)
    idx = b.integers(0, 64, (4, 50, 64)).transpose(1, 0, 2)  # sample-major: not the rounds' order
    planted = np.log(np.stack(same)[np.arange(4)[:, None], idx].mean(axis=-1))
    assert not np.array_equal(fast, planted)
